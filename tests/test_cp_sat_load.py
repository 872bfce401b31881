"""CP-SAT's Python module is loaded only by a cycle that builds a model, off the cycle's clock.

- Each case in a fresh interpreter (``sys.modules`` is the process's): importing ``vcsat.solver``
  and solving a cycle that builds no CP-SAT model (search off, or the greedy decision within the
  policy's gap, and no eviction phase, or one skipped for time) leaves
  ``ortools.sat.python.cp_model`` and pandas unloaded; a cycle whose search or eviction phase runs
  loads them. Where it is not loaded, the decision is the same as in a process that loaded the
  module first (its digest); the validator accepts it.
- :meth:`WallPlan.set_aside` on an injected clock (a table): the deadline moves by the wall seconds
  set aside, the pace (:meth:`WallPlan.slowdown`) is measured without them, and a step refused
  before is allowed once the time it lost is set aside.
- :func:`vcsat.solver.search.cp_sat.load` loads the module once: the second call reports nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from test_deadline import FakeClock

from vcsat.solver.deadline import SEARCH, WallPlan

SCRIPT = textwrap.dedent(
    """
    import hashlib, json, sys
    preload, source, options = sys.argv[1] == "1", sys.argv[2], json.loads(sys.argv[3])
    if preload:
        import ortools.sat.python.cp_model
    from vcsat.model import Policy
    from vcsat.solver import check, solve
    if source.startswith("generate:"):
        from vcsat.adapters.convert.snapshot import snapshot_from_objects
        from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
        nodes, jobs, seed = (int(part) for part in source.split(":")[1:])
        objects = generate_instance(GeneratorOptions(nodes=nodes, pending_jobs=jobs, seed=seed))
        snapshot = snapshot_from_objects(objects["items"])
    else:
        from vcsat.adapters.convert.instance_file import read_snapshot
        snapshot = read_snapshot(source)
    wall = bool(options.pop("_wall", False))
    policy = Policy(**options)
    decision = solve(snapshot, policy, wall=wall)
    dumped = decision.model_dump(mode="json")
    dumped["solver"].pop("seconds")
    print(json.dumps({
        "cp_sat": "ortools.sat.python.cp_model" in sys.modules,
        "pandas": "pandas" in sys.modules,
        "status": decision.solver.status,
        "digest": hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest(),
        "violations": len(check(snapshot, decision, policy)),
    }))
    """
)

INSTANCES = os.path.join(os.path.dirname(__file__), "..", "instances")


def run(source: str, options: dict[str, object], *, preload: bool) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, "1" if preload else "0", source, json.dumps(options)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


NO_EVICTIONS = {"preempt": False, "reclaim": False}


@pytest.mark.parametrize(
    ("source", "options", "loaded", "status"),
    [
        # The greedy decision within the gap (short of its bound): no search; no eviction phase.
        ("generate:30:60:0", NO_EVICTIONS, False, "WITHIN_GAP"),
        # The same clusters with the eviction phase on: its models are CP-SAT's.
        ("generate:30:60:0", {}, True, "WITHIN_GAP"),
        # ... unless the wall clock leaves no time for the phase: skipped, so nothing is loaded.
        ("generate:30:60:0", {"time_limit_s": 0.001, "_wall": True}, False, None),
        # The search off: nothing but the greedy.
        (os.path.join(INSTANCES, "gang.yaml"), {"search": False, **NO_EVICTIONS}, False, None),
        # The greedy at its bound is searched (and proven optimal).
        (os.path.join(INSTANCES, "gang.yaml"), {}, True, "OPTIMAL"),
    ],
)
def test_cp_sat_loaded_only_for_a_model(
    source: str, options: dict[str, object], loaded: bool, status: str | None
) -> None:
    lazy = run(source, options, preload=False)
    assert lazy["cp_sat"] is loaded
    assert lazy["pandas"] is loaded  # cp_model imports pandas; nothing else in the cycle does
    if status is not None:
        assert lazy["status"] == status
    assert lazy["violations"] == 0
    if not loaded:
        eager = run(source, options, preload=True)
        assert eager["cp_sat"] is True
        assert eager["digest"] == lazy["digest"]  # loading the module first decides the same


@pytest.mark.parametrize(
    ("set_wall", "set_cpu", "wall_after", "cpu_after", "slowdown"),
    [
        (0.0, 0.0, 2.0, 2.0, 1.0),  # nothing set aside: as before
        (3.0, 0.5, 2.0, 1.0, 2.0),  # the import's 3 s wall / 0.5 s CPU left out of the pace
        (1.0, 1.0, 4.0, 1.0, 4.0),
    ],
)
def test_set_aside_moves_the_deadline_and_leaves_the_pace(
    set_wall: float, set_cpu: float, wall_after: float, cpu_after: float, slowdown: float
) -> None:
    clock = FakeClock()
    plan = WallPlan(clock.wall + 10.0, 1000, now=clock.now, cpu=clock.cpu)
    clock.wall += set_wall
    clock.cpu_seconds += set_cpu
    plan.set_aside(set_wall, set_cpu)
    assert plan.deadline == pytest.approx(clock.wall - set_wall + 10.0 + set_wall)
    clock.wall += wall_after
    clock.cpu_seconds += cpu_after
    assert plan.slowdown() == pytest.approx(slowdown)
    left = plan.left()
    assert left == pytest.approx(10.0 - wall_after - plan.reserve)


def test_set_aside_gives_back_a_step_the_import_cost() -> None:
    clock = FakeClock()
    lost = WallPlan(clock.wall + 10.0, 1000, now=clock.now, cpu=clock.cpu)
    kept = WallPlan(clock.wall + 10.0, 1000, now=clock.now, cpu=clock.cpu)
    clock.wall += 3.0  # an import took 3 s of wall and 1 s of CPU
    clock.cpu_seconds += 1.0
    kept.set_aside(3.0, 1.0)
    assert not lost.allows(SEARCH, 6.0)  # 3 s slower than CPU, 7 s left: 18 s predicted
    assert kept.allows(SEARCH, 6.0)  # as if the module had been loaded before the cycle
    assert WallPlan(None, 10).set_aside(1.0, 1.0) is None  # no deadline: nothing to move


def test_load_once() -> None:
    code = (
        "from vcsat.solver.search import cp_sat; first = cp_sat.load(); second = cp_sat.load(); "
        "print(first[0] > 0, first[1] > 0, second == (0.0, 0.0))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]
