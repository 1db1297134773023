"""The `controller.kubernetes.io/pod-deletion-cost` annotation (KEP-2255).

Kubernetes reads the value with `strconv.ParseInt(value, 10, 32)` after a first-character check that
rejects a leading "+" and leading zeros; anything rejected counts as cost 0. The API server runs the
same parser as validation ("must be a 32bit integer"), so invalid values only reach the controller
on pods created before the check or updated with the old invalid value kept.

The exact rules (base-10 int32, ASCII digits only):

- missing -> 0
- `"0"`, `"7"`, `"-7"`, `"2147483647"`, `"-2147483648"` -> their value
- `"-0"` -> 0, and valid: the first-character check accepts any leading "-", and ParseInt accepts
  "-0". The API server admits it.
- `"-007"` -> -7, and valid, for the same reason: the leading-zero check only looks at the first
  character, so zeros after a minus sign slip through and ParseInt ignores them. (The reference's
  "leading zeros -> 0" is exactly right for unsigned values like `"007"`.)
- invalid, so 0: `""`, `"+5"`, `"007"`, `"00"`, `"-"`, `"--1"`, `"-+1"`, `"1_000"`, `" 5"`, `"5 "`,
  `"5\\n"`, `"1e3"`, `"0x10"`, `"٣"` (non-ASCII digits), `"2147483648"`, `"-2147483649"`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

# validFirstDigit + ParseInt(base 10): an optional "-" then ASCII digits, where an unsigned value
# may start with "0" only when it is exactly "0". (Python's int() would also take "+", "_",
# whitespace and Unicode digits, so it is not used to decide validity.)
_VALID = re.compile(r"-[0-9]+|0|[1-9][0-9]*")


def parse_deletion_cost(value: str) -> int | None:
    """The cost in an annotation value, or None when Kubernetes would reject it (and use 0)."""
    if not _VALID.fullmatch(value):
        return None
    cost = int(value)
    return cost if INT32_MIN <= cost <= INT32_MAX else None


def deletion_cost(annotations: Mapping[str, str]) -> int:
    """A pod's deletion cost from its annotations: 0 when missing or invalid."""
    value = annotations.get(DELETION_COST_ANNOTATION)
    if value is None:
        return 0
    return parse_deletion_cost(value) or 0
