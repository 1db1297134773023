"""Files a scenario names, read relative to it: manifests (inline or `{file: path}`) and text.
Errors name the scenario's field, not only the file."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from kubetide.errors import ManifestError
from kubetide.model import Manifests, load_documents
from kubetide.model.loader import parse_text, read_text
from kubetide.sim.spec.errors import ScenarioError


def read_manifests(entries: list[dict], source: str, where: str, base_dir: Path) -> Manifests:
    """Inline manifests and `{file: path}` entries (relative to the scenario file)."""
    result = Manifests()  # one for every entry: an object given twice is an error naming both
    for index, entry in enumerate(entries):
        at = f"{where}[{index}]"
        if set(entry) == {"file"}:
            name = entry["file"]
            if not isinstance(name, str) or not name:
                raise ScenarioError(source, f"{at}.file", "expected a file path")
            file = base_dir / name
            text = read_relative(file, name, source, f"{at}.file")
            load_documents(parse_text(text, str(file)), str(file), into=result)
        elif "file" in entry and "kind" not in entry:
            extra = sorted(k for k in entry if k != "file")
            raise ScenarioError(source, f"{at}.{extra[0]}", "a {file: path} entry takes no other fields")
        else:
            load_documents([entry], f"{source}: {at}", into=result)
    return result


def read_relative(file: Path, name: str, source: str, field: str) -> str:
    """The text of a file a scenario names (relative to it); errors name the scenario's field."""
    try:
        return read_text(file)
    except ManifestError as exc:
        message = f'no such file "{name}"' if exc.message == "no such file" else f"{name}: {exc.message}"
        raise ScenarioError(source, field, message) from None


def csv_rows(text: str, source: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of a trace CSV; a row the csv module refuses (a field over its
    131,072-character limit, a NUL) is an error naming the file and the line."""
    rows = csv.reader(text.splitlines())
    while True:
        try:
            row = next(rows)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ScenarioError(source, f"line {rows.line_num}", f"not a CSV row: {exc}") from None
        yield rows.line_num, row
