"""docs/why-not-scaled-down.md is what its generator makes of `kubetide plan` on the bundled
examples now: a change to plan's answers that is not carried into the guide fails here (run
`python docs/gen/why_not_scaled_down.py` to regenerate it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def generator():
    spec = importlib.util.spec_from_file_location(
        "why_not_scaled_down", ROOT / "docs" / "gen" / "why_not_scaled_down.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_guide_is_what_plan_says_now():
    gen = generator()
    assert gen.GUIDE.read_text() == gen.render(), "run python docs/gen/why_not_scaled_down.py"


def test_the_guide_shows_every_kind_of_answer():
    text = (ROOT / "docs" / "why-not-scaled-down.md").read_text()
    for words in (
        "is bare: give it a controller",  # NotReplicated
        "needs 1 more disruption",  # a budget
        "above the threshold",  # utilization
        "one more node of group general would take it",  # a pod that fits nowhere
        "+2 more",  # every blocking pod, the first as CA names it
        "kubectl get nodes -L kubetide.io/scale-down-blocker",
    ):
        assert words in text, words
