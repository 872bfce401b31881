"""Status writes: PodGroup status and PodScheduled=False on the pods a cycle leaves unplaced.

A PodGroup's phase, counts and conditions (Volcano's, plus ``Inqueued``, which keeps the admission
time) go through the status subresource, or on the PodGroup itself where the CRD serves none
(Volcano's; discovery decides, :mod:`.status_subresource`), written only when they differ from
what the group shows.
An unplaced pod gets PodScheduled=False (``Unschedulable``, or ``SchedulingGated`` for a gated
pod, with the decision's reason code and message) as kube-scheduler marks it and
cluster-autoscaler looks for it: from the second cycle it waits on, and again only when it
changes (a new message alone at most every ``event_refresh_s``). Admissions to Inqueue go first,
since a Job controller creates a job's pods only once its group is Inqueue.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from itertools import islice
from typing import Any

from vcsat.adapters.convert.clock import INQUEUED_CONDITION, INQUEUED_REASON
from vcsat.adapters.kube.apply_state import (
    MAX_EVENT_MESSAGE,
    MAX_REMEMBERED,
    ApplyReport,
    ConditionWrite,
    GangOutcome,
    forget_oldest,
    log,
)
from vcsat.adapters.kube.client import (
    PODGROUPS,
    PODS,
    STRATEGIC_MERGE_PATCH,
    ApiError,
    Resource,
    now_rfc3339,
)
from vcsat.adapters.kube.events import EventWriter
from vcsat.adapters.kube.status_subresource import StatusWriter
from vcsat.model import Decision, Pod, PodGroup, PodGroupOutcome, Snapshot

POD_SCHEDULED = "PodScheduled"
UNSCHEDULABLE = "Unschedulable"
"""The reason kube-scheduler gives a pod it could not place; cluster-autoscaler scales up for it."""
SCHEDULING_GATED = "SchedulingGated"
"""The reason of a pod held by its scheduling gates (room would not help it)."""
SCHEDULER_ERROR = "SchedulerError"
"""The reason kube-scheduler gives a pod whose scheduling raised an error: not a lack of room, so
cluster-autoscaler does not scale up for it (vcsat: a group set aside by ``vcsat.adapters.live.isolate``)."""
NOT_PLACED = "NotPlaced"
"""Reason code of a pod left out while its gang counts as placed (beyond its minMember)."""
PREEMPTING = "Preempting"
"""Reason code of a nominated pod: it is placed once the victims are gone."""


class StatusWrites(EventWriter):
    """PodGroup status and the PodScheduled condition of unplaced pods, written only when due."""

    _status_written_at: dict[str, float]
    _quiet: dict[str, tuple[PodGroup, tuple[Pod, ...], Mapping[str, Any]]]
    """Per PodGroup that no decision spoke of and that showed the status it should when last
    looked at: the group, its pods and the PodGroup object of the store then. While they are the
    very same objects (the converter keeps the model of an object whose change it does not read,
    so the store's object is compared too: its status is what is written), it still does, and
    nothing is written for it: a cycle then looks again only at the groups whose objects changed,
    not at every group."""
    _walked: _Walk | None
    """The last full apply's walk over the PodGroups (:meth:`_looked_at` starts from it)."""
    _quiet_moved: set[str]
    """Keys whose entry in ``_quiet`` may have changed since the last full apply's walk."""
    statuses: StatusWriter
    _unplaced_seen: set[str]
    """Uids of pods some cycle left unplaced (the first time writes nothing)."""

    def _podgroups(
        self,
        decision: Decision,
        snapshot: Snapshot,
        gangs: Mapping[str, GangOutcome],
        report: ApplyReport,
        *,
        bound_only: bool = False,
    ) -> None:
        """Statuses and Events of the decision's PodGroups (and lone pods); ``bound_only``: of
        those this apply bound pods of, and the admissions to Inqueue of PodGroups that have no pods
        yet, only (an early apply: the full cycle reports the rest)."""
        outcomes = {outcome.podgroup: outcome for outcome in decision.podgroups}
        if bound_only:
            outcomes = {
                key: outcome
                for key, outcome in outcomes.items()
                if (key in gangs and gangs[key].bound) or _admitted_without_pods(key, outcome, snapshot)
            }
        futures: list[Future[list[str]]] = []
        generation = self.store.generation  # before any read of the store below
        quiet = self._quiet
        if len(quiet) > 2 * len(snapshot.podgroups) + 1000:
            gone = [key for key in quiet if key not in snapshot.podgroup_by_key]
            self._quiet_moved.update(gone)
            self._quiet = quiet = {key: entry for key, entry in quiet.items() if key in snapshot.podgroup_by_key}
        # An early apply leaves out every group without an outcome (below): it looks at the outcomes' only.
        groups = _in_order(snapshot, outcomes) if bound_only else self._looked_at(snapshot, outcomes, gangs)
        # Admissions first: a Job controller creates a job's pods only once its group is Inqueue.
        admitted_first = sorted(groups, key=lambda group: getattr(outcomes.get(group.key), "phase", "") != "Inqueue")
        for group in admitted_first:
            pods = snapshot.pods_of_group.get(group.key, ())
            outcome = outcomes.get(group.key)
            if outcome is None and (bound_only or not any(pod.managed for pod in pods)):
                continue  # not ours: another scheduler's group
            if (
                outcome is None
                and group.key not in gangs
                and _unchanged(quiet.get(group.key), group, pods, self.store.get("PodGroup", group.key))
            ):
                continue  # it showed its status when last looked at, and nothing it reads changed since
            # An admission to Inqueue never waits for the bindings: a Job controller waits for it.
            admission = outcome is not None and outcome.phase == "Inqueue"
            submit = self._reports.submit_urgent if admission else self._reports.submit
            # Only a submitted group's entry in ``_quiet`` may change (in ``_podgroup_one``).
            self._quiet_moved.add(group.key)
            futures.append(submit(self._podgroup_one, group, pods, outcome, gangs.get(group.key), report))
        if not bound_only:
            self._walked = _Walk(snapshot, generation, frozenset(self._quiet_moved))
            self._quiet_moved = set()
        for outcome in outcomes.values():
            if outcome.podgroup in snapshot.podgroup_by_key:
                continue
            pod = snapshot.pod_by_key.get(outcome.podgroup)  # a pod with no PodGroup: a gang of one
            if pod is not None:
                futures.append(self._reports.submit(self._lone_pod_events, pod, outcome, gangs.get(pod.key), report))
        for future in futures:
            for done in future.result():
                if done.startswith("status "):
                    report.podgroups_updated.append(done.removeprefix("status "))
                else:
                    report.events.append(done)

    def _looked_at(
        self, snapshot: Snapshot, outcomes: Mapping[str, PodGroupOutcome], gangs: Mapping[str, GangOutcome]
    ) -> Sequence[PodGroup]:
        """The groups a full apply must look at, in the snapshot's order: every group, or, after a
        full apply on a snapshot that shares most objects with this one, only those whose skip in
        ``_podgroups`` may differ from then, which is found from what changed (the others were
        skipped then, and everything the skip reads of them is the same).

        A group skipped then stays skipped while it has no outcome and no gang, its PodGroup and its
        pods are the very objects (the change set, :mod:`vcsat.solver.changes`, with both snapshots'
        pods in key order, so a group's pods in one order too), its PodGroup in the store is the
        very object (the store's journal of changes), and its entry in ``_quiet`` is the same (only
        a group submitted since, or pruned, has another)."""
        walked = self._walked
        if walked is None or not _keys_sorted(snapshot) or not _keys_sorted(walked.snapshot):
            return snapshot.podgroups
        touched = self.store.touched_since("PodGroup", walked.generation)
        if touched is None:
            return snapshot.podgroups
        from vcsat.solver import changes  # the solver loads when the first decision comes, not at import

        look = set(touched)
        look.update(changes.between(walked.snapshot, snapshot).groups_touched)
        look.update(walked.moved)
        look.update(self._quiet_moved)
        look.update(outcomes)
        look.update(gangs)
        return _in_order(snapshot, look)

    def _unschedulable(self, decision: Decision, snapshot: Snapshot, report: ApplyReport) -> None:
        """PodScheduled=False on the pods this decision leaves unplaced, where it is new or changed."""
        placed = {binding.pod for binding in decision.bindings}
        nominated = {nomination.pod: nomination.node for nomination in decision.nominations}
        outcomes = {outcome.podgroup: outcome for outcome in decision.podgroups}
        futures: list[tuple[str, Future[bool]]] = []
        for pod in snapshot.pods:
            if not pod.pending or pod.key in placed or not pod.uid:
                continue
            with self._events_lock:
                seen = pod.uid in self._unplaced_seen
                if not seen:
                    if len(self._unplaced_seen) >= MAX_REMEMBERED:
                        self._unplaced_seen.clear()  # pods bound or deleted meanwhile: forget them all
                    self._unplaced_seen.add(pod.uid)
            if not seen:
                # First time left out: maybe only its gang's other pods are not created yet.
                report.follow_up("unschedulable-second-cycle", time.monotonic())
                continue
            if pod.key in nominated:
                message = f"{PREEMPTING}: waits for evictions to free room on node {nominated[pod.key]}"
            else:
                message = _unschedulable_message(outcomes.get(pod.group or pod.key))
            current = self.store.get("Pod", pod.key)
            if current is None or (current.get("spec") or {}).get("nodeName"):
                continue
            condition = _pod_condition(current, POD_SCHEDULED)
            # A gated pod says SchedulingGated, as kube-scheduler marks it: cluster-autoscaler scales
            # up for Unschedulable pods, and room would not help a pod held by its gates.
            outcome = outcomes.get(pod.group or pod.key)
            reason = UNSCHEDULABLE
            if pod.scheduling_gates:
                reason = SCHEDULING_GATED
            elif outcome is not None and outcome.reason == SCHEDULER_ERROR:
                reason = SCHEDULER_ERROR
            with self._events_lock:
                written = self._conditions_written.get(pod.key)
            version = (current.get("metadata") or {}).get("resourceVersion")
            if written is not None and written.before == version:
                # The watch has not shown our last write yet: the pod already says what we wrote.
                current = {**current, "metadata": {**current["metadata"], "resourceVersion": written.after}}
                condition = {
                    "status": "False",
                    "reason": reason,
                    "message": written.message,
                    "lastTransitionTime": written.since,
                }
            due = self._condition_due(written, condition, message, reason)
            if due is None:
                continue
            if due > time.monotonic():
                report.follow_up("unschedulable-refresh", due)
                continue
            futures.append(
                (pod.key, self._reports.submit(self._mark_unschedulable, pod, current, condition, message, reason))
            )
        for key, future in futures:
            if future.result():
                report.unschedulable.append(key)
            else:
                report.follow_up("retry", time.monotonic())

    def _condition_due(
        self, written: ConditionWrite | None, condition: Mapping[str, Any] | None, message: str, reason: str
    ) -> float | None:
        """From when (``time.monotonic()``) to write; None: the pod says it already. Write when the
        condition is missing, another, or names another reason code; a new message alone waits
        ``event_refresh_s`` after our last write."""
        if condition is None or condition.get("status") != "False" or condition.get("reason") != reason:
            return 0.0
        if condition.get("message") == message:
            return None
        if _reason_code(str(condition.get("message") or "")) != _reason_code(message) or written is None:
            return 0.0
        return written.at + self.event_refresh_s

    def _mark_unschedulable(
        self, pod: Pod, current: Mapping[str, Any], condition: Mapping[str, Any] | None, message: str, reason: str
    ) -> bool:
        version = str((current.get("metadata") or {}).get("resourceVersion") or "")
        since = now_rfc3339()
        if condition is not None and condition.get("status") == "False":
            since = condition.get("lastTransitionTime") or since
        body = {
            # Only if the pod is still the one we saw: a binding may have landed meanwhile.
            "metadata": {"resourceVersion": version},
            "status": {
                "conditions": [
                    {
                        "type": POD_SCHEDULED,
                        "status": "False",
                        "reason": reason,
                        "message": message,
                        "lastProbeTime": None,
                        "lastTransitionTime": since,
                    }
                ]
            },
        }
        try:
            # A strategic merge patch merges conditions by type: the kubelet's others stay.
            written = self.kube.patch(
                PODS.path(pod.namespace, pod.name, "status"), body, content_type=STRATEGIC_MERGE_PATCH
            )
        except ApiError as error:
            if error.status not in (404, 409):
                log.warning("pod condition update failed", extra={"pod": pod.key, "error": str(error)})
            return False
        after = str(((written or {}).get("metadata") or {}).get("resourceVersion") or "")
        with self._events_lock:
            if len(self._conditions_written) >= MAX_REMEMBERED:
                forget_oldest(self._conditions_written, lambda record: record.at)
            self._conditions_written[pod.key] = ConditionWrite(version, after, message, since, time.monotonic())
        return True

    def _podgroup_one(
        self,
        group: PodGroup,
        pods: tuple[Pod, ...],
        outcome: PodGroupOutcome | None,
        gang: GangOutcome | None,
        report: ApplyReport,
    ) -> list[str]:
        done: list[str] = []
        current = self.store.get("PodGroup", group.key)
        if current is None:
            return done
        bound_now = len(gang.bound) if gang is not None else 0
        placed = sum(1 for pod in pods if pod.bound) + bound_now
        status = _desired_status(group, pods, outcome, placed, current.get("status") or {})
        if status is not None and self._status_due(group.key, current.get("status") or {}, status, report):
            try:
                # Through the status subresource, or on the PodGroup itself where the CRD (Volcano's)
                # serves none: the controller waits for this phase before it creates pods.
                self.statuses.patch_status(PODGROUPS, group.namespace, group.name, status)
                done.append(f"status {group.key}")
            except ApiError as error:
                if error.status != 404:
                    log.warning("podgroup status not written", extra={"podgroup": group.key, "error": str(error)})
                report.follow_up("retry", time.monotonic())
        done.extend(self._group_events(PODGROUPS, current, group.key, outcome, gang, report))
        if outcome is None and gang is None and not done and _settled(current.get("status") or {}, status):
            self._quiet[group.key] = (group, pods, current)
        else:
            self._quiet.pop(group.key, None)
        return done

    def _lone_pod_events(
        self, pod: Pod, outcome: PodGroupOutcome, gang: GangOutcome | None, report: ApplyReport
    ) -> list[str]:
        current = self.store.get("Pod", pod.key)
        if current is None:
            return []
        return self._group_events(PODS, current, pod.key, outcome, gang, report)

    def _group_events(
        self,
        resource: Resource,
        current: dict[str, Any],
        key: str,
        outcome: PodGroupOutcome | None,
        gang: GangOutcome | None,
        report: ApplyReport,
    ) -> list[str]:
        done: list[str] = []
        if gang is not None and gang.bound:
            self._forget_waiting(str((current.get("metadata") or {}).get("uid")))
            nodes: dict[str, int] = {}
            for binding in gang.bound:
                nodes[binding.node] = nodes.get(binding.node, 0) + 1
            where = ", ".join(f"{node} ({count})" if count > 1 else node for node, count in sorted(nodes.items()))
            message = f"Bound {len(gang.bound)} pod(s) to {where}"
            if gang.failed:
                message += f"; {len(gang.failed)} not bound yet, retried next cycle"
            if self._event(resource, current, "Scheduled", message, "Normal", dedupe=False):
                done.append(f"{key} Scheduled")
        elif (
            outcome is not None
            and outcome.phase != "Running"
            and outcome.reason
            and self._still_waiting(str((current.get("metadata") or {}).get("uid")), outcome.reason, report)
            and self._event(
                resource, current, outcome.reason, outcome.message or outcome.reason, "Warning", report=report
            )
        ):
            done.append(f"{key} {outcome.reason}")
        return done

    def _status_due(
        self, key: str, current: Mapping[str, Any], desired: Mapping[str, Any], report: ApplyReport
    ) -> bool:
        """Write when phase, counts or condition type/reason change; a new message alone waits a while."""
        now = time.monotonic()
        if _status_core(current, messages=True) == _status_core(desired, messages=True):
            return False
        with self._events_lock:
            if len(self._status_written_at) > MAX_REMEMBERED:
                forget_oldest(self._status_written_at, lambda written_at: written_at)
            changed = _status_core(current) != _status_core(desired)
            due = self._status_written_at.get(key, -float("inf")) + self.event_refresh_s
            if changed or now >= due:
                self._status_written_at[key] = now
                return True
        report.follow_up("status-refresh", due)
        return False


@dataclass(frozen=True)
class _Walk:
    """The last full apply's walk: its snapshot, the store's generation when it began, and the keys
    whose entry in ``_quiet`` may have changed since the walk before (those it submitted, and any
    submitted or pruned between the two)."""

    snapshot: Snapshot
    generation: int
    moved: frozenset[str]


def _keys_sorted(snapshot: Snapshot) -> bool:
    """The snapshot's pods and PodGroups each in strictly increasing key order (the converter sorts
    them): the pods two such snapshots share are in one order in both."""
    checked = _SORTED.get(id(snapshot))
    if checked is not None and checked[0] is snapshot:
        return checked[1]
    found = all(
        len(index) == len(objects) and all(map(operator.lt, keys := list(index), islice(keys, 1, None)))
        for index, objects in (
            (snapshot.pod_by_key, snapshot.pods),
            (snapshot.podgroup_by_key, snapshot.podgroups),
        )
    )
    if len(_SORTED) >= 4:
        del _SORTED[next(iter(_SORTED))]
    _SORTED[id(snapshot)] = (snapshot, found)
    return found


_SORTED: dict[int, tuple[Snapshot, bool]] = {}
"""The last few snapshots' :func:`_keys_sorted` (each walk asks of two)."""


def _in_order(snapshot: Snapshot, keys: Iterable[str]) -> Sequence[PodGroup]:
    """The snapshot's PodGroups of these keys, in the snapshot's order (its keys are sorted)."""
    by_key = snapshot.podgroup_by_key
    if not _keys_sorted(snapshot):
        wanted = set(keys)
        return [group for group in snapshot.podgroups if group.key in wanted]
    return [by_key[key] for key in sorted(key for key in keys if key in by_key)]


def _unchanged(
    entry: tuple[PodGroup, tuple[Pod, ...], Mapping[str, Any]] | None,
    group: PodGroup,
    pods: tuple[Pod, ...],
    current: Mapping[str, Any] | None,
) -> bool:
    return (
        entry is not None
        and entry[0] is group
        and entry[2] is current
        and len(entry[1]) == len(pods)
        and all(a is b for a, b in zip(entry[1], pods, strict=True))
    )


def _settled(current: Mapping[str, Any], desired: Mapping[str, Any] | None) -> bool:
    """The group shows the status it should, messages included (no refresh is due later)."""
    return desired is None or _status_core(current, messages=True) == _status_core(desired, messages=True)


def _unschedulable_message(outcome: PodGroupOutcome | None) -> str:
    """The decision's explanation for a pod left unplaced: its reason code, then why."""
    if outcome is None or not outcome.reason:
        text = f"{NOT_PLACED}: its gang is placed without it; no room for this pod yet"
    else:
        text = f"{outcome.reason}: {outcome.message or outcome.reason}"
    return text[:MAX_EVENT_MESSAGE]


def _reason_code(message: str) -> str:
    return message.partition(": ")[0]


def _pod_condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind:
            return dict(condition)
    return None


def _desired_status(
    group: PodGroup,
    pods: tuple[Pod, ...],
    outcome: PodGroupOutcome | None,
    placed: int,
    current: Mapping[str, Any],
) -> dict[str, Any] | None:
    """The status a PodGroup should show after this cycle (Volcano's fields and condition types)."""
    running = sum(1 for pod in pods if pod.phase == "Running")
    succeeded = sum(1 for pod in pods if pod.phase == "Succeeded")
    failed = sum(1 for pod in pods if pod.phase == "Failed")
    conditions = list(current.get("conditions") or [])
    if pods and all(pod.finished for pod in pods) and outcome is None:
        phase = "Completed"
    elif placed >= max(1, group.min_member) and placed > 0:
        phase = "Running"
        conditions = [_condition("Scheduled", "Scheduled", f"{placed} pod(s) placed", current)]
    elif outcome is not None:
        phase = outcome.phase
        if outcome.reason:
            conditions = [_condition("Unschedulable", outcome.reason, outcome.message, current)]
    else:
        phase = str(current.get("phase") or "Pending")
    # While Inqueue, the Inqueued condition keeps when it was admitted (admission's timeout reads it).
    conditions = [c for c in conditions if c.get("type") != INQUEUED_CONDITION]
    if phase == "Inqueue":
        conditions.append(_condition(INQUEUED_CONDITION, INQUEUED_REASON, "admitted: its pods may be placed", current))
    status: dict[str, Any] = {
        "phase": phase,
        "running": running,
        "succeeded": succeeded,
        "failed": failed,
        "conditions": conditions,
    }
    return status


def _condition(kind: str, reason: str, message: str, current: Mapping[str, Any]) -> dict[str, Any]:
    since = now_rfc3339()
    for condition in current.get("conditions") or ():
        if condition.get("type") == kind and condition.get("status") == "True" and condition.get("reason") == reason:
            since = condition.get("lastTransitionTime") or since
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message[:MAX_EVENT_MESSAGE],
        "lastTransitionTime": since,
    }


def _status_core(status: Mapping[str, Any], *, messages: bool = False) -> tuple[Any, ...]:
    conditions = tuple(
        (c.get("type"), c.get("status"), c.get("reason"), c.get("message") if messages else None)
        for c in status.get("conditions") or ()
    )
    return (
        status.get("phase") or "",
        status.get("running") or 0,
        status.get("succeeded") or 0,
        status.get("failed") or 0,
        conditions,
    )


def _admitted_without_pods(key: str, outcome: PodGroupOutcome, snapshot: Snapshot) -> bool:
    """An admission to Inqueue of a PodGroup that has no pods yet (its Job controller waits for it)."""
    return outcome.phase == "Inqueue" and key in snapshot.podgroup_by_key and not snapshot.pods_of_group.get(key)
