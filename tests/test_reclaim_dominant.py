"""Reclaim judges a queue's share on the resource the fairness levels judge it on.

Found by Hypothesis (tests/test_volcano_scenarios.py): a queue that deserves the same part of the
cluster's cpu and memory, running above its cpu share and given all the memory it asks for, was
called "below its share" by reclaim (on memory, the tie broken by name) while the allocate
objective measured it on cpu; reclaim then evicted another queue's pod for it, and left the one
queue that was really below its share waiting. Volcano would call that queue overused on cpu and
let it reclaim nothing.
"""

from __future__ import annotations

import pytest
from builders import gangs, node, queue, snapshot

from vcsat.model import Policy, Snapshot
from vcsat.solver import check, solve
from vcsat.solver.objectives.fairness import fair_resources
from vcsat.solver.preemption.preempt import dominant
from vcsat.solver.problem import build_problem

POLICY = Policy(time_limit_s=2, enqueue=False)


def tied_cluster(starving_pods: int) -> Snapshot:
    """Two nodes (8 and 4 cpu, 16Gi each); q0 (weight 1) runs 4 cpu and waits for 6 more pods of
    1 cpu, 1Gi; q1 (weight 2) runs 8 cpu on the full n0; q2 (weight 1) waits with
    ``starving_pods`` pods. Deserved: q0 3 cpu and all 8Gi it asks for (a quarter of either),
    q1 6 cpu, q2 3 cpu."""
    nodes = [node("n0", cpu="8", memory="16Gi"), node("n1", cpu="4", memory="16Gi")]
    pods, groups = [], []
    for prefix, count, kwargs in [
        ("run-q0", 1, {"queue": "q0", "size": 2, "min_member": 1, "node": "n1", "cpu": "2"}),
        ("run-q1", 2, {"queue": "q1", "size": 2, "min_member": 1, "node": "n0", "cpu": "2", "created": 2}),
        ("job-q0", 3, {"queue": "q0", "size": 2, "min_member": 1, "created": 100}),
        ("job-q2", 1, {"queue": "q2", "size": starving_pods, "min_member": 1, "created": 100}),
    ]:
        p, g = gangs(prefix, count, memory="1Gi", priority=1, **kwargs)
        pods += p
        groups += g
    queues = [queue("q0"), queue("q1", weight=2), queue("q2")]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


@pytest.mark.parametrize("starving_pods", [1, 2, 3])
def test_reclaim_and_fairness_judge_each_queue_on_one_resource(starving_pods: int) -> None:
    problem = build_problem(tied_cluster(starving_pods), POLICY)
    for name in ("q0", "q1", "q2"):
        assert [dominant(problem, name)] == fair_resources(problem, name)


@pytest.mark.parametrize(
    ("starving_pods", "reclaims"),
    [
        # q2 deserves 3 cpu and holds none; q1 runs 2 cpu (one pod) above its deserved 6.
        (3, True),
        # q2 asks 1 or 2 cpu, so q0 and q1 deserve more: one 2-cpu pod of q1 would take q1 below
        # its share, and q0, above its own on cpu, takes nothing whatever its memory share says.
        (2, False),
        (1, False),
    ],
)
def test_only_a_queue_below_its_share_reclaims(starving_pods: int, reclaims: bool) -> None:
    snap = tied_cluster(starving_pods)
    decision = solve(snap, POLICY)
    assert check(snap, decision, POLICY) == []
    group_of = {p.key: p.group for p in snap.pods}
    assert {group_of[n.pod] for n in decision.nominations} == ({"ns/job-q2-0"} if reclaims else set())
    assert [e.reason for e in decision.evictions] == (["reclaim"] if reclaims else [])
