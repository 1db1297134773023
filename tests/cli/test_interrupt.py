"""Ctrl-C (SIGINT) stops `simulate` at once, writes nothing half-done, says what was kept, exits 130;
and the progress a terminal shows from the first moment.

Each test runs the command in a subprocess whose stderr is a pseudo-terminal (so the progress
display draws, as in a user's terminal), waits until the display shows a run under way, sends
SIGINT to that process alone, and looks at what is left on disk. The runs are ten simulated days
long: a run that went on to its end would leave its directory behind.
"""

from __future__ import annotations

import os
import pty
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")

SRC = Path(__file__).resolve().parents[2] / "src"
RUNNING = re.compile(rb"\d+[smh][0-9smh]* / 240h")  # a bar's "simulated / total" once it moves


# The command, started with SIGINT unblocked and at Python's own handler, as a user's shell starts
# it, whatever this test process's state (an ignored or blocked SIGINT is inherited across exec,
# and libraries other tests load can leave either behind). Set in the child's Python, not in a
# preexec_fn: that forces fork() over vfork, and the fork handlers of a library loaded in this
# process (gRPC's) then run in the child and write to its terminal before the command starts.
LAUNCH = """
import runpy, signal
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
signal.signal(signal.SIGINT, signal.default_int_handler)
runpy.run_module("kubetide.cli.main", run_name="__main__", alter_sys=True)
"""


def in_terminal(args: list[str], cwd: Path, interrupt_on: re.Pattern[bytes] | None) -> tuple[int, str, str]:
    """Run `kubetide ARGS` with stderr on a pseudo-terminal; with `interrupt_on`, send SIGINT once
    the terminal shows it. (exit code, stdout, everything the terminal showed)."""
    controller, terminal = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "100", "TERM": "xterm"}
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
    )
    os.close(terminal)
    seen = b""

    def read_until(pattern: re.Pattern[bytes] | None) -> None:
        nonlocal seen
        while pattern is None or not pattern.search(seen):
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the terminal closed: the process ended
                chunk = b""
            if not chunk:
                break
            seen += chunk

    try:
        if interrupt_on is not None:
            read_until(interrupt_on)
            assert interrupt_on.search(seen), seen.decode(errors="replace")
            process.send_signal(signal.SIGINT)
        read_until(None)
        stdout = process.stdout.read() if process.stdout else b""
        code = process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(controller)
    return code, stdout.decode(), seen.decode(errors="replace")


def _interrupt_when_running(args: list[str], cwd: Path) -> tuple[int, str, str]:
    return in_terminal(args, cwd, RUNNING)


def test_an_interrupted_simulate_removes_the_folder_it_created(tmp_path):
    code, stdout, stderr = _interrupt_when_running(
        ["simulate", "--duration", "240h", "--out", "out"], tmp_path
    )
    assert code == 130
    assert stdout == ""
    assert "kubetide: interrupted: nothing written (out/ removed: this run had created it)" in stderr
    assert "Traceback" not in stderr
    assert not (tmp_path / "out").exists()
    # Progress from the first moment: loading is shown before the simulation's bar.
    assert 0 <= stderr.find("loading the demo scenario") < stderr.find("simulating demo")


def test_an_interrupted_simulate_leaves_an_existing_folder_as_it_was(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine\n")
    code, _, stderr = _interrupt_when_running(["simulate", "--duration", "240h", "--out", "out"], tmp_path)
    assert code == 130
    assert "kubetide: interrupted: nothing written to out/" in stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["notes.txt"]


def test_an_interrupted_comparison_starts_no_queued_setting_and_leaves_no_half_written_run(tmp_path):
    """Three settings on two processes: the third is queued when the signal comes. Before the fix
    the queued setting started and every run went on to its end, writing its directory."""
    args = ["simulate", "--duration", "240h", "--out", "out", "--workers", "2", "--no-report"]
    args += [
        "--compare",
        "a:",
        "--compare",
        "b:max-drain-parallelism=2",
        "--compare",
        "c:max-drain-parallelism=3",
    ]
    code, stdout, stderr = _interrupt_when_running(args, tmp_path)
    assert code == 130, stderr
    assert stdout == ""
    assert "Traceback" not in stderr
    assert "kubetide: interrupted: nothing written (out/ removed: this run had created it)" in stderr
    assert not (tmp_path / "out").exists()


def test_an_interrupted_comparison_says_which_runs_it_kept(tmp_path, capsys):
    """What an interrupted comparison reports when some runs had finished (the helper alone: which
    runs finish before a signal is a race a subprocess test cannot pin down)."""
    from kubetide.cli.simulate import interrupted
    from kubetide.sweep.compare import partial_dir

    out = tmp_path / "out"
    (out / "a").mkdir(parents=True)
    (out / "a" / "summary.json").write_text("{}\n")
    partial_dir(out, "b").mkdir()
    (partial_dir(out, "b") / "summary.json").write_text("{")
    assert interrupted(out, True, kept=["a"], unfinished=["b"]) == 130
    assert sorted(p.name for p in out.iterdir()) == ["a"]
    assert capsys.readouterr().err == (
        f"kubetide: interrupted: kept a/ in {out}/ (complete runs); b stopped before the end, "
        "not written; compare.json and report.html not written\n"
    )


def test_the_sweep_bar_counts_running_runs_as_well_as_finished_ones(tmp_path):
    args = ["sweep", "--grid", "max-drain-parallelism=1,2", "--seeds", "2", "--duration", "10m"]
    code, stdout, stderr = in_terminal([*args, "--out", "out", "--workers", "2"], tmp_path, None)
    assert code == 0, stderr
    assert "loading the demo scenario" in stderr
    assert "0/6 done, 2 running (local, 2 workers)" in stderr
    assert "demo: 3 settings x 2 seeds; ran 6" in stdout


def test_an_interrupted_sweep_stops_its_runs_and_says_what_it_kept(tmp_path):
    args = ["sweep", "--grid", "max-drain-parallelism=1,2", "--seeds", "1", "--duration", "240h"]
    code, stdout, stderr = in_terminal(
        [*args, "--out", "out", "--workers", "2"], tmp_path, re.compile(rb"0/3 done, 2 running")
    )
    assert code == 130, stderr
    assert stdout == ""
    assert (
        "kubetide: interrupted: 0 complete runs kept in out/runs/ (the same command resumes from them); "
        "summary.csv, sweep.json and report.html not updated"
    ) in stderr
    assert list((tmp_path / "out").rglob("summary.json")) == []
