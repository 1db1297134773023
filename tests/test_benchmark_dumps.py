"""benchmarks/dumps.py writes YAML as kubectl does, so the whole-process benchmarks time the path a
user's `kubectl get -o yaml` dump takes."""

import yaml
from benchmarks import dumps

from kubetide.model import load_file, yaml_chunks

AMBIGUOUS = [
    "097370e3",
    "00000000000000000000000000000039",
    "1e3",
    "0755",
    "yes",
    "y",
    "2026-11-01",
    "1.5",
    "~",
]


def test_strings_a_yaml_reader_could_take_for_other_types_are_double_quoted(tmp_path):
    item = {
        "kind": "ConfigMap",
        "data": {f"k{i}": text for i, text in enumerate(AMBIGUOUS)},
        "plain": "128Mi",
    }
    path = dumps.write_list(tmp_path / "dump.yaml", [item], "yaml")
    text = path.read_text()
    for value in AMBIGUOUS:
        assert f'"{value}"' in text
    assert "plain: 128Mi" in text
    assert yaml.safe_load(text)["items"] == [item]
    assert not yaml_chunks.suspect_lines(yaml_chunks.distinct_lines(text))


def test_the_yaml_and_json_dumps_load_alike(tmp_path):
    loaded = {
        fmt: load_file(dumps.filter_out_schedulable(tmp_path / fmt, fmt, nodes=3, scheduled=3, pending=4))
        for fmt in dumps.FORMATS
    }
    assert loaded["yaml"].nodes == loaded["json"].nodes and loaded["yaml"].pods == loaded["json"].pods
    assert len(loaded["yaml"].pods) == 7
