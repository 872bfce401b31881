"""Carrying out one cycle's Decision against the API server, without ever binding a pod twice.

The solver decides; this module makes it so, in the order that keeps the cluster sane:

1. **Evictions** through the Eviction API (``policy/v1``), so PodDisruptionBudgets are honoured: a
   429 means a budget says "not now" and the victim stays; the next cycle decides again.
2. **Nominations**: ``status.nominatedNodeName`` on pods that wait for their victims to go.
3. **Bindings, gang by gang**, the pods of a gang concurrently on a bounded pool of threads and
   keep-alive connections. Before a gang is sent it is checked against the informer store: a gang
   whose pods, PodGroup or target nodes changed after the snapshot is *stale* and skipped whole
   (it is decided again next cycle). Each binding carries the pod's UID and resourceVersion as
   preconditions and its ``vcsat.io/gpu-ids`` as a Binding annotation, which the API server
   writes onto the pod in the same update that sets ``spec.nodeName``: a pod is never bound
   without its GPU indices, nor annotated without being bound, and one request does both. The
   API server refuses a second binding of a bound pod (409), so no pod is bound twice whatever
   happens here; a gang cut off mid-bind keeps what was bound, and the next cycle places the rest
   (the solver counts bound members towards ``minMember``).
4. **PodGroup status** (phase, conditions, running/succeeded/failed) through the status
   subresource, or on the PodGroup itself where the CRD serves none (Volcano's; discovery
   decides, :mod:`.status_subresource`), written only when it differs from what the group shows.
5. **PodScheduled=False** (reason ``Unschedulable``, or ``SchedulingGated`` for a pod with
   scheduling gates, with the decision's reason code and message) on
   the pods a cycle leaves unplaced, as kube-scheduler marks them and cluster-autoscaler looks for
   them: from the second cycle a pod waits on (a gang whose pods are still being created is a
   passing state), and written only when it changes (a new message alone at most every
   ``event_refresh_s``), never once per cycle per pod.
6. **Events**: a Warning Event on each object the converter tolerated but that keeps work from
   running (``Snapshot.notices``: a PodGroup naming a missing queue, a pod naming a missing
   PodGroup, a node with an invalid ``vcsat.io/gpu-topology``); why a group waits, as a core/v1
   Event on the PodGroup (or on a lone pod), from the second cycle it waits for that reason on
   (a passing state, such as a gang whose pods are still being created, records none); both
   counted and refreshed at most every ``event_refresh_s`` instead of one new Event per cycle;
   and one ``Scheduled`` Event per gang bound.

There are no per-pod GETs: what is current comes from the informer :class:`~vcsat.adapters.informer.Store`.

Each report says when applying the same decision again would still write something although
nothing changed (``ApplyReport.follow_ups``): the second cycle of the rules above, or the end of an
``event_refresh_s`` window. The scheduler idles between cycles while nothing changes, and it is
these times (and any change) that end the idling, so each of those writes comes when it always did.

Bindings are what a pod waits for; statuses, conditions and Events are not. So the latter go out
on a few threads of their own once an apply's bindings are answered, and never hold up the next
cycle's bindings (during a burst they trail the bindings; admissions to Inqueue go first).

:meth:`Applier.submit` returns as soon as the bindings are checked and queued: each queued pod is
registered with the store at once, so the next snapshot already shows it bound and the next cycle
can be solved while the bindings land (kube-scheduler's "assume, then bind asynchronously").
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from vcsat.adapters.clock import INQUEUED_CONDITION, INQUEUED_REASON
from vcsat.adapters.informer import Store
from vcsat.adapters.kube import (
    EVENTS,
    NODES,
    PODGROUPS,
    PODS,
    STRATEGIC_MERGE_PATCH,
    ApiError,
    Kube,
    Resource,
    now_rfc3339,
)
from vcsat.adapters.objects import GPU_IDS_ANNOTATION
from vcsat.adapters.status_subresource import StatusWriter
from vcsat.model import Binding, Decision, Eviction, Nomination, Pod, PodGroup, PodGroupOutcome, Snapshot
from vcsat.model.cluster import DEFAULT_QUEUE

log = logging.getLogger("vcsat.applier")

COMPONENT = "vcsat"
MAX_EVENT_MESSAGE = 1024
"""events.k8s.io refuses longer notes; core Events are kept to the same length."""
MAX_REMEMBERED = 20000
"""Events and status writes remembered for deduplication; beyond it the oldest half is forgotten
(groups deleted while waiting would otherwise stay remembered forever)."""
_ALREADY_ASSIGNED = 'is already assigned to node "'
REPORT_WORKERS = 8
"""Concurrent PodGroup status, pod condition and Event writes."""
POD_SCHEDULED = "PodScheduled"
UNSCHEDULABLE = "Unschedulable"
SCHEDULING_GATED = "SchedulingGated"
"""The reason kube-scheduler gives a pod it could not place; cluster-autoscaler scales up for it."""


@dataclass
class ApplyReport:
    """What one apply did, for logs, metrics and tests."""

    bound: list[str] = field(default_factory=list)
    """Pods bound now (``namespace/name``)."""
    failed: dict[str, str] = field(default_factory=dict)
    """Pods whose binding the server refused or never answered, with why."""
    stale: dict[str, str] = field(default_factory=dict)
    """Gangs skipped whole because something they depend on changed after the snapshot."""
    partial: list[str] = field(default_factory=list)
    """Gangs cut off mid-bind: some pods bound, some failed; the next cycle places the rest."""
    evicted: list[str] = field(default_factory=list)
    evictions_deferred: dict[str, str] = field(default_factory=dict)
    """Victims a PodDisruptionBudget protects for now (429), or that could not be evicted."""
    nominated: list[str] = field(default_factory=list)
    podgroups_updated: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    """``namespace/name reason`` of every Event created or refreshed."""
    unschedulable: list[str] = field(default_factory=list)
    """Pods whose PodScheduled=False (Unschedulable) condition was written or changed."""
    follow_ups: dict[str, float] = field(default_factory=dict)
    """What applying this decision again on an unchanged cluster would write, and from when on
    (``time.monotonic()``): e.g. ``unschedulable-second-cycle`` (the pods seen unplaced for the
    first time get their condition the next cycle) or ``event-refresh`` (a waiting group's Event
    is refreshed once its window ends). Empty: repeating it writes nothing until something changes."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def follow_up(self, what: str, at: float) -> None:
        """Note that a repeat of this decision writes ``what`` from ``at`` on (the earliest counts)."""
        with self._lock:
            if at < self.follow_ups.get(what, float("inf")):
                self.follow_ups[what] = at

    @property
    def quiet(self) -> bool:
        """Nothing written, and nothing refused or cut short that a repeat might get done."""
        return not (
            self.bound
            or self.failed
            or self.stale
            or self.partial
            or self.evicted
            or self.evictions_deferred
            or self.nominated
            or self.podgroups_updated
            or self.events
            or self.unschedulable
        )


@dataclass
class _EventRecord:
    name: str
    namespace: str
    message: str
    count: int
    sent_at: float


@dataclass
class _ConditionWrite:
    before: str
    """The pod's resourceVersion our write applied to."""
    after: str
    message: str
    since: str
    """Its lastTransitionTime."""
    at: float


@dataclass
class _GangOutcome:
    bound: list[Binding] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


class Applier:
    """Applies decisions; one per scheduler, reused across cycles (it remembers the Events it wrote)."""

    def __init__(
        self,
        kube: Kube,
        store: Store,
        *,
        workers: int | None = None,
        identity: str = COMPONENT,
        event_refresh_s: float = 60.0,
    ) -> None:
        self.kube = kube
        self.statuses = StatusWriter(kube)
        self.store = store
        self.identity = identity
        self.event_refresh_s = event_refresh_s
        self._pool = ThreadPoolExecutor(workers or kube.pool_size, thread_name_prefix="vcsat-apply")
        # PodGroup statuses, pod conditions and Events: on a few threads of their own, so that the
        # next cycle's bindings never queue behind the last cycle's (bindings are what a pod waits
        # for; these are not), and they take a small share of the API server meanwhile.
        self._reports = ThreadPoolExecutor(REPORT_WORKERS, thread_name_prefix="vcsat-apply-report")
        # Collects each apply's bindings and then writes its statuses and Events, one apply after
        # the other, so the caller can go on with the next cycle meanwhile.
        self._finisher = ThreadPoolExecutor(1, thread_name_prefix="vcsat-apply-finish")
        self._events: dict[str, dict[str, _EventRecord]] = {}
        """Per involved object's uid, per reason: the Event written for it."""
        self._events_lock = threading.Lock()
        self._status_written_at: dict[str, float] = {}
        self._waiting_seen: dict[str, dict[str, int]] = {}
        """Per PodGroup (or lone pod) uid, per reason: cycles it was seen waiting for it."""
        self._unplaced_seen: set[str] = set()
        """Uids of pods some cycle left unplaced (the first time writes nothing)."""
        self._conditions_written: dict[str, _ConditionWrite] = {}
        """Per pod key, our last PodScheduled write: the next cycle and a binding sent before the
        watch shows it still know the pod's current condition and version."""

    def close(self) -> None:
        self._finisher.shutdown(wait=True)
        self._reports.shutdown(wait=True)
        self._pool.shutdown(wait=True)

    # --- the whole decision -------------------------------------------------------------------

    def apply(self, decision: Decision, snapshot: Snapshot, *, stop: threading.Event | None = None) -> ApplyReport:
        """Apply ``decision``, made on ``snapshot``, and wait until all of it is done."""
        return self.submit(decision, snapshot, stop=stop).result()

    def submit(self, decision: Decision, snapshot: Snapshot, *, stop: threading.Event | None = None) -> PendingApply:
        """Start applying ``decision``; returns once every binding is checked and queued.

        Evictions and nominations are done by then (they are few). The bindings go on in the
        background, already shown as bound by the store's next snapshot, so the next cycle may be
        solved while they land. Once ``stop`` is set nothing new is sent.
        """
        report = ApplyReport()
        stopped = stop.is_set if stop is not None else (lambda: False)
        if decision.evictions and not stopped():
            self._evict(decision.evictions, snapshot, report)
        if decision.nominations and not stopped():
            self._nominate(decision.nominations, snapshot, report)
        sent = self._send(decision.bindings, snapshot, report, stopped)
        binds = [future for _, members in sent for _, future in members]
        finished = self._finisher.submit(self._finish, decision, snapshot, sent, report, stopped)
        return PendingApply(finished, binds)

    def _finish(
        self,
        decision: Decision,
        snapshot: Snapshot,
        sent: list[tuple[str, list[tuple[Binding, Future[str | None]]]]],
        report: ApplyReport,
        stopped: Callable[[], bool],
    ) -> ApplyReport:
        gangs = self._collect(sent, report)
        if not stopped():
            self._notices(snapshot, report)
        if not stopped():
            self._podgroups(decision, snapshot, gangs, report)
        if not stopped():
            self._unschedulable(decision, snapshot, report)
        return report

    # --- evictions ----------------------------------------------------------------------------

    def _evict(self, evictions: Iterable[Eviction], snapshot: Snapshot, report: ApplyReport) -> None:
        futures = [
            (eviction, self._pool.submit(self._evict_one, snapshot.pod_by_key.get(eviction.pod), eviction))
            for eviction in evictions
        ]
        for eviction, future in futures:
            problem = future.result()
            if problem is None:
                report.evicted.append(eviction.pod)
            else:
                report.evictions_deferred[eviction.pod] = problem
                log.info("eviction not done", extra={"pod": eviction.pod, "why": problem})

    def _evict_one(self, pod: Pod | None, eviction: Eviction) -> str | None:
        namespace, _, name = eviction.pod.partition("/")
        current = self.store.get("Pod", eviction.pod)
        if current is None or (current.get("metadata") or {}).get("deletionTimestamp"):
            return None  # gone or going already: the room is being freed
        uid = (current.get("metadata") or {}).get("uid")
        if pod is not None and pod.uid and uid != pod.uid:
            return None  # the victim the solver chose no longer exists; this is another pod
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": uid}},
        }
        try:
            self.kube.post(PODS.path(namespace, name, "eviction"), body)
        except ApiError as error:
            if error.status in (404, 409):
                return None  # deleted meanwhile (409: its UID precondition no longer holds)
            if error.status == 429:
                return f"not now: {error.message}"  # a PodDisruptionBudget
            return f"{error.status or 'no answer'}: {error.message}"
        why = "Preempted" if eviction.reason == "preempt" else "Reclaimed"
        self._event(
            PODS,
            current,
            why,
            f"Evicted by {COMPONENT} ({eviction.reason}) to make room for higher-ranked work",
            "Normal",
            dedupe=False,
        )
        return None

    # --- nominations --------------------------------------------------------------------------

    def _nominate(self, nominations: Iterable[Nomination], snapshot: Snapshot, report: ApplyReport) -> None:
        futures: list[tuple[Nomination, Future[bool]]] = []
        for nomination in nominations:
            current = self.store.get("Pod", nomination.pod)
            if current is None or (current.get("spec") or {}).get("nodeName"):
                continue
            if (current.get("status") or {}).get("nominatedNodeName") == nomination.node:
                continue  # already says so: no write
            futures.append((nomination, self._pool.submit(self._nominate_one, nomination)))
        for nomination, future in futures:
            if future.result():
                report.nominated.append(nomination.pod)
            else:
                report.follow_up("retry", time.monotonic())

    def _nominate_one(self, nomination: Nomination) -> bool:
        namespace, _, name = nomination.pod.partition("/")
        try:
            self.kube.patch(PODS.path(namespace, name, "status"), {"status": {"nominatedNodeName": nomination.node}})
        except ApiError as error:
            if error.status != 404:
                log.warning("nomination failed", extra={"pod": nomination.pod, "error": str(error)})
            return False
        return True

    # --- bindings -----------------------------------------------------------------------------

    def _send(
        self, bindings: Iterable[Binding], snapshot: Snapshot, report: ApplyReport, stopped: Callable[[], bool]
    ) -> list[tuple[str, list[tuple[Binding, Future[str | None]]]]]:
        by_gang: dict[str, list[Binding]] = {}
        for binding in bindings:
            pod = snapshot.pod_by_key.get(binding.pod)
            if pod is None:
                report.failed[binding.pod] = "not in the snapshot the decision was made on"
                continue
            by_gang.setdefault(pod.group or pod.key, []).append(binding)

        # Gangs are checked and sent in the decision's order; their pods run concurrently, and the
        # next gang is sent without waiting for the previous one to finish (the pool bounds it).
        sent: list[tuple[str, list[tuple[Binding, Future[str | None]]]]] = []
        for gang, members in by_gang.items():
            if stopped():
                report.stale[gang] = "stopped before it was sent (no longer leading)"
                continue
            why = self._stale(gang, members, snapshot)
            if why is not None:
                report.stale[gang] = why
                log.info("stale gang skipped; decided again next cycle", extra={"gang": gang, "why": why})
                continue
            queued = []
            for binding in members:
                annotations = _annotations(binding)
                # Registered now, not when sent: a cycle solved while this one is still queued
                # must already see the pod as bound.
                self.store.expect_binding(binding.pod, binding.node, annotations)
                pod = snapshot.pod_by_key[binding.pod]
                queued.append((binding, self._pool.submit(self._bind_one, pod, binding, annotations, stopped)))
            sent.append((gang, queued))
        return sent

    def _collect(
        self, sent: list[tuple[str, list[tuple[Binding, Future[str | None]]]]], report: ApplyReport
    ) -> dict[str, _GangOutcome]:
        outcomes: dict[str, _GangOutcome] = {}
        for gang, futures in sent:
            outcome = outcomes[gang] = _GangOutcome()
            for binding, future in futures:
                problem = future.result()
                if problem is None:
                    outcome.bound.append(binding)
                    report.bound.append(binding.pod)
                else:
                    outcome.failed[binding.pod] = problem
                    report.failed[binding.pod] = problem
            if outcome.bound and outcome.failed:
                report.partial.append(gang)
                log.warning(
                    "gang cut off mid-bind; the rest is placed next cycle",
                    extra={"gang": gang, "bound": len(outcome.bound), "failed": outcome.failed},
                )
            elif outcome.failed:
                log.info("gang not bound", extra={"gang": gang, "failed": outcome.failed})
        return outcomes

    def _stale(self, gang: str, members: list[Binding], snapshot: Snapshot) -> str | None:
        group = snapshot.podgroup_by_key.get(gang)
        pods = [pod.key for pod in snapshot.pods_of_group.get(gang, ())] if group else []
        pods.extend(binding.pod for binding in members)
        return self.store.changed_since(
            snapshot.generation,
            pods=pods,
            podgroup=gang if group else None,
            queue=group.queue if group else DEFAULT_QUEUE,
            nodes=sorted({binding.node for binding in members}),
        )

    def _bind_one(
        self, pod: Pod, binding: Binding, annotations: dict[str, str], stopped: Callable[[], bool]
    ) -> str | None:
        """Bind one pod; None when it is bound to ``binding.node`` now, else why not."""
        problem = self._check_bindable(pod, binding, stopped)
        if problem is not None:
            self.store.binding_done(pod.key, "bound" if problem == "" else "failed")
            return problem or None
        current = self.store.get("Pod", pod.key) or {}
        metadata = current.get("metadata") or {}
        body_metadata: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
        if pod.uid:
            body_metadata["uid"] = pod.uid
        version = metadata.get("resourceVersion")
        with self._events_lock:
            written = self._conditions_written.pop(pod.key, None)
        if written is not None and written.before == version:
            version = written.after  # our own PodScheduled write, not yet seen by the watch
        if version:
            # The server refuses (409) if the pod changed since we last saw it.
            body_metadata["resourceVersion"] = version
        if annotations:
            body_metadata["annotations"] = annotations
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": body_metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": binding.node},
        }
        try:
            self.kube.post(PODS.path(pod.namespace, pod.name, "binding"), body)
        except ApiError as error:
            if error.status == 0:
                self.store.binding_done(pod.key, "uncertain")
                return f"no answer from the API server: {error.message}"
            if error.status == 409 and _ALREADY_ASSIGNED in error.message:
                node = error.message.split(_ALREADY_ASSIGNED, 1)[1].split('"', 1)[0]
                if node == binding.node:
                    self.store.binding_done(pod.key, "bound")
                    return None  # an earlier attempt of ours landed
                self.store.binding_done(pod.key, "failed")
                return f"already bound to {node}"
            self.store.binding_done(pod.key, "failed")
            if error.status == 404:
                return "the pod is gone"
            if error.status == 409:
                return f"the pod changed since the snapshot: {error.message}"
            return f"{error.status}: {error.message}"
        self.store.binding_done(pod.key, "bound")
        return None

    def _check_bindable(self, pod: Pod, binding: Binding, stopped: Callable[[], bool]) -> str | None:
        """Why not to send this binding at all ("" when it is already done); None to send it."""
        if stopped():
            return "not sent: no longer leading"
        current = self.store.get("Pod", pod.key)
        if current is None:
            return "the pod is gone"
        bound_to = (current.get("spec") or {}).get("nodeName")
        if bound_to:
            return "" if bound_to == binding.node else f"already bound to {bound_to}"
        return None

    # --- notices: what the converter tolerated, as Events on the objects -----------------------

    def _notices(self, snapshot: Snapshot, report: ApplyReport) -> None:
        """A Warning Event on each object the converter tolerated but that keeps work from running
        (``Snapshot.notices``: a PodGroup's missing queue, a pod's missing PodGroup, a node's invalid
        GPU topology); one Event per object and reason, counted and refreshed like the others."""
        resources = {"Node": NODES, "Pod": PODS, "PodGroup": PODGROUPS}
        for notice in snapshot.notices:
            current = self.store.get(notice.kind, notice.key)
            if current is None:
                continue
            # No follow-up: a notice stands until its object is fixed, and the next cycle writes or
            # counts its Event again; a failed write (a namespace being deleted) is not retried.
            if self._event(resources[notice.kind], current, notice.reason, notice.message, "Warning"):
                report.events.append(f"{notice.key} {notice.reason}")

    # --- PodGroup status and Events -----------------------------------------------------------

    def _podgroups(
        self, decision: Decision, snapshot: Snapshot, gangs: Mapping[str, _GangOutcome], report: ApplyReport
    ) -> None:
        outcomes = {outcome.podgroup: outcome for outcome in decision.podgroups}
        futures: list[Future[list[str]]] = []
        # Admissions first: a Job controller creates a job's pods only once its group is Inqueue.
        admitted_first = sorted(
            snapshot.podgroups, key=lambda group: getattr(outcomes.get(group.key), "phase", "") != "Inqueue"
        )
        for group in admitted_first:
            pods = snapshot.pods_of_group.get(group.key, ())
            outcome = outcomes.get(group.key)
            if outcome is None and not any(pod.managed for pod in pods):
                continue  # not ours: another scheduler's group
            futures.append(self._reports.submit(self._podgroup_one, group, pods, outcome, gangs.get(group.key), report))
        for outcome in decision.podgroups:
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
            reason = SCHEDULING_GATED if pod.scheduling_gates else UNSCHEDULABLE
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
        self, written: _ConditionWrite | None, condition: Mapping[str, Any] | None, message: str, reason: str
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
                _forget_oldest(self._conditions_written, lambda record: record.at)
            self._conditions_written[pod.key] = _ConditionWrite(version, after, message, since, time.monotonic())
        return True

    def _podgroup_one(
        self,
        group: PodGroup,
        pods: tuple[Pod, ...],
        outcome: PodGroupOutcome | None,
        gang: _GangOutcome | None,
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
        return done

    def _lone_pod_events(
        self, pod: Pod, outcome: PodGroupOutcome, gang: _GangOutcome | None, report: ApplyReport
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
        gang: _GangOutcome | None,
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

    def _still_waiting(self, uid: str, reason: str, report: ApplyReport) -> bool:
        """Whether a group waits for ``reason`` a second time: the first sighting records no Event.

        A gang seen while its pods are still being created waits one cycle for GangUnsatisfied;
        an Event for every such passing state would double the writes of a burst of new jobs.
        """
        with self._events_lock:
            if uid not in self._waiting_seen and len(self._waiting_seen) >= MAX_REMEMBERED:
                self._waiting_seen.clear()  # groups deleted while waiting: forget them all at once
            reasons = self._waiting_seen.setdefault(uid, {})
            reasons[reason] = reasons.get(reason, 0) + 1
            if reasons[reason] >= 2:
                return True
        report.follow_up("event-second-cycle", time.monotonic())
        return False

    def _status_due(
        self, key: str, current: Mapping[str, Any], desired: Mapping[str, Any], report: ApplyReport
    ) -> bool:
        """Write when phase, counts or condition type/reason change; a new message alone waits a while."""
        now = time.monotonic()
        if _status_core(current, messages=True) == _status_core(desired, messages=True):
            return False
        with self._events_lock:
            if len(self._status_written_at) > MAX_REMEMBERED:
                _forget_oldest(self._status_written_at, lambda written_at: written_at)
            changed = _status_core(current) != _status_core(desired)
            due = self._status_written_at.get(key, -float("inf")) + self.event_refresh_s
            if changed or now >= due:
                self._status_written_at[key] = now
                return True
        report.follow_up("status-refresh", due)
        return False

    def _forget_waiting(self, uid: str) -> None:
        """A group that got placed starts afresh: if it waits again later, that is a new Event."""
        with self._events_lock:
            self._events.pop(uid, None)
            self._waiting_seen.pop(uid, None)

    def _event(
        self,
        resource: Resource,
        involved: Mapping[str, Any],
        reason: str,
        message: str,
        kind: str,
        *,
        dedupe: bool = True,
        report: ApplyReport | None = None,
    ) -> bool:
        """Record an Event on ``involved``; a repeat of the same reason only counts, written at most
        every ``event_refresh_s`` (when the window ends is noted in ``report``). True when something
        was written."""
        metadata = involved.get("metadata") or {}
        key = f"{metadata.get('namespace')}/{metadata.get('name')}"
        message = message[:MAX_EVENT_MESSAGE]
        now = time.monotonic()
        if dedupe:
            with self._events_lock:
                record = self._events.get(str(metadata.get("uid")), {}).get(reason)
                if record is not None:
                    record.count += 1
                    record.message = message
                    due = record.sent_at + self.event_refresh_s
                    if now < due:
                        if report is not None:
                            report.follow_up("event-refresh", due)
                        return False
                    record.sent_at = now
            if record is not None:
                try:
                    self.kube.patch(
                        EVENTS.path(record.namespace, record.name),
                        {"count": record.count, "lastTimestamp": now_rfc3339(), "message": message},
                    )
                    return True
                except ApiError as error:
                    if error.status != 404:
                        log.warning("event update failed", extra={"object": key, "error": str(error)})
                        if report is not None:
                            report.follow_up("retry", time.monotonic())
                        return False
                    # expired (the API server keeps Events an hour): write a new one
        namespace = str(metadata.get("namespace") or "default")
        stamp = now_rfc3339()
        name = f"{metadata.get('name')}.{uuid.uuid4().hex[:16]}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": resource.api_version,
                "kind": resource.kind,
                "name": metadata.get("name"),
                "namespace": namespace,
                "uid": metadata.get("uid"),
                "resourceVersion": metadata.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": kind,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.identity[:128],
        }
        try:
            self.kube.post(EVENTS.path(namespace), body)
        except ApiError as error:
            log.warning("event not recorded", extra={"object": key, "reason": reason, "error": str(error)})
            if report is not None:
                report.follow_up("retry", time.monotonic())
            return False
        if dedupe:
            with self._events_lock:
                uid = str(metadata.get("uid"))
                if uid not in self._events and len(self._events) >= MAX_REMEMBERED:
                    _forget_oldest(self._events, lambda records: max(r.sent_at for r in records.values()))
                self._events.setdefault(uid, {})[reason] = _EventRecord(name, namespace, message, 1, now)
        return True


class PendingApply:
    """An apply under way: its bindings queued or sent, its report once all of it is done."""

    def __init__(self, finished: Future[ApplyReport], binds: list[Future[str | None]]) -> None:
        self._finished = finished
        self._left = len(binds)
        self._lock = threading.Lock()
        for future in binds:
            future.add_done_callback(self._answered)

    def _answered(self, _future: Future[str | None]) -> None:
        with self._lock:
            self._left -= 1

    def result(self, timeout_s: float | None = None) -> ApplyReport:
        return self._finished.result(timeout_s)

    def done(self) -> bool:
        return self._finished.done()

    def outstanding(self) -> int:
        """Bindings not answered yet (counted as they are answered: the scheduler polls this)."""
        return self._left

    def add_done_callback(self, callback: Callable[[ApplyReport], None]) -> None:
        """``callback(report)`` once done (in the applier's thread); a failed apply is logged instead."""

        def done(future: Future[ApplyReport]) -> None:
            try:
                report = future.result()
            except Exception:
                log.exception("applying a decision failed")
                return
            callback(report)

        self._finished.add_done_callback(done)


def _unschedulable_message(outcome: PodGroupOutcome | None) -> str:
    """The decision's explanation for a pod left unplaced: its reason code, then why."""
    if outcome is None or not outcome.reason:
        text = f"{NOT_PLACED}: its gang is placed without it; no room for this pod yet"
    else:
        text = f"{outcome.reason}: {outcome.message or outcome.reason}"
    return text[:MAX_EVENT_MESSAGE]


NOT_PLACED = "NotPlaced"
"""Reason code of a pod left out while its gang counts as placed (beyond its minMember)."""
PREEMPTING = "Preempting"
"""Reason code of a nominated pod: it is placed once the victims are gone."""


def _reason_code(message: str) -> str:
    return message.partition(": ")[0]


def _pod_condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind:
            return dict(condition)
    return None


def _forget_oldest(memory: dict[Any, Any], age: Callable[[Any], float]) -> None:
    oldest = sorted(memory, key=lambda key: age(memory[key]))[: len(memory) // 2]
    for key in oldest:
        del memory[key]


def _annotations(binding: Binding) -> dict[str, str]:
    """What the Binding writes onto the pod with its node: the GPU indices it holds."""
    return {GPU_IDS_ANNOTATION: ",".join(str(i) for i in binding.gpus)} if binding.gpus else {}


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
