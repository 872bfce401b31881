"""Volcano's scheduler metrics, under Volcano's names, types and labels, beside vcsat's own.

Why: dashboards and alerts written for Volcano's scheduler read ``volcano_*`` series (its
``pkg/scheduler/metrics`` package: the subsystem ``volcano``, no namespace); a user switching to
vcsat keeps them working. Only what vcsat can compute honestly is emitted, with Volcano's meaning;
docs/metrics.md lists what is not and why. Units are Volcano's: milliseconds for latencies,
millicores for cpu, bytes for memory, and thousandths of a unit for every other ("scalar")
resource, as Volcano counts them (``nvidia.com/gpu`` 1 is 1000); the ``pods`` count and vcsat's own
GPU-share resource are not scalar resources there and are left out.

What maps to what: a Volcano session is one vcsat cycle (snapshot, solve, check, queueing the
bindings); opening the session is taking and converting the snapshot; a job is a PodGroup (a pod
without one is its own job, named after the pod); a task is a pod; Volcano's preempt and reclaim
actions are the decision's evictions of those reasons, committed together once per cycle.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Set
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from vcsat.adapters.live.group_tallies import GroupTallies, Label
from vcsat.adapters.live.queue_view import QueueRow, queue_rows
from vcsat.model import Decision, Snapshot
from vcsat.model import resources as res

SUBSYSTEM = "volcano"
SCALAR_LEFT_OUT = frozenset({res.CPU, res.MEMORY, res.PODS, res.GPU_MILLI})
"""Resources that are not Volcano scalar resources (cpu and memory have gauges of their own)."""
ATTEMPT_RESULTS = ("scheduled", "unschedulable", "error")
EVICTION_ACTIONS = ("preempt", "reclaim")


def exponential_buckets_range(low: float, high: float, count: int) -> tuple[float, ...]:
    """``count`` bucket bounds growing by one factor from ``low`` to ``high`` (the Prometheus Go
    client's ``ExponentialBucketsRange``, which Volcano's histograms use)."""
    factor = (high / low) ** (1 / (count - 1))
    return tuple(low * factor**i for i in range(count))


class CycleLike(Protocol):
    """What is read of one cycle (``vcsat.adapters.live.scheduler.CycleResult`` has it)."""

    snapshot: Snapshot
    decision: Decision
    report: Any
    seconds: float
    snapshot_seconds: float | None


def _name(metric: str) -> str:
    return f"{SUBSYSTEM}_{metric}"


class VolcanoMetrics:
    """The ``volcano_*`` series, in the registry of vcsat's own metrics; :meth:`observe` per cycle."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def gauge(metric: str, text: str, labels: Iterable[str] = ()) -> Gauge:
            return Gauge(_name(metric), text, list(labels), registry=registry)

        session = exponential_buckets_range(1, 5000, 20)
        self.e2e = Histogram(
            _name("e2e_scheduling_latency_milliseconds"),
            "Duration of one scheduling cycle in milliseconds: snapshot, solve, check and queueing its bindings.",
            buckets=session,
            registry=registry,
        )
        self.open_session = Histogram(
            _name("open_session_duration_milliseconds"),
            "Duration of taking and converting a cycle's snapshot of the cluster in milliseconds.",
            buckets=session,
            registry=registry,
        )
        job_labels = ("job_name", "queue", "job_namespace")
        self.job_latency = Histogram(
            _name("e2e_job_scheduling_latency_milliseconds"),
            "Per placed task: milliseconds from its job's creation to the decision that placed it.",
            buckets=exponential_buckets_range(100, 120000, 30),
            registry=registry,
        )
        self.job_duration = gauge(
            "e2e_job_scheduling_duration",
            "Per job: milliseconds from its creation to the last decision that placed one of its tasks.",
            job_labels,
        )
        self.job_start = gauge("e2e_job_scheduling_start_time", "Per job: its creation, Unix seconds.", job_labels)
        self.job_last = gauge(
            "e2e_job_scheduling_last_time",
            "Per job: the last decision that placed one of its tasks, Unix seconds.",
            job_labels,
        )
        self.attempts = Counter(
            _name("schedule_attempts"),
            "Pending pods a cycle tried to place, by result: scheduled (bound), unschedulable (left waiting or "
            "nominated) or error (the binding failed).",
            ["result"],
            registry=registry,
        )
        self.victims = gauge("pod_preemption_victims", "Preemption victims the last cycle selected.")
        self.eviction_transactions = Counter(
            _name("eviction_transactions"),
            "Cycles that committed one or more evictions, by action (preempt or reclaim); not a pod count.",
            ["action"],
            registry=registry,
        )
        self.unschedule_tasks = gauge(
            "unschedule_task_count",
            "Per job with pending pods: tasks short of its minMember after the last cycle.",
            ["job_id"],
        )
        self.unschedule_jobs = gauge("unschedule_job_count", "Jobs the last cycle left unschedulable.")
        queue = ["queue_name"]
        scalar = ["queue_name", "resource"]
        self.queue_vectors: dict[str, tuple[Gauge, Gauge, Gauge]] = {}
        for kind, text in (
            ("allocated", "Allocated {} for one queue once the last cycle's decision is applied"),
            ("request", "Request {} for one queue: held plus asked by its pending pods"),
            ("deserved", "Deserved {} for one queue"),
            ("capacity", "Capacity {} for one queue (only the resources its capability caps)"),
        ):
            self.queue_vectors[kind] = (
                gauge(f"queue_{kind}_milli_cpu", text.format("CPU (millicores)"), queue),
                gauge(f"queue_{kind}_memory_bytes", text.format("memory (bytes)"), queue),
                gauge(f"queue_{kind}_scalar_resources", text.format("scalar resources (thousandths)"), scalar),
            )
        self.queue_share = gauge("queue_share", "Share for one queue: the largest allocated/deserved.", queue)
        self.queue_weight = gauge("queue_weight", "Weight for one queue.", queue)
        self.queue_overused = gauge("queue_overused", "1 if one queue holds at least its deserved share of all.", queue)
        self.queue_podgroups = {
            phase: gauge(f"queue_pod_group_{phase.lower()}_count", f"{phase} PodGroups in one queue.", queue)
            for phase in ("Inqueue", "Pending", "Running", "Unknown")
        }
        for result in ATTEMPT_RESULTS:
            self.attempts.labels(result=result)
        for action in EVICTION_ACTIONS:
            self.eviction_transactions.labels(action=action)
        self._tallies = GroupTallies()
        """Every PodGroup's job labels and each queue's PodGroups per phase, carried from cycle to cycle."""
        self._series: dict[int, dict[tuple[str, ...], float]] = {}
        """Per labelled gauge (by id): the label values it was last set for and the value, to drop
        those gone and to leave alone a series that already shows its value: a cluster's every job
        has series, and setting each of them every cycle would cost a share of a steady cycle."""

    # --- one cycle ------------------------------------------------------------------------------

    def observe(self, cycle: CycleLike, now: float | None = None) -> None:
        """Record one cycle once its decision is applied (``cycle.report`` set) or refused."""
        self.e2e.observe(cycle.seconds * 1000)
        if cycle.snapshot_seconds is not None:
            self.open_session.observe(cycle.snapshot_seconds * 1000)
        decided_at = now if now is not None else time.time()
        if cycle.snapshot.now is not None:
            decided_at = cycle.snapshot.now + cycle.seconds
        tallies = self._tallies.of(cycle.snapshot)
        self._attempts(cycle, tallies.waiting)
        self._jobs(cycle.snapshot, cycle.decision, decided_at, tallies.labels)
        self._queues(queue_rows(cycle.snapshot, cycle.decision, tallies.phases))

    def _attempts(self, cycle: CycleLike, pending: int) -> None:
        """``pending``: the snapshot's pods pending and not held."""
        decision, report = cycle.decision, cycle.report
        self.victims.set(sum(1 for eviction in decision.evictions if eviction.reason == "preempt"))
        if report is None:
            return  # not applied (it broke a hard rule): nothing was attempted on the cluster
        bound, failed = len(report.bound), len(report.failed)
        self.attempts.labels(result="scheduled").inc(bound)
        self.attempts.labels(result="error").inc(failed)
        self.attempts.labels(result="unschedulable").inc(max(0, pending - bound - failed))
        reasons = {eviction.pod: eviction.reason for eviction in decision.evictions}
        for action in EVICTION_ACTIONS:
            if any(reasons.get(pod) == action for pod in report.evicted):
                self.eviction_transactions.labels(action=action).inc()

    def _jobs(self, snapshot: Snapshot, decision: Decision, decided_at: float, groups: Set[Label]) -> None:
        """The job series of the decision's jobs; those of jobs gone dropped (``groups``: every
        PodGroup's labels)."""
        placed: dict[str, int] = {}
        for pod_key in [b.pod for b in decision.bindings] + [n.pod for n in decision.nominations]:
            pod = snapshot.pod_by_key.get(pod_key)
            if pod is not None:
                job = pod.group or pod.key
                placed[job] = placed.get(job, 0) + 1
        unschedulable: dict[tuple[str, ...], float] = {}
        jobs: dict[tuple[str, ...], tuple[float, int]] = {}
        for outcome in decision.podgroups:
            job = outcome.podgroup
            group = snapshot.podgroup_by_key.get(job)
            lone = snapshot.pod_by_key.get(job) if group is None else None
            if group is not None:
                created, queue, need = group.created, group.queue, group.min_member
            elif lone is not None:
                created, queue, need = lone.created, snapshot.queue_of(lone) or "", 1
            else:
                continue
            namespace, _, name = job.rpartition("/")
            short = 0
            if outcome.phase != "Running":  # its running pods count only then
                if group is not None:
                    running = sum(1 for pod in snapshot.pods_of_group.get(job, ()) if pod.bound)
                else:
                    running = 1 if lone is not None and lone.bound else 0
                short = max(0, need - running - placed.get(job, 0))
            unschedulable[(name,)] = short
            jobs[(name, queue, namespace)] = (created, placed.get(job, 0))
        self._set(self.unschedule_tasks, unschedulable)
        self.unschedule_jobs.set(sum(1 for o in decision.podgroups if o.phase != "Running"))
        self._set(self.job_start, {labels: created for labels, (created, _) in jobs.items()}, keep=True)
        for labels, (created, count) in jobs.items():
            if count:
                waited_ms = max(0.0, decided_at - created) * 1000
                self._put(self.job_duration, labels, waited_ms)
                self._put(self.job_last, labels, int(decided_at))
                for _ in range(count):
                    self.job_latency.observe(waited_ms)
        for metric in (self.job_start, self.job_duration, self.job_last):
            self._drop_gone(metric, groups, jobs)

    def _queues(self, rows: list[QueueRow]) -> None:
        values: dict[int, dict[tuple[str, ...], float]] = {}

        def put(metric: Gauge, labels: tuple[str, ...], value: float) -> None:
            values.setdefault(id(metric), {})[labels] = value

        metrics: dict[int, Gauge] = {}
        for row in rows:
            key = (row.name,)
            vectors: dict[str, Mapping[str, int]] = {
                "allocated": row.allocated,
                "request": row.request,
                "deserved": row.deserved,
                "capacity": row.capability or {},
            }
            for kind, vector in vectors.items():
                cpu, memory, scalar = self.queue_vectors[kind]
                capped = kind == "capacity"
                if not capped or res.CPU in vector:
                    put(cpu, key, vector.get(res.CPU, 0))
                if not capped or res.MEMORY in vector:
                    put(memory, key, vector.get(res.MEMORY, 0))
                for resource, amount in vector.items():
                    if resource not in SCALAR_LEFT_OUT:
                        put(scalar, (row.name, resource), amount * 1000)
                metrics.update({id(m): m for m in (cpu, memory, scalar)})
            put(self.queue_share, key, row.share)
            put(self.queue_weight, key, row.weight)
            put(self.queue_overused, key, 1 if row.overused else 0)
            for phase, metric in self.queue_podgroups.items():
                put(metric, key, row.podgroups.get(phase, 0))
            metrics.update({id(m): m for m in (self.queue_share, self.queue_weight, self.queue_overused)})
            metrics.update({id(m): m for m in self.queue_podgroups.values()})
        for triple in self.queue_vectors.values():
            metrics.update({id(m): m for m in triple})
        for ident, metric in metrics.items():
            self._set(metric, values.get(ident, {}))

    # --- series bookkeeping ---------------------------------------------------------------------

    def _put(self, metric: Gauge, labels: tuple[str, ...], value: float) -> None:
        """Set one series of ``metric``, unless it already shows ``value``."""
        seen = self._series.setdefault(id(metric), {})
        if labels not in seen or seen[labels] != value:
            metric.labels(*labels).set(value)
            seen[labels] = value

    def _set(self, metric: Gauge, values: Mapping[tuple[str, ...], float], keep: bool = False) -> None:
        """Set ``metric`` for these label values; unless ``keep``, drop the series set last time and
        not now (a deleted queue or job leaves no stale series behind)."""
        for labels, value in values.items():
            self._put(metric, labels, value)
        if not keep:
            seen = self._series.get(id(metric), {})
            for gone in [labels for labels in seen if labels not in values]:
                metric.remove(*gone)
                del seen[gone]

    def _drop_gone(self, metric: Gauge, groups: Set[Label], jobs: Mapping[tuple[str, ...], object]) -> None:
        """Drop the series of ``metric`` whose labels are neither a PodGroup's nor a job's of now."""
        seen = self._series.setdefault(id(metric), {})
        for labels in [labels for labels in seen if labels not in groups and labels not in jobs]:
            metric.remove(*labels)
            del seen[labels]
