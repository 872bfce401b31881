"""``vcsat scheduler``: the live loop that makes a cluster's batch pods land where CP-SAT decides.

One cycle is design.md's: a frozen, generation-stamped snapshot from the informer caches (through
the same converter as ``vcsat solve``), ``solve``, ``check`` (a decision that breaks a hard rule is
logged and never applied), then the applier. Cycles run on a period and, sooner, when something
that can change a decision happens (debounced, so a burst of 1,000 new pods makes one cycle, not
1,000). ``--dump-dir`` writes each cycle with pending work as an instance file plus its decision,
which ``vcsat solve`` replays to the same decision.

With ``--leader-elect`` (the default) the caches fill at once on every replica, but only the
replica holding the Lease runs cycles, so a standby takes over with warm caches.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import yaml

from vcsat.adapters.applier import Applier, ApplyReport, PendingApply
from vcsat.adapters.daemon import daemon_options, default_lease_namespace, stop_on_signals
from vcsat.adapters.dump import instance_document
from vcsat.adapters.errors import InputError
from vcsat.adapters.informer import InformerSet
from vcsat.adapters.kube import Kube, load_configuration
from vcsat.adapters.objects import snapshot_from_objects
from vcsat.model import Decision, PodGroupOutcome, Policy, Snapshot

log = logging.getLogger("vcsat.scheduler")

LIVE_SOURCE = "live cluster"
MAX_QUARANTINED = 1000
"""Objects a cycle may leave out for being malformed before it gives up."""
OVERLAP_PER_WORKER = 16
"""Bindings per bind worker the last cycle may still have unanswered when the next one starts.
The next cycle sees them as bound already (the store assumes them), so it need not wait for them;
while pods stream in, waiting for the queue to drain only makes the next batch (and the time from
the last pod's creation to its binding) larger. The bound keeps a slow API server from collecting
a queue of many cycles' bindings."""
REST_PER_CYCLE_SECOND = 1.0
"""After a cycle of S seconds the loop rests S * this before a quiet moment may start the next
one: while changes stream in, cycles take at most about half of a core."""
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


class Scheduler:
    """The informer caches, the cycle loop and the applier of one scheduler process."""

    def __init__(
        self,
        kube: Kube,
        *,
        policy: Policy,
        period_s: float = 1.0,
        debounce_s: float = 0.05,
        max_delay_s: float = 1.0,
        dump_dir: Path | None = None,
        metrics: Any = None,
        identity: str = "vcsat",
        workers: int | None = None,
    ) -> None:
        self.kube = kube
        self.policy = policy
        self.period_s = period_s
        self.debounce_s = debounce_s
        self.max_delay_s = max_delay_s
        self.dump_dir = dump_dir
        self.metrics = metrics
        self.informers = InformerSet(kube)
        self.store = self.informers.store
        self.applier = Applier(kube, self.store, identity=identity, workers=workers)
        self.overlap = OVERLAP_PER_WORKER * (workers or kube.pool_size)
        """The next cycle starts once at most this many bindings of the last one are unanswered."""
        self._in_flight: PendingApply | None = None
        self._rest_until = 0.0
        """Until then a quiet moment does not start the next cycle, only ``max_delay_s`` does (``_debounce``)."""
        self.cycles = 0
        self.last: CycleResult | None = None
        self._cycle_started: float | None = None
        self._quarantined: dict[str, str] = {}
        self._conversions: dict[Any, Any] = {}
        """Last cycle's converted nodes and pods, reused for the objects that did not change."""
        if dump_dir is not None:
            dump_dir.mkdir(parents=True, exist_ok=True)
            self.cycles = _last_cycle_number(dump_dir)
            (dump_dir / "policy.yaml").write_text(
                yaml.safe_dump(policy.model_dump(mode="json"), sort_keys=False), encoding="utf-8"
            )

    # --- life -----------------------------------------------------------------------------------

    def start(self) -> None:
        """Start filling the caches (every replica does, leader or not)."""
        self.informers.start()

    def close(self) -> None:
        self.informers.stop()
        self.applier.close()

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
        """Run cycles until any of the events is set: on a period, and on relevant changes."""
        events = (stop, *more)

        def stopped() -> bool:
            return any(event.is_set() for event in events)

        while not stopped() and not self.store.wait_synced(0.2):
            pass
        seen = -1
        next_at = 0.0
        failure = ""
        while not stopped():
            now = time.monotonic()
            if seen >= 0 and now < next_at:
                count = self.store.wait_relevant(seen, min(next_at - now, 0.2))
                if count == seen:
                    continue  # look at the stop events and the clock again
                self._debounce(count, stopped)
                if stopped():
                    break
            self._wait_for_room(stopped)
            if stopped():
                break
            seen = self.store.relevant
            started = time.monotonic()
            try:
                self._in_flight = self.run_cycle(stop=_AnyEvent(events), wait=False).pending
                failure = ""
            except Exception as error:
                # The whole traceback once; the same failure again, every period, in one line.
                if repr(error) != failure:
                    log.exception("cycle failed; trying again next period")
                else:
                    log.error("cycle failed again", extra={"error": repr(error)})
                failure = repr(error)
            ended = time.monotonic()
            next_at = ended + self.period_s
            self._rest_until = ended + REST_PER_CYCLE_SECOND * (ended - started)

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

    def run_cycle(self, *, stop: threading.Event | None = None, wait: bool = True) -> CycleResult:
        """One cycle. ``wait``: return once the decision is wholly applied (``report`` set);
        otherwise once its bindings are queued (``report`` is set when they are done)."""
        from vcsat.solver import check, solve  # OR-Tools loads here, not at import

        started = time.monotonic()
        self._cycle_started = started
        try:
            generation, objects = self.store.snapshot()
            snapshot, objects = self._convert(objects, generation)
            decision = solve(snapshot, self.policy)
            violations = check(snapshot, decision, self.policy)
            self.cycles += 1
            number = self.cycles
            pending = any(pod.pending for pod in snapshot.pods)
            if self.dump_dir is not None and (pending or decision.evictions or decision.nominations):
                self._dump(number, objects, decision)
            applying = None
            if violations:
                log.error(
                    "decision breaks hard rules; not applied",
                    extra={"cycle": number, "violations": [str(v) for v in violations]},
                )
            else:
                applying = self.applier.submit(_with_admissions(decision, snapshot, self.policy), snapshot, stop=stop)
            result = CycleResult(
                number, snapshot, objects, decision, violations, None, time.monotonic() - started, applying
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
        self._observe(result)

    def _convert(self, objects: list[dict[str, Any]], generation: int) -> tuple[Snapshot, list[dict[str, Any]]]:
        """The snapshot; an object the converter refuses is left out of this cycle (and logged once)."""
        for _ in range(MAX_QUARANTINED):
            try:
                snapshot = snapshot_from_objects(
                    objects,
                    scheduler_name=self.policy.scheduler_name,
                    source=LIVE_SOURCE,
                    strict=False,
                    generation=generation,
                    memo=self._conversions,
                )
                return snapshot, objects
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
        raise RuntimeError(f"more than {MAX_QUARANTINED} malformed objects")

    def _dump(self, number: int, objects: list[dict[str, Any]], decision: Decision) -> None:
        assert self.dump_dir is not None
        stem = self.dump_dir / f"cycle-{number:06d}"
        instance = stem.with_name(stem.name + ".instance.json")
        decision_file = stem.with_name(stem.name + ".decision.json")
        temporary = instance.with_name(instance.name + ".tmp")
        temporary.write_text(json.dumps(instance_document(objects), separators=(",", ":")), encoding="utf-8")
        temporary.replace(instance)
        decision_file.write_text(decision.model_dump_json(indent=2) + "\n", encoding="utf-8")

    def _observe(self, result: CycleResult) -> None:
        report = result.report
        fields: dict[str, Any] = {
            "cycle": result.number,
            "generation": result.snapshot.generation,
            "seconds": round(result.seconds, 3),
            "apply_seconds": round(result.apply_seconds or 0.0, 3),
            "solver": result.decision.solver.status,
            "solver_seconds": result.decision.solver.seconds,
            "pending": sum(1 for pod in result.snapshot.pods if pod.pending),
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
        if self.metrics is None:
            return
        self.metrics.observe_cycle(result.decision, result.apply_seconds or result.seconds)
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
    help="Seconds between cycles when nothing changes; changes start one sooner.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    metavar="S",
    help="Solver search budget per cycle (overrides the policy's time_limit_s).",
)
@click.option("--policy", "policy_file", metavar="FILE", help="A YAML policy file (see vcsat.model.Policy).")
@click.option(
    "--dump-dir",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Write the instance and decision of each cycle with pods to place here "
    "(cycle-N.instance.json, cycle-N.decision.json, and the policy.yaml to replay them with).",
)
@daemon_options(lease_name="vcsat-scheduler")
@click.option(
    "--bind-workers",
    type=click.IntRange(min=1, max=512),
    default=32,
    show_default=True,
    metavar="N",
    help="Concurrent API requests when applying a decision (bindings, evictions, status).",
)
def scheduler_cmd(
    kubeconfig: str | None,
    scheduler_name: str | None,
    period: float,
    time_limit: float | None,
    policy_file: str | None,
    dump_dir: Path | None,
    leader_elect: bool,
    lease_namespace: str | None,
    lease_name: str,
    metrics_port: int,
    log_format: str,
    log_level: str,
    bind_workers: int,
) -> None:
    """Run the live scheduler against a cluster until SIGTERM or Ctrl-C."""
    from vcsat.adapters.cli import load_policy
    from vcsat.adapters.leader import LeaderElector, default_identity
    from vcsat.adapters.logs import setup_logging
    from vcsat.adapters.metrics import Metrics

    setup_logging(log_format, log_level.upper())
    policy = load_policy(policy_file, scheduler_name=scheduler_name, time_limit_s=time_limit)
    configuration = load_configuration(kubeconfig)
    identity = default_identity()
    kube = Kube(configuration, pool_size=bind_workers)
    metrics = Metrics()
    scheduler = Scheduler(
        kube,
        policy=policy,
        period_s=period,
        dump_dir=dump_dir,
        metrics=metrics,
        identity=identity,
        workers=bind_workers,
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
    try:
        if leader_elect:
            from kubernetes.client import ApiClient

            def lead(term: threading.Event) -> None:
                metrics.set_leader(True)
                try:
                    scheduler.run(stop, term)
                finally:
                    metrics.set_leader(False)

            with ApiClient(configuration) as api_client:
                elector = LeaderElector(
                    api_client,
                    namespace=lease_namespace or default_lease_namespace(),
                    name=lease_name,
                    identity=identity,
                )
                elector.run(stop, lead, lambda: log.info("no longer leading; standing by"))
        else:
            metrics.set_leader(True)
            scheduler.run(stop)
    finally:
        scheduler.close()
        metrics.shutdown()
        kube.close()
    log.info("stopped")


def _with_admissions(decision: Decision, snapshot: Snapshot, policy: Policy) -> Decision:
    """The decision to apply, plus the admission of PodGroups that have no pending pods yet.

    The Job controller creates a job's pods only once its PodGroup is Inqueue; the decision
    (contract §2) speaks only of groups with pending pods, so a group still without pods would
    never be admitted. Its phase comes from the same enqueue rules (``vcsat.solver.enqueue``); it
    is applied, not part of the decision that is dumped and replayed.
    """
    from vcsat.solver.enqueue import DEFAULT_SCHEDULER, admit

    decided = {outcome.podgroup for outcome in decision.podgroups}
    waiting = [
        group
        for group in snapshot.podgroups
        if group.key not in decided
        and (group.scheduler_name or DEFAULT_SCHEDULER) == policy.scheduler_name
        and group.phase in ("", "Pending")
        and not any(pod.bound or pod.pending for pod in snapshot.pods_of_group.get(group.key, ()))
    ]
    if not waiting:
        return decision
    admissions = admit(snapshot, policy, overcommit=policy.overcommit)
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
