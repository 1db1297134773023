"""The whole `plan --json` and `simulate` outputs on the bundled examples and 60 random clusters
are byte-identical to the pinned digests (tests/shared/golden_outputs.py says what is pinned and
how to regenerate them when a change is meant to alter decisions). Random clusters 20-59 run in
CI's slow step, to keep the default suite short."""

import json

import pytest
from golden_outputs import DIGESTS, case_names, digests

PINNED = json.loads(DIGESTS.read_text())
IN_DEFAULT_RUN = 20


def _marks(name: str) -> list[pytest.MarkDecorator]:
    kind, _, which = name.partition("/")
    return [pytest.mark.slow] if kind == "random" and int(which) >= IN_DEFAULT_RUN else []


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n), id=n) for n in case_names()])
def test_outputs_are_the_pinned_ones(name):
    found = digests(name)
    changed = sorted(o for o in found.keys() | PINNED[name].keys() if found.get(o) != PINNED[name].get(o))
    assert not changed, (
        f"{name}: {', '.join(changed)} changed (regenerate only if meant: see golden_outputs.py)"
    )


def test_every_bundled_scenario_and_dump_is_pinned():
    assert sorted(PINNED) == sorted(case_names())
