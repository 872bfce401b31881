"""Candidate nodes for isolated classes, and the honesty of a search restricted to them.

A restricted model keeps each isolated class's slots on a few candidate nodes (the hint's among
them); its decisions must still keep every rule, and the bound the cycle reports must still bound
the full problem: so each case is solved twice, restricted (the full model made too large for the
budget) and in full, and the two are compared.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from builders import gangs, node, snapshot, spread
from test_interpod import rules, term

from vcsat.model import Decision, Node, Pod, PodGroup, Policy, Snapshot
from vcsat.solver import check, solve
from vcsat.solver.greedy import greedy
from vcsat.solver.problem import build_problem
from vcsat.solver.rules.candidates import restrict_isolated
from vcsat.solver.search import exact as exact_module
from vcsat.solver.search.exact import FIRST_STAGE_SHARE, solve_exact
from vcsat.solver.solve import OVERHEAD_PER_NODE, SEARCH_SHARE

HOST = "kubernetes.io/hostname"
POLICY = Policy(enqueue=False, preempt=False, reclaim=False, time_limit_s=2)
WEB = {"app": "web"}


def cluster(count: int = 30) -> list[Node]:
    """Nodes of three sizes in three zones, every size in every zone."""
    return [
        node(f"n{i}", cpu=("4", "8", "16")[i % 3], labels={HOST: f"n{i}", "zone": "abc"[(i // 3) % 3]})
        for i in range(count)
    ]


def filler(count: int = 10) -> tuple[list[Pod], list[PodGroup]]:
    return gangs("fill", count, cpu="6")


def anti_affinity() -> Snapshot:
    pods, groups = filler()
    for j in range(4):
        more, more_groups = gangs(f"anti{j}", size=2, cpu="3", labels={"job": f"a{j}"})
        pods += [p.model_copy(update={"pod_anti_affinity": rules(term(HOST, {"job": f"a{j}"}))}) for p in more]
        groups += more_groups
    return snapshot(nodes=cluster(), pods=pods, groups=groups)


def zone_spread() -> Snapshot:
    pods, groups = filler()
    more, more_groups = gangs("web", 3, size=3, cpu="2", labels=WEB, spread=[spread("zone", 1, WEB)])
    return snapshot(nodes=cluster(60), pods=pods + more, groups=groups + more_groups)


def hostname_spread() -> Snapshot:
    pods, groups = filler()
    labels = {"app": "hs"}
    more, more_groups = gangs("hs", 2, size=3, cpu="2", labels=labels, spread=[spread(HOST, 1, labels)])
    return snapshot(nodes=cluster(), pods=pods + more, groups=groups + more_groups)


CASES = [
    pytest.param(anti_affinity, id="anti-affinity-on-hostname"),
    pytest.param(zone_spread, id="spread-over-zones"),
    pytest.param(hostname_spread, id="spread-over-hostnames"),
]


@pytest.mark.parametrize("make", CASES)
def test_candidates_cut_isolated_buckets_only_and_keep_the_hint(make: Callable[[], Snapshot]) -> None:
    problem = build_problem(make(), POLICY)
    hint = greedy(problem)
    buckets = list(problem.buckets)
    restricted, cut = restrict_isolated(problem, buckets, hint)
    assert cut
    assert len(restricted) == len(buckets)
    for before, after in zip(buckets, restricted, strict=True):
        isolated = before.exact and problem.shapes[before.shapes[0]].isolated is not None
        if not isolated:
            assert after is before
            continue
        assert set(after.nodes) <= set(before.nodes)
        assert after.upper == {n: before.upper[n] for n in after.nodes}
        hinted = {n for (s, n), k in hint.shape_slots.items() if s == before.shapes[0] and k > 0}
        assert hinted <= set(after.nodes)
    assert sum(len(b.nodes) for b in restricted) < sum(len(b.nodes) for b in buckets)


@pytest.mark.parametrize("make", CASES)
def test_a_restricted_search_reports_no_bound_of_its_own(make: Callable[[], Snapshot]) -> None:
    problem = build_problem(make(), POLICY)
    result = solve_exact(problem, greedy(problem), budget=1.0, targets={}, restrict=True)
    assert result.assignment is not None
    assert result.bounds == {}
    assert not result.optimal


def _restricted_solve(snap: Snapshot, monkeypatch: pytest.MonkeyPatch) -> Decision:
    """``solve`` with the first-solution cost set so that the full model is too large for the
    budget and the restricted one is not."""
    problem = build_problem(snap, POLICY)
    buckets = list(problem.buckets)
    full = exact_module._model_size(problem, buckets)
    small = exact_module._model_size(problem, restrict_isolated(problem, buckets, greedy(problem))[0])
    assert small < full
    budget = POLICY.time_limit_s * SEARCH_SHARE - OVERHEAD_PER_NODE * len(snap.nodes)
    monkeypatch.setattr(exact_module, "FIRST_SOLUTION_PER_SIZE_SQUARED", budget * FIRST_STAGE_SHARE / (full * small))
    return solve(snap, POLICY)


@pytest.mark.parametrize("make", CASES)
def test_restricted_decisions_keep_every_rule_and_an_honest_bound(
    make: Callable[[], Snapshot], monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = make()
    full = solve(snap, POLICY)
    assert full.solver.status == "OPTIMAL"
    restricted = _restricted_solve(snap, monkeypatch)
    assert check(snap, restricted, POLICY) == []
    assert restricted.solver.status in ("OPTIMAL", "FEASIBLE")
    # The full problem's optimum is the full search's objective: the restricted cycle's decision
    # is no better, and its bound no lower.
    assert restricted.solver.objective <= full.solver.objective
    assert restricted.solver.bound >= full.solver.objective
    if restricted.solver.status == "OPTIMAL":
        assert restricted.solver.objective == full.solver.objective
