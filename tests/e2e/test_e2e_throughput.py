"""The throughput harness (benchmarks/kwok_throughput.py) at a small size: every scheduler binds
every pod once, vcsat no gang partly, and the report holds together. Correctness only: the timings
of this size say nothing (benchmarks/test_kwok_throughput.py measures, marker ``long``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from kwok_throughput import compare, pod_names, table, workload
from kwokcluster import KwokCluster

NODES = 10
PODS = 48
RUNS = (("binder", "live"), ("kube-scheduler", "live"), ("vcsat", "live"), ("vcsat", "waiting"))
"""kube-scheduler's start is left out here: one process start less."""


def test_every_scheduler_binds_the_small_workload_once_and_whole(kwok_cluster: KwokCluster) -> None:
    units = workload(PODS)
    assert len(pod_names(units)) == PODS and any(u.size == 8 for u in units) and any(u.gpu for u in units)
    results = compare(kwok_cluster, nodes=NODES, pods=PODS, runs=RUNS, timeout_s=120)
    assert tuple((r.scheduler, r.scenario) for r in results) == RUNS
    for result in results:
        assert result.pods == PODS and result.rebound == 0 and result.partial_gangs == 0
        assert 0 <= result.first_binding_s <= result.seconds
        if result.scheduler == "vcsat":
            assert result.cycles["early"] + result.cycles["full"] >= 1
        if result.scenario == "live":
            assert result.latency_p50_s is not None and result.latency_p99_s is not None
            assert 0 <= result.latency_p50_s <= result.latency_p99_s
    rendered = table(results)
    assert rendered.count("\n") == len(results) + 1
    print(f"\n{rendered}")
