"""The one error a scenario file gets: its own module, so every part of the loader can raise it."""

from __future__ import annotations

from kubetide.cloud.schema import SpecError


class ScenarioError(SpecError):
    """A scenario file is wrong; the message names the file and the field."""
