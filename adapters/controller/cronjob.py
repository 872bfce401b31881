"""The CronJob controller: Volcano's ``cronjobs.batch.volcano.sh`` make Volcano Jobs on a schedule.

Watches say which CronJob to look at (its own changes, and those of the Jobs it controls); each
pass reads the CronJob and its Jobs afresh, lets :func:`~.cronjob_plan.plan_cronjob` decide, and
carries the plan out: delete, create (or adopt) the Job of the due time, write the status, record
the Events, and look again at the next scheduled time. The Jobs it makes are ordinary Volcano
Jobs, which the Job controller (or Volcano's) then runs.

Restart-safe: the Job of one scheduled time always has the same name, so a pass after a crash
that came between the Job's creation and the status write gets "already exists", finds the Job
controlled by this CronJob, and adopts it; a second Job for that time is never made. Runs beside
the Job controller under the same leader election (one writer at a time).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, tzinfo
from typing import Any

from vcsat.adapters.controller import naming
from vcsat.adapters.controller.controller import WorkQueue
from vcsat.adapters.controller.cronjob_plan import (
    CRONJOB_KIND,
    CRONJOB_PLURAL,
    FINISHED,
    Event,
    active_ref,
    controlled_by,
    job_from_template,
    plan_cronjob,
    read_owned_job,
)
from vcsat.adapters.controller.reconciler import JOBS
from vcsat.adapters.controller.status import rfc3339
from vcsat.adapters.kube.client import ApiError, Kube, Resource
from vcsat.adapters.kube.status_subresource import StatusWriter

log = logging.getLogger("vcsat.controller.cronjob")

CRONJOBS = Resource(CRONJOB_KIND, naming.JOB_API_VERSION, CRONJOB_PLURAL, namespaced=True)
COMPONENT = "vcsat-controller"
RETRY_S = 5.0

Key = tuple[str, str]


def cronjobs_served(kube: Kube) -> bool:
    """Whether the API server serves ``cronjobs.batch.volcano.sh`` (the CRD is installed)."""
    try:
        found = kube.get(f"/apis/{CRONJOBS.api_version}")
    except ApiError:
        return False
    return any(item.get("name") == CRONJOBS.plural for item in found.get("resources") or ())


class CronJobController:
    """Watches and one worker around :meth:`sync`; ``run(stop)`` blocks until ``stop`` is set."""

    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str | None = None,
        resync_s: float = 60.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        zone: tzinfo | None = None,
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.resync_s = resync_s
        self.clock = clock
        self.zone = zone
        self.statuses = StatusWriter(kube)
        self.queue = WorkQueue()
        self._lock = threading.Lock()
        self._known: set[Key] = set()
        self._said: dict[Key, set[tuple[str, str]]] = {}
        self._listed: set[str] = set()
        self.syncs = 0

    # --- running ---------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        from vcsat.adapters.kube.informer import Informer

        informers = [
            Informer(self.kube, CRONJOBS, on_list=self._cronjobs_listed, on_event=self._cronjob_event),
            Informer(self.kube, JOBS, on_list=self._jobs_listed, on_event=self._job_event),
        ]
        worker = threading.Thread(target=self._work, args=(stop,), name="cronjob-worker", daemon=True)
        for informer in informers:
            informer.start()
        worker.start()
        try:
            while not stop.wait(self.resync_s):
                with self._lock:
                    known = list(self._known)
                for key in known:
                    self.queue.add(key)
        finally:
            self.queue.close()
            for informer in informers:
                informer.stop()
            worker.join(10.0)
            for informer in informers:
                informer.join(5.0)

    def synced(self) -> bool:
        return {"cronjobs", "jobs"} <= self._listed

    def _work(self, stop: threading.Event) -> None:
        while not stop.is_set():
            key = self.queue.get()
            if key is None:
                return
            try:
                again = self.sync(*key)
            except Exception as error:  # one CronJob's trouble must never stop the loop
                log.warning(
                    "cronjob sync failed; retrying",
                    extra={"cronjob": "/".join(key), "error": f"{type(error).__name__}: {error}"},
                )
                again = RETRY_S
            finally:
                self.syncs += 1
                self.queue.done(key)
            if again is not None:
                self.queue.add(key, again)

    def _mine(self, obj: Mapping[str, Any]) -> bool:
        namespace = (obj.get("metadata") or {}).get("namespace")
        return self.namespace is None or namespace == self.namespace

    def _cronjobs_listed(self, items: list[dict[str, Any]]) -> None:
        keys = {_key(item) for item in items if self._mine(item)}
        with self._lock:
            self._known = keys
        for key in keys:
            self.queue.add(key)
        self._listed.add("cronjobs")

    def _cronjob_event(self, event_type: str, obj: dict[str, Any]) -> None:
        if not self._mine(obj):
            return
        key = _key(obj)
        with self._lock:
            if event_type == "DELETED":
                self._known.discard(key)
                self._said.pop(key, None)
                return
            self._known.add(key)
        self.queue.add(key)

    def _jobs_listed(self, items: list[dict[str, Any]]) -> None:
        self._listed.add("jobs")

    def _job_event(self, event_type: str, job: dict[str, Any]) -> None:
        if not self._mine(job):
            return
        metadata = job.get("metadata") or {}
        for ref in metadata.get("ownerReferences") or ():
            if ref.get("controller") and ref.get("kind") == CRONJOB_KIND:
                self.queue.add((str(metadata.get("namespace")), str(ref.get("name"))))

    # --- one pass --------------------------------------------------------------------------

    def sync(self, namespace: str, name: str) -> float | None:
        """One pass over the CronJob ``namespace/name``; seconds until the next look (None: on change)."""
        try:
            cronjob: dict[str, Any] = self.kube.get(CRONJOBS.path(namespace, name))
        except ApiError as error:
            if error.status == 404:
                return None
            raise
        uid = str(cronjob["metadata"].get("uid"))
        listed = self.kube.get(JOBS.path(namespace)).get("items") or []
        controlled = {job["metadata"]["name"]: job for job in listed if controlled_by(job, uid)}
        plan = plan_cronjob(cronjob, [read_owned_job(j) for j in controlled.values()], self.clock(), zone=self.zone)
        events = list(plan.events)
        for job_name in plan.delete:
            try:
                self.kube.delete(JOBS.path(namespace, job_name), propagationPolicy="Background")
                events.append(Event("Normal", "SuccessfulDelete", f"deleted Job {job_name}"))
            except ApiError as error:
                if error.status != 404:
                    events.append(Event("Warning", "FailedDelete", f"cannot delete Job {job_name}: {error}"))
        active = list(plan.active)
        last_schedule = plan.last_schedule
        changed = plan.status_changed
        if plan.create_for is not None:
            made, settled = self._create(cronjob, plan.create_for, plan.zone, events)
            if made is not None:
                active.append(active_ref(made))
            if settled:
                last_schedule = plan.create_for
                changed = True
        if changed:
            status = {
                "active": active or None,
                "lastScheduleTime": None if last_schedule is None else rfc3339(last_schedule),
                "lastSuccessfulTime": None if plan.last_successful is None else rfc3339(plan.last_successful),
            }
            self.statuses.patch_status(CRONJOBS, namespace, name, status)
        self._record(cronjob, events)
        return plan.requeue_after_s

    def _create(
        self, cronjob: Mapping[str, Any], scheduled: datetime, zone: tzinfo, events: list[Event]
    ) -> tuple[dict[str, Any] | None, bool]:
        """Create (or adopt) the Job of ``scheduled``: the Job to list as active, if any, and whether
        the scheduled time is settled (its Job exists, made now or before)."""
        metadata = cronjob.get("metadata") or {}
        namespace = str(metadata.get("namespace"))
        body = job_from_template(cronjob, scheduled, zone)
        job_name = str(body["metadata"]["name"])
        try:
            made: dict[str, Any] = self.kube.post(JOBS.path(namespace), body)
        except ApiError as error:
            if error.status == 409:
                return self._adopt(namespace, job_name, str(metadata.get("uid")), events)
            events.append(Event("Warning", "FailedCreate", f"cannot create Job {job_name}: {error}"))
            if error.status in (400, 403, 422):
                return None, False  # the template or the namespace is at fault: wait for a change
            raise
        events.append(Event("Normal", "SuccessfulCreate", f"created Job {job_name} for {rfc3339(scheduled)}"))
        return made, True

    def _adopt(
        self, namespace: str, job_name: str, uid: str, events: list[Event]
    ) -> tuple[dict[str, Any] | None, bool]:
        try:
            existing: dict[str, Any] = self.kube.get(JOBS.path(namespace, job_name))
        except ApiError as error:
            if error.status == 404:
                return None, False  # gone meanwhile: the next pass creates it
            raise
        if not controlled_by(existing, uid):
            message = f"Job {job_name} exists and is not controlled by this CronJob"
            events.append(Event("Warning", "ForeignJob", message))
            return None, False
        phase = ((existing.get("status") or {}).get("state") or {}).get("phase")
        return (None if phase in FINISHED else existing), True

    def _record(self, cronjob: Mapping[str, Any], events: list[Event]) -> None:
        """Each Event once while it keeps being true (a skipped time is not said on every pass)."""
        metadata = cronjob.get("metadata") or {}
        key = _key(cronjob)
        now = {(e.reason, e.message) for e in events}
        with self._lock:
            before = self._said.get(key, set())
            self._said[key] = now
        for event in events:
            if (event.reason, event.message) in before:
                continue
            log.info(event.message, extra={"cronjob": "/".join(key), "reason": event.reason, "type": event.type})
            stamp = rfc3339(self.clock())
            body = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"{metadata.get('name')}.{uuid.uuid4().hex[:16]}", "namespace": key[0]},
                "involvedObject": {
                    "apiVersion": naming.JOB_API_VERSION,
                    "kind": CRONJOB_KIND,
                    "name": metadata.get("name"),
                    "namespace": key[0],
                    "uid": metadata.get("uid"),
                },
                "reason": event.reason,
                "message": event.message[:1024],
                "type": event.type,
                "source": {"component": COMPONENT},
                "reportingComponent": COMPONENT,
                "firstTimestamp": stamp,
                "lastTimestamp": stamp,
                "count": 1,
            }
            try:
                self.kube.post(f"/api/v1/namespaces/{key[0]}/events", body)
            except ApiError as error:
                log.warning("cannot record an event", extra={"cronjob": "/".join(key), "error": str(error)})


@contextlib.contextmanager
def run_cronjobs_beside(kube: Kube, stop: threading.Event, **options: Any) -> Iterator[CronJobController | None]:
    """A CronJobController in a thread for the block (the Job controller's term), when the CronJob
    CRD is installed; otherwise a warning, and nothing."""
    if not cronjobs_served(kube):
        log.warning("the CronJob CRD (cronjobs.batch.volcano.sh) is not installed: CronJobs are not handled")
        yield None
        return
    controller = CronJobController(kube, **options)
    thread = threading.Thread(target=controller.run, args=(stop,), name="cronjob-controller", daemon=True)
    thread.start()
    try:
        yield controller
    finally:
        stop.set()
        thread.join(30.0)


def _key(obj: Mapping[str, Any]) -> Key:
    metadata = obj.get("metadata") or {}
    return (str(metadata.get("namespace") or "default"), str(metadata.get("name")))
