"""PodDisruptionBudgets in preemption and reclaim, as kube-scheduler's DefaultPreemption weighs them.

Victims that violate no budget are taken when they exist; otherwise the fewest violations. That
comes right after placing the preemptors' work and before the victims' priorities, count and age
(``pickOneNodeForPreemption``'s first criterion). One node of 4 cores; running one-core pods of
priority 1 in queue ``qa`` (the later one is younger), each its own PodGroup.
"""

from __future__ import annotations

import pytest
from builders import gangs, node, queue, snapshot
from storage_builders import pdb

from vcsat.model import Decision, Pod, PodGroup, Policy, Snapshot
from vcsat.model.disruption import PodDisruptionBudget
from vcsat.model.selectors import LabelRequirement
from vcsat.solver import check, solve

POLICY = Policy(time_limit_s=2)
NODE = node("n1", cpu="4", memory="64Gi")


def labelled(pods: list[Pod], labels: dict[str, dict[str, str]]) -> list[Pod]:
    return [p.model_copy(update={"labels": labels.get(p.key, {})}) for p in pods]


def preempt_case(
    labels: dict[str, dict[str, str]],
    budgets: list[PodDisruptionBudget],
    *,
    cpu: str = "1",
    priorities: tuple[int, ...] = (1, 1, 1, 1),
) -> tuple[Snapshot, Decision]:
    pods: list[Pod] = []
    groups: list[PodGroup] = []
    for i, priority in enumerate(priorities):
        more, more_groups = gangs(f"lo{i}", queue="qa", priority=priority, node="n1", created=i)
        pods += more
        groups += more_groups
    hi, hi_groups = gangs("hi", queue="qa", priority=10, created=100, phase="Inqueue", cpu=cpu)
    snap = snapshot(
        nodes=[NODE],
        pods=labelled(pods, labels) + hi,
        groups=groups + hi_groups,
        queues=[queue("qa")],
        disruption_budgets=budgets,
    )
    decision = solve(snap, POLICY)
    assert check(snap, decision, POLICY) == []
    return snap, decision


def evicted(decision: Decision) -> set[str]:
    return {e.pod for e in decision.evictions}


def test_without_budgets_the_youngest_goes() -> None:
    _, decision = preempt_case({}, [])
    assert evicted(decision) == {"ns/lo3-0-0"}


def test_a_victim_no_budget_protects_is_taken_first() -> None:
    """The youngest is covered by a budget that allows nothing: the next youngest goes."""
    _, decision = preempt_case({"ns/lo3-0-0": {"app": "db"}}, [pdb("ns/db", 0, {"app": "db"})])
    assert evicted(decision) == {"ns/lo2-0-0"}


def test_a_budget_with_room_does_not_protect() -> None:
    _, decision = preempt_case({f"ns/lo{i}-0-0": {"app": "db"} for i in range(4)}, [pdb("ns/db", 1, {"app": "db"})])
    assert evicted(decision) == {"ns/lo3-0-0"}


def test_fewest_violations_when_none_is_avoidable() -> None:
    """Two cores needed; lo1 is free of budgets, every other pod is under an exhausted one: lo1 and
    one violation (the youngest of the covered pods), not the two youngest (two violations)."""
    labels = {"ns/lo0-0-0": {"app": "a"}, "ns/lo2-0-0": {"app": "b"}, "ns/lo3-0-0": {"app": "b"}}
    _, decision = preempt_case(labels, [pdb("ns/a", 0, {"app": "a"}), pdb("ns/b", 0, {"app": "b"})], cpu="2")
    assert evicted(decision) == {"ns/lo1-0-0", "ns/lo3-0-0"}


def test_budgets_come_before_victim_priority() -> None:
    """DefaultPreemption: fewest PDB violations first, then the lowest victim priority. lo0 is of
    priority 1 under an exhausted budget, the others of priority 5: a priority-5 pod goes."""
    _, decision = preempt_case({"ns/lo0-0-0": {"app": "db"}}, [pdb("ns/db", 0, {"app": "db"})], priorities=(1, 5, 5, 5))
    assert evicted(decision) == {"ns/lo3-0-0"}


@pytest.mark.parametrize(
    "budget",
    [
        pdb("other/db", 0, {"app": "db"}),
        pdb("ns/db", 0, {}),
        pdb("ns/db", 0, expressions=[LabelRequirement(key="app", operator="NotIn", values=("db",))]),
    ],
    ids=["other-namespace", "empty-selector", "not-selected"],
)
def test_budgets_that_do_not_select_the_pod_do_not_protect_it(budget: PodDisruptionBudget) -> None:
    _, decision = preempt_case({"ns/lo3-0-0": {"app": "db"}}, [budget])
    assert evicted(decision) == {"ns/lo3-0-0"}


def test_reclaim_prefers_victims_no_budget_protects() -> None:
    """qb's four pods fill the node and qa wants one core back: qb's youngest is under an exhausted
    budget, so the next youngest goes."""
    running, running_groups = gangs("b", 4, queue="qb", priority=1, node="n1")
    jobs, job_groups = gangs("a", 1, queue="qa", created=100, phase="Inqueue")
    snap = snapshot(
        nodes=[NODE],
        pods=labelled(running, {"ns/b-3-0": {"app": "db"}}) + jobs,
        groups=running_groups + job_groups,
        queues=[queue("qa"), queue("qb")],
        disruption_budgets=[pdb("ns/db", 0, {"app": "db"})],
    )
    decision = solve(snap, POLICY)
    assert check(snap, decision, POLICY) == []
    assert {e.pod: e.reason for e in decision.evictions} == {"ns/b-2-0": "reclaim"}


def test_a_budget_spent_by_one_queue_s_preemption_protects_in_the_next() -> None:
    """Preemption runs queue by queue; one budget (1 disruption allowed) covers pods of both queues.
    qa's preemption takes its youngest pod, spending the budget; qb's then takes its uncovered pod
    rather than its youngest, which the spent budget now protects."""
    pods: list[Pod] = []
    groups: list[PodGroup] = []
    for name, q, created in (("qa-old", "qa", 0), ("qa-young", "qa", 1), ("qb-old", "qb", 2), ("qb-young", "qb", 3)):
        more, more_groups = gangs(name, queue=q, priority=1, node="n1", created=created)
        pods += more
        groups += more_groups
    labels = {key: {"app": "db"} for key in ("ns/qa-old-0-0", "ns/qa-young-0-0", "ns/qb-young-0-0")}
    waiting: list[Pod] = []
    for q in ("qa", "qb"):
        more, more_groups = gangs(f"hi-{q}", queue=q, priority=10, created=100, phase="Inqueue")
        waiting += more
        groups += more_groups
    snap = snapshot(
        nodes=[NODE],
        pods=labelled(pods, labels) + waiting,
        groups=groups,
        queues=[queue("qa"), queue("qb")],
        disruption_budgets=[pdb("ns/db", 1, {"app": "db"})],
    )
    decision = solve(snap, POLICY)
    assert check(snap, decision, POLICY) == []
    assert evicted(decision) == {"ns/qa-young-0-0", "ns/qb-old-0-0"}
