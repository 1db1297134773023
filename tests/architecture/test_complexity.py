"""No function, method or class of src/ ranks E or F in cyclomatic complexity (radon's ranks: E
from 31 paths, F from 41), as `radon cc -n E src` would list it: past that a function is split
into named steps (issue 40). .ci/run installs radon from the lock; an environment without it
skips these tests rather than fail to collect."""

from __future__ import annotations

from pathlib import Path

import pytest

import kubetide

complexity = pytest.importorskip("radon.complexity")

SOURCE = Path(kubetide.__file__).parent
WORST_ALLOWED = "D"


def too_complex(source: str) -> list[str]:
    """Each block of `source` ranked above WORST_ALLOWED: `line: name - rank (complexity)`."""
    return [
        f"{block.lineno}: {block.fullname} - {rank} ({block.complexity})"
        for block in complexity.cc_visit(source)
        if (rank := complexity.cc_rank(block.complexity)) > WORST_ALLOWED
    ]


def _branches(count: int) -> str:
    body = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(count))
    return f"def f(x):\n{body}    return -1\n"


@pytest.mark.parametrize(("branches", "flagged"), [(1, False), (29, False), (30, True), (45, True)])
def test_the_check_flags_a_function_from_rank_e(branches, flagged):
    # n ifs make n + 1 paths: 30 ifs are the first E
    assert bool(too_complex(_branches(branches))) is flagged


def test_no_function_ranks_e_or_f():
    found = [
        f"{path.relative_to(SOURCE.parent)}:{line}"
        for path in sorted(SOURCE.rglob("*.py"))
        for line in too_complex(path.read_text(encoding="utf-8"))
    ]
    assert not found, "split these into named steps (radon cc -n E -s src):\n" + "\n".join(found)
