from fractions import Fraction

import pytest

from kubetide.model.quantity import QuantityError, format_units, parse_quantity, parse_resource


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100m", Fraction(1, 10)),
        ("1.5", Fraction(3, 2)),
        (1.5, Fraction(3, 2)),
        (2, Fraction(2)),
        ("2Gi", Fraction(2 * 2**30)),
        ("500M", Fraction(500 * 10**6)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("1e-3", Fraction(1, 1000)),
        ("0.1Ki", Fraction(1024, 10)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("+3k", Fraction(3000)),
        ("-1", Fraction(-1)),
        ("12n", Fraction(12, 10**9)),
        ("7u", Fraction(7, 10**6)),
        ("8Pi", Fraction(8 * 2**50)),
        ("9P", Fraction(9 * 10**15)),
        ("9223372036854775807m", Fraction(2**63 - 1, 1000)),  # the largest int64 milli-value
        (" 4 ", Fraction(4)),
    ],
)
def test_parse_quantity_exactly(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text", ["abc", "", "1K", "1 Gi", "1.2.3", "Gi", "1ki", "--1", "1e", "1i", True, None, [1], "1e400"]
)
def test_invalid_quantities_are_rejected(text):
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    "value",
    [
        "9223372036854775808m",
        "1Ei",
        "9999999999Ei",
        "1e100",
        "99999999999999999999",
        10**30,
        -(10**30),
        1e100,
    ],
)
def test_quantities_over_int64_milli_units_are_rejected_as_the_api_server_does(value):
    with pytest.raises(QuantityError, match=r"too large.*int64 milli-units"):
        parse_quantity(value)


def test_a_quantity_of_a_thousand_digits_is_refused_before_it_is_converted():
    with pytest.raises(QuantityError, match="longer than"):
        parse_quantity("1" * 5000)


@pytest.mark.parametrize(
    ("resource", "text", "units"),
    [
        ("cpu", "100m", 100),
        ("cpu", "0.1m", 1),  # rounds up like MilliValue()
        ("cpu", "1.0005", 1001),
        ("cpu", "2", 2000),
        ("memory", "0.1Ki", 103),  # 102.4 bytes round up
        ("memory", "1Gi", 2**30),
        ("memory", "1e3", 1000),
        ("memory", "1500m", 2),
        ("nvidia.com/gpu", "1", 1),
    ],
)
def test_units_round_up(resource, text, units):
    assert parse_resource(resource, text) == units


def test_format_units_is_readable():
    assert format_units("cpu", 1500) == "1500m"
    assert format_units("cpu", 2000) == "2"
    assert format_units("memory", 2**30) == "1Gi"
    assert format_units("pods", 3) == "3"
