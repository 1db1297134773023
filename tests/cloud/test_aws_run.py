"""`kubetide run --cloud-provider aws`: bad flags are one line and exit 2, before any AWS or
Kubernetes call (no endpoint exists here to call)."""

import pytest

from kubetide.cli.main import main


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--cloud-provider", "aws", "--nodes=1:x:web"], "run: --nodes=1:x:web: MAX must be a whole number"),
        (["--cloud-provider", "aws", "--nodes=3:1:web"], "MAX (1) is less than MIN (3)"),
        (["--cloud-provider", "aws"], "run: --cloud-provider aws needs node groups"),
        (["--cloud-provider", "aws", "--node-group-auto-discovery=mig:x"], "only asg: is supported"),
        (
            ["--cloud-provider", "aws", "--nodes=1:3:web", "--node-groups", "g.yaml"],
            "--node-groups is the kwok",
        ),
        (
            ["--cloud-provider", "kwok", "--nodes=1:3:web"],
            "run: --nodes is for --cloud-provider=aws, not kwok",
        ),
    ],
)
def test_bad_aws_flags_are_one_line(flags, message, capsys, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens: a call would hang or fail
    code = main(["run", "--kubeconfig", "/nonexistent/kubeconfig", *flags])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1, err
