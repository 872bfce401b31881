"""What one pass over a Volcano CronJob must do, decided from the objects and a clock alone.

``plan_cronjob(cronjob, jobs, now)`` reads the CronJob as the API returned it and the Jobs it owns
(controller owner reference), and answers a :class:`CronPlan`: which Jobs to delete (history
beyond ``successfulJobsHistoryLimit``/``failedJobsHistoryLimit``, the active ones under
``concurrencyPolicy: Replace``), whether to create the Job of one scheduled time, the status to
write (``active``, ``lastScheduleTime``, ``lastSuccessfulTime``), the Events to record, and when
to look again. Nothing here calls the API, so the schedule cases are plain tables with an
injected clock.

The rules are Kubernetes' CronJob controller's, which Volcano's follows:

- the time to run is the most recent scheduled time in (``lastScheduleTime`` or the creation
  time, ``now``], and only if it is no older than ``startingDeadlineSeconds``; missed earlier
  times are not made up (more than 100 of them get a ``TooManyMissedTimes`` warning);
- the Job of a scheduled time has a name computed from that time (``<cronjob>-<unix minutes>``),
  so a controller that crashed after creating it and before writing the status finds it again
  ("already exists") and adopts it instead of making a second one;
- ``Forbid`` skips a time while a Job is active (the time stays due and runs when the active Job
  ends, if its deadline allows); ``Replace`` deletes the active Jobs first; ``suspend`` creates
  nothing but still tidies the history.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from vcsat.adapters.controller import naming
from vcsat.adapters.controller.cron import CronSchedule, ScheduleError, load_zone, parse_schedule
from vcsat.adapters.controller.status import parse_time, rfc3339

CRONJOB_KIND = "CronJob"
CRONJOB_PLURAL = "cronjobs"
SCHEDULED_TIMESTAMP_KEY = "volcano.sh/cronjob-scheduled-timestamp"
"""Job annotation: the scheduled time the Job was made for (RFC 3339 in the schedule's zone)."""
MANY_MISSED = 100
NEXT_DELTA = timedelta(milliseconds=100)
"""Looked at this long after a scheduled time, so that a slightly early wake-up still finds it due."""
FINISHED = frozenset({"Completed", "Failed", "Terminated"})


@dataclass(frozen=True)
class Event:
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class OwnedJob:
    """A Volcano Job that the CronJob controls, as far as a pass needs it."""

    name: str
    uid: str
    created: datetime
    phase: str
    finished_at: datetime | None

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED


@dataclass(frozen=True)
class CronPlan:
    delete: tuple[str, ...] = ()
    """Names of Jobs to delete (history first, then the active ones that Replace supersedes)."""
    create_for: datetime | None = None
    """The scheduled time whose Job to create (or adopt, when it exists already)."""
    active: tuple[dict[str, Any], ...] = ()
    """``status.active`` after the deletions, before the created Job is added."""
    last_schedule: datetime | None = None
    last_successful: datetime | None = None
    events: tuple[Event, ...] = ()
    requeue_after_s: float | None = None
    zone: tzinfo = UTC
    status_changed: bool = False
    """Whether the status differs from the CronJob's (the created Job's reference aside)."""


def default_zone() -> tzinfo:
    """The zone of a CronJob without ``spec.timeZone``: the controller's ``TZ``, else UTC."""
    try:
        return load_zone(os.environ.get("TZ", "").lstrip(":"))
    except ScheduleError:
        return UTC


def job_name(cronjob_name: str, scheduled: datetime) -> str:
    """``<cronjob>-<minutes since the epoch>``: the same name for the same scheduled time, always."""
    return f"{cronjob_name}-{int(scheduled.timestamp()) // 60}"


def read_owned_job(job: Mapping[str, Any]) -> OwnedJob:
    metadata = job.get("metadata") or {}
    state = (job.get("status") or {}).get("state") or {}
    return OwnedJob(
        name=str(metadata.get("name") or ""),
        uid=str(metadata.get("uid") or ""),
        created=parse_time(metadata.get("creationTimestamp")) or datetime.min.replace(tzinfo=UTC),
        phase=str(state.get("phase") or ""),
        finished_at=parse_time(state.get("lastTransitionTime")),
    )


def controlled_by(job: Mapping[str, Any], cronjob_uid: str) -> bool:
    refs = (job.get("metadata") or {}).get("ownerReferences") or ()
    return any(r.get("controller") and r.get("kind") == CRONJOB_KIND and r.get("uid") == cronjob_uid for r in refs)


def active_ref(job: Mapping[str, Any]) -> dict[str, Any]:
    """A ``status.active`` entry (a core/v1 ObjectReference) for ``job``."""
    metadata = job.get("metadata") or {}
    return {
        "apiVersion": naming.JOB_API_VERSION,
        "kind": naming.JOB_KIND,
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "uid": metadata.get("uid"),
        "resourceVersion": metadata.get("resourceVersion"),
    }


def schedule_of(cronjob: Mapping[str, Any], zone: tzinfo | None = None) -> tuple[CronSchedule, list[Event]]:
    """The CronJob's schedule in its zone; ScheduleError names the field that cannot be read."""
    spec = cronjob.get("spec") or {}
    events: list[Event] = []
    text = str(spec.get("schedule") or "")
    zone_name = spec.get("timeZone")
    if zone_name is not None:
        try:
            zone = load_zone(str(zone_name))
        except ScheduleError as error:
            raise ScheduleError(f"spec.timeZone: {error}") from error
    try:
        schedule = parse_schedule(text, zone or default_zone())
    except ScheduleError as error:
        raise ScheduleError(f"spec.schedule {text!r}: {error}") from error
    if schedule.zone_in_schedule:
        events.append(
            Event(
                "Warning",
                "UnsupportedSchedule",
                f"TZ or CRON_TZ in spec.schedule {text!r} is not supported by Kubernetes; "
                "it is honoured and spec.timeZone is ignored",
            )
        )
    return schedule, events


def plan_cronjob(
    cronjob: Mapping[str, Any], jobs: Sequence[OwnedJob], now: datetime, *, zone: tzinfo | None = None
) -> CronPlan:
    """One pass over ``cronjob`` whose controlled Jobs are ``jobs``, at ``now`` (see the module doc)."""
    spec = cronjob.get("spec") or {}
    status = cronjob.get("status") or {}
    metadata = cronjob.get("metadata") or {}
    name = str(metadata.get("name") or "")
    events: list[Event] = []
    by_uid = {job.uid: job for job in jobs}

    last_successful = parse_time(status.get("lastSuccessfulTime"))
    for job in jobs:
        ended = job.finished_at if job.phase == "Completed" else None
        if ended is not None and (last_successful is None or ended > last_successful):
            last_successful = ended

    # Active: what status says, less what ended or vanished, plus unfinished Jobs it forgot
    # (created just before a crash, or under a status write that was lost).
    active: list[dict[str, Any]] = []
    for ref in status.get("active") or ():
        known = by_uid.get(str(ref.get("uid") or ""))
        if known is None:
            events.append(Event("Warning", "StaleReference", f"active Job {ref.get('name')!r} no longer exists"))
        elif known.finished:
            events.append(Event("Normal", "SawCompletedJob", f"saw {known.phase.lower()} Job {known.name}"))
        else:
            active.append(dict(ref))
    listed = {str(ref.get("uid")) for ref in active}
    for job in sorted(jobs, key=lambda j: (j.created, j.name)):
        if not job.finished and job.uid not in listed:
            active.append(_ref_for(job, str(metadata.get("namespace") or "")))

    delete = _history_to_delete(spec, jobs)
    deleted = set(delete)
    active = [ref for ref in active if ref.get("name") not in deleted]
    last_schedule = parse_time(status.get("lastScheduleTime"))

    def done(**changes: Any) -> CronPlan:
        plan = CronPlan(
            delete=tuple(delete),
            active=tuple(active),
            last_schedule=last_schedule,
            last_successful=last_successful,
            events=tuple(events),
            **changes,
        )
        changed = (
            [r.get("uid") for r in plan.active] != [r.get("uid") for r in status.get("active") or ()]
            or _stamp(plan.last_schedule) != status.get("lastScheduleTime")
            or _stamp(plan.last_successful) != status.get("lastSuccessfulTime")
        )
        return replace(plan, status_changed=changed)

    if metadata.get("deletionTimestamp") or spec.get("suspend"):
        return done()
    try:
        schedule, notes = schedule_of(cronjob, zone)
    except ScheduleError as error:
        events.append(Event("Warning", "InvalidSchedule", str(error)))
        return done()
    events.extend(notes)

    created = parse_time(metadata.get("creationTimestamp")) or now
    earliest = last_schedule or created
    deadline_s = spec.get("startingDeadlineSeconds")
    if isinstance(deadline_s, int) and now - timedelta(seconds=deadline_s) > earliest:
        earliest = now - timedelta(seconds=deadline_s)
    due, many = most_recent(schedule, earliest, now)
    if many:
        events.append(
            Event(
                "Warning",
                "TooManyMissedTimes",
                "too many missed start times: set or decrease spec.startingDeadlineSeconds or check clock skew",
            )
        )
    upcoming = schedule.next_after(now)
    wait = None if upcoming is None else max(0.0, (upcoming + NEXT_DELTA - now).total_seconds())
    if due is None or due == last_schedule:
        return done(requeue_after_s=wait, zone=schedule.zone)
    if any(r.get("name") == job_name(name, due) for r in active):
        # Its Job exists (made before a crash, or the status write was lost): settled.
        last_schedule = due if last_schedule is None or due > last_schedule else last_schedule
        return done(requeue_after_s=wait, zone=schedule.zone)

    policy = spec.get("concurrencyPolicy") or "Allow"
    if policy == "Forbid" and active:
        events.append(
            Event(
                "Warning",
                "ForbidConcurrent",
                f"not starting the Job for {rfc3339(due)}: another Job is still active (concurrencyPolicy Forbid)",
            )
        )
        return done(requeue_after_s=wait, zone=schedule.zone)
    if policy == "Replace" and active:
        events.append(Event("Warning", "ReplaceConcurrent", f"replacing the active Job for {rfc3339(due)}"))
        delete.extend(str(ref.get("name")) for ref in active)
        active = []
    return done(create_for=due, requeue_after_s=wait, zone=schedule.zone)


def most_recent(schedule: CronSchedule, earliest: datetime, now: datetime) -> tuple[datetime | None, bool]:
    """The latest scheduled time in (earliest, now], and whether more than 100 were missed."""
    first = schedule.next_after(earliest)
    if first is None or first > now:
        return None, False
    count, t = 1, first
    while count <= MANY_MISSED:
        following = schedule.next_after(t)
        if following is None or following > now:
            return t, False
        count, t = count + 1, following
    # Many missed: find the latest one by looking back from now in growing windows.
    window = max(timedelta(minutes=1), (schedule.next_after(first) or first) - first)
    while True:
        start = max(earliest, now - window)
        candidate = schedule.next_after(start)
        if candidate is not None and candidate <= now:
            while (following := schedule.next_after(candidate)) is not None and following <= now:
                candidate = following
            return candidate, True
        if start == earliest:
            return t, True
        window *= 2


def _history_to_delete(spec: Mapping[str, Any], jobs: Sequence[OwnedJob]) -> list[str]:
    out: list[str] = []
    limits = (("Completed", "successfulJobsHistoryLimit", 3), ("Failed", "failedJobsHistoryLimit", 1))
    for phase, key, default in limits:
        limit = spec.get(key, default)
        if not isinstance(limit, int):
            continue
        ended = sorted((j for j in jobs if j.phase == phase), key=lambda j: (j.created, j.name))
        out.extend(j.name for j in ended[: max(0, len(ended) - limit)])
    return out


def _ref_for(job: OwnedJob, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": naming.JOB_API_VERSION,
        "kind": naming.JOB_KIND,
        "name": job.name,
        "namespace": namespace,
        "uid": job.uid,
    }


def _stamp(moment: datetime | None) -> str | None:
    return None if moment is None else rfc3339(moment)


def job_from_template(cronjob: Mapping[str, Any], scheduled: datetime, zone: tzinfo) -> dict[str, Any]:
    """The Volcano Job for ``scheduled``: the template's labels, annotations and spec, a name computed
    from the time, the scheduled time as an annotation, and the CronJob as its controller."""
    metadata = cronjob.get("metadata") or {}
    template = (cronjob.get("spec") or {}).get("jobTemplate") or {}
    template_meta = template.get("metadata") or {}
    annotations = dict(template_meta.get("annotations") or {})
    annotations[SCHEDULED_TIMESTAMP_KEY] = (
        scheduled.astimezone(zone).isoformat(timespec="seconds").replace("+00:00", "Z")
    )
    job_metadata: dict[str, Any] = {
        "name": job_name(str(metadata.get("name")), scheduled),
        "namespace": metadata.get("namespace"),
        "annotations": annotations,
        "ownerReferences": [
            {
                "apiVersion": naming.JOB_API_VERSION,
                "kind": CRONJOB_KIND,
                "name": metadata.get("name"),
                "uid": metadata.get("uid"),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if template_meta.get("labels"):
        job_metadata["labels"] = dict(template_meta["labels"])
    return {
        "apiVersion": naming.JOB_API_VERSION,
        "kind": naming.JOB_KIND,
        "metadata": job_metadata,
        "spec": dict(template.get("spec") or {}),
    }
