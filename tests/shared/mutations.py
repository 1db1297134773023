"""Odd values planted at random places of a full object: what the wire-schema property tests
(test_pod_typed.py, test_node_typed.py) feed both parsers to show the typed path is the Reader's
answer or declines, and the check they make (assert_reader_or_nothing)."""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import strategies as st

from kubetide.errors import ManifestError


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


def assert_reader_or_nothing(
    data: dict,
    fast: Callable[[dict], Any],
    slow: Callable[[dict], Any],
    typed: Callable[[dict], Any] | None = None,
    same: Callable[[Any, Any], bool] = operator.eq,
) -> None:
    """The typed path alone (`fast`) gives the Reader's (`slow`) answer for `data`, or None (never
    an error of its own). With `typed`, the parser that leaves what it declines to the Reader: its
    answer is the Reader's, and so is its error, word for word."""
    result = fast(data)
    try:
        expected = slow(data)
    except ManifestError as exc:
        assert result is None
        if typed is not None:
            with pytest.raises(ManifestError) as raised:
                typed(data)
            assert str(raised.value) == str(exc)
    else:
        assert result is None or same(result, expected)
        if typed is not None:
            assert typed(data) == expected
