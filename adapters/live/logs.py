"""Log lines that people can read and machines can parse, set up once per process.

The scheduler and the Job controller run for days in a cluster, where logs are shipped to a store
and searched by field (``pod``, ``podgroup``, ``lease``...). So every module logs plain messages
with the facts as key-values in ``extra`` (``log.info("bound", extra={"pod": "ns/p"})``), and this
module renders them: as one JSON object per line for the log store, or as text with ``key=value``
pairs for a terminal. Nothing else in vcsat configures logging.
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
from typing import Any, TextIO

from vcsat.adapters.errors import InputError

FORMATS = ("text", "json")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

# Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
}
_HANDLER_MARK = "_vcsat_handler"
"""Set on the handler we install, so a second setup replaces it instead of doubling every line."""
_QUIET_LOGGERS = ("urllib3", "kubernetes")
"""Chatty at DEBUG with request dumps (bearer tokens included); kept at WARNING or above."""


def extras(record: logging.LogRecord) -> dict[str, Any]:
    """The key-values a caller passed in ``extra``, in the order given."""
    return {key: value for key, value in vars(record).items() if key not in _STANDARD_ATTRIBUTES}


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, then the extra key-values."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in extras(record).items():
            # A key-value never overwrites the four fixed fields a log store indexes on.
            entry[key if key not in entry else f"extra.{key}"] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``2025-01-02T03:04:05.678Z INFO  vcsat.leader: became leader lease=ns/x identity=a``."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {record.levelname:<5} {record.name}: {record.getMessage()}"
        pairs = " ".join(f"{key}={_text_value(value)}" for key, value in extras(record).items())
        if pairs:
            line = f"{line} {pairs}"
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        if record.stack_info:
            line = f"{line}\n{self.formatStack(record.stack_info)}"
        return line


def _text_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    if text == "" or any(ch.isspace() or ch in '"=' for ch in text):
        return json.dumps(text, ensure_ascii=False)
    return text


def setup_logging(fmt: str = "text", level: str = "INFO", *, stream: TextIO | None = None) -> None:
    """Send every logger's records to ``stream`` (stderr) as ``fmt`` ("text" or "json") at ``level``.

    Calling it again replaces the earlier setup. Bad values are bad input (exit 2 from the CLI).
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown log format {fmt!r}; expected one of {', '.join(FORMATS)}", field="--log-format")
    level_name = level.upper()
    if level_name not in LEVELS:
        raise InputError(f"unknown log level {level!r}; expected one of {', '.join(LEVELS)}", field="--log-level")

    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    setattr(handler, _HANDLER_MARK, True)

    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(level_name)
    quiet = max(logging.getLevelName(level_name), logging.WARNING)
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(quiet)
