"""When the live scheduler's next cycle is due if nothing changes (``next_cycle_due``), as a table.

A cycle that wrote something (or failed, or whose report back changed) is followed ``--period``
after it, as a loop on a period would; a settled one only at the earliest clock deadline or at
``--resync``, never sooner than ``--period`` after it.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vcsat.adapters.kube.apply_state import ApplyReport
from vcsat.adapters.live.scheduler import TRIGGERS, UNSETTLED, next_cycle_due

ENDED, PERIOD, RESYNC = 100.0, 1.0, 30.0


@pytest.mark.parametrize(
    ("unsettled", "deadlines", "resync", "expected"),
    [
        pytest.param("applied", {}, RESYNC, (101.0, "follow-up", "applied"), id="wrote-something"),
        pytest.param("failed", {"event-refresh": 150.0}, RESYNC, (101.0, "follow-up", "failed"), id="failed"),
        pytest.param("unapplied", {}, RESYNC, (101.0, "follow-up", "unapplied"), id="still-applying"),
        pytest.param("reported", {}, RESYNC, (101.0, "follow-up", "reported"), id="pods-changed-status"),
        pytest.param(None, {}, RESYNC, (130.0, "resync", "resync"), id="idle-until-resync"),
        pytest.param(None, {"event-refresh": 160.0}, RESYNC, (130.0, "resync", "resync"), id="deadline-after-resync"),
        pytest.param(
            None, {"event-refresh": 115.0}, RESYNC, (115.0, "deadline", "event-refresh"), id="deadline-before-resync"
        ),
        pytest.param(
            None,
            {"binding-ttl": 120.0, "status-refresh": 110.0, "event-refresh": 112.0},
            RESYNC,
            (110.0, "deadline", "status-refresh"),
            id="earliest-deadline",
        ),
        pytest.param(
            None,
            {"unschedulable-second-cycle": 100.0},
            RESYNC,
            (101.0, "deadline", "unschedulable-second-cycle"),
            id="second-cycle-one-period-later",
        ),
        pytest.param(None, {"binding-ttl": 40.0}, RESYNC, (101.0, "deadline", "binding-ttl"), id="deadline-passed"),
        pytest.param(None, {"b": 110.0, "a": 110.0}, RESYNC, (110.0, "deadline", "a"), id="tie-broken-by-name"),
        pytest.param(None, {}, 0.5, (101.0, "resync", "resync"), id="resync-below-period"),
    ],
)
def test_next_cycle_due(
    unsettled: str | None, deadlines: dict[str, float], resync: float, expected: tuple[float, str, str]
) -> None:
    assert (
        next_cycle_due(ended=ENDED, period_s=PERIOD, resync_s=resync, unsettled=unsettled, deadlines=deadlines)
        == expected
    )


@given(
    ended=st.floats(0, 1e6),
    period=st.floats(0.05, 10),
    resync=st.floats(0.05, 600),
    unsettled=st.sampled_from([None, *UNSETTLED]),
    deadlines=st.dictionaries(st.sampled_from(["a", "b", "c"]), st.floats(-1e6, 2e6)),
)
def test_the_next_cycle_is_never_sooner_than_a_period_nor_later_than_a_resync(
    ended: float, period: float, resync: float, unsettled: str | None, deadlines: dict[str, float]
) -> None:
    at, trigger, why = next_cycle_due(
        ended=ended, period_s=period, resync_s=resync, unsettled=unsettled, deadlines=deadlines
    )
    assert trigger in TRIGGERS
    assert ended + period <= at <= ended + max(period, resync)
    if unsettled is not None:
        assert (at, trigger, why) == (ended + period, "follow-up", unsettled)
    elif trigger == "deadline":
        assert deadlines[why] == min(deadlines.values())
        assert at == max(deadlines[why], ended + period)
    else:
        assert all(deadline >= ended + resync for deadline in deadlines.values())


@pytest.mark.parametrize(
    ("done", "quiet"),
    [
        pytest.param({}, True, id="nothing"),
        pytest.param({"follow_ups": {"event-refresh": 5.0}}, True, id="only-due-later"),
        pytest.param({"bound": ["ns/p"]}, False, id="bound"),
        pytest.param({"failed": {"ns/p": "409"}}, False, id="bind-refused"),
        pytest.param({"stale": {"ns/g": "pod changed"}}, False, id="stale"),
        pytest.param({"evictions_deferred": {"ns/v": "not now"}}, False, id="eviction-deferred"),
        pytest.param({"nominated": ["ns/p"]}, False, id="nominated"),
        pytest.param({"podgroups_updated": ["ns/g"]}, False, id="status-written"),
        pytest.param({"events": ["ns/g Unschedulable"]}, False, id="event-written"),
        pytest.param({"unschedulable": ["ns/p"]}, False, id="condition-written"),
    ],
)
def test_a_report_is_quiet_only_when_its_apply_wrote_and_was_refused_nothing(
    done: dict[str, object], quiet: bool
) -> None:
    assert ApplyReport(**done).quiet is quiet  # type: ignore[arg-type]


def test_a_report_keeps_the_earliest_time_of_each_follow_up() -> None:
    report = ApplyReport()
    for what, at in [("event-refresh", 9.0), ("event-refresh", 7.0), ("event-refresh", 8.0), ("retry", 3.0)]:
        report.follow_up(what, at)
    assert report.follow_ups == {"event-refresh": 7.0, "retry": 3.0}
