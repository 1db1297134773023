"""Issue 27 item 2: every Cluster Autoscaler flag understood.

CA's own flag list (data/ca-flags-<version>.tsv, extracted from its config/flags/flags.go) is the
reference: every flag in it is implemented, approximated, ignored as infrastructure or refused
(autoscaler/ca_flags.py), pasting CA's defaults never fails, and docs/ca-flags.md is this table.
A new CA release: drop its list here, bump CA_VERSION, and this file says what to classify.

`KUBETIDE_WRITE_DOCS=1 pytest tests/autoscaler/test_ca_flag_table.py` rewrites docs/ca-flags.md.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from kubetide.autoscaler.ca_flags import CA_FLAGS, CA_VERSION, Treatment
from kubetide.autoscaler.options import (
    DEPRECATED_ALIASES,
    FLAGS,
    AutoscalerOptions,
    ResourceRange,
    parse_options,
    treatment_of,
)
from kubetide.errors import ManifestError

ROOT = Path(__file__).resolve().parents[2]
TSV = Path(__file__).parent / "data" / f"ca-flags-{CA_VERSION}.tsv"
DOC = ROOT / "docs" / "ca-flags.md"
# Where kubetide's default differs from CA's on purpose (README, options.py).
DIFFERENT_DEFAULTS = {"max-drain-parallelism"}


def ca_flags() -> dict[str, tuple[str, str]]:
    """name -> (type, default as written in Go) from CA's list."""
    rows = {}
    for line in TSV.read_text().splitlines()[2:]:
        name, kind, default = [*line.split("\t"), ""][:3]
        rows[name] = (kind, default)
    return rows


CA = ca_flags()
# Fields that are kubetide's own, not CA's (surge-before-evict, ...): listed as such in the doc.
KUBETIDE_OWN = sorted(name for name in FLAGS if name not in CA and name not in CA_FLAGS)


def test_the_list_is_cas_whole_list():
    assert len(CA) > 120 and "scan-interval" in CA and "max-drain-parallelism" in CA


@pytest.mark.parametrize("name", sorted(CA))
def test_every_ca_flag_is_classified(name):
    assert treatment_of(name) is not None, f"--{name} (CA {CA_VERSION}) is not classified in ca_flags.py"


def test_the_table_is_consistent():
    for name, flag in CA_FLAGS.items():
        if name in FLAGS:
            # A field is implemented or approximated, never ignored or refused.
            assert flag.treatment is Treatment.APPROXIMATED, name
        elif flag.treatment is Treatment.IMPLEMENTED:
            assert flag.choices, f"{name}: implemented without a field needs its choices"
        if flag.treatment is not Treatment.IMPLEMENTED:
            assert flag.note, f"{name}: says nothing of what kubetide does"
        assert (flag.inert is not None) == (flag.treatment is Treatment.REFUSED), name
    assert "surge-before-evict" in KUBETIDE_OWN and "scan-interval" not in KUBETIDE_OWN


_GO_UNITS = {"Second": 1, "Minute": 60, "Hour": 3600}


def go_literal(kind: str, text: str) -> str | None:
    """CA's default as a flag value, when it is a literal (None for expressions like config.X)."""
    text = text.strip()
    if kind == "bool" and text in ("true", "false"):
        return text
    if kind in ("int", "float64") and re.fullmatch(r"-?[\d.]+(\*[\d.]+)?", text):
        value = eval(text)  # digits and one '*': CA writes 10*60
        return str(value)
    if kind == "string" and re.fullmatch(r'"[^"]*"', text):
        return text.strip('"')
    if kind == "duration":
        match = re.fullmatch(r"(?:(\d+)\*)?time\.(Second|Minute|Hour)", text)
        if match:
            return f"{int(match.group(1) or 1) * _GO_UNITS[match.group(2)]}s"
        if text in ("0", "time.Duration(0)"):
            return "0s"
    return None


LITERAL_DEFAULTS = {
    name: value for name, (kind, text) in CA.items() if (value := go_literal(kind, text)) is not None
}


def test_cas_literal_defaults_are_read():
    assert len(LITERAL_DEFAULTS) > 80
    assert LITERAL_DEFAULTS["max-graceful-termination-sec"] == "600"
    assert LITERAL_DEFAULTS["blocking-system-pod-distruption-timeout"] == "3600s"


@pytest.mark.parametrize("name", sorted(LITERAL_DEFAULTS))
def test_pasting_cas_default_is_accepted_and_is_kubetides_default(name):
    value = LITERAL_DEFAULTS[name]
    options = parse_options([f"--{name}={value}"], "s.yaml", ignored=[])
    if name in FLAGS and name not in DIFFERENT_DEFAULTS:
        assert options == AutoscalerOptions(), f"--{name}: kubetide's default is not CA's {value}"


REFUSED = sorted(name for name, flag in CA_FLAGS.items() if flag.treatment is Treatment.REFUSED)


@pytest.mark.parametrize("name", REFUSED)
def test_a_refused_flag_changes_nothing_at_cas_default_and_is_refused_otherwise(name):
    flag = CA_FLAGS[name]
    assert parse_options({name: flag.inert}, "s.yaml") == AutoscalerOptions()
    other = "true" if flag.kind == "bool" else "something"
    for flags in ({name: other}, [f"--{name}={other}"]):
        with pytest.raises(ManifestError) as error:
            parse_options(flags, "s.yaml")
        assert error.value.field == f"spec.autoscaler.{name}"
        assert error.value.message.startswith(
            "refused, a Cluster Autoscaler flag kubetide does not support: "
        )
        assert flag.note in error.value.message and "\n" not in str(error.value)


# The flags of a real EKS args list that were "unknown" before (issue 27).
EKS_ARGS = [
    "./cluster-autoscaler",
    "--v=4",
    "--cloud-provider=aws",
    "--balancing-ignore-label=eks.amazonaws.com/sourceLaunchTemplateId",
    "--balancing-ignore-label=k8s.amazonaws.com/eniConfig",
    "--balancing-label=node.kubernetes.io/instance-type",
    "--ignore-taint=node.cilium.io/agent-not-ready",
    "--startup-taint=ebs.csi.aws.com/agent-not-ready",
    "--status-taint=example.com/maintenance",
    "--gpu-total=nvidia.com/gpu:0:16",
    "--cordon-node-before-terminating=true",
    "--force-delete-unregistered-nodes=true",
    "--scale-down-non-empty-candidates-count=30",
    "--scale-down-candidates-pool-ratio=0.1",
    "--scale-down-candidates-pool-min-count=50",
    "--drain-priority-config=10000:20,1000:100,0:60",
    "--max-allocatable-difference-ratio=0.1",
]


def test_a_real_eks_args_list_is_taken_whole():
    warnings: list[str] = []
    ignored: list[str] = []
    options = parse_options(EKS_ARGS, "s.yaml", warnings=warnings, ignored=ignored)
    assert options.balancing_ignore_label == (
        "eks.amazonaws.com/sourceLaunchTemplateId",
        "k8s.amazonaws.com/eniConfig",
    )
    assert options.balancing_label == ("node.kubernetes.io/instance-type",)
    assert options.ignore_taint == ("node.cilium.io/agent-not-ready",)
    assert options.startup_taint == ("ebs.csi.aws.com/agent-not-ready",)
    assert options.status_taint == ("example.com/maintenance",)
    assert options.max_allocatable_difference_ratio == 0.1
    assert ignored == ["v", "cloud-provider"]
    approximated = [w.split(": ")[0].removeprefix("spec.autoscaler.") for w in warnings]
    assert approximated == [
        "ignore-taint",
        "startup-taint",
        "gpu-total",
        "cordon-node-before-terminating",
        "force-delete-unregistered-nodes",
        "drain-priority-config",
    ]
    assert all(": approximated: " in w for w in warnings)
    # The legacy scale-down's candidate pool: read as CA reads it, and used, as by CA's planner,
    # by no decision (scaledown/planning/limit.py).
    assert (
        options.scale_down_non_empty_candidates_count,
        options.scale_down_candidates_pool_ratio,
        options.scale_down_candidates_pool_min_count,
    ) == (30, 0.1, 50)


def test_a_non_positive_candidates_count_is_cas_no_limit_and_accepted():
    options = parse_options(["--scale-down-non-empty-candidates-count=-1"], "s.yaml")
    assert options.scale_down_non_empty_candidates_count == -1


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"scale-down-non-empty-candidates-count": "many"}, "expected an integer"),
        ({"cordon-node-before-terminating": "maybe"}, "expected true or false"),
        ({"estimator": "oracle"}, "kubetide does binpacking only"),
        ({"startup-taint": [1]}, "expected names"),
        ({"max-allocatable-difference-ratio": "2"}, "between 0 and 1"),
    ],
)
def test_values_of_accepted_flags_are_checked(flags, message):
    with pytest.raises(ManifestError, match=message):
        parse_options(flags, "s.yaml")


def test_an_unknown_flag_says_it_is_neither_cas_nor_kubetides():
    with pytest.raises(ManifestError) as error:
        parse_options(["--frobnicate=1"], "s.yaml")
    assert error.value.field == "spec.autoscaler.frobnicate"
    assert (
        error.value.message == f"unknown flag: neither a Cluster Autoscaler {CA_VERSION} flag nor kubetide's"
    )


# -- docs/ca-flags.md ----------------------------------------------------------------------------
def _default_text(name: str) -> str:
    value = getattr(AutoscalerOptions(), FLAGS[name].name)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, ResourceRange):
        return f"{value.min}:{value.max}"
    if isinstance(value, tuple):
        return ",".join(value)
    if (
        isinstance(value, float)
        and FLAGS[name].type == "float"
        and not name.endswith(("threshold", "percentage", "ratio"))
    ):
        return f"{value:g}s"
    return str(value)


def _row(name: str, ca_default: str) -> str:
    treatment = treatment_of(name)
    assert treatment is not None
    flag = CA_FLAGS.get(DEPRECATED_ALIASES.get(name, name))
    note = flag.note if flag is not None else ""
    if name in DEPRECATED_ALIASES:
        note = f"deprecated alias of {DEPRECATED_ALIASES[name]}"
    if flag is not None and flag.inert is not None:
        inert = flag.inert or '""'
        note = f"{note}; accepted at CA's default ({inert})"
    ours = _default_text(name) if name in FLAGS else ""
    if name in DIFFERENT_DEFAULTS:
        note = (note + "; " if note else "") + "kubetide's default differs on purpose (parallel drain)"
    cells = [
        f"`--{name}`",
        f"`{ca_default}`" if ca_default else "",
        treatment.value,
        f"`{ours}`" if ours else "",
        note,
    ]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def render_doc() -> str:
    counts = {t: 0 for t in Treatment}
    for name in CA:
        counts[treatment_of(name)] += 1  # type: ignore[index]
    summary = ", ".join(f"{n} {t.value}" for t, n in counts.items())
    lines = [
        "# Cluster Autoscaler flags in kubetide",
        "",
        "<!-- Generated from src/kubetide/autoscaler/ca_flags.py and CA's flag list by",
        "     tests/autoscaler/test_ca_flag_table.py (KUBETIDE_WRITE_DOCS=1 to rewrite); do not edit. -->",
        "",
        f"Every flag of the Cluster Autoscaler {CA_VERSION} (its `config/flags/flags.go`, {len(CA)} flags:",
        f"{summary}), the flags other packages register in its binary, and kubetide's own.",
        "Paste them into a scenario's `spec.autoscaler` (a map or the container's `args:` list), give",
        "them to `plan --set` / `simulate --set` / `sweep --grid`, or to `kubetide run`: all read them the same way.",
        "",
        "- **implemented**: CA's name, default and meaning;",
        "- **approximated**: accepted and checked; kubetide does what the note says instead, and says so in a warning;",
        "- **infrastructure**: where and how the process runs; no decision depends on it; accepted and named as ignored;",
        "- **refused**: a feature kubetide does not have; accepted at CA's default (it then changes nothing),",
        "  any other value is one line naming the flag, and exit code 2.",
        "",
        "A flag in none of these is unknown (with a did-you-mean). Repeatable flags (`--startup-taint`,",
        "`--balancing-label`, ...) add up in an args list; in a map or `--set`, give a list or commas.",
        "Booleans read as on CA's command line (pflag): alone, `--flag` means true; a value is joined",
        "(`--flag=false`) and spelled as Go's strconv.ParseBool spells it (`1 t T TRUE true True`,",
        "`0 f F FALSE false False`); in `--flag false` the `false` is a stray argument, refused. Every",
        "mistake in an args list or on `kubetide run`'s command line is named, all in one line.",
        "",
        f"## Cluster Autoscaler {CA_VERSION} flags",
        "",
        "| flag | CA default | kubetide | kubetide default | note |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [_row(name, default) for name, (_, default) in sorted(CA.items())]
    others = sorted(n for n in [*CA_FLAGS, *DEPRECATED_ALIASES] if n not in CA)
    lines += [
        "",
        "## Flags registered outside CA's flags.go (klog, leader election, logging) and deprecated names",
        "",
        "| flag | CA default | kubetide | kubetide default | note |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [_row(name, "") for name in others]
    lines += [
        "",
        "## kubetide's own",
        "",
        "| flag | CA default | kubetide | kubetide default | note |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [_row(name, "") for name in KUBETIDE_OWN]
    return "\n".join(lines) + "\n"


def test_the_doc_is_the_table():
    text = render_doc()
    if os.environ.get("KUBETIDE_WRITE_DOCS"):
        DOC.write_text(text)
    assert DOC.read_text() == text, "docs/ca-flags.md is stale: KUBETIDE_WRITE_DOCS=1 pytest " + __file__


def test_the_doc_names_every_flag_once():
    text = DOC.read_text()
    for name in [*CA, *CA_FLAGS, *KUBETIDE_OWN]:
        assert text.count(f"| `--{name}` |") == 1, name


# -- the command line: `--set` and a scenario's args list read a flag the same way -----------------
EXAMPLES = ROOT / "examples"


def plan(capsys, *sets):
    import kubetide.cli.main as cli_main

    argv = [
        "plan",
        str(EXAMPLES / "plan-cluster.yaml"),
        "--node-groups",
        str(EXAMPLES / "plan-node-groups.yaml"),
    ]
    for item in sets:
        argv += ["--set", item]
    code = cli_main.main([*argv, "--json"])
    return code, capsys.readouterr().err


def scenario_with(tmp_path, args):
    from kubetide.sim.spec.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(
        "apiVersion: kubetide.io/v1alpha1\nkind: Scenario\nmetadata: {name: args}\nspec:\n"
        f"  duration: 10m\n  autoscaler: {args!r}\n  nodeGroups:\n  - name: general\n    maxSize: 5\n"
        "    template: {status: {allocatable: {cpu: '4', memory: 16Gi}}}\n"
    )
    return load_scenario(path)


@pytest.mark.parametrize(
    "flag", ["namespace=kubetide", "v=4", "cloud-provider=aws", "gpu-total=nvidia.com/gpu:0:8"]
)
def test_set_accepts_what_an_args_list_accepts(capsys, tmp_path, flag):
    code, err = plan(capsys, flag)
    assert code == 0, err
    scenario_with(tmp_path, [f"--{flag}"])  # no error either
    name = flag.split("=")[0]
    treatment = treatment_of(name)
    if treatment is Treatment.IMPLEMENTED:
        assert err == ""
    else:  # said in one warning line, naming the flag and its class
        (line,) = err.splitlines()
        assert line.startswith(f"kubetide: warning: --set {name}: ")
        assert (
            "ignored, an infrastructure flag" if treatment is Treatment.INFRASTRUCTURE else "approximated"
        ) in line


@pytest.mark.parametrize(
    "flag",
    ["enable-provisioning-requests=true", "capacity-quotas-enabled=true", "scale-down-unneded-time=5m"],
)
def test_set_and_an_args_list_refuse_the_same_flags_in_one_line(capsys, tmp_path, flag):
    code, err = plan(capsys, flag)
    name = flag.split("=")[0]
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"kubetide: error: --set {name}: ")
    with pytest.raises(ManifestError) as error:
        scenario_with(tmp_path, ["./cluster-autoscaler", "--v=4", f"--{flag}"])
    assert error.value.field == f"spec.autoscaler.{name}"
    assert err.removeprefix(f"kubetide: error: --set {name}: ").strip() == error.value.message


def test_run_reads_its_flags_as_cas_command_line_repeatable_ones_adding_up():
    from kubetide.cli.run import parse_autoscaler_flags

    options = parse_autoscaler_flags(["--startup-taint=a", "--startup-taint", "b", "--scan-interval=20s"])
    assert (options.startup_taint, options.scan_interval) == (("a", "b"), 20)


def test_run_takes_a_boolean_alone_as_true_as_cas_command_line_does():
    from kubetide.cli.run import parse_autoscaler_flags
    from kubetide.errors import UserError

    options = parse_autoscaler_flags(["--balance-similar-node-groups", "--scan-interval", "20s"])
    assert (options.balance_similar_node_groups, options.scan_interval) == (True, 20)
    with pytest.raises(UserError, match="run: --enable-provisioning-requests: refused"):
        parse_autoscaler_flags(["--enable-provisioning-requests"])
