"""pod-deletion-cost parsing: Go's validFirstDigit + strconv.ParseInt(value, 10, 32), invalid -> 0."""

import pytest
from downscale_factory import NOW, pod

from kubetide.workloads import (
    DELETION_COST_ANNOTATION,
    deletion_cost,
    parse_deletion_cost,
    rank_pods_for_deletion,
)

CASES = [
    # value, parsed (None = invalid, counts as 0)
    ("0", 0),
    ("1", 1),
    ("10", 10),
    ("-1", -1),
    ("-100", -100),
    ("2147483647", 2147483647),
    ("-2147483648", -2147483648),
    ("-0", 0),  # a leading "-" always passes the first-digit check; ParseInt("-0") = 0
    ("-007", -7),  # zeros after the sign slip through the first-digit check; ParseInt ignores them
    ("", None),
    ("+5", None),  # leading "+"
    ("+0", None),
    ("007", None),  # leading zero
    ("00", None),
    ("0x10", None),
    ("1e3", None),
    ("1.5", None),
    ("1_000", None),  # ParseInt with base 10 takes no underscores
    (" 5", None),
    ("5 ", None),
    ("5\n", None),
    ("-", None),
    ("--1", None),
    ("-+1", None),
    ("abc", None),
    ("٣", None),  # Arabic-Indic digit three: Python's int() takes it, Go does not
    ("\uff11", None),  # fullwidth digit one
    ("2147483648", None),  # out of int32 range
    ("-2147483649", None),
    ("99999999999999999999", None),
]


@pytest.mark.parametrize(("value", "parsed"), CASES, ids=[repr(v) for v, _ in CASES])
def test_parse_deletion_cost(value, parsed):
    assert parse_deletion_cost(value) == parsed
    assert deletion_cost({DELETION_COST_ANNOTATION: value}) == (parsed or 0)


def test_missing_annotation_is_zero():
    assert deletion_cost({}) == 0
    assert deletion_cost({"other": "5"}) == 0


def test_invalid_costs_rank_as_zero():
    invalid = pod("invalid", cost="+5", uid="uid-b", ready_at=NOW, created=NOW)
    zero = pod("zero", cost="0", uid="uid-c", ready_at=NOW, created=NOW)
    negative = pod("negative", cost="-007", uid="uid-z", ready_at=NOW, created=NOW)
    high = pod("high", cost="100", uid="uid-a", ready_at=NOW, created=NOW)
    order = rank_pods_for_deletion([high, zero, invalid, negative], NOW)
    assert [p.name for p in order] == ["negative", "invalid", "zero", "high"]
    # deletion_cost=False ignores the annotation altogether: UID order
    order = rank_pods_for_deletion([high, zero, invalid, negative], NOW, deletion_cost=False)
    assert [p.name for p in order] == ["high", "invalid", "zero", "negative"]
