"""vcsat against kube-scheduler and the API server's ceiling on a KWOK cluster (benchmarks/kwok_throughput.py).

The issue's sizes, behind the marker ``long`` (the default ``python3 -m pytest`` deselects it;
tests/e2e/test_e2e_throughput.py runs the same harness small in CI). Each size starts its own
cluster (the runs' pods stay: there is room for all of them) and prints a Markdown table
(benchmarks/RESULTS.md keeps it) and one JSON line per run. Run alone on an idle machine, one
size at a time:

    PYTHONPATH=$PWD python3 -m pytest benchmarks/test_kwok_throughput.py -m long -k 1k -s -p no:randomly
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "k8s"))

from kwok_throughput import Result, compare, table
from kwokcluster import start_kwok_cluster


def _print(result: Result) -> None:
    print(json.dumps({**dataclasses.asdict(result), "pods_per_second": round(result.pods_per_second, 1)}), flush=True)


@pytest.mark.long
@pytest.mark.k8s
@pytest.mark.parametrize(
    ("nodes", "pods"),
    [pytest.param(1000, 10_000, id="1k-nodes-10k-pods"), pytest.param(5000, 50_000, id="5k-nodes-50k-pods")],
)
def test_kwok_throughput(nodes: int, pods: int) -> None:
    with start_kwok_cluster(node_lifecycle=False) as cluster:
        results = compare(cluster, nodes=nodes, pods=pods, report=_print, delete_between=False)
    print(f"\n{nodes} nodes, {pods} pods\n{table(results)}")
    for result in results:
        assert result.rebound == 0 and result.partial_gangs == 0
