"""`kubetide run`'s configuration under random input: every mistake is one line and exit 2.

The API server here is unreachable on purpose: a configuration that passes every check ends at
"cannot reach the API server", also exit 2, so whatever the flags, nothing may crash, hang or
print a traceback, and no input may get as far as writing anything.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetide.cli.main import main

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""
GROUPS = """\
nodeGroups:
- name: small
  maxSize: 3
  template: {status: {allocatable: {cpu: "2", memory: 4Gi}}}
"""

FLAG_NAMES = [
    "scan-interval",
    "scale-down-unneeded-time",
    "scale-down-utilization-threshold",
    "max-drain-parallelism",
    "expander",
    "cores-total",
    "max-nodes-total",
    "leader-elect",
    "leader-elect-lease-duration",
    "leader-elect-renew-deadline",
    "leader-elect-retry-period",
    "kube-client-qps",
    "kube-client-burst",
    "address",
    "namespace",
    "max-inactivity",
    "write-status-configmap",
    "scale-down-enabled",
    "no-such-flag",
    "scale-down-unneded-time",
]
VALUES = st.one_of(
    st.sampled_from(
        [
            "10s",
            "0",
            "-1",
            "1e100",
            "true",
            "false",
            "nan",
            "inf",
            "",
            "0:10",
            "least-waste",
            ":0",
            "x:y",
            "5m",
        ]
    ),
    st.text(alphabet=string.printable, max_size=12),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("run-flags")
    kubeconfig = directory / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    groups = directory / "groups.yaml"
    groups.write_text(GROUPS)
    return str(kubeconfig), str(groups)


@settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flags=st.lists(st.tuples(st.sampled_from(FLAG_NAMES), VALUES, st.booleans()), max_size=4))
def test_any_flags_end_in_one_line_and_exit_2(files, capsys, flags):
    kubeconfig, groups = files
    argv = ["run", f"--kubeconfig={kubeconfig}", "--cloud-provider=kwok", f"--node-groups={groups}"]
    for name, value, joined in flags:
        argv += [f"--{name}={value}"] if joined else [f"--{name}", value]
    try:
        code = main(argv)
    except SystemExit as exit:
        code = exit.code
    stderr = capsys.readouterr().err
    assert code == 2, (argv, stderr)
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("kubetide: error: ")]
    assert len(errors) == 1, (argv, stderr)


def test_a_valid_configuration_stops_at_the_unreachable_server(files, capsys):
    kubeconfig, groups = files
    code = main(["run", f"--kubeconfig={kubeconfig}", "--cloud-provider=kwok", f"--node-groups={groups}"])
    assert code == 2
    assert "cannot reach the API server at https://127.0.0.1:1" in capsys.readouterr().err
