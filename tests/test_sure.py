"""Sure placements (solver/sure.py): the greedy's decision, taken only when no search could place more.

Table cases say when it is taken and when declined; the properties hold it to its promise on
random clusters: valid, whole gangs, and the very pods the full solve places; and a full solve
handed the prepared problem decides as one that builds its own.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

import pytest
from builders import gangs, node, pod, snapshot
from hypothesis import HealthCheck, given, settings
from test_volcano_scenarios import POLICIES, clusters

from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver import check, solve
from vcsat.solver.sure import prepare, sure_decision


def _placed(decision: Decision) -> set[str]:
    return {binding.pod for binding in decision.bindings}


def _fits_all() -> Snapshot:
    pods, groups = gangs("job", 3, size=4, cpu="2")
    return snapshot(nodes=[node("n1", cpu="16"), node("n2", cpu="16")], pods=pods, groups=groups)


def _too_many() -> Snapshot:
    # Room for two gangs of four 2-cpu pods, three are waiting.
    pods, groups = gangs("job", 3, size=4, cpu="2")
    return snapshot(nodes=[node("n1", cpu="8"), node("n2", cpu="8")], pods=pods, groups=groups)


def _gang_still_being_created() -> Snapshot:
    # minMember 4, two pods exist so far: the gang waits (not a candidate); the lone pods fit.
    pods, groups = gangs("job", 1, size=2, min_member=4, cpu="1")
    lone = [pod("ns/lone-0"), pod("ns/lone-1")]
    return snapshot(nodes=[node("n1", cpu="8")], pods=[*pods, *lone], groups=groups)


def _elastic_extra_left_out() -> Snapshot:
    # minMember 2 of 4 pods of 3 cpu on 8 cpu: the gang runs with 2, its 2 extra members wait.
    pods, groups = gangs("job", 1, size=4, min_member=2, cpu="3")
    return snapshot(nodes=[node("n1", cpu="8")], pods=pods, groups=groups)


def _preemptor_waits() -> Snapshot:
    # A high-priority gang that fits only if the running low-priority one goes: evictions may help.
    running, running_groups = gangs("low", 1, size=2, cpu="4", node="n1")
    waiting, waiting_groups = gangs("high", 1, size=2, cpu="4", priority=100)
    lone = [pod("ns/small", cpu="0.5")]
    return snapshot(
        nodes=[node("n1", cpu="8"), node("n2", cpu="1")],
        pods=[*running, *waiting, *lone],
        groups=[*running_groups, *waiting_groups],
    )


@pytest.mark.parametrize(
    ("make", "policy", "sure"),
    [
        pytest.param(_fits_all, Policy(), True, id="everything-fits"),
        pytest.param(_too_many, Policy(enqueue=False), False, id="contention"),
        # Admission (enqueue) holds the third gang back: the full cycle would not place it either.
        pytest.param(_too_many, Policy(), True, id="contention-held-by-admission"),
        pytest.param(_gang_still_being_created, Policy(), True, id="incomplete-gang-waits"),
        pytest.param(_elastic_extra_left_out, Policy(), False, id="elastic-extra-left-out"),
        pytest.param(_preemptor_waits, Policy(), False, id="preemptor-waits"),
        pytest.param(_preemptor_waits, Policy(preempt=False, reclaim=False), True, id="no-evictions"),
    ],
)
def test_sure_decision_is_taken_only_when_every_candidate_pod_is_placed(make, policy, sure) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    decision = sure_decision(prepare(snap, policy))
    assert (decision is not None) == sure
    if decision is None:
        return
    assert check(snap, decision, policy) == []
    full = solve(snap, policy)
    assert _placed(decision) == _placed(full)
    assert {o.podgroup for o in decision.podgroups} == {o.podgroup for o in full.podgroups}
    assert not decision.evictions and not decision.nominations


def test_incomplete_gang_is_never_bound_by_a_sure_decision() -> None:
    decision = sure_decision(prepare(_gang_still_being_created(), Policy()))
    assert decision is not None
    assert _placed(decision) == {"ns/lone-0", "ns/lone-1"}


def test_prepared_for_another_snapshot_is_refused() -> None:
    with pytest.raises(ValueError, match="another snapshot"):
        solve(_too_many(), Policy(), prepared=prepare(_fits_all(), Policy()))


@pytest.mark.parametrize(
    ("greedy_cpu", "planned"),
    [
        (0.25, 0.25),  # measured by prepare: the later fills are predicted from it
        (3.0, 3.0),
        (None, None),  # not measured: the plan falls back on the node count
    ],
)
def test_a_full_solve_handed_a_prepared_greedy_plans_its_fills_from_its_cpu(
    greedy_cpu: float | None, planned: float | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    solve_module = sys.modules["vcsat.solver.solve"]
    seen: list[float | None] = []

    def spy(problem: Any, first: Any, plan: Any = None) -> Any:
        seen.append(plan.greedy_cpu)
        return real(problem, first, plan)

    real = solve_module.warm_start
    monkeypatch.setattr(solve_module, "warm_start", spy)
    snap, policy = _too_many(), Policy()
    prepared = dataclasses.replace(prepare(snap, policy), greedy_cpu=greedy_cpu)
    solve(snap, policy, prepared=prepared)
    assert seen == [planned]


def test_prepare_measures_the_greedy() -> None:
    prepared = prepare(_too_many(), Policy())
    assert prepared.greedy_cpu is not None and prepared.greedy_cpu >= 0.0


def _without_timing(decision: Decision) -> str:
    data = decision.model_dump(mode="json")
    data["solver"].pop("seconds")
    return json.dumps(data, sort_keys=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), POLICIES)
def test_a_sure_decision_is_valid_whole_and_places_what_the_full_solve_places(snap: Snapshot, policy: Policy) -> None:
    prepared = prepare(snap, policy)
    full = solve(snap, policy, prepared=prepared)
    assert _without_timing(full) == _without_timing(solve(snap, policy))
    decision = sure_decision(prepared)
    if decision is None:
        return
    assert check(snap, decision, policy) == []
    assert _placed(decision) == _placed(full) - {n.pod for n in full.nominations}
    for outcome in decision.podgroups:
        group = snap.podgroup_by_key.get(outcome.podgroup)
        if group is not None and outcome.phase == "Running":
            members = [p for p in snap.pods_of_group.get(group.key, ()) if p.key in _placed(decision) or p.bound]
            assert len(members) >= group.min_member
