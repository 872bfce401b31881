"""The cycle's clock and the admission time, as they are written into and read from objects.

Why: enqueue's ``InqueueTimeout`` depends on time, yet a cycle must replay offline exactly as it ran
live. So time enters a decision only through the instance itself: the live scheduler's wall clock at
conversion is recorded on the instance List it dumps (annotation ``vcsat.io/now``), and the moment
each PodGroup became Inqueue is the ``lastTransitionTime`` of the ``Inqueued`` condition that the
scheduler writes into the group's status on admission (Volcano's own conditions, ``Unschedulable``
and ``Scheduled``, keep no admission time), so it survives a restart. A file without the
annotation has no clock, and then nothing times out.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from functools import lru_cache

from vcsat.adapters.convert.fields import type_name

NOW_ANNOTATION = "vcsat.io/now"
"""On the instance List's ``metadata.annotations``: the cycle's clock, RFC 3339 with microseconds."""
CLUSTER_DUMP_ANNOTATION = "vcsat.io/cluster-dump"
"""``"true"`` on an instance List dumped from a live cluster (``--dump-dir``, ``vcsat dump``): it is
read as the live scheduler reads the cluster, dangling references (a PodGroup naming a deleted
PriorityClass, a pod of a missing PodGroup) tolerated as the scheduler tolerates them, so that
``vcsat solve`` replays the very decision the scheduler took. Any other file is read strictly."""
CYCLE_ANNOTATION = "vcsat.io/cycle"
"""On a dumped cycle's instance List: ``"early"`` when the live scheduler bound the greedy's sure
placements on it without a search (``--early-bind-min-pending``), so that ``vcsat solve`` replays
that kind of cycle; absent (or ``"full"``) for a full cycle."""
CYCLE_KINDS = ("full", "early")
SKIPPED_ANNOTATION = "vcsat.io/skipped"
"""On a dumped cycle's instance List: the optional steps the live cycle skipped because they would
have ended after its time limit (``SolverStats.skipped``, comma-separated), so that ``vcsat solve``
skips them too and decides as the scheduler did; absent when it skipped none."""
INQUEUED_CONDITION = "Inqueued"
"""PodGroup ``status.conditions`` type vcsat writes while the group is Inqueue (status ``True``)."""
INQUEUED_REASON = "Admitted"


def wall_clock() -> float:
    """Now, to the microsecond a dump records: the live cycle and its replay see the very same clock."""
    return parse_clock(format_clock(time.time()))


def format_clock(epoch_seconds: float) -> str:
    """``2026-11-29T19:51:36.123456Z``: exact to the microsecond, so a replay sees the same clock."""
    return datetime.fromtimestamp(epoch_seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_clock(text: object) -> float:
    """The epoch seconds of an RFC 3339 time (a naive one is UTC); ValueError when it is none."""
    if type(text) is str:
        return parse_text_clock(text)
    if isinstance(text, datetime):  # an unquoted timestamp in YAML arrives parsed
        return _epoch(text)
    if isinstance(text, str):
        return parse_text_clock(str(text))
    raise ValueError(f"must be a time string, not {type_name(text)}")


def parse_text_clock(text: str) -> float:
    """:func:`parse_clock` of a string. Whole seconds in UTC (``2025-06-01T08:00:00Z``, what the API
    server writes) are the start of the hour, remembered once a stamp of that hour was read, plus
    the minutes and seconds from a fixed table of their spellings (``00:00`` to ``59:59``); a stamp
    of an hour not met yet is the start of its day, remembered once a stamp of that day was parsed,
    plus the hours, minutes and seconds from tables of their two-digit spellings. A cluster's
    stamps are tens of thousands of distinct texts (a cache of whole texts misses most of them) in
    a few hundred hours of a few days. The sum is the full parse's very float: every part is a
    whole number far below 2**53. Any other spelling, and a day not met yet, takes the full parse."""
    if len(text) == 20 and text[19] == "Z":
        hour = _HOUR_STARTS.get(text[:14])
        if hour is not None:
            within = _MINUTE_SECOND.get(text[14:19])
            if within is not None:
                return hour + within
        if text[13] == ":" and text[16] == ":":
            day = _DAY_STARTS.get(text[:11])
            if day is not None:
                hours = _HOURS.get(text[11:13])
                minutes = _SIXTY.get(text[14:16])
                seconds = _SIXTY.get(text[17:19])
                if hours is not None and minutes is not None and seconds is not None:
                    _HOUR_STARTS[text[:14]] = day + hours * 3600
                    return day + (hours * 3600 + minutes * 60 + seconds)
    return _parse_text_clock(text)


_DAY_STARTS: dict[str, float] = {}
"""``2025-06-01T`` -> the epoch seconds of that day's start (UTC), for each day a parsed stamp named."""
_HOUR_STARTS: dict[str, float] = {}
"""``2025-06-01T08:`` -> the epoch seconds of that hour's start (UTC), for each hour a stamp read
from the day table named (so its day, hour and colon are checked)."""
_HOURS = {f"{number:02d}": number for number in range(24)}
_SIXTY = {f"{number:02d}": number for number in range(60)}
"""Two ASCII digits -> their number: minutes and seconds (Python's clock has no leap second)."""
_MINUTE_SECOND = {
    minute_text + ":" + second_text: minute * 60 + second
    for minute_text, minute in _SIXTY.items()
    for second_text, second in _SIXTY.items()
}
"""``MM:SS`` -> the seconds since the start of the hour; made from the two-digit texts, since
formatting 3,600 numbers would cost every process's import a few times more."""
_WHOLE_SECOND_UTC = re.compile(r"(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}:\d{2}Z", re.ASCII)


@lru_cache(maxsize=4096)
def _parse_text_clock(text: str) -> float:
    """Remembered: the objects of one job are stamped alike, tens of thousands of them at 10,000 nodes."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an RFC 3339 time: {text!r}") from None
    if len(text) == 20 and text[:11] not in _DAY_STARTS:
        whole = _WHOLE_SECOND_UTC.fullmatch(text)
        if whole is not None:  # parsed, so its day is a real one: remember where it starts
            year, month, day = (int(part) for part in whole.groups())
            _DAY_STARTS[text[:11]] = datetime(year, month, day, tzinfo=UTC).timestamp()
    return _epoch(moment)


def _epoch(moment: datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
