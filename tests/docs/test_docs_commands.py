"""Every `kubetide ...` command README.md and docs/*.md show runs as shown, and prints what they show.

Commands are read from the sh/console code blocks (a line, or a part of it between `&&`, that
starts with `kubetide `; continuation lines joined, comments dropped; in a console block, a line
after a `$ ` prompt, the lines up to the next prompt being its output). A block's commands run in
order in one fresh directory that links the bundled examples/, since one may write a file the
next reads (`--out tonight.yaml`), and exit 0 unless EXIT_CODES gives the code the doc says.
Nothing is skipped silently: a command that
cannot run offline is in NOT_OFFLINE with the reason, a usage synopsis in SYNOPSES, and one too
slow for a quick run in SLOW, which runs under the `slow` marker (plain `pytest` leaves it out,
pyproject's addopts; `pytest -m slow` runs it, as .ci/run does after the suite). A listed command no doc shows any more fails
test_every_listed_command_is_still_documented.

Output shown under a console block's command must be printed by it. Any other output a doc
shows is a bare code block: each one is tied in SHOWN_OUTPUT to the command (and
exit code) that prints it, whose lines must appear in that order in what it prints at 100
columns (a doc may abridge), or is in NOT_OUTPUT with the reason it is not checked here.
"""

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL_FENCES = {"sh", "console", "shell", "bash"}
OUTPUT_FENCES = {"", "text"}
COLUMNS = "100"  # the width the docs' output blocks were printed at

FENCE = re.compile(r"^ *(```+)([\w-]*)[^\n]*\n(.*?)^ *\1 *$", re.S | re.M)

NOT_OFFLINE = {
    "kubetide scenario from-cluster cluster.yaml --node-groups groups.yaml --out tonight.yaml --force": (
        "cluster.yaml is the kubectl dump of a live cluster the line before it makes"
    ),
    "kubetide simulate tonight.yaml --duration 8h --compare ours: --compare "
    "fast:scale-down-unneeded-time=5m,scale-down-delay-after-add=5m": (
        "tonight.yaml is exported from a live cluster's dump"
    ),
    "kubetide scenario from-cluster cluster.yaml --usage usage.json --out tonight.yaml": (
        "cluster.yaml and usage.json are a live cluster's kubectl dump and metrics"
    ),
    "kubetide simulate tonight.yaml": "tonight.yaml is exported from a live cluster's dump",
    "kubetide plan --kubeconfig ~/.kube/config --node-groups examples/kwok-groups.yaml": (
        "reads a live cluster through a kubeconfig"
    ),
    "kubetide run --kubeconfig ~/.kube/config --cloud-provider kwok --node-groups "
    "examples/kwok-groups.yaml --scale-down-unneeded-time=2m --max-drain-parallelism=10": (
        "runs the autoscaler against a live cluster (tests/kube run it on the control-plane fixture)"
    ),
    "kubetide run --cloud-provider aws --nodes=1:10:my-asg --node-group-auto-discovery="
    "asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/my-cluster": (
        "needs a live cluster and AWS credentials and network"
    ),
    "kubetide record --kubeconfig ~/.kube/config --for 1h --out tuesday": (
        "watches a live cluster for an hour (tests/kube/test_record_live.py records one)"
    ),
    "kubetide scenario from-cluster --trace tuesday --out tuesday/replay.yaml": (
        "tuesday/ is the recording of a live cluster the line before it makes"
    ),
    "kubetide simulate tuesday/replay.yaml --compare patient:scale-down-unneeded-time=30m": (
        "tuesday/replay.yaml replays a live cluster's recording"
    ),
    "kubetide run --cloud-provider clusterapi --node-group-auto-discovery=clusterapi:namespace=default": (
        "needs a live Cluster API management cluster"
    ),
    # docs/comparison.md's scaled runs read what `python -m benchmarks.scaled_scenario` (a benchmark,
    # not a kubetide command) wrote the line before; tests/test_scaled_scenario.py simulates one.
    "kubetide simulate /tmp/q200.yaml --no-report": (
        "reads /tmp/q200.yaml, which the benchmarks.scaled_scenario line before it writes"
    ),
    "kubetide simulate /tmp/pdb30.yaml --no-report --compare cluster-autoscaler:policy=cluster-autoscaler "
    "--compare kubetide:policy=kubetide --compare karpenter:policy=karpenter": (
        "reads /tmp/pdb30.yaml, which the benchmarks.scaled_scenario line before it writes"
    ),
}

SYNOPSES = {
    # its first line: the next ones are not joined by `\`
    "kubetide simulate [SCENARIO] [--seed N] [--duration D] [--out DIR] [--json] [--no-report]": (
        "the usage synopsis of docs/simulate.md"
    ),
}

SLOW = {
    "kubetide sweep examples/nightly-scale-down.yaml --grid scale-down-unneeded-time=5m,10m,20m "
    "--grid max-drain-parallelism=1,5,10 --seeds 20": "180 simulated nights: minutes of CPU",
    "kubetide simulate examples/comparison/karpenter-consolidation.yaml": (
        "three policies on 1 000 pods and up to 140 nodes: half a minute of CPU"
    ),
    "kubetide sweep examples/comparison/quarter-load.yaml --seeds 5": "15 simulated 4-hour runs",
    "kubetide simulate examples/nightly-scale-down.yaml --compare cluster-autoscaler:policy=cluster-autoscaler "
    "--compare kubetide:policy=kubetide --compare karpenter:policy=karpenter": (
        "three 3-hour runs of 120 nodes"
    ),
    "kubetide simulate examples/nightly-scale-down.yaml --compare ca:policy=cluster-autoscaler "
    "--compare kubetide: --compare karpenter:policy=karpenter": "three 3-hour runs of 120 nodes",
    # README's block of the bundled examples (15 s of the suite's wall time): the suite runs each
    # example's simulation twice more without it, tests/golden pinning its `simulate --no-report
    # --no-compare` output and tests/sim/test_sim_examples.py its invariants (the report and the
    # compare are tests/sim's and tests/cli's); the block's schedule, downscale and qos commands on
    # the same files are tests/cli's.
    "kubetide simulate examples/hpa-night.yaml": "README's nine example simulations in one block",
}

# Documented exit codes other than 0, with where the doc says so
EXIT_CODES = {
    "kubetide simulate --set scan-intervl=20s": (
        2,
        "docs/simulate.md: a bad one is one line and exit code 2",
    ),
    "kubetide simulate --set scan-interval=soon": (
        2,
        "docs/simulate.md: a bad one is one line and exit code 2",
    ),
}

# (doc, first line of the output block) -> (the command printing it, its exit code)
SHOWN_OUTPUT = {
    ("docs/simulate.md", "nightly-scale-down: 3 settings compared over 3h, seed 7"): (
        "kubetide simulate examples/nightly-scale-down.yaml --compare today: --compare "
        "patient:scale-down-unneeded-time=30m --compare "
        "eager:scale-down-unneeded-time=2m,max-scale-down-parallelism=20",
        0,
    ),
    ("docs/why-not-scaled-down.md", "node general-a3: unremovable: BlockedByPod"): (
        "kubetide plan examples/plan-cluster.yaml --node-groups examples/plan-node-groups.yaml --node general-a3",
        0,
    ),
    ("docs/why-not-scaled-down.md", "node mixed-d: unremovable: BlockedByPod"): (
        "kubetide plan examples/plan-blockers.yaml --node mixed-d",
        0,
    ),
}

NOT_OUTPUT = {
    ("README.md", "kubetide: error: cluster.yaml: items[3] (Pod default/web-1): spec.containers[0]"): (
        "the error for an illustrative bad dump; tests/cli/test_inputs.py checks these lines"
    ),
    ("docs/architecture.md", "cli/"): "the source tree, not output",
    ("docs/install.md", "kubetide: error: in-cluster configuration: missing permission"): (
        "printed in a cluster without the RBAC (tests/kube)"
    ),
    ("docs/install.md", "build.sh: pin libpam0g"): "deploy/image/build.sh's message, not kubetide's",
    ("docs/install.md", 'deployments.apps "web" is forbidden'): "the API server's answer, not kubetide's",
    ("docs/outputs.md", "kubetide: warning: cluster.yaml: 2 nodes are over-committed"): (
        "the warning for an illustrative over-committed dump"
    ),
    ("docs/scenarios.md", "kubetide scenario from-cluster DUMP"): "the usage synopsis",
    ("docs/simulate.md", "kubetide: error: s.yaml: spec.events[0].scale.replicas: 100,000 pods"): (
        "the error for an illustrative oversized scenario"
    ),
    ("docs/simulate.md", "kubetide: error: --grid: nightly.yaml has spec.compare"): (
        "errors for illustrative scenarios, no command shown"
    ),
}


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    fence: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def code_blocks() -> list[Block]:
    blocks = []
    for path in DOCS:
        text = path.read_text()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            blocks.append(Block(str(path.relative_to(REPO)), line, match.group(2), match.group(3)))
    return blocks


def transcript(block: Block) -> list[tuple[str, list[str]]]:
    """The block's kubetide commands, each with the output lines shown under it (a console block
    shows them: its commands are the lines after a `$ ` prompt, the lines up to the next prompt
    their output)."""
    commands: list[tuple[str, list[str]]] = []
    shown: list[str] = []
    for raw in re.sub(r"\\\n", " ", block.body).splitlines():
        line = raw.strip()
        if block.fence == "console" and not line.startswith("$ "):
            shown.append(line)
            continue
        shown = []
        line = line.removeprefix("$ ")
        if line.startswith("#"):
            continue
        for part in line.split(" #", 1)[0].split("&&"):
            words = part.split()
            if words[:1] == ["kubetide"]:
                commands.append((" ".join(words), shown))
    return commands


def commands_in(block: Block) -> list[str]:
    return [command for command, _ in transcript(block)]


def documented_commands() -> list[tuple[Block, str]]:
    return [(b, c) for b in code_blocks() if b.fence in SHELL_FENCES for c in commands_in(b)]


def output_blocks() -> list[Block]:
    return [b for b in code_blocks() if b.fence in OUTPUT_FENCES]


def output_key(block: Block, keys) -> tuple[str, str] | None:
    """The listed key whose first-line prefix this block starts with."""
    first = block.body.strip().splitlines()[0] if block.body.strip() else ""
    found = [k for k in keys if k[0] == block.doc and first.startswith(k[1])]
    return found[0] if found else None


# Runs in a fresh directory (the examples/ link alone), by command, each with whether it wrote
# anything there: such a run prints the same in any fresh directory, so a test that runs the
# same command in one takes it from here (the docs show a few commands twice, and SHOWN_OUTPUT
# runs commands a block already ran) unless a later command of its block reads what it wrote.
_FRESH_RUNS: dict[str, tuple[subprocess.CompletedProcess[str], bool]] = {}


def _fresh(cwd: Path) -> bool:
    return [entry.name for entry in cwd.iterdir()] == ["examples"]


def run_kubetide(command: str, cwd: Path, *, last: bool = True) -> subprocess.CompletedProcess[str]:
    """The command's run in `cwd`; `last`: no later command of the test runs in `cwd`."""
    fresh = _fresh(cwd)
    if fresh and command in _FRESH_RUNS:
        done, wrote = _FRESH_RUNS[command]
        if last or not wrote:
            return done
    argv = command.split()[1:]  # no documented command quotes an argument
    done = subprocess.run(
        [sys.executable, "-m", "kubetide", *argv],
        cwd=cwd,
        env={**os.environ, "COLUMNS": COLUMNS},
        capture_output=True,
        text=True,
        check=False,
    )
    if fresh:
        _FRESH_RUNS[command] = (done, not _fresh(cwd))
    return done


def workdir(tmp_path: Path) -> Path:
    (tmp_path / "examples").symlink_to(REPO / "examples")
    return tmp_path


def listed(command: str) -> str | None:
    return NOT_OFFLINE.get(command) or SYNOPSES.get(command)


def block_params():
    params = []
    for block in code_blocks():
        if block.fence not in SHELL_FENCES:
            continue
        commands = commands_in(block)
        runnable = [c for c in commands if not listed(c)]
        if runnable:
            marks = [pytest.mark.slow] if any(c in SLOW for c in runnable) else []
            params.append(pytest.param(block, runnable, id=block.where, marks=marks))
        for command in commands:
            if reason := listed(command):
                params.append(
                    pytest.param(
                        block, [command], id=f"{block.where} {command}", marks=pytest.mark.skip(reason=reason)
                    )
                )
    return params


@pytest.mark.parametrize(("block", "commands"), block_params())
def test_documented_commands_run(block, commands, tmp_path):
    cwd = workdir(tmp_path)
    shown = dict(transcript(block))
    for index, command in enumerate(commands):
        done = run_kubetide(command, cwd, last=index == len(commands) - 1)
        expected = EXIT_CODES.get(command, (0, ""))[0]
        assert done.returncode == expected, f"{block.where}: {command}: exit {done.returncode}\n{done.stderr}"
        assert "Traceback" not in done.stderr, f"{block.where}: {command}\n{done.stderr}"
        assert_printed(shown[command], done, f"{block.where}: {command}")


def test_commands_are_found_where_the_docs_show_them():
    found = {c for _, c in documented_commands()}
    assert "kubetide simulate" in found  # README's quick start, after `pip install -e . &&`
    assert "kubetide simulate examples/pdb-paced-drain.yaml" in found  # a trailing comment dropped
    assert SLOW.keys() <= found  # a command continued over two lines with `\`


def test_every_listed_command_is_still_documented():
    found = {c for _, c in documented_commands()}
    for listing in (NOT_OFFLINE, SYNOPSES, SLOW):
        assert listing.keys() <= found, sorted(listing.keys() - found)
    assert EXIT_CODES.keys() <= found, sorted(EXIT_CODES.keys() - found)
    assert not NOT_OFFLINE.keys() & SLOW.keys() and not SYNOPSES.keys() & SLOW.keys()


def test_every_output_block_is_checked_or_says_why_not():
    keys = SHOWN_OUTPUT.keys() | NOT_OUTPUT.keys()
    unlisted = [b.where for b in output_blocks() if output_key(b, keys) is None]
    assert not unlisted, f"bare code blocks neither in SHOWN_OUTPUT nor NOT_OUTPUT: {unlisted}"
    claimed = {output_key(b, keys) for b in output_blocks()}
    assert keys <= claimed, sorted(keys - claimed)


def shown_output_params():
    blocks = {output_key(b, SHOWN_OUTPUT.keys()): b for b in output_blocks()}
    return [
        pytest.param(blocks.get(key), command, code, id=f"{key[0]}: {command}")
        for key, (command, code) in SHOWN_OUTPUT.items()
    ]


def normalized(line: str) -> str:
    return " ".join(line.split())


@pytest.mark.parametrize(("block", "command", "exit_code"), shown_output_params())
def test_shown_output_is_what_the_command_prints(block, command, exit_code, tmp_path):
    assert block is not None, f"no output block for {command}"
    doc_text = normalized((REPO / block.doc).read_text().replace("`", " ").replace("\\\n", " "))
    assert normalized(command) in doc_text, f"{block.doc} does not show the command {command}"
    done = run_kubetide(command, workdir(tmp_path))
    assert done.returncode == exit_code, done.stderr
    assert_printed(block.body.splitlines(), done, f"{block.where}: {command}")


def assert_printed(shown_lines: list[str], done: subprocess.CompletedProcess[str], what: str) -> None:
    """Each shown line (spacing aside) is a line the command printed, in the shown order."""
    printed = iter(normalized(line) for line in (done.stdout + done.stderr).splitlines())
    for shown in filter(None, map(normalized, shown_lines)):
        assert any(line == shown for line in printed), (
            f"{what}: {shown!r} not printed (or not in this order)\n{done.stdout}{done.stderr}"
        )
