"""Which side of a reported gap is short: the decision's fair shares, its placed work, or the bound.

The reported gap compares a decision's placed work with a bound that holds the queues' fair-share
levels (which rank above placed work) at the decision's own values (docs/design.md, "What the bound
holds fixed"). A gap over the policy's tolerance can then come from three places, and each asks for
a different fix:

- **fair shares**: the decision's fair-share levels are below what the cluster allows. The decision
  ranks lower than the best one at its first differing level, and the bound on placed work *at its
  own shares* is higher than at the best shares (a share given up frees room for other work), so
  the gap looks large even where placed work matches the best decision's;
- **placed work**: at its own fair shares the decision places less than it could;
- **bound**: the LP bound is above what any decision with those shares can place.

Two long searches of the exact model (no wall clock, no tolerance) tell them apart: one with
nothing held (its fair levels are the best it finds), and one with each fair-share level held at
least at the decision's value (its placed work, when proven, is the most that can be placed with
shares no lower than the decision's: what the bound bounds). The held search starts from the
decision itself (its warm start is the decision, not the greedy's): where it ends at the
decision's fair levels it places as much or more at each priority, so a level where it ends short
of its bound within its time is the search's time, never a start further from the bound than the
decision; where it raises a fair level, it may place less at a priority (the higher level ranks
first), and its bound is then one at its own levels, not the decision's. Holding the levels
is done from here: the search's stages are split so that each fair-share level is a stage of its own (held on its
own, not as one weighted sum in which a higher tier may pay for a lower one), and its "does the
warm start already meet this stage" question is answered yes, at the decision's value, for each;
the solver itself has no such option.

    python benchmarks/gap_sides.py FILE... [--time-limit 1] [--search-limit 60] [--json]

Run as a script, the decision is the one the cycle makes at ``--time-limit`` with its deadline
read off this process's CPU time (as ``phases.py --cpu-clock``), so the load of a shared box does
not change it; the long searches have no wall clock.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

if __name__ == "__main__":
    # The decision judged is the cycle's with its deadline read off this process's CPU time: the
    # solver's clocks take time.monotonic when they are imported, so it is replaced before that.
    time.monotonic = time.process_time

from vcsat.adapters.convert import instance_file
from vcsat.model import Decision, Policy
from vcsat.solver.assignment import Assignment
from vcsat.solver.objectives.fairness import fair_share_values
from vcsat.solver.problem import Problem, build_problem
from vcsat.solver.search.bound import lp_level_bounds
from vcsat.solver.search.levels import Level, Stage
from vcsat.solver.sure import Prepared

# The module, not its function: ``vcsat.solver.solve`` the name is the function in the package.
solve_module = importlib.import_module("vcsat.solver.solve")
exact_module = importlib.import_module("vcsat.solver.search.exact")


def decided_assignment(problem: Problem, decision: Decision) -> Assignment:
    """``decision``'s bindings as the counts and per-node slots a search is warm-started from:
    per pod class, shape and node, and per gang, as the greedy's own assignments hold them (the
    counts alone are what its fair-share levels and placed work are measured by)."""
    where = {
        pod.key: (gang.index, c) for gang in problem.candidates for c in gang.classes for pod in problem.classes[c].pods
    }
    node_of = {node.name: n for n, node in enumerate(problem.nodes)}
    out = Assignment()
    for binding in decision.bindings:
        found = where.get(binding.pod)
        if found is None:
            continue
        gang, c = found
        shape, node = problem.classes[c].shape, node_of[binding.node]
        out.placed.add(gang)
        out.count[c] = out.count.get(c, 0) + 1
        out.shape_slots[shape, node] = out.shape_slots.get((shape, node), 0) + 1
        out.gang_slots[gang, shape, node] = out.gang_slots.get((gang, shape, node), 0) + 1
    return out


def levels(problem: Problem, decision: Decision) -> dict[str, Any]:
    assignment = decided_assignment(problem, decision)
    placed = solve_module._placed(problem, assignment)
    return {
        "status": decision.solver.status,
        "objective": round(decision.solver.objective),
        "bound": round(decision.solver.bound),
        "fair": fair_share_values(problem, assignment),
        "placed": {rank: placed[rank] for rank in sorted(placed, reverse=True)},
        "assignment": assignment,
    }


def _fair(level: Level) -> bool:
    return level.name.startswith("queue fair share")


@contextmanager
def fair_held_at(assignment: Assignment) -> Iterator[None]:
    """Every exact search in the block keeps each fair-share level at least at ``assignment``'s
    value, each on its own, and searches the levels below them only."""
    meets, plan_stages = exact_module._meets, exact_module.plan_stages

    def held(problem: Problem, stage: Stage, hint: Assignment, targets: dict[str, int], gap: float) -> Any:
        if all(_fair(level) for level in stage.levels):
            return True, stage.value(problem, assignment)
        return meets(problem, stage, hint, targets, gap)

    def split(levels: list[Level]) -> list[Stage]:
        out: list[Stage] = []
        for stage in plan_stages(levels):
            if all(_fair(level) for level in stage.levels):
                out.extend(Stage(levels=(level,), weights=(1,)) for level in stage.levels)
            else:
                out.append(stage)
        return out

    exact_module._meets, exact_module.plan_stages = held, split
    try:
        yield
    finally:
        exact_module._meets, exact_module.plan_stages = meets, plan_stages


def sides(path: Path, time_limit: float, search_limit: float) -> dict[str, Any]:
    policy = Policy(time_limit_s=time_limit)
    # The cycle as `vcsat solve` runs it: its clock starts before the file is read, and nothing of
    # the snapshot is made before it (the problem below is built after, for measuring only).
    started = time.monotonic()
    snapshot = instance_file.read_snapshot(path)
    made = solve_module.solve(snapshot, policy, started=started)
    problem = build_problem(snapshot, policy)
    decision = levels(problem, made)
    long_policy = Policy(time_limit_s=search_limit, relative_gap=0)
    free = levels(problem, solve_module.solve(snapshot, long_policy, wall=False))
    # The held search starts from the decision (its problem built for the long policy, as the
    # solve would build it): from the greedy it may end short of the decision within its time.
    long_problem = build_problem(snapshot, long_policy)
    start = Prepared(snapshot, long_policy, long_problem, decided_assignment(long_problem, made))
    with fair_held_at(decision["assignment"]):
        held = levels(problem, solve_module.solve(snapshot, long_policy, wall=False, prepared=start))
    # Each placed-work level's LP bound at the decision's own values (what its gap is made of).
    placed = {rank: decision["placed"][rank] for rank in decision["placed"]}
    decision["levels"] = lp_level_bounds(problem, placed, decision["fair"])
    for run in (decision, free, held):
        del run["assignment"]
    return {"decision": decision, "free": free, "held": held, "verdict": verdict(decision, free, held)}


def verdict(decision: dict[str, Any], free: dict[str, Any], held: dict[str, Any]) -> str:
    """Which side the gap is on, as far as the two searches show it. Placed work is ranked by
    priority, highest first, as the fair-share levels above it are: the first priority at which
    the held search differs from the decision says whose the gap is."""
    if decision["bound"] <= decision["objective"]:
        return "none"
    parts = []
    fair_below = [tier for tier in decision["fair"] if free["fair"].get(tier, 0) > decision["fair"][tier]]
    if fair_below:
        parts.append(f"fair shares below the best found at tiers {fair_below}")
    for rank, value in decision["placed"].items():
        placeable = held["placed"].get(rank, 0)
        if placeable == value:
            continue
        if placeable > value:
            level_gap = max(decision["levels"].get(rank, value) - value, placeable - value)
            parts.append(
                f"placed work: at priority {rank} the decision's shares allow {placeable - value:,} more "
                f"({(placeable - value) / level_gap:.0%} of that level's reported gap)"
            )
        else:
            parts.append(f"unresolved: the held search places less at priority {rank}")
        break
    else:
        proven = held["bound"] <= held["objective"]
        parts.append("bound: the LP bound is above the proven optimum" if proven else "unresolved")
    return "; ".join(parts)


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--time-limit", default=1.0, show_default=True, help="The cycle's limit for the decision judged.")
@click.option("--search-limit", default=60.0, show_default=True, help="Each long search's limit (seconds).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file.")
def main(files: tuple[Path, ...], time_limit: float, search_limit: float, as_json: bool) -> None:
    for path in files:
        out = sides(path, time_limit, search_limit)
        if as_json:
            print(json.dumps({"file": path.name, **out}, default=str), flush=True)
            continue
        print(path.name, flush=True)
        for name in ("decision", "free", "held"):
            run = out[name]
            gap = (run["bound"] - run["objective"]) / max(run["bound"], 1)
            print(
                f"  {name:8s} {run['status']:10s} objective {run['objective']:>9,} bound {run['bound']:>9,} "
                f"gap {gap:.3%}  fair {list(run['fair'].values())}  placed {list(run['placed'].values())}"
            )
        print(f"  LP bounds per priority at the decision's values: {list(out['decision']['levels'].values())}")
        print(f"  verdict: {out['verdict']}", flush=True)


if __name__ == "__main__":
    main()
