"""A what-if: a trial change to the simulated cluster and everything that accounts for it.

The candidate search tries each node's removal on a fork of three journaled states that must
move together: the snapshot (where pods are), the PDB tracker (disruptions left) and, with a
usage source, the usage guard (projected usage per destination). Forking or reverting one
without the others leaves the search counting pods on one node and their disruptions or usage
against another. `what_if` forks all three and, on leaving the block, reverts all three unless
the trial was kept, and also when the block raises:

    with what_if(snapshot, tracker, guard) as trial:
        ...move pods, charge budgets...
        if it worked:
            trial.keep()
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Journaled(Protocol):
    def fork(self) -> None: ...

    def revert(self) -> None: ...

    def commit(self) -> None: ...


class Trial:
    """The open what-if; `keep()` makes its changes stay when the block ends."""

    __slots__ = ("kept",)

    def __init__(self) -> None:
        self.kept = False

    def keep(self) -> None:
        self.kept = True


@contextmanager
def what_if(*states: Journaled | None) -> Iterator[Trial]:
    """Fork `states` (None: absent, e.g. no usage guard) together; commit them together if the
    trial was kept and the block did not raise, else revert them together."""
    present = [state for state in states if state is not None]
    for state in present:
        state.fork()
    trial = Trial()
    try:
        yield trial
    except BaseException:
        for state in reversed(present):
            state.revert()
        raise
    for state in reversed(present):
        state.commit() if trial.kept else state.revert()
