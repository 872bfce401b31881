"""The ``volcano_*`` series: Volcano's names, types and labels, moved by a real solved cycle."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import builders as b
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from vcsat.adapters.live.metrics import Metrics
from vcsat.adapters.live.volcano_metrics import VolcanoMetrics, exponential_buckets_range
from vcsat.model import Decision, Policy, Snapshot
from vcsat.model import resources as res
from vcsat.solver import solve
from vcsat.solver.shares.deserved import fair_shares

# Volcano's pkg/scheduler/metrics: (name, type, labels) of every series vcsat emits under its name.
VOLCANO_SERIES = [
    ("volcano_e2e_scheduling_latency_milliseconds", "histogram", ()),
    ("volcano_open_session_duration_milliseconds", "histogram", ()),
    ("volcano_e2e_job_scheduling_latency_milliseconds", "histogram", ()),
    ("volcano_e2e_job_scheduling_duration", "gauge", ("job_name", "queue", "job_namespace")),
    ("volcano_e2e_job_scheduling_start_time", "gauge", ("job_name", "queue", "job_namespace")),
    ("volcano_e2e_job_scheduling_last_time", "gauge", ("job_name", "queue", "job_namespace")),
    ("volcano_schedule_attempts", "counter", ("result",)),
    ("volcano_pod_preemption_victims", "gauge", ()),
    ("volcano_eviction_transactions", "counter", ("action",)),
    ("volcano_unschedule_task_count", "gauge", ("job_id",)),
    ("volcano_unschedule_job_count", "gauge", ()),
    *[
        (f"volcano_queue_{kind}_{unit}", "gauge", labels)
        for kind in ("allocated", "request", "deserved", "capacity")
        for unit, labels in (
            ("milli_cpu", ("queue_name",)),
            ("memory_bytes", ("queue_name",)),
            ("scalar_resources", ("queue_name", "resource")),
        )
    ],
    ("volcano_queue_share", "gauge", ("queue_name",)),
    ("volcano_queue_weight", "gauge", ("queue_name",)),
    ("volcano_queue_overused", "gauge", ("queue_name",)),
    *[
        (f"volcano_queue_pod_group_{phase}_count", "gauge", ("queue_name",))
        for phase in ("inqueue", "pending", "running", "unknown")
    ],
]


@dataclass
class _Cycle:
    snapshot: Snapshot
    decision: Decision
    report: Any
    seconds: float = 0.25
    snapshot_seconds: float | None = 0.05


@dataclass
class _Report:
    bound: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)


def _samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client import generate_latest

    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return _samples(registry)[(name, tuple(sorted(labels.items())))]


def _cluster(*, with_b: bool = True) -> Snapshot:
    """Queue a (weight 2) runs 2 one-cpu pods, one holding a GPU, and has a pending gang of 2 one-cpu
    pods that fits; queue b (capability 10 cpu) waits with a gang of 2 four-cpu pods that cannot fit."""
    running, running_groups = b.gangs("a-old", queue="a", size=2, node="n1", created=100.0)
    running = [running[0].model_copy(update={"requests": {**running[0].requests, res.GPU: 1}}), running[1]]
    fresh, fresh_groups = b.gangs("a-new", queue="a", size=2, created=900.0)
    pods, groups = [*running, *fresh], [*running_groups, *fresh_groups]
    queues = [b.queue("a", weight=2)]
    if with_b:
        waiting, waiting_groups = b.gangs("b", queue="b", size=2, cpu="4", created=950.0)
        pods += waiting
        groups += waiting_groups
        queues.append(b.queue("b", capability={"cpu": "10"}))
    snap = b.snapshot([b.node("n1", cpu="8", gpus=2)], pods, groups, queues)
    return snap.model_copy(update={"now": 1000.0})


def _observed() -> tuple[CollectorRegistry, VolcanoMetrics, Snapshot, Decision]:
    snap = _cluster()
    decision = solve(snap, Policy(time_limit_s=5))
    registry = CollectorRegistry()
    metrics = VolcanoMetrics(registry)
    metrics.observe(_Cycle(snap, decision, _Report(bound=[x.pod for x in decision.bindings])))
    return registry, metrics, snap, decision


def test_every_series_has_volcanos_name_type_and_labels() -> None:
    _, _, snap, decision = _observed()
    metrics = Metrics()  # the Volcano series live beside vcsat's own, in the same registry
    metrics.observe_result(_Cycle(snap, decision, _Report(bound=[x.pod for x in decision.bindings])))
    families = {family.name: family for family in metrics.registry.collect()}
    for name, kind, labels in VOLCANO_SERIES:
        assert name in families, name
        assert families[name].type == kind, name
        for sample in families[name].samples:
            if not sample.name.endswith(("_bucket", "_created")):
                assert tuple(sample.labels) == labels, (name, sample)
    assert all(name.startswith(("vcsat_", "volcano_")) for name in families)


def test_a_solved_cycle_moves_the_queue_gauges_as_volcano_defines_them() -> None:
    registry, _, snap, decision = _observed()
    assert {x.pod for x in decision.bindings} == {"ns/a-new-0-0", "ns/a-new-0-1"}, "the setting's premise"
    shares = fair_shares(snap)
    for queue in ("default", "a", "b"):
        deserved = shares[queue].deserved
        assert _value(registry, "volcano_queue_deserved_milli_cpu", queue_name=queue) == deserved[res.CPU]
        assert _value(registry, "volcano_queue_deserved_memory_bytes", queue_name=queue) == deserved[res.MEMORY]
    # a holds its two running pods and the two bound now; b holds nothing.
    assert _value(registry, "volcano_queue_allocated_milli_cpu", queue_name="a") == 4000
    assert _value(registry, "volcano_queue_allocated_memory_bytes", queue_name="a") == 4 * 2**30
    assert _value(registry, "volcano_queue_allocated_milli_cpu", queue_name="b") == 0
    assert _value(registry, "volcano_queue_allocated_scalar_resources", queue_name="a", resource=res.GPU) == 1000
    assert _value(registry, "volcano_queue_request_milli_cpu", queue_name="b") == 8000
    assert _value(registry, "volcano_queue_capacity_milli_cpu", queue_name="b") == 10000
    assert ("volcano_queue_capacity_milli_cpu", (("queue_name", "a"),)) not in _samples(registry)
    assert _value(registry, "volcano_queue_weight", queue_name="a") == 2
    assert _value(registry, "volcano_queue_weight", queue_name="b") == 1
    deserved_a = shares["a"].deserved
    expected_share = max(
        {res.CPU: 4000, res.MEMORY: 4 * 2**30, res.GPU: 1}.get(r, 0) / d if d else 0.0 for r, d in deserved_a.items()
    )
    assert _value(registry, "volcano_queue_share", queue_name="a") == pytest.approx(expected_share)
    assert _value(registry, "volcano_queue_share", queue_name="b") == 0
    assert _value(registry, "volcano_queue_overused", queue_name="b") == 0
    assert _value(registry, "volcano_queue_pod_group_running_count", queue_name="a") == 2
    assert (
        _value(registry, "volcano_queue_pod_group_pending_count", queue_name="b")
        + _value(registry, "volcano_queue_pod_group_inqueue_count", queue_name="b")
        == 1
    )


def test_jobs_attempts_and_latencies_follow_the_cycle() -> None:
    registry, _, _, _ = _observed()
    assert _value(registry, "volcano_unschedule_job_count") == 1
    assert _value(registry, "volcano_unschedule_task_count", job_id="b-0") == 2
    assert _value(registry, "volcano_unschedule_task_count", job_id="a-new-0") == 0
    assert _value(registry, "volcano_schedule_attempts_total", result="scheduled") == 2
    assert _value(registry, "volcano_schedule_attempts_total", result="unschedulable") == 2
    assert _value(registry, "volcano_schedule_attempts_total", result="error") == 0
    assert _value(registry, "volcano_eviction_transactions_total", action="preempt") == 0
    labels = {"job_name": "a-new-0", "queue": "a", "job_namespace": "ns"}
    # Decided at the snapshot's clock (1000) plus the cycle's 0.25 s; the job was created at 900.
    assert _value(registry, "volcano_e2e_job_scheduling_duration", **labels) == pytest.approx(100250)
    assert _value(registry, "volcano_e2e_job_scheduling_last_time", **labels) == 1000
    assert _value(registry, "volcano_e2e_job_scheduling_start_time", **labels) == 900
    assert _value(registry, "volcano_e2e_job_scheduling_latency_milliseconds_count") == 2  # one per placed task
    assert _value(registry, "volcano_e2e_scheduling_latency_milliseconds_sum") == pytest.approx(250)
    assert _value(registry, "volcano_open_session_duration_milliseconds_sum") == pytest.approx(50)


def test_a_deleted_queue_or_job_leaves_no_series_behind() -> None:
    registry, metrics, _, _ = _observed()
    snap = _cluster(with_b=False)
    metrics.observe(_Cycle(snap, solve(snap, Policy(time_limit_s=5)), _Report()))
    names = {(name, labels) for name, labels in _samples(registry)}
    assert not any(("queue_name", "b") in labels for _, labels in names)
    assert not any(("job_id", "b-0") in labels for _, labels in names)
    assert _value(registry, "volcano_unschedule_job_count") == 0


def _gauges(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The samples that a cycle sets (not the counters and histograms that add up cycle by cycle)."""
    return {
        key: value
        for key, value in _samples(registry).items()
        if not key[0].endswith(("_total", "_count", "_sum", "_bucket", "_created"))
    }


def test_a_series_comes_back_with_its_value_after_its_job_or_queue_was_gone() -> None:
    """A series left alone because it already shows its value is set again once it was removed."""
    registry, metrics, snap, decision = _observed()
    first = _gauges(registry)
    without_b = _cluster(with_b=False)
    metrics.observe(_Cycle(without_b, solve(without_b, Policy(time_limit_s=5)), _Report()))
    assert _gauges(registry) != first
    metrics.observe(_Cycle(snap, decision, _Report(bound=[x.pod for x in decision.bindings])))
    assert _gauges(registry) == first


def test_evictions_count_one_transaction_per_cycle_and_action() -> None:
    snap = _cluster()
    decision = b.decision(snap, evictions=[b.evict("ns/a-old-0-0"), b.evict("ns/a-old-0-1", "reclaim")])
    registry = CollectorRegistry()
    metrics = VolcanoMetrics(registry)
    metrics.observe(_Cycle(snap, decision, _Report(evicted=["ns/a-old-0-0", "ns/a-old-0-1"])))
    metrics.observe(_Cycle(snap, decision, _Report(evicted=["ns/a-old-0-0"])))
    assert _value(registry, "volcano_eviction_transactions_total", action="preempt") == 2
    assert _value(registry, "volcano_eviction_transactions_total", action="reclaim") == 1
    assert _value(registry, "volcano_pod_preemption_victims") == 1


@pytest.mark.parametrize(("low", "high", "count"), [(1, 5000, 20), (100, 120000, 30), (0.1, 100, 15)])
def test_buckets_grow_by_one_factor_from_low_to_high(low: float, high: float, count: int) -> None:
    buckets = exponential_buckets_range(low, high, count)
    assert len(buckets) == count
    assert buckets[0] == pytest.approx(low) and buckets[-1] == pytest.approx(high)
    ratios = {round(y / x, 9) for x, y in itertools.pairwise(buckets)}
    assert len(ratios) == 1


def test_a_process_that_runs_no_cycle_serves_no_volcano_series() -> None:
    """The Job controller serves the same Metrics; scheduler series of Volcano's would only mislead there."""
    text = Metrics().exposition().decode()
    assert "volcano_" not in text
