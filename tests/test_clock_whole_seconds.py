"""The creation stamps of a cluster read from the day and second tables: the very float the full
parse gives, and the same error for every stamp the full parse refuses."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert import clock
from vcsat.adapters.convert.clock import parse_clock, parse_text_clock


def _full_parse(text: str) -> float:
    moment = datetime.fromisoformat(text)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


@settings(max_examples=300, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)))
def test_a_whole_second_stamp_reads_as_the_full_parse_three_times(moment: datetime) -> None:
    text = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment:%H:%M:%S}Z"
    # The second from the day's tables, the third from the hour's.
    first, second, third = parse_text_clock(text), parse_text_clock(text), parse_text_clock(text)
    assert first == second == third == _full_parse(text)
    assert type(first) is float and type(second) is float and type(third) is float


def test_a_stamp_read_from_the_day_remembers_its_hour() -> None:
    parse_text_clock("2032-03-04T05:06:07Z")
    parse_text_clock("2032-03-04T05:06:07Z")
    assert clock._HOUR_STARTS["2032-03-04T05:"] == datetime(2032, 3, 4, 5, tzinfo=UTC).timestamp()
    assert parse_text_clock("2032-03-04T05:59:59Z") == _full_parse("2032-03-04T05:59:59Z")


def test_a_parsed_stamp_remembers_its_day() -> None:
    parse_text_clock("2031-02-03T04:05:06Z")
    assert clock._DAY_STARTS["2031-02-03T"] == datetime(2031, 2, 3, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    "text",
    [
        "2025-06-01T08:00:00Z",  # the API server's own spelling
        "2025-06-01T08:00:00.250000Z",  # fractions: the full parse
        "2025-06-01T08:00:00+02:00",  # another offset
        "2025-06-01T08:00:00",  # naive: UTC
        "2025-06-01 08:00:00Z",  # a space, as fromisoformat accepts
    ],
)
def test_every_spelling_reads_as_the_full_parse(text: str) -> None:
    parse_text_clock("2025-06-01T23:59:59Z")  # the day known to the tables
    assert parse_text_clock(text) == parse_clock(text) == _full_parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "2025-06-01T08:00:0٣Z",  # a digit, but not an ASCII one
        "2025-06-01T+8:00:00Z",
        "2025-02-30T08:00:00Z",  # no such day
        "2025-06-01T24:00:00Z",  # no such hour
        "2025-06-01T23:59:60Z",  # a leap second: Python has none
        "2025-06-01T8:00:000Z",  # digits in the wrong places, twenty characters all the same
        "2025-06-01T08:0a:00Z",
        "2025-06-01T08:60:00Z",  # no such minute, in a known hour
        "2025-06-01T08:00:00z",
    ],
)
def test_a_bad_stamp_is_refused_even_on_a_known_day(text: str) -> None:
    for _ in range(2):  # the second reading remembers the hour too
        parse_text_clock("2025-06-01T08:00:00Z")
        parse_text_clock("2025-02-28T08:00:00Z")
    with pytest.raises(ValueError, match="not an RFC 3339 time"):
        parse_text_clock(text)
