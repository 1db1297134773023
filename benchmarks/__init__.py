"""Benchmarks, never part of the test suite: `python -m benchmarks [NAME...]` (see __main__.py)."""
