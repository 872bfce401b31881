"""Structured logs: JSON lines a log store can index, text a person can read, one setup per process."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from vcsat.adapters.errors import InputError
from vcsat.adapters.live.logs import setup_logging


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    """A stream the test reads; the root logger is put back as it was afterwards."""
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    saved_quiet = {name: logging.getLogger(name).level for name in ("urllib3", "kubernetes")}
    buffer = io.StringIO()
    yield buffer
    for handler in list(root.handlers):
        if handler not in saved_handlers:
            root.removeHandler(handler)
    root.setLevel(saved_level)
    for name, level in saved_quiet.items():
        logging.getLogger(name).setLevel(level)


def _lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_json_line_has_fixed_fields_and_extras(stream: io.StringIO) -> None:
    setup_logging("json", "INFO", stream=stream)
    logging.getLogger("vcsat.test").info("bound %d pods", 3, extra={"podgroup": "ns/pg", "nodes": ["a", "b"]})
    (line,) = _lines(stream)
    entry = json.loads(line)
    assert entry["level"] == "INFO"
    assert entry["logger"] == "vcsat.test"
    assert entry["msg"] == "bound 3 pods"
    assert entry["podgroup"] == "ns/pg"
    assert entry["nodes"] == ["a", "b"]
    assert entry["ts"].endswith("Z") and entry["ts"][10] == "T"


def test_json_extra_never_overwrites_fixed_fields(stream: io.StringIO) -> None:
    setup_logging("json", stream=stream)
    logging.getLogger("vcsat.test").warning("m", extra={"level": "fake", "ts": "never"})
    entry = json.loads(_lines(stream)[0])
    assert entry["level"] == "WARNING"
    assert entry["extra.level"] == "fake"
    assert entry["extra.ts"] == "never"


def test_json_carries_the_exception_and_odd_values(stream: io.StringIO) -> None:
    setup_logging("json", stream=stream)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("vcsat.test").exception("failed", extra={"obj": object()})
    (line,) = _lines(stream)  # the traceback stays inside the one JSON line
    entry = json.loads(line)
    assert "RuntimeError: boom" in entry["exc"]
    assert entry["obj"].startswith("<object object")


@pytest.mark.parametrize(
    ("extra", "expected_tail"),
    [
        ({}, "vcsat.test: hello"),
        ({"pod": "ns/p"}, "vcsat.test: hello pod=ns/p"),
        ({"message_text": "two words"}, 'vcsat.test: hello message_text="two words"'),
        ({"empty": ""}, 'vcsat.test: hello empty=""'),
        ({"n": 3, "ok": True}, "vcsat.test: hello n=3 ok=true"),
        ({"nodes": ["a", "b"]}, 'vcsat.test: hello nodes="[\\"a\\", \\"b\\"]"'),
    ],
)
def test_text_line(stream: io.StringIO, extra: dict[str, object], expected_tail: str) -> None:
    setup_logging("text", "DEBUG", stream=stream)
    logging.getLogger("vcsat.test").info("hello", extra=extra)
    (line,) = _lines(stream)
    assert line.endswith(expected_tail)
    assert " INFO  vcsat.test: " in line


@pytest.mark.parametrize(
    ("level", "shown"),
    [("DEBUG", ["debug", "info", "warning"]), ("info", ["info", "warning"]), ("WARNING", ["warning"])],
)
def test_level_filters(stream: io.StringIO, level: str, shown: list[str]) -> None:
    setup_logging("json", level, stream=stream)
    logger = logging.getLogger("vcsat.test")
    logger.debug("debug")
    logger.info("info")
    logger.warning("warning")
    assert [json.loads(line)["msg"] for line in _lines(stream)] == shown


def test_second_setup_replaces_the_first(stream: io.StringIO) -> None:
    first = io.StringIO()
    setup_logging("text", stream=first)
    setup_logging("json", stream=stream)
    logging.getLogger("vcsat.test").info("once")
    assert first.getvalue() == ""
    assert len(_lines(stream)) == 1


def test_chatty_client_libraries_stay_quiet_at_debug(stream: io.StringIO) -> None:
    setup_logging("json", "DEBUG", stream=stream)
    logging.getLogger("urllib3.connectionpool").debug("GET /api with Authorization: Bearer secret")
    logging.getLogger("vcsat.test").debug("ours")
    assert [json.loads(line)["msg"] for line in _lines(stream)] == ["ours"]


@pytest.mark.parametrize(
    ("fmt", "level", "field"),
    [("xml", "INFO", "--log-format"), ("text", "LOUD", "--log-level"), ("JSON", "INFO", "--log-format")],
)
def test_bad_values_are_input_errors(fmt: str, level: str, field: str) -> None:
    with pytest.raises(InputError) as caught:
        setup_logging(fmt, level)
    assert caught.value.field == field
    assert "\n" not in str(caught.value)
