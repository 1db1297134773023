"""Exact Kubernetes resource quantities.

Kubernetes quantities ("100m", "1.5", "2Gi", "500M", "1e3", "0.1Ki") are decimal or binary scaled
numbers. We parse them into a `Fraction` so nothing is lost, then round *up* into integers the way
the API server's MilliValue()/Value() do: CPU in millicores, everything else in base units (bytes,
pods, devices). Floats never enter resource arithmetic, so fit checks cannot disagree with the
scheduler by a rounding error.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# Same grammar as apimachinery's resource.Quantity: a signed decimal number, then either a binary
# suffix, a decimal suffix, or a decimal exponent (e/E followed by a signed integer).
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?[0-9]+)|(?P<dec>[numkMGTPE]?))$"
)

# The API server keeps a quantity as an int64 number of milli-units and refuses larger ones.
MAX_MILLI_UNITS = 2**63 - 1
# Our integer units (millicores for cpu, base units otherwise) live in int64 snapshot columns.
MAX_UNITS = 2**63 - 1
# Longer texts are not quantities anyone writes (and Python refuses ints over 4,300 digits).
_MAX_TEXT = 100

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"


class QuantityError(ValueError):
    """The text is not a valid Kubernetes quantity."""


def parse_quantity(value: object) -> Fraction:
    """Parse a quantity given as a YAML string or number into an exact Fraction."""
    amount = _parse(value)
    # On the integers: Fraction arithmetic would cost more than the parse (a hot path).
    if abs(amount.numerator) * 1000 > MAX_MILLI_UNITS * amount.denominator:
        raise QuantityError(
            f'quantity "{value}" is too large: Kubernetes keeps quantities in int64 milli-units '
            f"(at most {MAX_MILLI_UNITS}m)"
        )
    return amount


def _parse(value: object) -> Fraction:
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"invalid quantity {value!r}")
        # YAML gave us a float (e.g. `cpu: 1.5`): its shortest repr is what the user wrote.
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise QuantityError(f"invalid quantity {value!r}")
    if len(text) > _MAX_TEXT:
        raise QuantityError(f"invalid quantity: longer than {_MAX_TEXT} characters")
    match = _QUANTITY.match(text)
    if match is None:
        raise QuantityError(f'invalid quantity "{value}"')
    number = Fraction(match["num"])
    if match["bin"]:
        return number * _BINARY[match["bin"]]
    if match["exp"]:
        exponent = int(match["exp"][1:])
        if abs(exponent) > 100:
            raise QuantityError(f'invalid quantity "{value}": exponent out of range')
        return number * Fraction(10) ** exponent
    return number * _DECIMAL[match["dec"] or ""]


def to_units(resource: str, amount: Fraction) -> int:
    """Integer units for a resource: millicores for cpu, base units (bytes, count) otherwise.

    Rounds up, as Kubernetes does: a request of 0.1m cpu still occupies 1m.
    """
    if resource == CPU:
        return math.ceil(amount * 1000)
    return math.ceil(amount)


def parse_resource(resource: str, value: object) -> int:
    return to_units(resource, parse_quantity(value))


def parse_capacity(resource: str, value: object) -> int:
    """A node's capacity or a measured usage: a quantity that cannot be negative (Kubernetes
    accepts "-1Gi" as a quantity, but no node has less than nothing)."""
    units = parse_resource(resource, value)
    if units < 0:
        raise QuantityError(f'quantity "{value}" must not be negative')
    return units


_BINARY_SUFFIXES = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _in_bytes(resource: str) -> bool:
    return (
        resource in (MEMORY, EPHEMERAL_STORAGE)
        or resource.endswith("memory")
        or resource.startswith("hugepages-")
    )


def format_quantity(resource: str, units: int) -> str:
    """An amount in the model's integer units (millicores for cpu, bytes for memory, storage and
    hugepages, counts otherwise) as a Kubernetes quantity that parses back to exactly that amount:
    "500m", "2", "1536Mi", "110". For manifests and JSON; `format_units` is for people."""
    if resource == CPU:
        return f"{units}m" if units % 1000 else str(units // 1000)
    if _in_bytes(resource):
        for suffix, size in _BINARY_SUFFIXES:
            if units and units % size == 0:
                return f"{units // size}{suffix}"
    return str(units)


def format_units(resource: str, units: int) -> str:
    """Human form of an integer amount, for tables and messages."""
    if resource == CPU:
        return f"{units}m" if units % 1000 else str(units // 1000)
    if _in_bytes(resource):
        for suffix, size in _BINARY_SUFFIXES:
            if units >= size and units % size == 0:
                return f"{units // size}{suffix}"
            if units >= size * 10:
                return f"{units / size:.1f}{suffix}"
    return str(units)
