"""Cron schedules as Kubernetes' and Volcano's CronJob controllers read them (adapters/controller/cron.py).

Cases: the grammar (fields, ranges, steps, names, descriptors, ``@every``, ``TZ=``), the day rule
(day of month and weekday: both when either is ``*``, either otherwise), time zones and daylight
saving (a skipped wall time does not fire that day), a schedule that never fires, and refusals
that name the field. A property compares ``next_after`` with a minute-by-minute scan.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.controller.cron import ScheduleError, load_zone, parse_schedule


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


NEXT_CASES = [
    # (schedule, zone, after, next)
    ("*/5 * * * *", "UTC", utc(2026, 1, 1, 0, 3), utc(2026, 1, 1, 0, 5)),
    ("*/5 * * * *", "UTC", utc(2026, 1, 1, 0, 5), utc(2026, 1, 1, 0, 10)),
    ("* * * * *", "UTC", utc(2026, 1, 1, 0, 5, 30), utc(2026, 1, 1, 0, 6)),
    ("0 * * * *", "UTC", utc(2026, 1, 1, 23, 0), utc(2026, 1, 2, 0, 0)),
    ("15 10 * * *", "UTC", utc(2026, 1, 1, 10, 16), utc(2026, 1, 2, 10, 15)),
    ("0 0 1 * *", "UTC", utc(2026, 1, 31, 12, 0), utc(2026, 2, 1, 0, 0)),
    ("0 0 29 2 *", "UTC", utc(2026, 3, 1), utc(2028, 2, 29)),
    ("5/20 * * * *", "UTC", utc(2026, 1, 1, 0, 46), utc(2026, 1, 1, 1, 5)),
    ("10-12 * * * *", "UTC", utc(2026, 1, 1, 0, 12), utc(2026, 1, 1, 1, 10)),
    ("0 9 * * mon-fri", "UTC", utc(2026, 1, 2, 10, 0), utc(2026, 1, 5, 9, 0)),  # Friday -> Monday
    ("0 0 * * 0", "UTC", utc(2026, 1, 1), utc(2026, 1, 4)),  # Sunday is 0
    ("0 0 * JAN,jul *", "UTC", utc(2026, 2, 1), utc(2026, 7, 1)),
    # Day of month and weekday both restricted: either matches (13th, or any Friday).
    ("0 0 13 * 5", "UTC", utc(2026, 1, 10), utc(2026, 1, 13)),
    ("0 0 13 * 5", "UTC", utc(2026, 1, 13, 1), utc(2026, 1, 16)),
    # Weekday given, day of month '*': both must match, so every Friday only.
    ("0 0 * * 5", "UTC", utc(2026, 1, 10), utc(2026, 1, 16)),
    # A stepped star is no star: '*/2' and weekday 5 -> either.
    ("0 0 */2 * 5", "UTC", utc(2026, 1, 1, 1), utc(2026, 1, 2)),
    ("@hourly", "UTC", utc(2026, 1, 1, 0, 30), utc(2026, 1, 1, 1, 0)),
    ("@daily", "UTC", utc(2026, 1, 1, 0, 30), utc(2026, 1, 2)),
    ("@weekly", "UTC", utc(2026, 1, 1), utc(2026, 1, 4)),
    ("@monthly", "UTC", utc(2026, 1, 15), utc(2026, 2, 1)),
    ("@yearly", "UTC", utc(2026, 1, 15), utc(2027, 1, 1)),
    ("@every 90s", "UTC", utc(2026, 1, 1, 0, 0, 10), utc(2026, 1, 1, 0, 1, 40)),
    ("@every 1h30m", "UTC", utc(2026, 1, 1), utc(2026, 1, 1, 1, 30)),
    # Zones: 09:00 in Paris is 08:00 UTC in winter, 07:00 in summer.
    ("0 9 * * *", "Europe/Paris", utc(2026, 1, 1, 9), utc(2026, 1, 2, 8)),
    ("0 9 * * *", "Europe/Paris", utc(2026, 7, 1, 9), utc(2026, 7, 2, 7)),
    ("TZ=Asia/Tokyo 0 9 * * *", "UTC", utc(2026, 1, 1, 1), utc(2026, 1, 2, 0)),
    ("CRON_TZ=Asia/Kolkata 30 * * * *", "UTC", utc(2026, 1, 1, 0, 0), utc(2026, 1, 1, 1, 0)),
    # Spring forward in New York (2026-03-08): 02:30 does not exist that day, so it fires on the 9th.
    ("30 2 * * *", "America/New_York", utc(2026, 3, 7, 12), utc(2026, 3, 9, 6, 30)),
    ("30 3 * * *", "America/New_York", utc(2026, 3, 7, 12), utc(2026, 3, 8, 7, 30)),
]


@pytest.mark.parametrize(("text", "zone", "after", "expected"), NEXT_CASES, ids=[f"{c[0]}@{c[1]}" for c in NEXT_CASES])
def test_next_after(text: str, zone: str, after: datetime, expected: datetime) -> None:
    assert parse_schedule(text, load_zone(zone)).next_after(after) == expected


def test_never_firing_schedule_has_no_next_time() -> None:
    assert parse_schedule("0 0 30 2 *").next_after(utc(2026, 1, 1)) is None


def test_fall_back_repeats_a_wall_time() -> None:
    """New York falls back on 2026-11-01: 01:30 happens twice, and the schedule fires at both."""
    schedule = parse_schedule("30 1 * * *", load_zone("America/New_York"))
    first = schedule.next_after(utc(2026, 11, 1, 4))
    assert first == utc(2026, 11, 1, 5, 30)  # 01:30 EDT
    assert schedule.next_after(first) == utc(2026, 11, 1, 6, 30)  # 01:30 EST


BAD = [
    ("", "empty"),
    ("* * * *", "exactly 5 fields"),
    ("* * * * * *", "exactly 5 fields"),
    ("60 * * * *", "minute"),
    ("* 24 * * *", "hour"),
    ("* * 0 * *", "day of month"),
    ("* * * 13 *", "month"),
    ("* * * * 7", "day of week"),
    ("* * * * sunday", "day of week"),
    ("*/0 * * * *", "step"),
    ("5-1 * * * *", "backwards"),
    ("@fortnightly", "descriptor"),
    ("@every soon", "duration"),
    ("TZ=Mars/Olympus 0 * * * *", "Mars/Olympus"),
]


@pytest.mark.parametrize(("text", "said"), BAD, ids=[b[0] or "empty" for b in BAD])
def test_bad_schedules_say_which_part(text: str, said: str) -> None:
    with pytest.raises(ScheduleError, match=said):
        parse_schedule(text)


def test_unknown_zone() -> None:
    with pytest.raises(ScheduleError, match="Nowhere/City"):
        load_zone("Nowhere/City")


def _matches(text_fields: list[str], moment: datetime) -> bool:
    """A reference matcher written apart from the parser: sets by brute force over each range."""
    ranges = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)]
    sets = []
    stars = []
    for text, (low, high) in zip(text_fields, ranges, strict=True):
        if text == "*":
            sets.append(set(range(low, high + 1)))
            stars.append(True)
        else:
            sets.append({int(v) for v in text.split(",")})
            stars.append(False)
    weekday = (moment.weekday() + 1) % 7
    dom, dow = moment.day in sets[2], weekday in sets[4]
    day = (dom and dow) if (stars[2] or stars[4]) else (dom or dow)
    return moment.minute in sets[0] and moment.hour in sets[1] and moment.month in sets[3] and day


def _field(low: int, high: int) -> st.SearchStrategy[str]:
    values = st.lists(st.integers(low, high), min_size=1, max_size=3, unique=True)
    return st.one_of(st.just("*"), values.map(lambda vs: ",".join(str(v) for v in sorted(vs))))


@settings(max_examples=60, deadline=None)
@given(
    minute=_field(0, 59),
    hour=_field(0, 23),
    dom=_field(1, 31),
    dow=_field(0, 6),
    start=st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2027, 1, 1)),
)
def test_next_after_is_the_first_matching_minute(minute: str, hour: str, dom: str, dow: str, start: datetime) -> None:
    fields = [minute, hour, dom, "*", dow]
    schedule = parse_schedule(" ".join(fields))
    after = start.replace(tzinfo=UTC)
    found = schedule.next_after(after)
    assert found is not None  # every month has some weekday and days 1-28
    assert found > after and found.second == 0 and _matches(fields, found)
    # No matching minute in between (scanned by days and hours that could hold one, then by minutes).
    t = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    while t < found:
        assert not _matches(fields, t), t
        if not _matches(["*", "*", *fields[2:]], t):
            t = t.replace(hour=0, minute=0) + timedelta(days=1)
        elif not _matches(["*", *fields[1:]], t):
            t += timedelta(minutes=60 - t.minute)
        else:
            t += timedelta(minutes=1)
