"""What the state machine sees: pods, the PodGroup's phase and a pending user command, as plain data.

The lifecycle (:mod:`.state`) is a pure function so that every transition can be tested as a table
row; this module is where Kubernetes objects become its input. Reading a pod answers the questions
Volcano's event handlers ask: which task and index, which job version created it, did it fail and
with which exit code, was it evicted (a disruption, not the job's own fault), did the controller
itself mark it for deletion, is it ready, and since when is it in its phase (for policy timeouts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from vcsat.adapters.controller import naming
from vcsat.adapters.controller.status import parse_time

DISRUPTION_CONDITION = "DisruptionTarget"
EVICTED_REASONS = frozenset({"Evicted", "Preempting", "Preempted"})


@dataclass(frozen=True)
class ObservedPod:
    name: str
    task: str
    index: int | None
    phase: str
    version: int | None
    owned: bool = True
    """Controlled by this very Job (same uid); a pod of an earlier Job of the same name is not."""
    deleting: bool = False
    gone: bool = False
    """Seen deleted by the watch: a tombstone, kept until the next reconcile has looked at it."""
    out_of_sync: bool = False
    """The controller marked it before deleting it; its end is no event."""
    disrupted: bool = False
    """Evicted or preempted (a ``DisruptionTarget`` condition or an ``Evicted`` reason)."""
    exit_code: int | None = None
    ready: bool = False
    restarts: int = 0
    since: datetime | None = None
    """When the pod entered its current phase, as well as the pod tells."""

    @property
    def alive(self) -> bool:
        """Holds or may still hold room: not gone, not being deleted, not finished."""
        return not self.gone and not self.deleting and self.phase not in ("Succeeded", "Failed")


@dataclass(frozen=True)
class Command:
    """A user command on the Job (a ``bus.volcano.sh`` Command: ``vcsat job suspend`` or ``vcctl
    job suspend`` → AbortJob, ``resume`` → ResumeJob); ``id`` is the Command's uid."""

    id: str
    action: str
    problem: str = ""
    """Why the command could not be read; such a command is reported and dropped."""


@dataclass(frozen=True)
class Observation:
    pods: tuple[ObservedPod, ...] = ()
    podgroup_phase: str | None = None
    """None when the job has no PodGroup; ``""`` when it exists but the scheduler has not set a phase."""
    command: Command | None = None
    now: datetime | None = None
    job_updated: bool = False
    """The Job's spec changed since the controller last acted on it (Volcano's JobUpdated)."""


def observe_pod(obj: Mapping[str, Any], *, job_uid: str, gone: bool = False) -> ObservedPod:
    """The state machine's view of one pod object."""
    metadata = obj.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    labels = metadata.get("labels") or {}
    status = obj.get("status") or {}
    phase = str(status.get("phase") or "Pending")
    container_statuses = list(status.get("containerStatuses") or [])
    conditions = list(status.get("conditions") or [])

    disrupted = str(status.get("reason") or "") in EVICTED_REASONS or any(
        c.get("type") == DISRUPTION_CONDITION and c.get("status") == "True" for c in conditions
    )
    ready = phase == "Running" and all(bool(c.get("ready")) for c in container_statuses)
    controller = naming.controller_uid(dict(obj))
    return ObservedPod(
        name=str(metadata.get("name") or ""),
        task=str(annotations.get(naming.TASK_SPEC_KEY) or labels.get(naming.TASK_SPEC_KEY) or ""),
        index=_int_or_none(annotations.get(naming.TASK_INDEX_KEY) or labels.get(naming.TASK_INDEX_KEY)),
        phase=phase,
        version=_int_or_none(annotations.get(naming.JOB_VERSION_KEY)),
        owned=bool(job_uid) and controller == job_uid,
        deleting=bool(metadata.get("deletionTimestamp")),
        gone=gone,
        out_of_sync=naming.OUT_OF_SYNC_KEY in annotations,
        disrupted=disrupted,
        exit_code=_exit_code(container_statuses),
        ready=ready,
        restarts=sum(int(c.get("restartCount") or 0) for c in container_statuses)
        + sum(int(c.get("restartCount") or 0) for c in status.get("initContainerStatuses") or []),
        since=_since(phase, metadata, container_statuses, conditions),
    )


def _exit_code(container_statuses: list[Mapping[str, Any]]) -> int | None:
    codes = []
    for container in container_statuses:
        terminated = (container.get("state") or {}).get("terminated")
        if isinstance(terminated, Mapping) and isinstance(terminated.get("exitCode"), int):
            codes.append(int(terminated["exitCode"]))
    if not codes:
        return None
    failures = [code for code in codes if code != 0]
    return failures[0] if failures else codes[0]


def _since(
    phase: str,
    metadata: Mapping[str, Any],
    container_statuses: list[Mapping[str, Any]],
    conditions: list[Mapping[str, Any]],
) -> datetime | None:
    created = parse_time(metadata.get("creationTimestamp"))
    if phase == "Pending":
        return created
    moments = []
    if phase in ("Succeeded", "Failed"):
        for container in container_statuses:
            terminated = (container.get("state") or {}).get("terminated") or {}
            moment = parse_time(terminated.get("finishedAt"))
            if moment:
                moments.append(moment)
    if not moments:
        moments = [m for m in (parse_time(c.get("lastTransitionTime")) for c in conditions) if m]
    return max(moments) if moments else created


def _int_or_none(value: Any) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None
