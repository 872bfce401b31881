"""One pass over a Volcano CronJob, decided from the objects and an injected clock (cronjob_plan.py).

Tables of small cases: which scheduled time is due (first run, missed runs, the starting
deadline, suspend, a time already handled), the concurrency policies, history limits, the active
list kept honest (finished, vanished and forgotten Jobs), lastSuccessfulTime, invalid schedules
and zones as Warning events, the deterministic Job name, and the Job made from the template.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from vcsat.adapters.controller.cron import load_zone
from vcsat.adapters.controller.cronjob_plan import (
    SCHEDULED_TIMESTAMP_KEY,
    OwnedJob,
    job_from_template,
    job_name,
    plan_cronjob,
)
from vcsat.adapters.controller.status import rfc3339

T0 = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
"""The CronJob's creation time in every case."""


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def cronjob(
    schedule: str = "*/5 * * * *",
    *,
    last: datetime | None = None,
    active: list[str] = (),  # type: ignore[assignment]
    **spec: Any,
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if last is not None:
        status["lastScheduleTime"] = rfc3339(last)
    if active:
        status["active"] = [{"name": name, "uid": f"uid-{name}", "kind": "Job"} for name in active]
    return {
        "metadata": {"name": "nightly", "namespace": "ns", "uid": "cj-uid", "creationTimestamp": rfc3339(T0)},
        "spec": {"schedule": schedule, "jobTemplate": {"spec": {"tasks": []}}, **spec},
        "status": status,
    }


def job(name: str, phase: str = "Running", created: datetime = T0, finished: datetime | None = None) -> OwnedJob:
    return OwnedJob(name=name, uid=f"uid-{name}", created=created, phase=phase, finished_at=finished)


AT5 = job_name("nightly", at(5))
# (id, cronjob, jobs, now, scheduled time to create or None, requeue seconds)
DUE_CASES = [
    ("before the first time", cronjob(), [], at(4), None, 60.1),
    ("the first time", cronjob(), [], at(5), at(5), 300.1),
    ("a little after it", cronjob(), [], at(6.5), at(5), 210.1),
    ("only the latest of missed times", cronjob(), [], at(23), at(20), 120.1),
    ("already handled", cronjob(last=at(20)), [], at(23), None, 120.1),
    ("the next one after the last", cronjob(last=at(20)), [], at(25), at(25), 300.1),
    ("within the starting deadline", cronjob(startingDeadlineSeconds=120), [], at(6), at(5), 240.1),
    ("past the starting deadline", cronjob(startingDeadlineSeconds=30), [], at(6), None, 240.1),
    ("suspended", cronjob(suspend=True), [], at(5), None, None),
    ("its Job already listed", cronjob(active=[AT5]), [job(AT5)], at(5), None, 300.1),
    ("every 2 minutes in Paris", cronjob("*/2 * * * *", timeZone="Europe/Paris"), [], at(3), at(2), 60.1),
    ("hourly, not yet", cronjob("@hourly"), [], at(59), None, 60.1),
    ("hourly, due", cronjob("@hourly"), [], at(60), at(60), 3600.1),
]


@pytest.mark.parametrize(
    ("cj", "jobs", "now", "due", "requeue"), [c[1:] for c in DUE_CASES], ids=[c[0] for c in DUE_CASES]
)
def test_which_time_is_due(cj: dict[str, Any], jobs: list[OwnedJob], now: datetime, due: Any, requeue: Any) -> None:
    plan = plan_cronjob(cj, jobs, now)
    assert plan.create_for == due
    if requeue is None:
        assert plan.requeue_after_s is None
    else:
        assert plan.requeue_after_s == pytest.approx(requeue)


def test_job_name_is_the_scheduled_minute() -> None:
    assert job_name("nightly", at(5)) == f"nightly-{int(at(5).timestamp()) // 60}"
    assert job_name("nightly", at(5)) == job_name("nightly", at(5) + timedelta(seconds=30))
    assert job_name("nightly", at(5)) != job_name("nightly", at(6))


def test_forbid_skips_while_a_job_is_active_and_runs_when_it_ends() -> None:
    cj = cronjob(last=at(5), active=["a"], concurrencyPolicy="Forbid")
    plan = plan_cronjob(cj, [job("a")], at(11))
    assert plan.create_for is None and plan.delete == ()
    assert [e.reason for e in plan.events] == ["ForbidConcurrent"]
    # Once it has ended, the time still due (10:10) runs: lastScheduleTime was not moved.
    plan = plan_cronjob(cj, [job("a", "Completed", finished=at(12))], at(12))
    assert plan.create_for == at(10)
    assert plan.active == () and plan.last_successful == at(12)


def test_forbid_lets_a_time_past_its_deadline_go() -> None:
    cj = cronjob(last=at(5), concurrencyPolicy="Forbid", startingDeadlineSeconds=60)
    assert plan_cronjob(cj, [job("a", "Completed", finished=at(12))], at(12)).create_for is None


def test_replace_deletes_the_active_jobs_first() -> None:
    cj = cronjob(last=at(5), active=["a"], concurrencyPolicy="Replace")
    plan = plan_cronjob(cj, [job("a")], at(10))
    assert plan.create_for == at(10) and plan.delete == ("a",) and plan.active == ()
    assert "ReplaceConcurrent" in [e.reason for e in plan.events]


def test_allow_runs_beside_the_active_job() -> None:
    cj = cronjob(last=at(5), active=["a"])
    plan = plan_cronjob(cj, [job("a")], at(10))
    assert plan.create_for == at(10) and plan.delete == ()
    assert [r["name"] for r in plan.active] == ["a"]


HISTORY_CASES = [
    # (id, spec, jobs, deleted)
    (
        "defaults keep 3 completed, 1 failed",
        {},
        [("c", "Completed", n) for n in range(5)] + [("f", "Failed", n) for n in range(3)],
        ["c0", "c1", "f0", "f1"],
    ),
    (
        "limits of 0 keep none",
        {"successfulJobsHistoryLimit": 0, "failedJobsHistoryLimit": 0},
        [("c", "Completed", 0), ("f", "Failed", 1)],
        ["c0", "f1"],
    ),
    (
        "running and terminated Jobs are not history",
        {"successfulJobsHistoryLimit": 0},
        [("r", "Running", 0), ("t", "Terminated", 1)],
        [],
    ),
    ("within the limits", {"successfulJobsHistoryLimit": 2}, [("c", "Completed", 0), ("c", "Completed", 1)], []),
]


@pytest.mark.parametrize(
    ("spec", "specs", "deleted"), [c[1:] for c in HISTORY_CASES], ids=[c[0] for c in HISTORY_CASES]
)
def test_history_limits_delete_the_oldest(
    spec: dict[str, Any], specs: list[tuple[str, str, int]], deleted: list[str]
) -> None:
    jobs = [job(f"{prefix}{n}", phase, created=at(n), finished=at(n + 1)) for prefix, phase, n in specs]
    plan = plan_cronjob(cronjob(suspend=True, **spec), jobs, at(30))
    assert sorted(plan.delete) == sorted(deleted)


def test_active_list_is_kept_honest() -> None:
    """Finished Jobs leave it, vanished ones leave it with a warning, and an unfinished Job the
    status forgot (made just before a crash) joins it."""
    cj = cronjob(last=at(5), active=["done", "gone"], suspend=True)
    jobs = [job("done", "Completed", finished=at(7)), job("forgot", "Running", created=at(10))]
    plan = plan_cronjob(cj, jobs, at(11))
    assert [r["name"] for r in plan.active] == ["forgot"]
    reasons = sorted(e.reason for e in plan.events)
    assert reasons == ["SawCompletedJob", "StaleReference"]
    assert plan.last_successful == at(7) and plan.status_changed


def test_nothing_changed_means_no_status_write() -> None:
    plan = plan_cronjob(cronjob(last=at(5), active=["a"]), [job("a")], at(6))
    assert plan.create_for is None and not plan.status_changed


@pytest.mark.parametrize(
    ("spec", "reason", "said"),
    [
        ({"schedule": "61 * * * *"}, "InvalidSchedule", "spec.schedule"),
        ({"timeZone": "Nowhere/City"}, "InvalidSchedule", "spec.timeZone"),
    ],
)
def test_bad_schedule_or_zone_is_a_warning_and_no_job(spec: dict[str, Any], reason: str, said: str) -> None:
    plan = plan_cronjob(cronjob(**spec), [], at(30))
    assert plan.create_for is None and plan.requeue_after_s is None
    assert [(e.type, e.reason) for e in plan.events] == [("Warning", reason)]
    assert said in plan.events[0].message


def test_zone_in_the_schedule_is_said() -> None:
    plan = plan_cronjob(cronjob("TZ=UTC */5 * * * *"), [], at(5))
    assert plan.create_for == at(5)
    assert [e.reason for e in plan.events] == ["UnsupportedSchedule"]


def test_too_many_missed_times_still_runs_the_latest() -> None:
    plan = plan_cronjob(cronjob("* * * * *"), [], at(60 * 24 * 3 + 0.5))
    assert plan.create_for == at(60 * 24 * 3)
    assert [e.reason for e in plan.events] == ["TooManyMissedTimes"]


def test_job_from_template() -> None:
    cj = cronjob(timeZone="Asia/Tokyo")
    cj["spec"]["jobTemplate"] = {
        "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
        "spec": {"schedulerName": "vcsat", "tasks": [{"name": "t", "replicas": 1}]},
    }
    body = job_from_template(cj, at(5), load_zone("Asia/Tokyo"))
    metadata = body["metadata"]
    assert metadata["name"] == job_name("nightly", at(5)) and metadata["namespace"] == "ns"
    assert metadata["labels"] == {"team": "a"}
    assert metadata["annotations"] == {"note": "x", SCHEDULED_TIMESTAMP_KEY: "2026-01-01T19:05:00+09:00"}
    owner = metadata["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("CronJob", "cj-uid", True)
    assert body["spec"] == cj["spec"]["jobTemplate"]["spec"]
    assert body["kind"] == "Job" and body["apiVersion"] == "batch.volcano.sh/v1alpha1"
