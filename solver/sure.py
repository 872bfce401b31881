"""Sure placements: the greedy warm start's decision when no search could place more work.

A cycle on a large backlog spends most of its time in the CP-SAT search, and until it ends
nothing is bound: with thousands of pods waiting, the first binding would come a whole search
after the first pod could have started. Yet when the greedy already places every pending pod of
every gang that may be placed (every candidate's every class, elastic members included), the
search cannot change *which* pods run: the queue fair-share and placed-work levels, which rank
above everything else, are functions of the counts placed, and no decision places more than all.
Any decision that keeps those levels places the same counts, so the DRF levels are the same too.
What the search could still improve is only *where* the pods go (packing, topology, preferences).

:func:`sure_decision` returns that decision (a whole one: an outcome for every PodGroup, as the
contract asks) so the live scheduler can bind it at once and leave the rest of the backlog, if any, to a
full cycle right after. It declines (``None``) when the greedy leaves any candidate pod out, or
when a gang waits for room that evictions could free (the preempt and reclaim phases run only in a
full cycle, which must see those gangs before the room is handed out). Whole gangs only: the
greedy places gangs all or nothing, and the decision is the one :func:`vcsat.solver.solve` would
fall back to (``FALLBACK``), so every hard rule holds by the same construction.

:class:`Prepared` carries the problem and the greedy's assignment to the full solve of the same
snapshot, so a declined sure decision costs no second aggregation or greedy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from vcsat.model import Decision, Policy, Snapshot, SolverStats
from vcsat.solver.assignment import Assignment
from vcsat.solver.explain import outcomes
from vcsat.solver.greedy import greedy
from vcsat.solver.objectives.placement import placed_work
from vcsat.solver.placement.decode import bindings
from vcsat.solver.podgroup_entries import per_podgroup
from vcsat.solver.preemption.antiaffinity import evictions_may_cure, modelled_gangs
from vcsat.solver.problem import Problem, build_problem


@dataclass(frozen=True)
class Prepared:
    """One snapshot's aggregated problem and greedy assignment, for the policy they were built with."""

    snapshot: Snapshot
    policy: Policy
    problem: Problem
    hint: Assignment
    greedy_cpu: float | None = None
    """The greedy's CPU seconds, from which the full solve's wall plan predicts its later fills
    as it does from a greedy it runs itself (None: not measured, each fill is then predicted from
    the node count, a far larger figure that skips the fills of a short cycle)."""


def prepare(snapshot: Snapshot, policy: Policy) -> Prepared:
    """Aggregate the snapshot and run the greedy warm start, its CPU seconds measured."""
    problem = build_problem(snapshot, policy)
    greedy_started = time.process_time()
    hint = greedy(problem)
    return Prepared(snapshot, policy, problem, hint, time.process_time() - greedy_started)


def places_everything(problem: Problem, assignment: Assignment) -> bool:
    """Whether the assignment places every pending pod of every candidate gang, and no other gang
    waits for room that evictions could free."""
    for gang in problem.candidates:
        if gang.index not in assignment.placed:
            return False
        for c in gang.classes:
            if assignment.count.get(c, 0) != len(problem.classes[c].pods):
                return False
    if problem.policy.preempt or problem.policy.reclaim:
        left = [problem.gangs[index] for index in problem.blocked if index not in assignment.placed]
        modelled = modelled_gangs(problem, left)
        if any(evictions_may_cure(problem, gang, modelled) for gang in left):
            return False
    return True


def sure_decision(prepared: Prepared, *, started: float | None = None) -> Decision | None:
    """The greedy's decision when it is sure (module docstring), else None.

    No evictions or nominations: those are for the full cycle to decide. ``started``: when the
    cycle began (``time.monotonic()``), for ``solver.seconds``.
    """
    problem, hint = prepared.problem, prepared.hint
    if not hint.placed or not places_everything(problem, hint):
        return None
    placed = bindings(problem, hint, hint.shape_slots)
    objective = sum(placed_work(problem, hint, rank) for rank in {g.rank for g in problem.candidates})
    stats = SolverStats(
        status="FALLBACK",
        objective=float(objective),
        bound=float(objective),
        seconds=round(time.monotonic() - started, 3) if started is not None else 0.0,
    )
    podgroups = outcomes(problem, hint)
    if not prepared.policy.gang:
        podgroups = per_podgroup(problem.snapshot, podgroups)
    return Decision(
        bindings=placed,
        podgroups=podgroups,
        solver=stats,
    )
