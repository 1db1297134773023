"""Odd values planted at random places of a full object: what the wire-schema property tests
(test_pod_typed.py, test_node_typed.py) feed both parsers to show the typed path is the Reader's
answer or declines."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st


def odd_values(*words: str) -> st.SearchStrategy[Any]:
    """Values of every JSON type that parsers trip on; `words` adds strings the kind knows."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.sampled_from(["", "x", "1", "-1", "100m", "1e3", "2026-11-01T00:00:00Z", "True", *words]),
        st.just([]),
        st.just({}),
        st.just([{}]),
    )


def paths(data: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every key and index path into `data`."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield (*prefix, index)
            yield from paths(value, (*prefix, index))


def mutated(original: dict, mutations: list[tuple[tuple, Any]]) -> dict:
    """A copy of `original` with each (path, value) set; a path an earlier one cut off is skipped."""
    data = copy.deepcopy(original)
    for path, value in mutations:
        target = data
        try:
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = copy.deepcopy(value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation replaced a parent
    return data
