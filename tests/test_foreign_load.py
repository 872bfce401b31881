"""Other schedulers' work is load, counted once: their bound pods are used room, and nothing of their
PodGroups' need is reserved in our admission (issue 10, item 9)."""

from __future__ import annotations

import pytest
from builders import group, node, pod, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Pod, PodGroup, Policy, Snapshot
from vcsat.solver.enqueue import admit
from vcsat.solver.solve import solve
from vcsat.solver.validator.check import check


def _bound_gang(owner: str | None) -> tuple[list[Pod], PodGroup]:
    """A Running gang of 4 × 3 cpu over two nodes; ``owner`` None is ours, else that scheduler's."""
    ours = owner is None
    gang = group("ns/gang", 4, phase="Running").model_copy(update={"scheduler_name": owner})
    pods = [pod(f"ns/gang-{i}", cpu="3", group="ns/gang", node=f"n{i % 2}", managed=ours) for i in range(4)]
    return pods, gang


def _cluster(owner: str | None, *more_pods: Pod) -> Snapshot:
    pods, gang = _bound_gang(owner)
    job = group("ns/job", 1, min_resources={"cpu": "2"})  # a Volcano Job's group: no pod before admission
    return snapshot(nodes=[node("n0", cpu="8"), node("n1", cpu="8")], pods=[*pods, *more_pods], groups=[gang, job])


@pytest.mark.parametrize("owner", [None, "other-scheduler"])
@pytest.mark.parametrize("by_fit", [True, False])
def test_a_job_next_to_a_bound_gang_is_admitted_whoever_owns_the_gang(owner: str | None, by_fit: bool) -> None:
    verdict = admit(_cluster(owner), Policy(admit_by_fit=by_fit))["ns/job"]
    assert (verdict.admitted, verdict.reason) == (True, "")


def test_a_foreign_gang_is_not_ours_to_admit() -> None:
    assert "ns/gang" not in admit(_cluster("other-scheduler"), Policy())


def test_foreign_bound_pods_still_count_as_used() -> None:
    """16 cpu, 12 held by the foreign gang: at factor 1.0 a 5-cpu job is refused, a 4-cpu one is not."""
    pods, gang = _bound_gang("other-scheduler")
    for cpu, admitted in (("4", True), ("5", False)):
        job = group("ns/job", 1, min_resources={"cpu": cpu})
        snap = snapshot(nodes=[node("n0", cpu="8"), node("n1", cpu="8")], pods=pods, groups=[gang, job])
        verdict = admit(snap, Policy(overcommit_factor=1.0, admit_by_fit=False))["ns/job"]
        assert (verdict.admitted, verdict.reason) == (admitted, "" if admitted else "ClusterOverused")


def test_default_scheduler_deployments_are_load_for_admission_and_placement() -> None:
    """A mixed cluster: Deployment pods of the default scheduler (no PodGroup, not ours) hold 5 cpu of
    each 8-cpu node; our 2 × 3-cpu gang is admitted and placed on the 3 cpu left on each node, and a
    second such gang, for which no room is left, waits."""
    deployment = [pod(f"web/web-{i}", cpu="5", node=f"n{i}", managed=False) for i in range(2)]
    ours = [pod(f"ns/a-{i}", cpu="3", group="ns/a") for i in range(2)]
    late = [pod(f"ns/b-{i}", cpu="3", group="ns/b", created=1.0) for i in range(2)]
    snap = snapshot(
        nodes=[node("n0", cpu="8"), node("n1", cpu="8")],
        pods=[*deployment, *ours, *late],
        groups=[group("ns/a", 2, phase="Inqueue"), group("ns/b", 2, created=1.0)],
    )
    verdicts = admit(snap, Policy(overcommit_factor=1.0, admit_by_fit=False))
    assert verdicts["ns/b"].reason == "ClusterOverused"
    decision = solve(snap, Policy(time_limit_s=5))
    placed = {b.pod: b.node for b in decision.bindings}
    assert sorted(placed) == ["ns/a-0", "ns/a-1"] and sorted(placed.values()) == ["n0", "n1"]
    assert check(snap, decision) == []


@settings(max_examples=40, deadline=None)
@given(
    gang_cpu=st.integers(1, 4),
    gang_size=st.integers(1, 4),
    job_cpu=st.integers(1, 8),
    factor=st.sampled_from([1.0, 1.2, 1.5]),
)
def test_the_owner_of_a_bound_gang_never_changes_a_jobs_admission(
    gang_cpu: int, gang_size: int, job_cpu: int, factor: float
) -> None:
    """A gang whose pods are all bound is the same load on the cluster whoever scheduled it (queue
    quotas apart, which count only our pods: proportion off leaves the queue unbounded)."""
    verdicts = []
    for owner in (None, "other-scheduler"):
        gang = group("ns/gang", gang_size, phase="Running").model_copy(update={"scheduler_name": owner})
        pods = [
            pod(f"ns/gang-{i}", cpu=gang_cpu, group="ns/gang", node=f"n{i % 2}", managed=owner is None)
            for i in range(gang_size)
        ]
        job = group("ns/job", 1, min_resources={"cpu": job_cpu})
        snap = snapshot(nodes=[node("n0", cpu="8"), node("n1", cpu="8")], pods=pods, groups=[gang, job])
        policy = Policy(overcommit_factor=factor, admit_by_fit=False, proportion=False)
        verdicts.append(admit(snap, policy)["ns/job"].admitted)
    assert verdicts[0] == verdicts[1]


def test_another_schedulers_inqueue_group_sets_no_deadline_of_ours() -> None:
    from vcsat.solver.enqueue import next_inqueue_timeout

    theirs = group("ns/theirs", 1, phase="Inqueue").model_copy(
        update={"scheduler_name": "other-scheduler", "inqueue_since": 100.0}
    )
    ours = group("ns/ours", 1, phase="Inqueue").model_copy(update={"inqueue_since": 500.0})
    snap = snapshot(nodes=[node("n0")], groups=[theirs, ours]).model_copy(update={"now": 200.0})
    assert next_inqueue_timeout(snap, Policy(inqueue_timeout_s=60)) == 560.0
