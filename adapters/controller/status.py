"""The Job's status, as typed data that round-trips exactly through the CRD's ``status``.

The status is the controller's only memory: after a restart, the phase, the retry count and the
job version must come back from it unchanged, or a restart would re-run a finished job or burn
retries twice. It is written whole through the status subresource, guarded by the Job's
``resourceVersion``, so two controllers (or one that crashed and came back) never interleave.
Equal statuses are not written at all: a reconcile that changes nothing costs no write and wakes
no watcher.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

PHASES = (
    "Pending",
    "Aborting",
    "Aborted",
    "Running",
    "Restarting",
    "Completing",
    "Completed",
    "Terminating",
    "Terminated",
    "Failed",
)
FINISHED_PHASES = frozenset({"Completed", "Failed", "Terminated"})
"""Phases a job never leaves by itself (what ``ttlSecondsAfterFinished`` counts from)."""
FINAL_PHASES = FINISHED_PHASES | {"Aborted"}
"""Phases with nothing left running: the job's PodGroup and plugin objects are removed."""


@dataclass(frozen=True)
class Condition:
    """One entry of the phase history: the phase (``status``) and when the job entered it."""

    status: str
    last_transition_time: str | None = None


@dataclass(frozen=True)
class JobStatus:
    phase: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    min_available: int = 0
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    retry_count: int = 0
    version: int = 0
    task_status_count: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    conditions: tuple[Condition, ...] = ()
    controlled_resources: Mapping[str, str] = field(default_factory=dict)
    running_duration: str | None = None
    """How long the job ran, from its last entry into Running until it finished (a Go duration)."""

    @classmethod
    def from_dict(cls, raw: Any) -> JobStatus:
        """The status of a Job object's ``status`` (tolerant: fields that do not parse count as unset)."""
        if not isinstance(raw, Mapping):
            return cls()
        state: Mapping[str, Any] = raw["state"] if isinstance(raw.get("state"), Mapping) else {}
        counts = {}
        for task, entry in (raw.get("taskStatusCount") or {}).items():
            phases = entry.get("phase") if isinstance(entry, Mapping) else None
            if isinstance(phases, Mapping):
                counts[str(task)] = {str(k): _int(v) for k, v in phases.items() if _int(v)}
        conditions = tuple(
            Condition(status=str(entry.get("status")), last_transition_time=entry.get("lastTransitionTime"))
            for entry in raw.get("conditions") or []
            if isinstance(entry, Mapping) and entry.get("status")
        )
        resources = raw.get("controlledResources")
        return cls(
            phase=str(state.get("phase") or ""),
            reason=str(state.get("reason") or ""),
            message=str(state.get("message") or ""),
            last_transition_time=state.get("lastTransitionTime") or None,
            min_available=_int(raw.get("minAvailable")),
            pending=_int(raw.get("pending")),
            running=_int(raw.get("running")),
            succeeded=_int(raw.get("succeeded")),
            failed=_int(raw.get("failed")),
            terminating=_int(raw.get("terminating")),
            unknown=_int(raw.get("unknown")),
            retry_count=_int(raw.get("retryCount")),
            version=_int(raw.get("version")),
            task_status_count=counts,
            conditions=conditions,
            controlled_resources=(
                {str(k): str(v) for k, v in resources.items()} if isinstance(resources, Mapping) else {}
            ),
            running_duration=raw.get("runningDuration") if isinstance(raw.get("runningDuration"), str) else None,
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``status`` as the CRD stores it (zeros and empties left out, as Go's omitempty does)."""
        state: dict[str, Any] = {"phase": self.phase}
        if self.reason:
            state["reason"] = self.reason
        if self.message:
            state["message"] = self.message
        if self.last_transition_time:
            state["lastTransitionTime"] = self.last_transition_time
        out: dict[str, Any] = {"state": state, "minAvailable": self.min_available}
        for key, value in (
            ("pending", self.pending),
            ("running", self.running),
            ("succeeded", self.succeeded),
            ("failed", self.failed),
            ("terminating", self.terminating),
            ("unknown", self.unknown),
            ("retryCount", self.retry_count),
            ("version", self.version),
        ):
            if value:
                out[key] = value
        if self.task_status_count:
            out["taskStatusCount"] = {
                task: {"phase": dict(phases)} for task, phases in sorted(self.task_status_count.items())
            }
        if self.conditions:
            out["conditions"] = [
                {
                    "status": c.status,
                    **({"lastTransitionTime": c.last_transition_time} if c.last_transition_time else {}),
                }
                for c in self.conditions
            ]
        if self.controlled_resources:
            out["controlledResources"] = dict(sorted(self.controlled_resources.items()))
        if self.running_duration:
            out["runningDuration"] = self.running_duration
        return out

    def entering(self, phase: str, now: datetime, *, reason: str = "", message: str = "") -> JobStatus:
        """This status moved to ``phase`` now: the transition time and the phase history follow."""
        stamp = rfc3339(now)
        history = (*(c for c in self.conditions if c.status != phase), Condition(phase, stamp))
        running_duration = self.running_duration
        if phase in FINISHED_PHASES:
            # Once, when it ends: a duration that ticked on every pass would cost a write per reconcile.
            started = next((parse_time(c.last_transition_time) for c in self.conditions if c.status == "Running"), None)
            running_duration = go_duration(now - started) if started else None
        return replace(
            self,
            phase=phase,
            reason=reason,
            message=message,
            last_transition_time=stamp,
            conditions=history,
            running_duration=running_duration,
        )


def rfc3339(moment: datetime) -> str:
    """A timestamp as Kubernetes writes one: UTC, whole seconds, ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def go_duration(elapsed: timedelta) -> str:
    """A duration as Go's ``time.Duration.String`` prints it (``1h2m3s``), the JSON of ``metav1.Duration``."""
    seconds = max(0, round(elapsed.total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{minutes}m{seconds}s"
    return f"{seconds}s"


def parse_time(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
