"""The throttle state file is trusted no further than --cgroup-root (issue #26, item 5): an entry
whose cgroup directory lies outside it, by `..`, by a symlink or by a plain other path, is logged
and skipped at load, and restoring never writes there."""

from __future__ import annotations

import json
import logging

import pytest

from kubetide.agent.throttle import CgroupThrottler

ORIGINAL = "max 100000"


@pytest.fixture
def host(tmp_path):
    """A cgroup root with one pod cgroup, and a directory outside it holding a cpu.max."""
    root = tmp_path / "cgroup"
    inside = root / "kubepods.slice" / "pod-a"
    inside.mkdir(parents=True)
    (inside / "cpu.max").write_text("20000 100000\n")
    outside = tmp_path / "etc"
    outside.mkdir()
    (outside / "cpu.max").write_text("precious\n")
    (root / "escape").symlink_to(outside)  # a symlink under the root pointing out of it
    (root / "alias").symlink_to(inside)  # one pointing to a directory under the root
    return root, inside, outside


def entry(pod: str, cpu_dir: str) -> dict:
    return {"pod": pod, "cpu_dir": cpu_dir, "version": 2, "original": ORIGINAL, "quota": 200}


@pytest.mark.parametrize(
    ("cpu_dir", "kept", "why"),
    [
        (lambda root, inside, outside: str(inside), True, None),
        (lambda root, inside, outside: str(root / "alias"), True, None),
        (lambda root, inside, outside: str(outside), False, "outside --cgroup-root"),
        (lambda root, inside, outside: str(root / "escape"), False, "outside --cgroup-root"),
        (lambda root, inside, outside: f"{root}/kubepods.slice/../../etc", False, "'..'"),
        (lambda root, inside, outside: "kubepods.slice/pod-a", False, "absolute"),
        (lambda root, inside, outside: 42, False, "not a path"),
    ],
    ids=["inside", "symlink-inside", "outside", "symlink-out", "dot-dot", "relative", "not-a-string"],
)
def test_a_restored_entry_outside_the_cgroup_root_is_logged_and_skipped(
    host, tmp_path, caplog, cpu_dir, kept, why
):
    root, inside, outside = host
    state = tmp_path / "throttle.json"
    state.write_text(json.dumps({"uid-a": entry("ns/a", cpu_dir(root, inside, outside))}))
    with caplog.at_level(logging.WARNING, "kubetide.agent"):
        throttler = CgroupThrottler(lambda p: None, state, cgroup_root=root)
    assert ("uid-a" in throttler.throttled) == kept
    if kept:
        assert not caplog.records
    else:
        (record,) = caplog.records
        assert "pod ns/a skipped" in record.getMessage() and why in record.getMessage()
    restored = throttler.restore_all()
    assert (outside / "cpu.max").read_text() == "precious\n"  # never written, whatever the entry
    assert restored == (["ns/a"] if kept else [])
    if kept:
        assert (inside / "cpu.max").read_text().strip() == ORIGINAL


def test_good_entries_are_kept_beside_a_bad_one(host, tmp_path):
    root, inside, outside = host
    state = tmp_path / "throttle.json"
    state.write_text(json.dumps({"good": entry("ns/a", str(inside)), "bad": entry("ns/b", str(outside))}))
    throttler = CgroupThrottler(lambda p: None, state, cgroup_root=root)
    assert list(throttler.throttled) == ["good"]


@pytest.mark.parametrize("text", ["[1, 2]", '{"u": [1]}', '{"u": {"pod": "x"}}', "{"])
def test_a_malformed_state_file_is_one_user_error(tmp_path, text):
    from kubetide.errors import UserError

    state = tmp_path / "throttle.json"
    state.write_text(text)
    with pytest.raises(UserError, match=r"--state-file=.*unreadable"):
        CgroupThrottler(lambda p: None, state, cgroup_root=tmp_path)
