"""The process's log, as the Cluster Autoscaler's reads: klog's text header or component-base's
JSON (`--logging-format=json`), and klog's verbosity levels.

Levels (`--v`): 0 says every action an operator must be able to reconstruct afterwards (each
scale-up, taint, drain, deletion, abandoned deletion, halted loop, with counts and reasons); 4
adds every loop and why each node stays; 8 every HTTP request. Warnings and errors show at
every level.

A record may carry structured fields (`extra={"fields": {...}}`): JSON puts them beside `msg`,
text appends them as klog does (` key="value"`), so `grep node=a` finds a node's story in
either format.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

# Python's levels as klog's: INFO is V(0), DEBUG is V(4) (the kubetide loggers), and the HTTP
# client's request lines, also DEBUG, are switched on only from V(8).
_V_OF_LEVEL = {logging.DEBUG: 4}


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = getattr(record, "fields", None)
    return dict(fields) if isinstance(fields, dict) else {}


class KlogTextFormatter(logging.Formatter):
    """`I1127 03:32:05.123456 4242 kubetide.run] message key="value"` (klog's header, with the
    logger's name where klog has the source file)."""

    def format(self, record: logging.LogRecord) -> str:
        moment = time.gmtime(record.created)
        micros = int((record.created % 1) * 1_000_000)
        header = (
            f"{record.levelname[:1]}{time.strftime('%m%d %H:%M:%S', moment)}.{micros:06d} "
            f"{record.process} {record.name}]"
        )
        text = f"{header} {record.getMessage()}"
        for key, value in _fields(record).items():
            text += f" {key}={json.dumps(value, default=str)}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class JsonFormatter(logging.Formatter):
    """One JSON object a line, as component-base's JSON logger writes them: `ts` (Unix seconds),
    `caller`, `msg`, `v`, the record's fields, and `err` with the traceback of an exception."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 6),
            "caller": f"{record.module}.py:{record.lineno}",
            "msg": record.getMessage(),
            "v": _V_OF_LEVEL.get(record.levelno, 0),
            "logger": record.name,
        }
        if record.levelno >= logging.WARNING:
            line["severity"] = record.levelname.lower()
        line.update(_fields(record))
        if record.exc_info:
            line["err"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class _StderrHandler(logging.StreamHandler):
    """Writes to sys.stderr as it is when a record is emitted, not as it was when logging was set
    up: whoever replaces sys.stderr later (a test harness, a wrapper) still gets the lines, and a
    stream closed since is never written to."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def configure(verbosity: int, logging_format: str = "text") -> None:
    """Set up the root logger for a process (`kubetide run`, `kubetide qos-agent`)."""
    handler = _StderrHandler()
    handler.setFormatter(JsonFormatter() if logging_format == "json" else KlogTextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbosity >= 8 else logging.INFO)  # 8: every HTTP request too
    logging.getLogger("kubetide").setLevel(logging.DEBUG if verbosity >= 4 else logging.INFO)
