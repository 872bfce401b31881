"""Benchmarks of the search itself: the gap on differently shaped clusters, the workers, the wall limit.

- ``test_shape_gap``: one cycle on each cluster shape of :mod:`shapes` at 1,000 nodes; the
  solver's status, objective, bound and gap go into ``extra_info``. Run without wall limits
  (``solve(..., wall=False)``) so that the numbers say what the deterministic budget of the time
  limit buys, whatever else the machine is running; the cycle's wall time is recorded too.
- ``test_workers``: the 1,000-node default cluster with 1, 2 and 8 CP-SAT workers.
- ``test_wall_limit``: ``vcsat solve --time-limit S`` as a user runs it (a process of its own, the
  file read inside the limit) on a large instance; its wall time against the limit is recorded,
  not asserted: speed targets live in benchmarks/RESULTS.md, never in assertions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bench_instances import CACHE_DIR, FIVE_K, ONE_K
from shapes import SHAPES

from vcsat.adapters.convert.instance_file import read_snapshot
from vcsat.adapters.generate.generator import GeneratorOptions
from vcsat.model import Policy
from vcsat.solver import check, solve

CLI = (sys.executable, "-c", "from vcsat.adapters.cli.app import main; main()")
"""``vcsat`` from this tree (``PYTHONPATH``), as a process of its own."""
GAP_POLICY = Policy(time_limit_s=10.0, relative_gap=0.01, num_workers=1)
"""The deterministic budget of a 10 s cycle, one worker (reproducible), the 1% target gap."""


def shape_file(name: str, seed: int = 0) -> Path:
    """The 1,000-node instance of a shape, written once under the benchmark cache."""
    path = CACHE_DIR / f"shape-{name}-s{seed}.json"
    if not path.exists():
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.stem}.{os.getpid()}.partial.json")
        partial.write_text(json.dumps(SHAPES[name].instance(seed=seed), separators=(",", ":")), encoding="utf-8")
        partial.replace(path)
    return path


def _cycle(path: Path, policy: Policy, *, wall: bool) -> dict[str, Any]:
    started = time.monotonic()
    snapshot = read_snapshot(path)
    decision = solve(snapshot, policy, started=started, wall=wall)
    seconds = time.monotonic() - started
    violations = check(snapshot, decision, policy)
    stats = decision.solver
    return {
        "status": stats.status,
        "objective": stats.objective,
        "bound": stats.bound,
        "relative_gap": stats.gap,
        "cycle_seconds": round(seconds, 3),
        "workers": stats.workers,
        "deterministic_budget": stats.deterministic_budget,
        "deterministic_time": stats.deterministic_time,
        "wall_stopped": stats.wall_stopped,
        "pods_bound": len(decision.bindings),
        "violations": len(violations),
    }


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape_gap(benchmark: Any, name: str) -> None:
    path = shape_file(name)
    result = benchmark.pedantic(_cycle, args=(path, GAP_POLICY), kwargs={"wall": False}, rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    assert result["violations"] == 0


@pytest.mark.parametrize("workers", [1, 2, 8])
def test_workers(benchmark: Any, instance_file: Callable[[GeneratorOptions], Path], workers: int) -> None:
    policy = Policy(time_limit_s=10.0, relative_gap=0.01, num_workers=workers)
    result = benchmark.pedantic(
        _cycle, args=(instance_file(ONE_K), policy), kwargs={"wall": False}, rounds=1, iterations=1
    )
    benchmark.extra_info.update(result)
    assert result["violations"] == 0


@pytest.mark.parametrize("limit", [1.0, 3.0])
def test_wall_limit(benchmark: Any, instance_file: Callable[[GeneratorOptions], Path], limit: float) -> None:
    path = instance_file(FIVE_K)

    def run() -> dict[str, Any]:
        started = time.monotonic()
        done = subprocess.run(
            [*CLI, "solve", str(path), "-o", "json", "--time-limit", str(limit)],
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.monotonic() - started
        stats = json.loads(done.stdout)["solver"] if done.returncode == 0 else {}
        return {"process_seconds": round(seconds, 3), "limit": limit, "exit": done.returncode, **stats}

    result = benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(result)
    assert result["exit"] == 0
