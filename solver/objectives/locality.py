"""Locality: a multi-node gang runs at the speed of its slowest link, so span as little as possible.

One level per HyperNode tier, the coarsest first: fewest (gang, domain) uses at that tier. Crossing
a spine costs more than any number of rack crossings below it, which is how the tiers' bandwidths
(NVLink inside a node ≫ the rack's leaf ≫ the spine) order them. Ranked below placed work and
fairness, above packing (design.md). A domain its PodGroup's running pods are in is spanned
already (``Problem.running_domains``): new pods there cost nothing, so they join the running ones
(Volcano's score prefers a job's allocated HyperNode the same way).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from vcsat.solver.assignment import Assignment
from vcsat.solver.constraints.topology import ELSEWHERE, TopologyVars
from vcsat.solver.problem import Problem
from vcsat.solver.search.levels import Level, make_level
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


def locality_levels(problem: Problem, v: Variables, topo: TopologyVars) -> list[Level]:
    if problem.domains is None or not topo.uses:
        return []
    levels: list[Level] = []
    running = problem.running_domains
    for tier in reversed(problem.domains.tiers):
        terms: list[tuple[cp_model.IntVar, int]] = [
            (use, -2 if name == ELSEWHERE else -1)
            for (g, t, name), use in sorted(topo.uses.items())
            if t == tier and name not in running.get(g, {}).get(tier, ())
        ]
        levels.append(
            make_level(
                f"tier-{tier} domains spanned by gangs",
                terms,
                upper_of=v.upper,
                measure=partial(domains_spanned, tier=tier),
            )
        )
    return levels


def domains_spanned(problem: Problem, assignment: Assignment, tier: int) -> int:
    """Minus the (gang, tier-``tier`` domain) pairs the assignment's topology gangs use."""
    domains = problem.domains
    if domains is None:
        return 0
    used = {
        (g, domains.of_node[node][tier])
        for (g, _shape, node), k in assignment.gang_slots.items()
        if k > 0 and g in problem.topology_gangs and g in assignment.placed
    }
    running = problem.running_domains
    return -sum(1 for g, name in used if name not in running.get(g, {}).get(tier, ()))
