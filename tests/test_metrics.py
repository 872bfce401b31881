"""Metrics move with what the scheduler observes, and the HTTP endpoints serve them and the probes."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from vcsat.adapters.live.metrics import Metrics
from vcsat.model import Decision, LevelBound, Nomination, PodGroupOutcome, SolverStats, relative_gap
from vcsat.solver.deadline import STEPS


def _decision(
    status: str = "OPTIMAL",
    objective: float = 100.0,
    bound: float = 100.0,
    waiting: tuple[str, ...] = (),
    running: int = 0,
    nominations: int = 0,
    skipped: tuple[str, ...] = (),
) -> Decision:
    outcomes = [PodGroupOutcome(podgroup=f"ns/run-{i}", phase="Running") for i in range(running)]
    outcomes += [
        PodGroupOutcome(podgroup=f"ns/wait-{i}", phase="Pending", reason=reason) for i, reason in enumerate(waiting)
    ]
    return Decision(
        nominations=[Nomination(pod=f"ns/p{i}", node="n") for i in range(nominations)],
        podgroups=outcomes,
        solver=SolverStats(
            status=status,  # type: ignore[arg-type]
            objective=objective,
            bound=bound,
            seconds=0.2,
            skipped=list(skipped),
        ),
    )


def _samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the exposition, keyed by name and sorted labels: what Prometheus would scrape."""
    text = metrics.exposition().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(metrics: Metrics, name: str, **labels: str) -> float:
    return _samples(metrics)[(name, tuple(sorted(labels.items())))]


@pytest.mark.parametrize(
    ("objective", "bound", "gap"),
    [(100, 100, 0.0), (90, 100, 0.1), (0, 0, 0.0), (0, 50, 1.0), (101, 100, 0.0), (0, 0.5, 0.5), (10, 12, 1 / 6)],
)
def test_relative_gap(objective: float, bound: float, gap: float) -> None:
    assert relative_gap(objective, bound) == pytest.approx(gap)


def test_cycle_observation_moves_histogram_status_gap_and_nominations() -> None:
    metrics = Metrics()
    metrics.observe_cycle(_decision("OPTIMAL"), 0.3)
    metrics.observe_cycle(_decision("FEASIBLE", objective=75, bound=100, nominations=2), 12.0)
    assert _value(metrics, "vcsat_cycle_seconds_count") == 2
    assert _value(metrics, "vcsat_cycle_seconds_sum") == pytest.approx(12.3)
    assert _value(metrics, "vcsat_cycle_seconds_bucket", le="0.5") == 1
    assert _value(metrics, "vcsat_cycle_seconds_bucket", le="+Inf") == 2
    assert _value(metrics, "vcsat_solver_seconds_count") == 2
    assert _value(metrics, "vcsat_solver_status_total", status="OPTIMAL") == 1
    assert _value(metrics, "vcsat_solver_status_total", status="FEASIBLE") == 1
    assert _value(metrics, "vcsat_solver_relative_gap") == pytest.approx(0.25)
    assert _value(metrics, "vcsat_nominations") == 2
    assert _value(metrics, "vcsat_nominations_issued_total") == 2


@pytest.mark.parametrize(
    ("cycles", "expected"),
    [
        ([()], {}),
        ([("second_fill",)], {"second_fill": 1}),
        ([("search", "evictions"), ("evictions",), ()], {"search": 1, "evictions": 2}),
        # The trades a clock cut the exchange after count as one step, whatever N.
        ([("exchange_trades=3",), ("exchange_trades=7", "top_up")], {"exchange_trades": 2, "top_up": 1}),
    ],
)
def test_skipped_steps_are_counted_per_step(cycles: list[tuple[str, ...]], expected: dict[str, int]) -> None:
    metrics = Metrics()
    for skipped in cycles:
        metrics.observe_cycle(_decision(skipped=skipped), 0.5)
    counted = {
        dict(labels)["step"]: value
        for (name, labels), value in _samples(metrics).items()
        if name == "vcsat_solver_steps_skipped_total"
    }
    assert {step: value for step, value in counted.items() if value} == expected
    assert {*STEPS, "exchange_trades"} <= set(counted), "every step's series is there from the start"


def test_pending_podgroups_by_reason_follow_the_last_cycle() -> None:
    metrics = Metrics()
    metrics.observe_cycle(_decision(waiting=("Unschedulable", "Unschedulable", "QueueOverused"), running=4), 1)
    assert _value(metrics, "vcsat_pending_podgroups", reason="Unschedulable") == 2
    assert _value(metrics, "vcsat_pending_podgroups", reason="QueueOverused") == 1
    metrics.observe_cycle(_decision(waiting=("Fragmented", "")), 1)
    # Reasons gone from the last cycle read 0 rather than keeping their old count.
    assert _value(metrics, "vcsat_pending_podgroups", reason="Unschedulable") == 0
    assert _value(metrics, "vcsat_pending_podgroups", reason="QueueOverused") == 0
    assert _value(metrics, "vcsat_pending_podgroups", reason="Fragmented") == 1
    assert _value(metrics, "vcsat_pending_podgroups", reason="Unknown") == 1


def test_level_gaps_follow_the_last_cycle() -> None:
    metrics = Metrics()
    levels = [
        LevelBound(level="queue fair share, each queue's 1 highest priorities", value=90, bound=100),
        LevelBound(level="placed work at priority 1000", value=50, bound=50),
    ]
    first = _decision("FEASIBLE", objective=50, bound=50)
    metrics.observe_cycle(first.model_copy(update={"solver": first.solver.model_copy(update={"levels": levels})}), 1)
    assert _value(metrics, "vcsat_solver_level_gap", level=levels[0].level) == pytest.approx(0.1)
    assert _value(metrics, "vcsat_solver_level_gap", level=levels[1].level) == 0
    # A level gone from the last cycle (no work at that priority) reads 0.
    metrics.observe_cycle(_decision("OPTIMAL"), 1)
    assert _value(metrics, "vcsat_solver_level_gap", level=levels[0].level) == 0


def test_bound_and_eviction_counters_accumulate() -> None:
    metrics = Metrics()
    metrics.observe_bound(5)
    metrics.observe_bound(0)
    metrics.observe_bound(3)
    metrics.observe_evictions(2)
    metrics.observe_evictions(1, reason="reclaim")
    metrics.observe_evictions(4, reason="preempt")
    metrics.set_leader(True)
    assert _value(metrics, "vcsat_pods_bound_total") == 8
    assert _value(metrics, "vcsat_evictions_total", reason="preempt") == 6
    assert _value(metrics, "vcsat_evictions_total", reason="reclaim") == 1
    assert _value(metrics, "vcsat_leader") == 1


def test_two_instances_do_not_share_series() -> None:
    first, second = Metrics(), Metrics()
    first.observe_bound(7)
    assert _value(second, "vcsat_pods_bound_total") == 0


@pytest.fixture
def served() -> Iterator[tuple[Metrics, dict[str, bool]]]:
    """Metrics served on a free port, with probe answers the test can flip."""
    metrics = Metrics()
    answers = {"healthy": True, "ready": False}
    metrics.serve(0, healthy=lambda: answers["healthy"], ready=lambda: answers["ready"], host="127.0.0.1")
    yield metrics, answers
    metrics.shutdown()


def _get(metrics: Metrics, path: str) -> tuple[int, str, str]:
    url = f"http://127.0.0.1:{metrics.port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


def test_serve_on_port_zero_exposes_the_bound_port_and_scrapes(
    served: tuple[Metrics, dict[str, bool]],
) -> None:
    metrics, _ = served
    assert metrics.port is not None and metrics.port > 0
    metrics.observe_bound(4)
    metrics.observe_cycle(_decision("FALLBACK", objective=10, bound=40), 2.5)
    status, content_type, body = _get(metrics, "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain")
    families = {family.name: family for family in text_string_to_metric_families(body)}
    assert {"vcsat_cycle_seconds", "vcsat_solver_status", "vcsat_pods_bound"} <= set(families)
    assert "vcsat_pods_bound_total 4.0" in body
    assert 'vcsat_solver_status_total{status="FALLBACK"} 1.0' in body
    assert "vcsat_solver_relative_gap 0.75" in body


def test_probes_reflect_their_callbacks(served: tuple[Metrics, dict[str, bool]]) -> None:
    metrics, answers = served
    assert _get(metrics, "/healthz")[0] == 200
    assert _get(metrics, "/readyz")[0] == 503
    answers["healthy"], answers["ready"] = False, True
    assert _get(metrics, "/healthz")[0] == 503
    assert _get(metrics, "/readyz")[0] == 200
    assert _get(metrics, "/nothing-here")[0] == 404


def test_a_probe_that_raises_reads_as_failing() -> None:
    metrics = Metrics()

    def broken() -> bool:
        raise RuntimeError("cannot tell")

    metrics.serve(0, healthy=broken, ready=lambda: True, host="127.0.0.1")
    try:
        assert _get(metrics, "/healthz")[0] == 503
        assert _get(metrics, "/readyz")[0] == 200
    finally:
        metrics.shutdown()


def test_serving_twice_is_refused(served: tuple[Metrics, dict[str, bool]]) -> None:
    metrics, _ = served
    with pytest.raises(RuntimeError, match="already serving"):
        metrics.serve(0, healthy=lambda: True, ready=lambda: True)
