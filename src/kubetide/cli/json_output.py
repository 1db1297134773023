"""What every `--json` output shares (docs/json-output.md): `apiVersion` and `kind` saying what the
document is, times in RFC 3339, and resource amounts as Kubernetes quantity strings."""

from __future__ import annotations

from typing import Any

from kubetide import API_VERSION, durations
from kubetide.model.quantity import CPU, EPHEMERAL_STORAGE, MEMORY

_BINARY_SUFFIXES = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def document(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """`body` as a kubetide document of `kind` (apiVersion and kind first, as in a manifest)."""
    return {"apiVersion": API_VERSION, "kind": kind, **body}


def rfc3339(seconds: float | None) -> str | None:
    """A Unix time (or None) as RFC 3339 in UTC, with a fraction only when there is one."""
    return None if seconds is None else durations.rfc3339(seconds, keep_fraction=True)


def quantity(resource: str, units: int) -> str:
    """An amount in kubetide's integer units (millicores for cpu, bytes for memory and storage)
    as a Kubernetes quantity that parses back to exactly that amount: "500m", "2", "1Gi"."""
    if resource == CPU:
        return f"{units}m" if units % 1000 else str(units // 1000)
    if resource in (MEMORY, EPHEMERAL_STORAGE) or resource.endswith("memory"):
        for suffix, size in _BINARY_SUFFIXES:
            if units and units % size == 0:
                return f"{units // size}{suffix}"
    return str(units)
