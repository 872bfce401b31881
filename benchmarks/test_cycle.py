"""Benchmarks of one whole scheduling cycle on large generated clusters.

The cycle is what ``vcsat solve`` does: read the dumped file, convert it to a snapshot, solve,
and check the decision with the independent validator. The solver's own quality figures
(status, objective, proven bound, gap, pods bound) and the peak RSS go into ``extra_info`` so a
saved benchmark run says how good the decision was, not only how fast.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bench_instances import FIVE_K, ONE_K, ONE_K_ANTI, ONE_K_CONTENDED, ONE_K_SPREAD, peak_rss_mib

from vcsat.adapters.convert.instance_file import read_snapshot
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver import check, solve

TARGET_GAP = 0.01
"""Issue "Core engine": a proven optimality gap of at most 1%: the search stops once it is there."""
POLICY_1K = Policy(time_limit_s=1.0, relative_gap=TARGET_GAP)
POLICY_5K = Policy(time_limit_s=5.0, relative_gap=TARGET_GAP)
CORE = {
    "proportion": False,
    "drf": False,
    "preempt": False,
    "reclaim": False,
    "enqueue": False,
    "topology": False,
}
"""Issue "Core engine"'s cycle: gangs, predicates, capacity, priority, packing; no fair sharing,
evictions, admission or topology (their issues measure the full cycle)."""
CORE_1K = Policy(time_limit_s=1.0, relative_gap=TARGET_GAP, **CORE)
CORE_5K = Policy(time_limit_s=5.0, relative_gap=TARGET_GAP, **CORE)


def one_cycle(path: Path, policy: Policy, cpu: list[float] | None = None) -> tuple[Snapshot, Decision, list[Any]]:
    """The cycle; ``cpu`` collects its CPU seconds (all threads), which a busy machine inflates far
    less than wall-clock time."""
    started = time.process_time()
    snapshot = read_snapshot(path)
    decision = solve(snapshot, policy)
    violations = check(snapshot, decision, policy)
    if cpu is not None:
        cpu.append(time.process_time() - started)
    return snapshot, decision, violations


@pytest.mark.parametrize(
    ("options", "policy", "rounds"),
    [
        pytest.param(ONE_K, CORE_1K, 3, id="1k-core"),
        pytest.param(FIVE_K, CORE_5K, 1, id="5k-core"),
        pytest.param(ONE_K, POLICY_1K, 3, id="1k-nodes"),
        pytest.param(ONE_K_CONTENDED, POLICY_1K, 3, id="1k-contended"),
        pytest.param(ONE_K_SPREAD, POLICY_1K, 3, id="1k-spread"),
        pytest.param(ONE_K_ANTI, POLICY_1K, 3, id="1k-anti-affinity"),
        pytest.param(FIVE_K, POLICY_5K, 1, id="5k-nodes"),
    ],
)
def test_cycle(
    benchmark: Any,
    instance_file: Callable[[GeneratorOptions], Path],
    options: GeneratorOptions,
    policy: Policy,
    rounds: int,
) -> None:
    path = instance_file(options)
    cpu: list[float] = []
    snapshot, decision, violations = benchmark.pedantic(
        one_cycle, args=(path, policy, cpu), rounds=rounds, iterations=1, warmup_rounds=0
    )
    stats = decision.solver
    pending = sum(1 for pod in snapshot.pods if pod.pending)
    benchmark.extra_info.update(
        {
            "instance_bytes": path.stat().st_size,
            "nodes": len(snapshot.nodes),
            "pods": len(snapshot.pods),
            "pending_pods": pending,
            "status": stats.status,
            "objective": stats.objective,
            "bound": stats.bound,
            "relative_gap": stats.gap,
            "solver_seconds": stats.seconds,
            "cpu_seconds_mean": round(sum(cpu) / len(cpu), 3),
            "pods_bound": len(decision.bindings),
            "pods_nominated": len(decision.nominations),
            "evictions": len(decision.evictions),
            "violations": len(violations),
            "peak_rss_mib": peak_rss_mib(),
        }
    )
    assert violations == []
    assert decision.bindings, "a half-idle cluster with thousands of pending pods binds something"


@pytest.mark.parametrize("options", [pytest.param(ONE_K, id="1k-nodes"), pytest.param(FIVE_K, id="5k-nodes")])
def test_generate(benchmark: Any, options: GeneratorOptions) -> None:
    instance = benchmark.pedantic(generate_instance, args=(options,), rounds=3, iterations=1)
    benchmark.extra_info["objects"] = len(instance["items"])
