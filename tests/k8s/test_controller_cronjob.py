"""Volcano CronJobs against the real API server: the CRD, the CronJob controller, and the Job it makes
run by vcsat's Job controller.

The CronJob controller's clock is injected (the real time plus an offset, or a fixed time), so a
schedule fires at once instead of after a wall-clock minute. Pods are bound by the stand-in
scheduler and run by kwok on the module's own cluster (controller_harness).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from controller_harness import Jobs, StandInScheduler, running_controller, task_body
from kwokcluster import PodEnds
from scheduler_support import (
    Bubble,
    kwok_control_plane,  # noqa: F401 (the fixture control_plane: this module's own, with kwok)
    wait_until,
)

from vcsat.adapters.controller.cronjob import CRONJOBS, CronJobController, cronjobs_served
from vcsat.adapters.controller.cronjob_plan import SCHEDULED_TIMESTAMP_KEY, job_name
from vcsat.adapters.controller.status import parse_time
from vcsat.adapters.kube.client import ApiError, Kube


def cronjob_body(name: str, scheduler: str, schedule: str = "* * * * *", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "metadata": {"labels": {"made-by": "cron"}},
                "spec": {"schedulerName": scheduler, "minAvailable": 2, "tasks": [task_body("work", 2)]},
            },
            **spec,
        },
    }


class Crons:
    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        made: dict[str, Any] = self.kube.post(CRONJOBS.path(self.namespace), body)
        return made

    def get(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.kube.get(CRONJOBS.path(self.namespace, name))
        return found

    def jobs(self) -> dict[str, dict[str, Any]]:
        items = self.kube.get(f"/apis/batch.volcano.sh/v1alpha1/namespaces/{self.namespace}/jobs")["items"]
        return {job["metadata"]["name"]: job for job in items}


class FailingStatus(CronJobController):
    """A controller that dies (an exception) on its first status write: the crash window between
    creating a Job and recording it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fail_next = True
        real = self.statuses.patch_status

        def patch_status(*a: Any, **k: Any) -> Any:
            if self.fail_next:
                self.fail_next = False
                raise RuntimeError("crash before the status write")
            return real(*a, **k)

        self.statuses.patch_status = patch_status  # type: ignore[method-assign]


@contextlib.contextmanager
def running_cron(kube: Kube, namespace: str, clock: Any) -> Iterator[CronJobController]:
    controller = CronJobController(kube, namespace=namespace, clock=clock, resync_s=2.0)
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_until(controller.synced, "the CronJob controller's watches listed")
        yield controller
    finally:
        stop.set()
        thread.join(30)


def test_the_crd_is_served_with_volcano_names(kube: Kube, k8s_namespace: str) -> None:
    assert cronjobs_served(kube)
    found = kube.get("/apis/batch.volcano.sh/v1alpha1")["resources"]
    names = {r["name"]: r for r in found}
    assert "cronjobs/status" in names
    assert set(names["cronjobs"]["shortNames"]) == {"cronvcjob", "cronvj"}
    crons = Crons(kube, k8s_namespace)
    made = crons.create(cronjob_body("defaults", "vcsat"))
    assert made["spec"]["concurrencyPolicy"] == "Allow" and made["spec"]["suspend"] is False
    assert (made["spec"]["successfulJobsHistoryLimit"], made["spec"]["failedJobsHistoryLimit"]) == (3, 1)
    # The Job template is checked as a Job is: the Job CRD's rules apply inside it.
    bad = cronjob_body("bad", "vcsat")
    bad["spec"]["jobTemplate"]["spec"]["minAvailable"] = 5
    with pytest.raises(ApiError) as refused:
        crons.create(bad)
    assert refused.value.status == 422 and "minAvailable" in str(refused.value)
    bad = cronjob_body("bad", "vcsat", concurrencyPolicy="Sometimes")
    with pytest.raises(ApiError):
        crons.create(bad)


def test_a_cronjob_makes_a_job_that_the_job_controller_runs(bubble: Bubble, kube: Kube, k8s_client: Any) -> None:
    nodes = [bubble.node("n0", cpu="8", memory="32Gi")]
    crons = Crons(kube, bubble.namespace)
    ahead = timedelta(seconds=75)  # the controller lives 75 s ahead: the first minute is already due
    with contextlib.ExitStack() as stack:
        stack.enter_context(StandInScheduler(kube, bubble.namespace, nodes, bubble.scheduler_name))
        stack.enter_context(running_controller(k8s_client, bubble.namespace, bubble.scheduler_name))
        stack.enter_context(running_cron(kube, bubble.namespace, lambda: datetime.now(UTC) + ahead))
        cron = crons.create(cronjob_body("tick", bubble.scheduler_name))

        def made() -> dict[str, Any] | None:
            jobs = crons.jobs()
            return next(iter(jobs.values())) if jobs else None

        job = wait_until(made, "the CronJob made a Job")
        name = job["metadata"]["name"]
        scheduled = parse_time(job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_KEY])
        assert scheduled is not None and name == job_name("tick", scheduled)
        assert scheduled.second == 0 and scheduled > parse_time(cron["metadata"]["creationTimestamp"])  # type: ignore[operator]
        assert job["metadata"]["labels"]["made-by"] == "cron"
        owner = job["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("CronJob", cron["metadata"]["uid"], True)

        jobs = Jobs(kube, bubble)
        pods = jobs.running_pods(name, 2)
        status = wait_until(lambda: crons.get("tick").get("status") or None, "the CronJob's status")
        assert [ref["name"] for ref in status["active"]] == [name]
        assert parse_time(status["lastScheduleTime"]) == scheduled

        life = PodEnds(k8s_client)
        for pod in pods:
            life.succeed(bubble.namespace, pod)
        jobs.wait_phase(name, "Completed")

        def settled() -> dict[str, Any] | None:
            now = crons.get("tick").get("status") or {}
            return now if not now.get("active") and now.get("lastSuccessfulTime") else None

        wait_until(settled, "the CronJob saw its Job complete")
        wait_until(
            lambda: {"SuccessfulCreate", "SawCompletedJob"} <= {e["reason"] for e in bubble.events("tick")},
            "the CronJob's events",
        )
        assert list(crons.jobs()) == [name]  # one Job for one scheduled time


def test_a_crash_between_create_and_status_never_makes_a_second_job(kube: Kube, k8s_namespace: str) -> None:
    crons = Crons(kube, k8s_namespace)
    cron = crons.create(cronjob_body("once", "vcsat", "*/5 * * * *"))
    created = parse_time(cron["metadata"]["creationTimestamp"])
    assert created is not None
    now = created.replace(second=0) + timedelta(minutes=5 - created.minute % 5, seconds=20)
    due = now.replace(second=0)

    crashing = FailingStatus(kube, namespace=k8s_namespace, clock=lambda: now)
    with pytest.raises(RuntimeError):
        crashing.sync(k8s_namespace, "once")
    assert list(crons.jobs()) == [job_name("once", due)]
    assert not (crons.get("once").get("status") or {}).get("active")

    # The next pass (a fresh controller: nothing remembered) adopts the Job it finds.
    for _ in range(2):
        CronJobController(kube, namespace=k8s_namespace, clock=lambda: now).sync(k8s_namespace, "once")
    status = crons.get("once")["status"]
    assert list(crons.jobs()) == [job_name("once", due)]
    assert [ref["name"] for ref in status["active"]] == [job_name("once", due)]
    assert parse_time(status["lastScheduleTime"]) == due


def test_replace_and_forbid_on_the_server(kube: Kube, k8s_namespace: str) -> None:
    crons = Crons(kube, k8s_namespace)
    for name, policy in (("rep", "Replace"), ("forb", "Forbid")):
        crons.create(cronjob_body(name, "vcsat", "* * * * *", concurrencyPolicy=policy))
    first = datetime.now(UTC).replace(second=0, microsecond=0) + timedelta(minutes=2, seconds=5)
    second = first + timedelta(minutes=1)
    for when in (first, second):
        controller = CronJobController(kube, namespace=k8s_namespace, clock=lambda when=when: when)
        for name in ("rep", "forb"):
            controller.sync(k8s_namespace, name)

    def names(prefix: str) -> set[str]:
        live = {n: job for n, job in crons.jobs().items() if not job["metadata"].get("deletionTimestamp")}
        return {n for n in live if n.startswith(prefix + "-")}

    # Replace: the first Job (never finished) was deleted for the second; Forbid kept the first only.
    wait_until(lambda: names("rep") == {job_name("rep", second.replace(second=0))}, "Replace left only the new Job")
    assert names("forb") == {job_name("forb", first.replace(second=0))}
    assert [r["name"] for r in crons.get("rep")["status"]["active"]] == [job_name("rep", second.replace(second=0))]
    assert [r["name"] for r in crons.get("forb")["status"]["active"]] == [job_name("forb", first.replace(second=0))]


def test_suspend_and_a_bad_schedule_make_nothing(kube: Kube, k8s_namespace: str) -> None:
    crons = Crons(kube, k8s_namespace)
    crons.create(cronjob_body("paused", "vcsat", suspend=True))
    crons.create(cronjob_body("broken", "vcsat", "every day at noon"))
    later = datetime.now(UTC) + timedelta(minutes=3)
    controller = CronJobController(kube, namespace=k8s_namespace, clock=lambda: later)
    assert controller.sync(k8s_namespace, "paused") is None
    assert controller.sync(k8s_namespace, "broken") is None
    assert crons.jobs() == {}
    events = kube.get(f"/api/v1/namespaces/{k8s_namespace}/events")["items"]
    said = [(e["involvedObject"]["name"], e["type"], e["reason"]) for e in events]
    assert ("broken", "Warning", "InvalidSchedule") in said


def test_the_example_makes_its_nightly_job(kube: Kube, k8s_namespace: str) -> None:
    """deploy/examples/cron-job.yaml as a user applies it: at 02:00 Paris time its Job is made."""
    from pathlib import Path
    from zoneinfo import ZoneInfo

    from controlplane import load_manifests

    (body,) = load_manifests(Path(__file__).resolve().parents[2] / "deploy" / "examples" / "cron-job.yaml")
    crons = Crons(kube, k8s_namespace)
    made = crons.create(body)
    created = parse_time(made["metadata"]["creationTimestamp"])
    assert created is not None
    paris = created.astimezone(ZoneInfo("Europe/Paris"))
    night = (paris + timedelta(days=1)).replace(hour=2, minute=0, second=0, microsecond=0).astimezone(UTC)
    controller = CronJobController(kube, namespace=k8s_namespace, clock=lambda: night + timedelta(minutes=5))
    controller.sync(k8s_namespace, "nightly-report")
    job = crons.jobs()[job_name("nightly-report", night)]
    assert job["spec"]["tasks"][0]["replicas"] == 2 and job["metadata"]["labels"] == {"app": "nightly-report"}
    assert job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_KEY].endswith(("T02:00:00+01:00", "T02:00:00+02:00"))
    # The next night, 11 minutes late: past the ten-minute starting deadline (and the first Job still
    # active, Forbid), nothing is made.
    later = CronJobController(kube, namespace=k8s_namespace, clock=lambda: night + timedelta(days=1, minutes=11))
    later.sync(k8s_namespace, "nightly-report")
    assert len(crons.jobs()) == 1
