"""``vcsat scheduler``: the live loop that makes a cluster's batch pods land where CP-SAT decides.

One cycle is design.md's: a frozen, generation-stamped snapshot from the informer caches (through
the same converter as ``vcsat solve``), ``solve``, ``check`` (a decision that breaks a hard rule is
logged and never applied), then the applier. ``--dump-dir`` writes each cycle with pending work as
an instance file plus its decision, which ``vcsat solve`` replays to the same decision.

When cycles run (:func:`next_cycle_due`): at once when something that can change a decision
happens (debounced, so a burst of 1,000 new pods makes one cycle, not 1,000); ``--period`` after a
cycle that wrote something, or whose report back may change (a pod turned Running); and otherwise
not until the clock makes a repeat worth it, or ``--resync`` at the latest. While a decision is
still being applied (a slow API server may take minutes over the statuses of a whole cluster), no
cycle follows it on the period: a repeat would decide the same and write only what is already
queued; what it calls for is known from its report, once it is applied. A cycle is a pure
function of its snapshot, so with no change since the last one, which wrote nothing, a repeat
gives the same decision and writes nothing: a cluster of 10,000 idle pods costs no solving. What
only the clock changes comes as a deadline, and a cycle runs then:

- the applier's rules that wait: a pod's PodScheduled=False and a group's Event are written from
  the second cycle it waits on (the next period), and a changed message or an Event's refresh only
  ``event_refresh_s`` after the last write (``ApplyReport.follow_ups``);
- a binding shown as bound until the watch confirms it stops being shown after a while
  (``Store.next_expiry``): the pod may be pending again.

The solver reads no clock here: its one rule that would (``InqueueTimeout`` in
``vcsat.solver.enqueue``, which needs ``now`` and the time each group became Inqueue) is not given
them by the live scheduler. Whoever wires it must add its deadline to :meth:`Scheduler.deadlines`.
Nothing of this survives a restart, nor needs to: a new process's first cycle runs at once, and the
second-cycle rules start afresh from what the API shows.

**Early binding.** A cycle spends most of its time in the search, and nothing is bound until it
ends. So when at least ``--early-bind-min-pending`` pods wait (by default any), the cycle first
runs the greedy warm start, and when that already places every pod that may be placed this cycle
(:mod:`vcsat.solver.sure`: then no search could place more, only elsewhere), it binds that
decision at once, whole gangs only, through the same checks and applier as any decision.
Otherwise the same cycle goes on to the full search, reusing the greedy's work. An early cycle
writes nothing about the work it leaves waiting (a full cycle does), but admits the PodGroups that
have no pods yet as a full cycle would (a Job controller creates a job's pods only once then). While pods stream in, the
cycles that follow an early one may bind early too, each as soon as the last one's rest is over
(``--full-cycle-every S``): a pod that arrives during a cycle is then bound by the next short
cycle, not after a full search of what arrived meanwhile. A full cycle (the search, the reports of
waiting work, preemption) runs when a cycle finds
nothing sure to bind (the stream paused, or contention), and straight after an early cycle that
ends S seconds or more after the last full one, so a steady stream never holds it off for long;
with S = 0 every early cycle is followed at once by a full one. With ``--dump-dir`` an early
cycle's dump is marked early (``vcsat.io/cycle``), so ``vcsat solve`` replays it as the early
cycle it was.

**Bounded cycles** (``--cycle-target S``, off by default). Under a stream of new pods, a cycle is
given at most about ``cap`` waiting pods, whole groups in scheduling-queue order
(:mod:`vcsat.adapters.live.cycle_cap`), and when it leaves some out the next cycle follows at once.
``cap`` adapts so that the part of a cycle that grows with its pods takes about S seconds; a pod
that arrives during a cycle is then decided within about one short cycle instead of waiting for a
long one to end and the next long one to decide it. A cycle with no more waiting pods than the
cap is given everything, as without it.

**Priming.** A scheduler started on a settled cluster has nothing to place in its first cycle,
which therefore builds none of what a cycle with pending pods carries to the next; after such a
first cycle the loop makes it once (:mod:`vcsat.solver.prime`), so the first batch of new pods does
not wait for that one-off work. Each cycle's log line says where its wall time went
(``phases``: :mod:`vcsat.adapters.live.cycle_probe`) and how long after the change that woke the
loop it started (``woke_seconds``).

With ``--leader-elect`` (the default) the caches fill at once on every replica, but only the
replica holding the Lease runs cycles, so a standby takes over with warm caches.
"""

from __future__ import annotations

import collections
import functools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import click
import yaml

from vcsat.adapters.convert.clock import wall_clock
from vcsat.adapters.convert.dump import instance_document
from vcsat.adapters.convert.reuse import ConversionMemo
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.adapters.kube.applier import Applier, PendingApply
from vcsat.adapters.kube.apply_state import REPORT_WORKERS, ApplyReport
from vcsat.adapters.kube.client import Kube, load_configuration
from vcsat.adapters.kube.informer import InformerSet
from vcsat.adapters.live.cycle_cap import DEFAULT_TARGET_S, CycleCap, arrived, defer
from vcsat.adapters.live.cycle_probe import CycleProbe
from vcsat.adapters.live.cycle_threads import CycleThreads
from vcsat.adapters.live.daemon import daemon_options, default_lease_namespace, leader_timing, stop_on_signals
from vcsat.adapters.live.gc_clock import GcClock
from vcsat.adapters.live.gc_tenure import Tenure
from vcsat.adapters.live.isolate import Isolator
from vcsat.adapters.live.unadmitted import Unadmitted, waits_for_pods
from vcsat.model import Decision, PodGroupOutcome, Policy, Snapshot

log = logging.getLogger("vcsat.scheduler")
_PENDING = attrgetter("pending")
"""A pod's ``pending`` (kept on the pod once read): summed over every pod each cycle."""

LIVE_SOURCE = "live cluster"
MAX_QUARANTINED = 1000
"""Objects a cycle may leave out for being malformed before it gives up."""
OVERLAP_PER_WORKER = 16
"""Bindings per bind worker the last cycle may still have unanswered when the next one starts.
The next cycle sees them as bound already (the store assumes them), so it need not wait for them;
while pods stream in, waiting for the queue to drain only makes the next batch (and the time from
the last pod's creation to its binding) larger. The bound keeps a slow API server from collecting
a queue of many cycles' bindings."""
RESYNC_S = 30.0
"""The longest the loop waits without a cycle when nothing changes and nothing is due (``--resync``):
a bound on what any change the loop failed to notice could cost."""
IDLE_POLL_S = 0.2
"""How often an idle loop looks at its stop events (a lost Lease sets one without waking the store)."""
REST_PER_CYCLE_SECOND = 1.0
"""After a cycle of S seconds the loop rests S * this before a quiet moment may start the next
one: while changes stream in, cycles take at most about half of a core."""
EARLY_MIN_PENDING = 1
"""Pending pods from which a cycle tries to bind the greedy's sure placements before searching
(``--early-bind-min-pending``). Sure placements leave the search only *where* the pods go, never
which pods run or the fair shares, and under a stream of new pods even a cycle of a few dozen
pods searches for seconds while they wait (benchmarks/RESULTS.md, session 10: p99 start latency
about halved at 300 nodes). A higher number keeps the search's choice of nodes for small cycles."""
FULL_CYCLE_EVERY_S = 5.0
"""While early cycles follow each other (a stream of pods that all fit), a full cycle follows at
once an early one that ends this many seconds or more after the last full cycle
(``--full-cycle-every``); 0: after every early cycle. Up to this long, then, the work a stream
leaves waiting is not reported on and nothing is preempted (PodGroups without pods are
admitted by early cycles too); in exchange a pod arriving during a cycle waits for one short cycle, not also for a
search."""
_CYCLE_FILE = re.compile(r"cycle-(\d+)\.instance\.json")


@dataclass
class CycleResult:
    """One cycle, as tests and logs see it."""

    number: int
    snapshot: Snapshot
    objects: list[dict[str, Any]]
    """Exactly the objects the cycle's snapshot was made of (what ``--dump-dir`` writes)."""
    decision: Decision
    violations: list[Any]
    report: ApplyReport | None
    """What applying the decision did; None while it is under way, or when it was not applied
    (it broke a hard rule)."""
    seconds: float
    """From the snapshot until the decision's bindings were all queued."""
    pending: PendingApply | None = None
    apply_seconds: float | None = None
    """From the snapshot until the whole decision was applied."""
    bind_seconds: float | None = None
    """From the snapshot until its last binding was answered (None: it had none); what follows
    (statuses, Events) no pod waits for."""
    trigger: str = "call"
    """Why it ran: ``start``, ``change``, ``follow-up``, ``resync`` or ``deadline`` (:func:`next_cycle_due`);
    ``call`` when called directly."""
    why: str = ""
    """The detail of the trigger (which follow-up or deadline)."""
    snapshot_seconds: float | None = None
    """Of ``seconds``, the time taken to take and convert the snapshot."""
    early: bool = False
    """Its decision is the greedy's sure placements, bound ahead of the full cycle that follows."""
    deferred: int = 0
    """Waiting pods left out of this cycle by the cap (``--cycle-target``), for the next one."""
    cpu_seconds: float | None = None
    """CPU seconds of the whole process (every thread: informers, applier) over ``seconds``: on a
    shared machine wall seconds say how long the cycle waited for a CPU as much as what it cost."""
    snapshot_cpu_seconds: float | None = None
    """Of ``cpu_seconds``, those of the snapshot and its conversion."""
    solve_cpu_seconds: float | None = None
    """Of ``cpu_seconds``, those of deciding (the solver or the sure placements)."""
    changes: dict[str, int] = field(default_factory=dict)
    """The changes that may alter a decision seen since the last cycle's snapshot, by kind
    (``Store.relevant_by_kind``): what woke the loop."""
    waiting: int | None = None
    """Pending pods in ``snapshot``, as the cycle counted them (the log reads it, not a walk again)."""
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Where its wall seconds went, by phase (:mod:`vcsat.adapters.live.cycle_probe`)."""
    woke_seconds: float | None = None
    """From the change that woke the loop until this cycle started (the debounce, the rest, the wait
    for room); None when no change woke it."""
    threads: dict[str, Any] | None = None
    """From its start until its bindings were queued, the CPU of the process's other threads by name
    and of the machine's other processes (:mod:`vcsat.adapters.live.cycle_threads`); None unless the
    debug log is on."""


TRIGGERS = ("start", "change", "follow-up", "resync", "deadline")
"""Why the loop runs a cycle: its first; a relevant change; the last cycle wrote or failed
something, or what it reports on changed; nothing for ``--resync`` seconds; a clock deadline."""
UNSETTLED = ("failed", "unapplied", "applied", "reported")
"""Why a cycle is followed by another ``--period`` after it: it failed; its decision broke a hard
rule and was not applied; applying it wrote (or was refused) something; what it reports back
changed since it started (``Store.reported``). (An early cycle with a full cycle due is followed
at once, why ``early``; a cycle that left waiting pods to the next by the cap too, why ``capped``.)
A decision still being applied is none of these: the loop waits for its report (``Scheduler.applying``)."""


def next_cycle_due(
    *,
    ended: float,
    period_s: float,
    resync_s: float,
    unsettled: str | None,
    deadlines: Mapping[str, float],
) -> tuple[float, str, str]:
    """When the next cycle is due if nothing relevant changes before, as ``(at, trigger, why)``.

    ``ended``: when the last cycle ended; ``unsettled``: why a repeat of it could do something new
    (one of :data:`UNSETTLED`), or None when it would give the same decision and write nothing;
    ``deadlines``: from when on (same clock) the clock alone makes a repeat write or decide
    something new, by what. An unsettled cycle is followed ``period_s`` after it; a settled one at
    the earliest deadline or ``resync_s`` after it, whichever comes first, never sooner than
    ``period_s`` after it.
    """
    earliest = ended + period_s
    if unsettled is not None:
        return earliest, "follow-up", unsettled
    at, trigger, why = ended + resync_s, "resync", "resync"
    if deadlines:
        first, what = min((deadline, what) for what, deadline in deadlines.items())
        if first < at:
            at, trigger, why = first, "deadline", what
    return max(at, earliest), trigger, why


class Scheduler:
    """The informer caches, the cycle loop and the applier of one scheduler process."""

    def __init__(
        self,
        kube: Kube,
        *,
        policy: Policy,
        period_s: float = 1.0,
        resync_s: float = RESYNC_S,
        debounce_s: float = 0.05,
        max_delay_s: float = 1.0,
        dump_dir: Path | None = None,
        metrics: Any = None,
        identity: str = "vcsat",
        workers: int | None = None,
        observers: tuple[Any, ...] = (),
        early_min_pending: int = EARLY_MIN_PENDING,
        full_cycle_every_s: float = FULL_CYCLE_EVERY_S,
        cycle_target_s: float = DEFAULT_TARGET_S,
    ) -> None:
        self.kube = kube
        self.policy = policy
        self.period_s = period_s
        self.resync_s = resync_s
        self.debounce_s = debounce_s
        self.max_delay_s = max_delay_s
        self.dump_dir = dump_dir
        self.metrics = metrics
        self.observers = observers
        self.early_min_pending = early_min_pending
        """Pending pods from which a loop cycle tries early binding (module docstring); 0: never.
        An early cycle's dump says so (``vcsat.io/cycle: early``), and ``vcsat solve`` replays it as
        an early cycle: the greedy's sure placements, the decision that was applied."""
        self.full_cycle_every_s = full_cycle_every_s
        """Early cycles in a row end with a full one once this long has passed since the last full
        cycle (module docstring); 0: a full cycle after every early one."""
        self.cap = CycleCap(cycle_target_s) if cycle_target_s > 0 else None
        """How many waiting pods a cycle is given (module docstring); None: all of them."""
        self._tried: dict[str, int] = {}
        """Per waiting group, the last cycle it was given to (the cap's order)."""
        self.isolator = Isolator()
        """Waiting groups the solve raised on, set aside for a back-off (:mod:`.isolate`)."""
        self._unadmitted = Unadmitted()
        """Our PodGroups without pods, carried from cycle to cycle (for the admissions applied)."""
        self._waiting: tuple[float, dict[str, int]] | None = None
        """When the last cycle took its snapshot, and its waiting pods per group (arrivals)."""
        """Called with each cycle's result once it is applied or refused (the web dashboard)."""
        self.informers = InformerSet(kube)
        self.store = self.informers.store
        self.applier = Applier(kube, self.store, identity=identity, workers=workers)
        self.overlap = OVERLAP_PER_WORKER * (workers or kube.pool_size)
        """The next cycle starts once at most this many bindings of the last one are unanswered."""
        self._in_flight: PendingApply | None = None
        self._rest_until = 0.0
        """Until then a quiet moment does not start the next cycle, only ``max_delay_s`` does (``_debounce``)."""
        self.cycles = 0
        self.triggers: collections.Counter[str] = collections.Counter()
        """Cycles the loop ran, by trigger (:data:`TRIGGERS`)."""
        self.idle_periods = 0
        """Periods in which the loop ran no cycle because none was due (a loop on a period would have)."""
        self.idle_until: tuple[float, str] | None = None
        """While the loop idles: until when (``time.monotonic()``) at the latest, and why then."""
        self.last: CycleResult | None = None
        if metrics is not None:
            for trigger in TRIGGERS:
                metrics.observe_trigger(trigger, 0)
        self._cycle_started: float | None = None
        self._quarantined: dict[str, str] = {}
        self._noticed: set[str] = set()
        """The notices of the last cycle, each logged once when it first showed."""
        self._conversions = ConversionMemo()
        self._converted: tuple[int, frozenset[str]] | None = None
        """The store generation of the last snapshot converted whole, and the pods it showed bound by
        a binding in flight: what the next snapshot's changes are counted from."""
        """Last cycle's converted nodes and pods, reused for the objects that did not change."""
        self._changes_seen: collections.Counter[str] = collections.Counter()
        """``Store.relevant_by_kind`` at the last cycle's snapshot."""
        self.gc = GcClock()
        """The cyclic collector's work in this process since :meth:`start` (logged with each cycle)."""
        self.tenure = Tenure()
        """What survives each of :meth:`run`'s cycles is frozen out of the collector's passes."""
        self._woke: float | None = None
        """When a change woke the loop for the cycle about to run (``time.monotonic()``)."""
        self.primed = False
        """The carries of a cycle with pending work exist: made by such a cycle, or by :meth:`_prime`."""
        if dump_dir is not None:
            dump_dir.mkdir(parents=True, exist_ok=True)
            self.cycles = _last_cycle_number(dump_dir)
            (dump_dir / "policy.yaml").write_text(
                yaml.safe_dump(policy.model_dump(mode="json"), sort_keys=False), encoding="utf-8"
            )

    # --- life -----------------------------------------------------------------------------------

    def start(self) -> None:
        """Start filling the caches (every replica does, leader or not)."""
        self.gc.start()
        self.informers.start()

    def close(self) -> None:
        self.informers.stop()
        self.applier.close()
        self.tenure.release()
        self.gc.stop()

    def ready(self) -> bool:
        """Caches listed once: a cycle would see the whole cluster."""
        return self.store.synced()

    def healthy(self) -> bool:
        """Informers alive, and no cycle stuck far beyond its solver budget."""
        started = self._cycle_started
        budget = 4 * self.policy.time_limit_s + 120.0
        stuck = started is not None and time.monotonic() - started > budget
        return not stuck and all(informer.alive() for informer in self.informers.informers)

    def run(self, stop: threading.Event, *more: threading.Event) -> None:
        """Run cycles until any of the events is set: on relevant changes, and when due without
        one (:func:`next_cycle_due`)."""
        events = (stop, *more)

        def stopped() -> bool:
            return any(event.is_set() for event in events)

        while not stopped() and not self.store.wait_synced(IDLE_POLL_S):
            pass
        seen = -1
        reported = -1
        next_at = ended = 0.0
        trigger, why = "start", "start"
        failure = ""
        after_early = False  # the last cycle bound early and a full cycle is due: it follows at once
        full_ended = time.monotonic()  # when the last full cycle ended (the loop's start, before one)
        after_capped = False  # the last cycle left waiting pods to the next: it follows at once
        idle_since: float | None = None  # when the loop, due on a period, first found no cycle due
        idle_counted = 0  # idle periods counted since then
        awaiting = False  # idle while the last decision is being applied: what follows is due once it is
        while not stopped():
            now = time.monotonic()
            if after_early:
                trigger, why = "follow-up", "early"
            elif after_capped:
                trigger, why = "follow-up", "capped"
            elif seen >= 0 and now < next_at:
                if idle_since is not None:
                    idle_counted = self._count_idle_periods(idle_since, idle_counted, now)
                    if awaiting:
                        # Its writes echo back meanwhile (``reported``); only its report says what is due.
                        if not self.applying():
                            next_at = now
                            continue
                    elif self.store.reported != reported:
                        next_at = now  # what the last cycle reported on changed: it is due again
                        continue
                count = self.store.wait_relevant(seen, min(next_at - now, IDLE_POLL_S))
                if count == seen:
                    continue  # look at the stop events and the clock again
                self._woke = time.monotonic()
                self._debounce(count, stopped)
                if stopped():
                    break
                trigger, why = "change", "change"
            elif seen >= 0:
                at, trigger, why = self._next_due(ended, failed=bool(failure), reported=reported)
                awaiting = not failure and self.applying()
                if at > now:  # nothing to do yet: idle until then, or until a change
                    if idle_since is None:
                        idle_since = now
                        log.debug("idle", extra={"seconds": round(at - now, 3), "until": why, "applying": awaiting})
                    self.idle_until = (at, why)
                    next_at = at
                    continue
            if idle_since is not None:
                self._count_idle_periods(idle_since, idle_counted, time.monotonic())
                idle_since, idle_counted = None, 0
            self.idle_until = None
            self._wait_for_room(stopped)
            if stopped():
                break
            seen, reported = self.store.relevant, self.store.reported
            started = time.monotonic()
            self.triggers[trigger] += 1
            if self.metrics is not None:
                self.metrics.observe_trigger(trigger)
            early = not after_early
            after_early = after_capped = False
            try:
                result = self.run_cycle(stop=_AnyEvent(events), wait=False, trigger=trigger, why=why, early=early)
                self._in_flight = result.pending
                if not result.early:
                    full_ended = time.monotonic()
                after_early = (
                    result.early
                    and result.pending is not None
                    and time.monotonic() - full_ended >= self.full_cycle_every_s
                )
                after_capped = result.deferred > 0 and not result.violations
                failure = ""
            except Exception as error:
                # The whole traceback once; the same failure again, every period, in one line.
                if repr(error) != failure:
                    log.exception("cycle failed; trying again next period")
                else:
                    log.error("cycle failed again", extra={"error": repr(error)})
                failure = repr(error)
            # The loop owns the process: its caches and the cycle's survivors out of the collector's
            # walks, the cycle's cyclic garbage freed (:mod:`vcsat.adapters.live.gc_tenure`).
            self.tenure.after_cycle()
            ended = time.monotonic()
            next_at = ended + self.period_s
            self._rest_until = ended + REST_PER_CYCLE_SECOND * (ended - started)
            if after_early or after_capped:
                self._rest_until = ended
            if not failure:
                # After the tenure's first full collection: the cold start's objects are frozen by
                # then, so what priming allocates does not make the collector walk them all.
                self._prime(result)

    def _prime(self, result: CycleResult) -> None:
        """After the process's first cycle, when it had nothing to place: make what a cycle with
        pending pods carries to the next (:mod:`vcsat.solver.prime`), so that the first batch of new
        pods does not wait for that one-off work. It runs between cycles, like the collector's, and
        changes no decision."""
        if self.primed:
            return
        self.primed = True
        if result.waiting:  # that cycle built for its pending pods: the carries are made
            return
        from vcsat.solver.prime import prime

        started = time.monotonic()
        cpu_started = time.thread_time()
        gc_started = self.gc.cpu_seconds
        try:
            resources = prime(result.snapshot)
        except Exception:  # only a cost moved: the first batch's build makes them afresh
            log.exception("priming failed; the first cycle with pending pods builds afresh")
            return
        log.debug(
            "primed",
            extra={
                "resources": resources,
                "seconds": round(time.monotonic() - started, 3),
                "cpu_seconds": round(time.thread_time() - cpu_started, 3),
                "gc_seconds": round(self.gc.cpu_seconds - gc_started, 3),
            },
        )

    def _next_due(self, ended: float, *, failed: bool, reported: int) -> tuple[float, str, str]:
        """When the cycle after the one that ended at ``ended`` is due if nothing changes: see
        :func:`next_cycle_due`. ``reported``: ``Store.reported`` when that cycle started."""
        last = self.last
        report = last.report if last is not None else None
        unsettled: str | None = None
        if failed:
            unsettled = "failed"
        elif self.applying():
            # Its writes are under way, and a repeat would decide the same (a change starts a cycle
            # at once) and write only what is already queued: nothing is due but the clock's
            # deadlines until its report says what is (the loop looks again once it is applied).
            pass
        elif report is None:
            unsettled = "unapplied"  # it broke a hard rule: tried again every period
        elif not report.quiet:
            unsettled = "applied"
        elif self.store.reported != reported:
            unsettled = "reported"
        return next_cycle_due(
            ended=ended,
            period_s=self.period_s,
            resync_s=self.resync_s,
            unsettled=unsettled,
            deadlines=self.deadlines(),
        )

    def applying(self) -> bool:
        """The last cycle's decision is still being applied (its bindings or its writes)."""
        last = self.last
        return last is not None and last.report is None and last.pending is not None

    def deadlines(self) -> dict[str, float]:
        """From when on (``time.monotonic()``) the clock alone makes repeating the last cycle
        worth it, by what: the applier's rules that wait, and bindings shown as bound that stop
        being shown, and the solver's one rule that reads the clock: an admission that times out."""
        from vcsat.solver.enqueue import next_inqueue_timeout

        last = self.last
        due = dict(last.report.follow_ups) if last is not None and last.report is not None else {}
        expiry = self.store.next_expiry()
        if expiry is not None:
            due["binding-ttl"] = expiry
        if last is not None:
            timeout = next_inqueue_timeout(last.snapshot, self.policy)
            if timeout is not None:
                # The snapshot's clock is the wall clock; the loop's is monotonic.
                due["inqueue-timeout"] = time.monotonic() + max(0.0, timeout - time.time())
        return due

    def _count_idle_periods(self, since: float, counted: int, now: float) -> int:
        """Count the periods a loop on a period would have run a cycle in since ``since`` (the first
        at ``since``), beyond the ``counted`` ones; how many are counted now."""
        periods = int((now - since) / self.period_s) + 1
        if periods > counted:
            self.idle_periods += periods - counted
            if self.metrics is not None:
                self.metrics.observe_idle_periods(periods - counted)
        return max(periods, counted)

    def _wait_for_room(self, stopped: Any) -> None:
        """Let the last cycle's bindings drain to ``overlap`` before solving again."""
        in_flight = self._in_flight
        while in_flight is not None and not stopped() and in_flight.outstanding() > self.overlap:
            time.sleep(0.02)

    def _debounce(self, count: int, stopped: Any) -> None:
        """Wait for a quiet moment (or at most ``max_delay_s``) so a burst of changes makes one cycle.

        A quiet moment counts only once the loop has rested after the last cycle: an API server
        under load delivers a stream of new pods in bursts with short gaps, and a cycle in every
        gap would spend the scheduler's (and the machine's) CPU on re-solving the whole cluster
        for a few pods each time.
        """
        deadline = time.monotonic() + self.max_delay_s
        earliest = min(deadline, self._rest_until)
        while not stopped():
            left = min(self.debounce_s, deadline - time.monotonic())
            if left <= 0:
                return
            newer = self.store.wait_relevant(count, left)
            if newer == count and time.monotonic() >= earliest:
                return
            count = newer

    # --- one cycle ------------------------------------------------------------------------------

    def run_cycle(
        self,
        *,
        stop: threading.Event | None = None,
        wait: bool = True,
        trigger: str = "call",
        why: str = "",
        early: bool = False,
    ) -> CycleResult:
        """One cycle. ``wait``: return once the decision is wholly applied (``report`` set);
        otherwise once its bindings are queued (``report`` is set when they are done).
        ``trigger`` and ``why``: why it runs, for the log (:data:`TRIGGERS`). ``early``: with at
        least ``early_min_pending`` pods waiting, bind the greedy's sure placements instead of
        searching when there are any (the result says ``early``; the caller runs the full cycle next)."""
        from vcsat.solver import check, idle, pod_indexes, pod_sums, solve  # OR-Tools loads here, not at import
        from vcsat.solver.sure import prepare, sure_decision

        # Cycle follows cycle on snapshots that share most objects: the pods' sums are carried.
        pod_sums.carry()

        probe = CycleProbe(gc_cpu=lambda: self.gc.cpu_seconds, events=lambda: self.store.generation)
        probe.start()
        # Which other threads and processes ran meanwhile: a millisecond of /proc reads, for the debug log only.
        threads = CycleThreads() if log.isEnabledFor(logging.DEBUG) else None
        if threads is not None:
            threads.start()
        started = time.monotonic()
        woke, self._woke = self._woke, None
        cpu_started = time.process_time()
        self._cycle_started = started
        try:
            last_whole, self._converted = self._converted, None
            generation, objects, delta = self.store.snapshot_changes(*(last_whole or (None, frozenset())))
            probe.mark("store")
            counts = self.store.relevant_by_kind()
            changes, self._changes_seen = dict(counts - self._changes_seen), counts
            cap = self.cap
            # Off by default: then the cycle is given every object as the store holds them.
            given = defer(objects, self.policy.scheduler_name, cap.cap, self._tried) if cap is not None else None
            if given is not None:
                snapshot, objects, _ = self._convert(given.objects, generation)
            else:
                snapshot, objects, whole = self._convert(objects, generation, delta.by_kind, last_whole)
                if whole:  # the store's snapshot as it is: the next one's changes count from here
                    self._converted = (generation, delta.assumed)
            # Before anything reads them: the pod indexes carried from the last cycle's snapshot.
            pod_indexes.carry(snapshot)
            converted = time.monotonic() - started
            converted_cpu = time.process_time()
            waiting = sum(map(_PENDING, snapshot.pods))  # a C-level walk over every pod
            probe.mark("convert")
            sure_path = bool(early and self.early_min_pending and waiting >= self.early_min_pending)
            sure_made: list[Decision] = []

            def decide(part: Snapshot) -> Decision:
                if idle.nothing_to_place(part) and not (self.dump_dir is not None and waiting):
                    # A follow-up with no pod of ours pending: the decision is made of the policy
                    # and the node count alone, and no problem is built for it (vcsat.solver.idle).
                    # A cycle dumped for replay (other schedulers' pods wait) is solved afresh.
                    return idle.decision(part, self.policy, started=started, fresh=solve)
                prepared = None
                if sure_path:
                    prepared = prepare(part, self.policy)
                    sure = sure_decision(prepared, started=started)
                    if sure is not None and sure.bindings:
                        sure_made.append(sure)
                        return sure
                return solve(part, self.policy, started=started, prepared=prepared)

            def decide_again(part: Snapshot) -> Decision:  # a whole time limit for each try
                return solve(part, self.policy, started=time.monotonic())

            decision = self.isolator.decide(snapshot, decide, retry=decide_again)
            sure = decision if sure_made else None
            decided_cpu = time.process_time()
            probe.mark("decide")
            violations = check(snapshot, decision, self.policy)
            probe.mark("check")
            self.cycles += 1
            number = self.cycles
            if cap is not None and given is not None:
                self._tried = {group: self._tried[group] for group in given.waiting if group in self._tried}
                self._tried.update(dict.fromkeys(given.given_groups, number))
                last, self._waiting = self._waiting, (started, dict(given.waiting))
                if sure is None:
                    rate = arrived(last[1], given.waiting) / max(started - last[0], 1e-3) if last else 0.0
                    cap.observe(given.given_pods, time.monotonic() - started, rate)
            pending = waiting > 0
            if self.dump_dir is not None and (pending or decision.evictions or decision.nominations):
                self._dump(number, objects, decision, snapshot.now, early=sure is not None)
            applying = None
            if violations:
                log.error(
                    "decision breaks hard rules; not applied",
                    extra={"cycle": number, "violations": [str(v) for v in violations]},
                )
            elif sure is not None:
                # With the admission of PodGroups that have no pods yet: a Job controller creates a
                # job's pods only once its group is Inqueue, and while a stream binds early the
                # next full cycle may be seconds away.
                applying = self.applier.submit(
                    _with_admissions(decision, snapshot, self.policy, self._unadmitted),
                    snapshot,
                    stop=stop,
                    early=True,
                )
            else:
                applying = self.applier.submit(
                    _with_admissions(decision, snapshot, self.policy, self._unadmitted), snapshot, stop=stop
                )
            probe.mark("submit")
            ran = threads.end() if threads is not None else None
            result = CycleResult(
                number,
                snapshot,
                objects,
                decision,
                violations,
                None,
                time.monotonic() - started,
                applying,
                trigger=trigger,
                why=why or trigger,
                snapshot_seconds=converted,
                early=sure is not None,
                deferred=given.deferred_pods if given is not None else 0,
                cpu_seconds=time.process_time() - cpu_started,
                snapshot_cpu_seconds=converted_cpu - cpu_started,
                solve_cpu_seconds=decided_cpu - converted_cpu,
                changes=changes,
                waiting=waiting,
                phases=probe.phases(),
                woke_seconds=None if woke is None else started - woke,
                threads=ran,
            )
            self.last = result
        finally:
            self._cycle_started = None
        if applying is None:
            self._observe(result)
        elif wait:
            self._applied(result, started, applying.result())
        else:
            applying.add_done_callback(functools.partial(self._applied, result, started))
        return result

    def _applied(self, result: CycleResult, started: float, report: ApplyReport) -> None:
        result.report = report
        result.apply_seconds = time.monotonic() - started
        answered = result.pending.answered_at if result.pending is not None else None
        result.bind_seconds = answered - started if answered is not None else None
        self._observe(result)

    def _convert(
        self,
        objects: list[dict[str, Any]],
        generation: int,
        changed: dict[str, dict[str, Any]] | None = None,
        converted: tuple[int, frozenset[str]] | None = None,
    ) -> tuple[Snapshot, list[dict[str, Any]], bool]:
        """The snapshot, the objects it was made of, and whether they are all of ``objects``; an
        object the converter refuses is left out of this cycle (and logged once). ``changed``:
        what may differ since the snapshot converted at ``converted`` (read instead of every
        object), on the first try only (a retry without a refused object reads them all)."""
        whole = True
        for _ in range(MAX_QUARANTINED):
            try:
                snapshot = snapshot_from_objects(
                    objects,
                    scheduler_name=self.policy.scheduler_name,
                    source=LIVE_SOURCE,
                    strict=False,
                    generation=generation,
                    memo=self._conversions,
                    now=wall_clock(),  # the cycle's clock (admission's timeout), recorded in its dump
                    changes=changed,
                    since=None if converted is None else converted[0],
                )
                self._log_notices(snapshot)
                return snapshot, objects, whole
            except InputError as error:
                kind, _, key = (error.obj or "").partition(" ")
                kept = [obj for obj in objects if not _is(obj, kind, key)]
                if not key or len(kept) == len(objects):
                    raise
                if self._quarantined.get(f"{kind} {key}") != str(error):
                    self._quarantined[f"{kind} {key}"] = str(error)
                    log.warning(
                        "malformed object left out of the cycle",
                        extra={"object": error.obj, "error": str(error)},
                    )
                objects = kept
                whole, changed = False, None
        raise RuntimeError(f"more than {MAX_QUARANTINED} malformed objects")

    def _log_notices(self, snapshot: Snapshot) -> None:
        """One log line per tolerated problem (``Snapshot.notices``), when it first shows, not every cycle;
        one that went away and comes back is logged again."""
        now = {str(notice) for notice in snapshot.notices}
        for notice in snapshot.notices:
            if str(notice) not in self._noticed:
                log.warning(
                    "input problem: work waits until it is fixed",
                    extra={"object": f"{notice.kind} {notice.key}", "reason": notice.reason, "error": notice.message},
                )
        self._noticed = now

    def _dump(
        self,
        number: int,
        objects: list[dict[str, Any]],
        decision: Decision,
        now: float | None = None,
        early: bool = False,
    ) -> None:
        assert self.dump_dir is not None
        stem = self.dump_dir / f"cycle-{number:06d}"
        instance = stem.with_name(stem.name + ".instance.json")
        decision_file = stem.with_name(stem.name + ".decision.json")
        temporary = instance.with_name(instance.name + ".tmp")
        # The steps the cycle skipped for time go with it: a replay skips them too.
        document = instance_document(objects, now=now, early=early, skipped=decision.solver.skipped)
        temporary.write_text(json.dumps(document, separators=(",", ":")), encoding="utf-8")
        temporary.replace(instance)
        decision_file.write_text(decision.model_dump_json(indent=2) + "\n", encoding="utf-8")

    def _observe(self, result: CycleResult) -> None:
        report = result.report
        fields: dict[str, Any] = {
            "cycle": result.number,
            "trigger": result.trigger,
            "why": result.why,
            "generation": result.snapshot.generation,
            "seconds": round(result.seconds, 3),
            "apply_seconds": round(result.apply_seconds or 0.0, 3),
            "bind_seconds": round(result.bind_seconds, 3) if result.bind_seconds is not None else None,
            "solver": result.decision.solver.status,
            "solver_seconds": result.decision.solver.seconds,
            "gap": round(result.decision.solver.gap, 6),
            "skipped": result.decision.solver.skipped,
            "pending": (
                result.waiting if result.waiting is not None else sum(1 for pod in result.snapshot.pods if pod.pending)
            ),
            "early": result.early,
            "deferred": result.deferred,
            "snapshot_seconds": round(result.snapshot_seconds or 0.0, 3),
            "cpu_seconds": round(result.cpu_seconds or 0.0, 3),
            "snapshot_cpu_seconds": round(result.snapshot_cpu_seconds or 0.0, 3),
            "solve_cpu_seconds": round(result.solve_cpu_seconds or 0.0, 3),
            "changes": result.changes,
            "phases": result.phases,
            "woke_seconds": None if result.woke_seconds is None else round(result.woke_seconds, 3),
            "threads": result.threads,
            "gc": {**self.gc.totals(), "frozen": self.tenure.frozen, "full": self.tenure.full_collections},
        }
        if report is not None:
            fields.update(
                bound=len(report.bound),
                failed=len(report.failed),
                stale=len(report.stale),
                evicted=len(report.evicted),
                nominated=len(report.nominated),
                unschedulable=len(report.unschedulable),
            )
        busy = report is not None and (
            report.bound or report.failed or report.evicted or report.stale or report.unschedulable
        )
        log.log(logging.INFO if busy else logging.DEBUG, "cycle", extra=fields)
        for observer in self.observers:
            try:
                observer(result)
            except Exception:
                log.exception("cycle observer failed", extra={"cycle": result.number})
        if self.metrics is None:
            return
        self.metrics.observe_cycle(result.decision, result.apply_seconds or result.seconds)
        self.metrics.observe_result(result)
        if report is not None:
            self.metrics.observe_bound(len(report.bound))
            reasons = {eviction.pod: eviction.reason for eviction in result.decision.evictions}
            for reason in ("preempt", "reclaim"):
                self.metrics.observe_evictions(sum(1 for pod in report.evicted if reasons.get(pod) == reason), reason)


class _AnyEvent(threading.Event):
    """Looks set when any of several events is (only ``is_set`` is used by the applier)."""

    def __init__(self, events: tuple[threading.Event, ...]) -> None:
        super().__init__()
        self._events = events

    def is_set(self) -> bool:
        return any(event.is_set() for event in self._events)


def _is(obj: Mapping[str, Any], kind: str, key: str) -> bool:
    if obj.get("kind") != kind:
        return False
    metadata = obj.get("metadata") or {}
    namespace, _, name = key.rpartition("/")
    return bool(metadata.get("name") == name and (metadata.get("namespace") or "") == namespace)


def _last_cycle_number(directory: Path) -> int:
    numbers = [int(m.group(1)) for p in directory.iterdir() if (m := _CYCLE_FILE.fullmatch(p.name))]
    return max(numbers, default=0)


# --- the command ------------------------------------------------------------------------------


@click.command("scheduler")
@click.option("--kubeconfig", metavar="FILE", help="Default: in-cluster credentials, else ~/.kube/config.")
@click.option("--scheduler-name", metavar="NAME", help="Place pods with this spec.schedulerName (default: vcsat).")
@click.option(
    "--period",
    type=click.FloatRange(min=0.05),
    default=1.0,
    show_default=True,
    metavar="S",
    help="Seconds from a cycle that wrote something (or whose pods changed status) to the next one; "
    "a change that may alter the decision starts one sooner.",
)
@click.option(
    "--resync",
    type=click.FloatRange(min=0.05),
    default=RESYNC_S,
    show_default=True,
    metavar="S",
    help="Most seconds without a cycle while nothing changes and no timed write (a waiting pod's "
    "condition or Event refresh) is due; an idle cluster costs no solving in between.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    metavar="S",
    help="Wall seconds per cycle, from its snapshot to its decision (overrides the policy's time_limit_s).",
)
@click.option("--policy", "policy_file", metavar="FILE", help="A YAML policy file (see vcsat.model.Policy).")
@click.option(
    "--dump-dir",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Write the instance and decision of each cycle with pods to place here "
    "(cycle-N.instance.json, cycle-N.decision.json, and the policy.yaml to replay them with). "
    "Turns early binding off, so that every decision applied is one vcsat solve replays.",
)
@daemon_options(lease_name="vcsat-scheduler")
@click.option(
    "--bind-workers",
    type=click.IntRange(min=1, max=512),
    default=32,
    show_default=True,
    metavar="N",
    help="Concurrent API requests when applying a decision (bindings, evictions); statuses and Events "
    "have a few connections of their own.",
)
@click.option(
    "--early-bind-min-pending",
    type=click.IntRange(min=0),
    default=EARLY_MIN_PENDING,
    show_default=True,
    metavar="N",
    help="With at least N pods waiting, bind the greedy warm start's placements before the search "
    "when they already place every pod that can be placed (whole gangs only), then run the next "
    "cycle at once or soon (see --full-cycle-every); 0: never. With --dump-dir such a cycle's dump is "
    "marked early and vcsat solve replays it so.",
)
@click.option(
    "--full-cycle-every",
    type=click.FloatRange(min=0),
    default=FULL_CYCLE_EVERY_S,
    show_default=True,
    metavar="S",
    help="While pods stream in and every cycle binds early, run a full cycle (the search, reports on "
    "waiting work, admissions, preemption) straight after an early one once S seconds have passed "
    "since the last full cycle; a cycle that finds nothing sure to bind is always a full one. 0: a full "
    "cycle straight after every early one.",
)
@click.option(
    "--cycle-target",
    type=click.FloatRange(min=0),
    default=DEFAULT_TARGET_S,
    show_default=True,
    metavar="S",
    help="With more pods waiting than one cycle decides in about S seconds (beyond what a cycle costs "
    "whatever it is given), give a cycle only the first of them (whole groups, in priority then "
    "creation order; adapted to how long cycles take) and run the next cycle at once on the rest, "
    "so a new pod is decided within about one short cycle; 0: every cycle is given every waiting pod.",
)
@click.option(
    "--dashboard-port",
    type=click.IntRange(min=0, max=65535),
    default=0,
    show_default=True,
    metavar="PORT",
    help="Serve the read-only web dashboard (queues, waiting PodGroups and why, GPUs, cycles) here; 0: off.",
)
def scheduler_cmd(
    kubeconfig: str | None,
    scheduler_name: str | None,
    period: float,
    resync: float,
    time_limit: float | None,
    policy_file: str | None,
    dump_dir: Path | None,
    leader_elect: bool,
    lease_namespace: str | None,
    lease_name: str,
    lease_duration_s: float,
    renew_deadline_s: float,
    retry_period_s: float,
    metrics_port: int,
    log_format: str,
    log_level: str,
    bind_workers: int,
    early_bind_min_pending: int,
    full_cycle_every: float,
    cycle_target: float,
    dashboard_port: int,
) -> None:
    """Run the live scheduler against a cluster until SIGTERM or Ctrl-C."""
    timing = leader_timing(lease_duration_s, renew_deadline_s, retry_period_s)
    from vcsat.adapters.cli.app import load_policy
    from vcsat.adapters.kube.leader import LeaderElector, default_identity
    from vcsat.adapters.live.logs import setup_logging
    from vcsat.adapters.live.metrics import Metrics

    if dashboard_port and dashboard_port == metrics_port:
        raise click.BadParameter("must differ from --metrics-port", param_hint="--dashboard-port")
    setup_logging(log_format, log_level.upper())
    policy = load_policy(policy_file, scheduler_name=scheduler_name, time_limit_s=time_limit)
    configuration = load_configuration(kubeconfig)
    identity = default_identity()
    # A connection for each bind worker and each report writer: a report write never takes a
    # binding's connection.
    kube = Kube(configuration, pool_size=bind_workers + REPORT_WORKERS)
    metrics = Metrics()
    dashboard = None
    if dashboard_port:
        from vcsat.adapters.dashboard.server import Dashboard

        dashboard = Dashboard()
    scheduler = Scheduler(
        kube,
        policy=policy,
        period_s=period,
        resync_s=resync,
        dump_dir=dump_dir,
        metrics=metrics,
        identity=identity,
        workers=bind_workers,
        observers=(dashboard.observe,) if dashboard is not None else (),
        early_min_pending=early_bind_min_pending,
        full_cycle_every_s=full_cycle_every,
        cycle_target_s=cycle_target,
    )

    stop = stop_on_signals(log, also=scheduler.store.wake)

    log.info(
        "starting",
        extra={
            "server": kube.host,
            "scheduler_name": policy.scheduler_name,
            "identity": identity,
            "pid": os.getpid(),
        },
    )
    scheduler.start()
    if metrics_port:
        metrics.serve(metrics_port, healthy=scheduler.healthy, ready=scheduler.ready)
    if dashboard is not None:
        dashboard.serve(dashboard_port)
    try:
        if leader_elect:
            from kubernetes.client import ApiClient

            def lead(term: threading.Event) -> None:
                metrics.set_leader(True)
                if dashboard is not None:
                    dashboard.set_leading(True)
                try:
                    scheduler.run(stop, term)
                finally:
                    metrics.set_leader(False)
                    if dashboard is not None:
                        dashboard.set_leading(False)

            with ApiClient(configuration) as api_client:
                elector = LeaderElector(
                    api_client,
                    namespace=lease_namespace or default_lease_namespace(),
                    name=lease_name,
                    lease_duration_s=timing.lease_duration_s,
                    renew_deadline_s=timing.renew_deadline_s,
                    retry_period_s=timing.retry_period_s,
                    identity=identity,
                )
                elector.run(stop, lead, lambda: log.info("no longer leading; standing by"))
        else:
            metrics.set_leader(True)
            if dashboard is not None:
                dashboard.set_leading(True)
            scheduler.run(stop)
    finally:
        scheduler.close()
        metrics.shutdown()
        if dashboard is not None:
            dashboard.shutdown()
        kube.close()
    log.info("stopped")


def _with_admissions(
    decision: Decision, snapshot: Snapshot, policy: Policy, unadmitted: Unadmitted | None = None
) -> Decision:
    """The decision to apply, plus the admission of PodGroups that have no pending pods yet.

    The Job controller creates a job's pods only once its PodGroup is Inqueue; the decision
    (contract §2) speaks only of groups with pending pods, so a group still without pods would
    never be admitted. Its phase comes from the same enqueue rules (``vcsat.solver.enqueue``); it
    is applied, not part of the decision that is dumped and replayed. ``unadmitted``: those groups
    carried from the last cycle's snapshot (the result is sorted by key, so their order is free).
    """
    from vcsat.solver.admission_memo import admissions as admitted
    from vcsat.solver.enqueue import DEFAULT_SCHEDULER

    decided = {outcome.podgroup for outcome in decision.podgroups}
    if unadmitted is None:
        name = policy.scheduler_name
        waiting = [
            group
            for group in snapshot.podgroups
            if group.key not in decided and waits_for_pods(group, snapshot, name, DEFAULT_SCHEDULER)
        ]
    else:
        by_key = snapshot.podgroup_by_key
        waiting = [by_key[key] for key in unadmitted.of(snapshot, policy.scheduler_name) if key not in decided]
    if not waiting:
        return decision
    admissions = admitted(snapshot, policy, overcommit=policy.overcommit)  # the build's, for this snapshot
    extra = [
        PodGroupOutcome(
            podgroup=group.key,
            phase="Inqueue" if admissions[group.key].admitted else "Pending",
            reason=admissions[group.key].reason,
            message=admissions[group.key].message,
        )
        for group in waiting
        if group.key in admissions
    ]
    return decision.model_copy(update={"podgroups": sorted([*decision.podgroups, *extra], key=lambda o: o.podgroup)})
