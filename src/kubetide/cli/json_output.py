"""What every `--json` output shares (docs/json-output.md): `apiVersion` and `kind` saying what the
document is, times in RFC 3339, and resource amounts as Kubernetes quantity strings."""

from __future__ import annotations

from typing import Any

from kubetide import API_VERSION, durations


def document(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """`body` as a kubetide document of `kind` (apiVersion and kind first, as in a manifest)."""
    return {"apiVersion": API_VERSION, "kind": kind, **body}


def rfc3339(seconds: float | None) -> str | None:
    """A Unix time (or None) as RFC 3339 in UTC, with a fraction only when there is one."""
    return None if seconds is None else durations.rfc3339(seconds, keep_fraction=True)
