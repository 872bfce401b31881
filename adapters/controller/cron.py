"""Cron schedules as Kubernetes' and Volcano's CronJob controllers read them, and their next time.

Both controllers parse ``spec.schedule`` with the Go library's *standard* parser, so that is the
grammar here: five fields (minute, hour, day of month, month, day of week), each a comma list of
``*``, ``?``, ``N``, ``A-B`` with an optional ``/STEP`` (``N/STEP`` runs from N to the field's
end), month and weekday names (``jan``, ``mon``; any case), weekdays 0-6 with 0 Sunday; the
descriptors ``@yearly`` ``@annually`` ``@monthly`` ``@weekly`` ``@daily`` ``@midnight``
``@hourly`` and ``@every DURATION``; and a leading ``TZ=ZONE`` or ``CRON_TZ=ZONE``. A day matches
when both the day of month and the weekday match if either of them is an unstepped ``*`` or
``?``, and when either matches otherwise (Vixie cron's rule, which the Go library keeps).

Times are matched on the wall clock of the schedule's zone while stepping in real time, as the
Go library does: a wall time that a daylight-saving change skips never fires that day, and one it
repeats can fire twice. A schedule that can never fire (``0 0 30 2 *``) has no next time within
five years and answers None.

Written here rather than taken from a cron package: the rules to match are the Go library's (the
field ranges, the star rule, stepping over DST), which Python cron packages do not follow
exactly, and the whole is small and pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

SEARCH_YEARS = 5
"""How far ahead a next time is looked for before a schedule counts as never firing."""

_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTHS = {n: i + 1 for i, n in enumerate(_MONTH_NAMES)}
_WEEKDAYS = {n: i for i, n in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ScheduleError(ValueError):
    """A schedule or time zone that cannot be read; the message says which part and why."""


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int] | None = None


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field("month", 1, 12, _MONTHS),
    _Field("day of week", 0, 6, _WEEKDAYS),
)


@dataclass(frozen=True)
class CronSchedule:
    """A parsed schedule: the allowed values of each field, or a constant ``@every`` period."""

    zone: tzinfo
    minutes: frozenset[int] = frozenset()
    hours: frozenset[int] = frozenset()
    days: frozenset[int] = frozenset()
    months: frozenset[int] = frozenset()
    weekdays: frozenset[int] = frozenset()
    days_star: bool = False
    weekdays_star: bool = False
    every: timedelta | None = None
    zone_in_schedule: bool = False
    """The schedule named its own zone (``TZ=``), which then wins over ``spec.timeZone``."""

    def next_after(self, moment: datetime) -> datetime | None:
        """The first time strictly after ``moment`` (aware) that the schedule fires, in UTC."""
        if self.every is not None:
            whole = moment.astimezone(UTC).replace(microsecond=0)
            return whole + self.every
        t = moment.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
        limit = t + timedelta(days=366 * SEARCH_YEARS)
        while t <= limit:
            local = t.astimezone(self.zone)
            if local.month not in self.months:
                t = _local_midnight(local.year + (local.month == 12), local.month % 12 + 1, 1, self.zone)
            elif not self._day_matches(local):
                day = local.date() + timedelta(days=1)
                t = _local_midnight(day.year, day.month, day.day, self.zone)
            elif local.hour not in self.hours:
                t += timedelta(minutes=60 - local.minute)
            elif local.minute not in self.minutes:
                t += timedelta(minutes=1)
            else:
                return t
        return None

    def _day_matches(self, local: datetime) -> bool:
        in_month = local.day in self.days
        in_week = (local.isoweekday() % 7) in self.weekdays
        if self.days_star or self.weekdays_star:
            return in_month and in_week
        return in_month or in_week


def _local_midnight(year: int, month: int, day: int, zone: tzinfo) -> datetime:
    """The first instant of a local day (a midnight that DST skips maps to the day's start)."""
    return datetime(year, month, day, tzinfo=zone).astimezone(UTC)


def load_zone(name: str) -> tzinfo:
    """The IANA zone ``name``; ScheduleError when it is unknown."""
    if name in ("", "UTC", "Etc/UTC"):
        return UTC
    if name == "Local":
        raise ScheduleError('time zone "Local" is not supported; name a zone such as Europe/Paris')
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ScheduleError(f"unknown time zone {name!r}") from error


def parse_schedule(text: str, zone: tzinfo = UTC) -> CronSchedule:
    """``text`` parsed as the Go library's standard parser reads it; ``zone`` unless it names one."""
    spec = text.strip()
    zone_in_schedule = False
    for prefix in ("CRON_TZ=", "TZ="):
        if spec.startswith(prefix):
            name, _, rest = spec[len(prefix) :].partition(" ")
            zone = load_zone(name)
            spec = rest.strip()
            zone_in_schedule = True
            break
    if not spec:
        raise ScheduleError("the schedule is empty")
    if spec.startswith("@"):
        if spec.startswith("@every"):
            every = _parse_duration(spec[len("@every") :].strip())
            return CronSchedule(zone=zone, every=every, zone_in_schedule=zone_in_schedule)
        if spec not in _DESCRIPTORS:
            raise ScheduleError(f"unknown descriptor {spec!r}")
        spec = _DESCRIPTORS[spec]
    parts = spec.split()
    if len(parts) != len(_FIELDS):
        raise ScheduleError(f"expected exactly 5 fields, found {len(parts)}: {spec!r}")
    values = [_parse_field(part, field) for part, field in zip(parts, _FIELDS, strict=True)]
    return CronSchedule(
        zone=zone,
        minutes=values[0][0],
        hours=values[1][0],
        days=values[2][0],
        months=values[3][0],
        weekdays=values[4][0],
        days_star=values[2][1],
        weekdays_star=values[4][1],
        zone_in_schedule=zone_in_schedule,
    )


def _parse_field(text: str, field: _Field) -> tuple[frozenset[int], bool]:
    """The values a field allows, and whether it is an unstepped ``*``/``?`` (the star rule)."""
    allowed: set[int] = set()
    star = False
    for item in text.split(","):
        range_part, slash, step_part = item.partition("/")
        if range_part in ("*", "?"):
            low, high, is_star = field.low, field.high, True
        else:
            is_star = False
            bounds = range_part.split("-")
            if len(bounds) > 2 or not all(bounds):
                raise ScheduleError(f"{field.name}: cannot read {item!r}")
            low = _value(bounds[0], field)
            high = _value(bounds[1], field) if len(bounds) == 2 else low
            if slash and len(bounds) == 1:
                high = field.high
        step = 1
        if slash:
            if not step_part.isdigit() or int(step_part) == 0:
                raise ScheduleError(f"{field.name}: step must be a positive number in {item!r}")
            step = int(step_part)
        if low < field.low or high > field.high:
            raise ScheduleError(f"{field.name}: {item!r} is outside {field.low}-{field.high}")
        if low > high:
            raise ScheduleError(f"{field.name}: {item!r} runs backwards")
        allowed.update(range(low, high + 1, step))
        star = star or (is_star and step == 1)
    return frozenset(allowed), star


def _value(text: str, field: _Field) -> int:
    if field.names and text.lower() in field.names:
        return field.names[text.lower()]
    if not text.isdigit():
        raise ScheduleError(f"{field.name}: {text!r} is not a number")
    return int(text)


def _parse_duration(text: str) -> timedelta:
    """A Go duration (``1h30m``, ``90s``), rounded down to whole seconds and at least one second."""
    if not text or _DURATION_PART.sub("", text) != "":
        raise ScheduleError(f"@every: cannot read the duration {text!r}")
    seconds = sum(float(number) * _UNIT_S[unit] for number, unit in _DURATION_PART.findall(text))
    return timedelta(seconds=max(1, int(seconds)))
