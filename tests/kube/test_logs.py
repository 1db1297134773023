"""kube/logs.py: klog's text header and component-base's JSON lines, with structured fields."""

from __future__ import annotations

import io
import json
import logging
import re
import sys

import pytest

from kubetide.kube.logs import JsonFormatter, KlogTextFormatter, configure


def record(level=logging.INFO, message="Scale-down: node %s removed (%s)", args=("n1", "empty"), fields=None):
    item = logging.LogRecord("kubetide.run", level, "/src/kubetide/cli/run.py", 42, message, args, None)
    item.created = 1_800_000_000.25
    if fields is not None:
        item.fields = fields
    return item


def test_text_has_klogs_header_and_the_fields_after_the_message():
    line = KlogTextFormatter().format(record(fields={"node": "n1", "reason": "empty"}))
    assert re.fullmatch(
        r'I0115 08:00:00\.250000 \d+ kubetide\.run\] Scale-down: node n1 removed \(empty\) node="n1" reason="empty"',
        line,
    ), line


def test_json_is_one_object_a_line_with_the_fields_beside_msg():
    line = JsonFormatter().format(record(fields={"node": "n1", "reason": "empty"}))
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["msg"] == "Scale-down: node n1 removed (empty)"
    assert (parsed["ts"], parsed["v"], parsed["node"], parsed["reason"]) == (
        1_800_000_000.25,
        0,
        "n1",
        "empty",
    )
    assert parsed["caller"] == "run.py:42" and "severity" not in parsed


def test_json_warnings_say_so_and_exceptions_go_to_err():
    try:
        raise ValueError("boom")
    except ValueError:
        item = record(logging.WARNING, "loop failed", ())
        item.exc_info = sys.exc_info()
    parsed = json.loads(JsonFormatter().format(item))
    assert parsed["severity"] == "warning" and "ValueError: boom" in parsed["err"]


@pytest.mark.parametrize(("verbosity", "debug"), [(0, False), (4, True)])
def test_verbosity_4_shows_every_loop(verbosity, debug):
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.getLogger("kubetide").level
    try:
        configure(verbosity, "json")
        assert logging.getLogger("kubetide.run").isEnabledFor(logging.DEBUG) is debug
        assert isinstance(root.handlers[0].formatter, JsonFormatter)
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        logging.getLogger("kubetide").setLevel(saved[2])


def test_an_unknown_logging_format_is_one_line_and_exit_2(capsys):
    from kubetide.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--cloud-provider=kwok", "--logging-format=yaml"])
    assert exit_info.value.code == 2
    assert "--logging-format: invalid choice: 'yaml'" in capsys.readouterr().err


def test_the_handler_writes_to_stderr_as_it_is_when_a_record_comes():
    """A process's handler follows sys.stderr: a stream replaced (and closed) after logging was
    set up, as a test harness does, is never written to ("--- Logging error ---")."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.getLogger("kubetide").level, sys.stderr
    first, second = io.StringIO(), io.StringIO()
    try:
        sys.stderr = first
        configure(0, "text")
        first.close()
        sys.stderr = second
        logging.getLogger("kubetide.run").info("after the swap")
        assert "after the swap" in second.getvalue()
    finally:
        sys.stderr = saved[3]
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        logging.getLogger("kubetide").setLevel(saved[2])
