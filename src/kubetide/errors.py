"""User-facing errors.

Everything a user can get wrong (a manifest, a flag, a scenario) raises a `UserError`; the CLI turns
it into one line on stderr and exit code 2, before anything is executed. Tracebacks are for bugs.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input. The message is complete: it names the file and the field."""

    exit_code = 2


class ManifestError(UserError):
    """A Kubernetes manifest (or a file of them) is malformed.

    Rendered as `cluster.yaml: items[3] (Pod default/web-1): spec.containers[0].resources: message`.
    """

    def __init__(self, source: str, location: str, field: str, message: str):
        self.source = source
        self.location = location
        self.field = field
        self.message = message
        parts = [source]
        if location:
            parts.append(location)
        if field:
            parts.append(field)
        super().__init__(": ".join([*parts, message]))
