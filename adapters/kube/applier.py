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
   (the solver counts bound members towards ``minMember``). A pod whose claims wait for a node
   (WaitForFirstConsumer) has them bound first, as kube-scheduler's VolumeBinding PreBind does
   (:mod:`.volume_binding`); if that fails the pod is not bound and waits.
4. **PodGroup status** (phase, conditions, running/succeeded/failed) through the status
   subresource, written only when it differs from what the group already shows.
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

There are no per-pod GETs: what is current comes from the informer :class:`~vcsat.adapters.kube.informer.Store`.

Each report says when applying the same decision again would still write something although
nothing changed (``ApplyReport.follow_ups``): the second cycle of the rules above, or the end of an
``event_refresh_s`` window. The scheduler idles between cycles while nothing changes, and it is
these times (and any change) that end the idling, so each of those writes comes when it always did.

Bindings are what a pod waits for; statuses, conditions and Events are not. So the latter go out
on a few threads of their own once an apply's bindings are answered, and never hold up the next
cycle's bindings: while any binding is queued they go one at a time (:mod:`.report_lane`), so
during a burst they trail the bindings; admissions to Inqueue go first and never wait.

The applier is one object made of parts, one module each: :mod:`.binding` (3),
:mod:`.evictions` (1 and 2), :mod:`.status_writes` (4 and 5) and :mod:`.events` (6), over the state
they share (:mod:`.apply_state`).

:meth:`Applier.submit` returns as soon as the bindings are checked and queued: each queued pod is
registered with the store at once, so the next snapshot already shows it bound and the next cycle
can be solved while the bindings land (kube-scheduler's "assume, then bind asynchronously").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from vcsat.adapters.kube.apply_state import COMPONENT, REPORT_WORKERS, ApplyReport, ConditionWrite, log
from vcsat.adapters.kube.binding import Bindings
from vcsat.adapters.kube.client import PODS, Kube
from vcsat.adapters.kube.events import EventRecord
from vcsat.adapters.kube.evictions import Evictions
from vcsat.adapters.kube.informer import Store
from vcsat.adapters.kube.report_lane import ReportLane
from vcsat.adapters.kube.status_subresource import StatusWriter
from vcsat.adapters.kube.status_writes import StatusWrites
from vcsat.adapters.kube.volume_binding import DEFAULT_TIMEOUT_S, VolumeBinder
from vcsat.model import Binding, Decision, Eviction, Nomination, Pod, PodGroup, Snapshot


class Applier(Bindings, Evictions, StatusWrites):
    """Applies decisions; one per scheduler, reused across cycles (it remembers the Events it wrote)."""

    def __init__(
        self,
        kube: Kube,
        store: Store,
        *,
        workers: int | None = None,
        identity: str = COMPONENT,
        event_refresh_s: float = 60.0,
        volume_bind_timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.kube = kube
        self.volumes = VolumeBinder(kube, store, timeout_s=volume_bind_timeout_s, on_failure=self._prebind_failed)
        self.statuses = StatusWriter(kube)
        self.store = store
        self.identity = identity
        self.event_refresh_s = event_refresh_s
        self._pool = ThreadPoolExecutor(workers or kube.pool_size, thread_name_prefix="vcsat-apply")
        # PodGroup statuses, pod conditions and Events: on a few threads of their own, so that the
        # next cycle's bindings never queue behind the last cycle's (bindings are what a pod waits
        # for; these are not), one at a time while bindings are queued (:mod:`.report_lane`).
        self._reports = ReportLane(REPORT_WORKERS)
        # Collects each apply's bindings and then writes its statuses and Events, one apply after
        # the other, so the caller can go on with the next cycle meanwhile.
        self._finisher = ThreadPoolExecutor(1, thread_name_prefix="vcsat-apply-finish")
        self._events: dict[str, dict[str, EventRecord]] = {}
        """Per involved object's uid, per reason: the Event written for it."""
        self._events_lock = threading.Lock()
        self._status_written_at: dict[str, float] = {}
        self._quiet: dict[str, tuple[PodGroup, tuple[Pod, ...], Mapping[str, Any]]] = {}
        self._walked = None
        self._quiet_moved = set()
        self._waiting_seen: dict[str, dict[str, int]] = {}
        """Per PodGroup (or lone pod) uid, per reason: cycles it was seen waiting for it."""
        self._unplaced_seen: set[str] = set()
        """Uids of pods some cycle left unplaced (the first time writes nothing)."""
        self._conditions_written: dict[str, ConditionWrite] = {}
        """Per pod key, our last PodScheduled write: the next cycle and a binding sent before the
        watch shows it still know the pod's current condition and version."""

    def close(self) -> None:
        self._finisher.shutdown(wait=True)
        self._reports.shutdown(wait=True)
        self.volumes.close()
        self._pool.shutdown(wait=True)

    def _prebind_failed(self, pod: Pod, why: str) -> None:
        """A pod whose volumes could not be bound is not bound: a Warning Event on it says why, in
        kube-scheduler's words (``FailedScheduling``)."""
        current = self.store.get("Pod", pod.key)
        if current is not None:
            self._event(PODS, current, "FailedScheduling", _prebind_message(why), "Warning")

    # --- the whole decision -------------------------------------------------------------------

    def apply(self, decision: Decision, snapshot: Snapshot, *, stop: threading.Event | None = None) -> ApplyReport:
        """Apply ``decision``, made on ``snapshot``, and wait until all of it is done."""
        return self.submit(decision, snapshot, stop=stop).result()

    def submit(
        self, decision: Decision, snapshot: Snapshot, *, stop: threading.Event | None = None, early: bool = False
    ) -> PendingApply:
        """Start applying ``decision``; returns once every eviction, nomination and binding is
        checked and queued.

        They go on in the background, already shown done by the store's next snapshot (victims
        terminating, preemptors nominated, pods bound), so the next cycle may be solved while they
        land. Once ``stop`` is set nothing new is sent.

        ``early``: a decision bound ahead of the full cycle that follows at once (the scheduler's
        sure placements): only its bindings, the statuses and Events of the gangs it bound and the
        admissions of PodGroups that have no pods yet are written; what it leaves waiting is the full cycle's to report.
        """
        report = ApplyReport()
        stopped = stop.is_set if stop is not None else (lambda: False)
        evicting = self._evict(decision.evictions, snapshot) if decision.evictions and not stopped() else []
        nominating = self._nominate(decision.nominations) if decision.nominations and not stopped() else []
        sent = self._send(decision.bindings, snapshot, report, stopped)
        binds = [future for _, members in sent for _, future in members]
        finished = self._finisher.submit(
            self._finish, decision, snapshot, sent, report, stopped, early, (evicting, nominating)
        )
        return PendingApply(finished, binds)

    def _finish(
        self,
        decision: Decision,
        snapshot: Snapshot,
        sent: list[tuple[str, list[tuple[Binding, Future[str | None]]]]],
        report: ApplyReport,
        stopped: Callable[[], bool],
        early: bool = False,
        preempting: tuple[list[tuple[Eviction, Future[str | None]]], list[tuple[Nomination, Future[bool]]]] = ([], []),
    ) -> ApplyReport:
        self._evictions_answered(preempting[0], report)
        self._nominations_answered(preempting[1], report)
        gangs = self._collect(sent, report)
        if early:
            if not stopped():
                self._podgroups(decision, snapshot, gangs, report, bound_only=True)
            return report
        if not stopped():
            self._notices(snapshot, report)
        if not stopped():
            self._podgroups(decision, snapshot, gangs, report)
        if not stopped():
            self._unschedulable(decision, snapshot, report)
        return report


def _prebind_message(why: str) -> str:
    return 'running PreBind plugin "VolumeBinding": ' + why.removeprefix("VolumeBinding: ")


class PendingApply:
    """An apply under way: its bindings queued or sent, its report once all of it is done."""

    def __init__(self, finished: Future[ApplyReport], binds: list[Future[str | None]]) -> None:
        self._finished = finished
        self._left = len(binds)
        self._lock = threading.Lock()
        self.answered_at: float | None = None
        """When (``time.monotonic()``) the last binding was answered; None until then, or with none.
        What a pod waits for ends here; the statuses and Events that follow do not hold it up."""
        for future in binds:
            future.add_done_callback(self._answered)

    def _answered(self, _future: Future[str | None]) -> None:
        with self._lock:
            self._left -= 1
            if self._left == 0:
                self.answered_at = time.monotonic()

    def result(self, timeout_s: float | None = None) -> ApplyReport:
        return self._finished.result(timeout_s)

    def done(self) -> bool:
        return self._finished.done()

    def outstanding(self) -> int:
        """Bindings not answered yet (counted as they are answered: the scheduler polls this)."""
        return self._left

    def add_done_callback(self, callback: Callable[[ApplyReport], None]) -> None:
        """``callback(report)`` once done (in the applier's thread); a failed apply is logged instead.

        The future keeps its callbacks after running them, and a callback usually holds what holds
        this apply (the scheduler's cycle result: its snapshot and decision), a reference cycle the
        cyclic collector alone would free. So the callback is let go of once it has run."""
        waiting = [callback]

        def done(future: Future[ApplyReport]) -> None:
            call = waiting.pop()
            try:
                report = future.result()
            except Exception:
                log.exception("applying a decision failed")
                return
            call(report)

        self._finished.add_done_callback(done)
