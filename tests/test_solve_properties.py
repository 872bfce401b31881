"""Properties of ``solve`` on random small clusters: valid, atomic gangs, and deterministic.

The validator (solver/validator/check.py) states every hard rule, gang atomicity among them; determinism is
stated here: the same snapshot and policy give the same decision, all but ``solver.seconds``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from test_volcano_scenarios import POLICIES, clusters

from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver import check, solve

INSTANCES = sorted((Path(__file__).parent.parent / "instances").glob("*.yaml"))


def without_timing(decision: Decision) -> str:
    data = decision.model_dump(mode="json")
    data["solver"].pop("seconds")
    return json.dumps(data, sort_keys=True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), POLICIES)
def test_random_clusters_give_valid_atomic_and_repeatable_decisions(snap: Snapshot, policy: Policy) -> None:
    first = solve(snap, policy)
    assert check(snap, first, policy) == []
    for outcome in first.podgroups:
        group = snap.podgroup_by_key.get(outcome.podgroup)
        placed = [
            b.pod for b in (*first.bindings, *first.nominations) if snap.pod_by_key[b.pod].group == outcome.podgroup
        ]
        if group is not None and placed:
            running = sum(1 for pod in snap.pods_of_group.get(group.key, ()) if pod.bound)
            assert running + len(placed) >= group.min_member  # whole, or nothing at all
    assert without_timing(solve(snap, policy)) == without_timing(first)


@pytest.mark.parametrize("instance", INSTANCES, ids=[path.stem for path in INSTANCES])
def test_vcsat_solve_prints_the_same_json_twice(instance: Path) -> None:
    def run() -> str:
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                "from vcsat.adapters.cli.app import main; main()",
                *("solve", str(instance), "-o", "json"),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        data = json.loads(out)
        data["solver"].pop("seconds")
        return json.dumps(data, sort_keys=True)

    assert run() == run()
