"""Admission (Volcano's enqueue action): queue room, cluster overcommit, order, and the demotion of
Inqueue groups that can never run or waited too long."""

from __future__ import annotations

from typing import Any

import pytest
from builders import group, node, pod, queue, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import PodGroup, Policy, Snapshot
from vcsat.solver.enqueue import Admission, admit, group_need

POLICY = Policy()


def pg(key: str, phase: str = "Pending", created: float = 0.0, **kwargs: Any) -> PodGroup:
    """A PodGroup in ``phase`` (the builder leaves phase and creation time unset)."""
    return group(key, **kwargs).model_copy(update={"phase": phase, "created": created})


def cluster(*groups: PodGroup, pods: tuple[Any, ...] = (), queues: tuple[Any, ...] = (), cpu: str = "8") -> Snapshot:
    return snapshot(nodes=[node("n1", cpu=cpu, memory="64Gi")], pods=pods, groups=groups, queues=queues)


def verdicts(result: dict[str, Admission]) -> dict[str, tuple[bool, str, str]]:
    return {key: (a.admitted, a.phase, a.reason) for key, a in result.items()}


# --- the basic verdicts -----------------------------------------------------------------------


def test_a_group_that_fits_is_admitted() -> None:
    snap = cluster(pg("ns/g", min_resources={"cpu": "2"}))
    assert verdicts(admit(snap, POLICY)) == {"ns/g": (True, "Inqueue", "")}


def test_enqueue_off_admits_everything() -> None:
    snap = cluster(pg("ns/big", min_resources={"cpu": "100"}), pg("ns/run", phase="Running"))
    result = admit(snap, Policy(enqueue=False))
    assert verdicts(result) == {"ns/big": (True, "Inqueue", ""), "ns/run": (True, "Running", "")}


def test_groups_already_running_or_inqueue_stay() -> None:
    snap = cluster(
        pg("ns/run", phase="Running", min_resources={"cpu": "6"}),
        pg("ns/inq", phase="Inqueue", min_resources={"cpu": "6"}),
    )
    assert verdicts(admit(snap, POLICY)) == {
        "ns/inq": (True, "Inqueue", ""),
        "ns/run": (True, "Running", ""),
    }


def test_lone_pods_are_not_podgroups() -> None:
    snap = cluster(pods=(pod("ns/lone", cpu="100"),))
    assert admit(snap, POLICY) == {}


@pytest.mark.parametrize(
    ("queues", "reason", "words"),
    [
        ((queue("q", open=False),), "QueueClosed", "Closed"),
        ((), "QueueNotFound", "does not exist"),
    ],
)
def test_queue_must_exist_and_be_open(queues: tuple[Any, ...], reason: str, words: str) -> None:
    snap = cluster(pg("ns/g", queue="q", min_resources={"cpu": "1"}), queues=queues)
    result = admit(snap, POLICY)["ns/g"]
    assert (result.admitted, result.phase, result.reason) == (False, "Pending", reason)
    assert words in result.message


# --- queue room -------------------------------------------------------------------------------


def running(key: str, cpu: str, *, queue_name: str, min_cpu: str | None = None) -> tuple[PodGroup, Any]:
    """A Running group with one bound pod of ``cpu`` and minResources ``min_cpu`` (default: all)."""
    return (
        pg(key, phase="Running", queue=queue_name, min_resources={"cpu": min_cpu or cpu}),
        pod(f"{key}-0", cpu=cpu, group=key, node="n1"),
    )


def test_queue_capability_refuses_with_amounts() -> None:
    held, held_pod = running("ns/run", "3", queue_name="q")
    snap = cluster(
        held,
        pg("ns/new", queue="q", min_resources={"cpu": "2"}),
        pods=(held_pod,),
        queues=(queue("q", capability={"cpu": "4"}),),
    )
    result = admit(snap, POLICY)["ns/new"]
    assert (result.admitted, result.reason) == (False, "QueueOverused")
    assert "queue q" in result.message
    assert "2000m cpu asked, 3000m cpu committed of 4000m cpu allowed" in result.message


def test_elastic_pods_beyond_min_resources_do_not_block_admission() -> None:
    held, held_pod = running("ns/run", "3", queue_name="q", min_cpu="1")
    snap = cluster(
        held,
        pg("ns/new", queue="q", min_resources={"cpu": "2"}),
        pods=(held_pod,),
        queues=(queue("q", capability={"cpu": "4"}),),
    )
    assert admit(snap, POLICY)["ns/new"].admitted


def test_admitted_groups_count_before_the_next_one() -> None:
    snap = cluster(
        pg("ns/old-low", queue="q", created=1, priority=1, min_resources={"cpu": "2"}),
        pg("ns/new-high", queue="q", created=3, priority=9, min_resources={"cpu": "2"}),
        pg("ns/mid-low", queue="q", created=2, priority=1, min_resources={"cpu": "2"}),
        queues=(queue("q", capability={"cpu": "4"}),),
    )
    result = admit(snap, POLICY)
    assert result["ns/new-high"].admitted  # highest priority first
    assert result["ns/old-low"].admitted  # then the oldest
    assert result["ns/mid-low"].reason == "QueueOverused"
    assert "4000m cpu committed" in result["ns/mid-low"].message


def test_a_refused_big_group_does_not_block_a_smaller_one() -> None:
    snap = cluster(
        pg("ns/big", queue="q", created=1, min_resources={"cpu": "3"}),
        pg("ns/small", queue="q", created=2, min_resources={"cpu": "1"}),
        pg("ns/first", queue="q", created=0, min_resources={"cpu": "2"}),
        queues=(queue("q", capability={"cpu": "3"}),),
    )
    result = admit(snap, POLICY)
    assert verdicts(result) == {
        "ns/big": (False, "Pending", "QueueOverused"),
        "ns/first": (True, "Inqueue", ""),
        "ns/small": (True, "Inqueue", ""),
    }


def test_need_without_min_resources_comes_from_the_gang_pods() -> None:
    snap = cluster(
        pg("ns/g", queue="q", min_member=2),
        pods=tuple(pod(f"ns/g-{i}", cpu="2", group="ns/g", created=i) for i in range(3)),
        queues=(queue("q", capability={"cpu": "3"}),),
    )
    result = admit(snap, POLICY)["ns/g"]
    # minMember 2 pods of 2 cpu: 4 cpu can never fit a 3-cpu capability.
    assert (result.admitted, result.reason) == (False, "Unschedulable")
    assert "4000m cpu" in result.message and "capability" in result.message


def test_group_need_takes_min_task_member_first() -> None:
    group_ = pg("ns/g", min_member=3, min_task_member={"ps": 1})
    pods = [pod(f"ns/w{i}", cpu="1", group="ns/g", task="worker", created=i) for i in range(3)]
    pods.append(pod("ns/ps", cpu="2", group="ns/g", task="ps", created=9))
    assert group_need(group_, pods)["cpu"] == 4000
    assert group_need(pg("ns/r", min_resources={"cpu": "5"}), pods) == {"cpu": 5000}


def test_guarantees_of_other_queues_limit_admission_under_proportion() -> None:
    snap = cluster(
        pg("ns/g", queue="a", min_resources={"cpu": "3"}),
        queues=(queue("a"), queue("b", guarantee={"cpu": "6"})),
    )
    refused = admit(snap, POLICY)["ns/g"]
    assert refused.reason == "QueueOverused"
    assert "2000m cpu allowed" in refused.message
    assert admit(snap, Policy(proportion=False))["ns/g"].admitted


def test_an_ancestor_queue_limits_its_children() -> None:
    held, held_pod = running("ns/run", "3", queue_name="eng-a")
    snap = cluster(
        held,
        pg("ns/new", queue="eng-b", min_resources={"cpu": "2"}),
        pods=(held_pod,),
        queues=(
            queue("eng", capability={"cpu": "4"}),
            queue("eng-a", parent="eng"),
            queue("eng-b", parent="eng"),
        ),
    )
    result = admit(snap, POLICY)["ns/new"]
    assert result.reason == "QueueOverused"
    assert "ancestor queue eng" in result.message


# --- cluster room (overcommit) ----------------------------------------------------------------


def overcommit_case() -> Snapshot:
    """Queue a holds 4 cpu and reserves 4 more; queue b asks 2. Each queue is within its own room
    (proportion lets a queue commit up to the cluster), so only the cluster-wide check can refuse."""
    held, held_pod = running("ns/run", "4", queue_name="a")
    return cluster(
        held,
        pg("ns/inq", phase="Inqueue", queue="a", min_resources={"cpu": "4"}),
        pg("ns/new", queue="b", min_resources={"cpu": "2"}),
        pods=(held_pod,),
        queues=(queue("a"), queue("b")),
    )


def test_overcommit_room_refuses_with_amounts() -> None:
    # 8 cpu × 1.2 = 9.6 cpu; 4 used, 4 reserved by the Inqueue group: 1.6 cpu left for 2 asked.
    result = admit(overcommit_case(), POLICY)["ns/new"]
    assert (result.admitted, result.reason) == (False, "ClusterOverused")
    assert (
        "2000m cpu asked, 1600m cpu left of 5600m cpu idle at overcommit factor 1.2 after 4000m cpu reserved"
        in result.message
    )


@pytest.mark.parametrize(
    ("policy", "overcommit"),
    [(Policy(overcommit_factor=1.5), True), (POLICY, False)],
    ids=["larger-factor", "overcommit-plugin-off"],
)
def test_overcommit_factor_or_plugin_off_admits(policy: Policy, overcommit: bool) -> None:
    assert admit(overcommit_case(), policy, overcommit=overcommit)["ns/new"].admitted


def test_queue_holding_least_of_its_share_goes_first() -> None:
    held, held_pod = running("ns/a-run", "4", queue_name="a")
    snap = cluster(
        held,
        pg("ns/a-new", queue="a", created=0, min_resources={"cpu": "4"}),
        pg("ns/b-new", queue="b", created=5, min_resources={"cpu": "4"}),
        pods=(
            held_pod,
            pod("ns/a-new-0", cpu="4", group="ns/a-new"),
            pod("ns/b-new-0", cpu="4", group="ns/b-new"),
        ),
        queues=(queue("a"), queue("b")),
    )
    result = admit(snap, Policy(overcommit_factor=1.0))
    assert result["ns/b-new"].admitted
    assert result["ns/a-new"].reason == "ClusterOverused"


# --- groups that can never run ----------------------------------------------------------------


def test_inqueue_group_that_can_never_run_is_demoted_and_frees_its_quota() -> None:
    """volcano-sh/volcano#4471: a 9-cpu pod on 8-cpu nodes held its queue's quota forever."""
    snap = snapshot(
        nodes=[node("n1", cpu="8"), node("n2", cpu="8")],
        groups=[
            pg("ns/stuck", phase="Inqueue", queue="q", created=0, min_resources={"cpu": "9"}),
            pg("ns/fits", queue="q", created=1, min_resources={"cpu": "8"}),
        ],
        pods=[pod("ns/stuck-0", cpu="9", group="ns/stuck"), pod("ns/fits-0", cpu="8", group="ns/fits")],
        queues=[queue("q", capability={"cpu": "10"})],
    )
    result = admit(snap, Policy(overcommit_factor=3.0))
    assert verdicts(result) == {
        "ns/fits": (True, "Inqueue", ""),
        "ns/stuck": (False, "Pending", "Unschedulable"),
    }
    assert "pod ns/stuck-0" in result["ns/stuck"].message
    assert "fits the allocatable of no node" in result["ns/stuck"].message


@pytest.mark.parametrize(
    ("pod_kwargs", "admitted"),
    [
        ({"selector": {"zone": "mars"}}, False),
        ({"cpu": "9"}, False),
        ({"cpu": "1"}, True),
    ],
    ids=["selector-matches-no-node", "bigger-than-any-node", "fits"],
)
def test_pending_group_whose_pods_fit_no_node_is_refused(pod_kwargs: dict[str, Any], admitted: bool) -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="8"), node("n2", cpu="8")],
        pods=[pod("ns/g-0", group="ns/g", **pod_kwargs)],
        groups=[pg("ns/g", min_resources={"cpu": "1"})],
    )
    result = admit(snap, Policy(overcommit_factor=3.0))["ns/g"]
    assert result.admitted is admitted
    if not admitted:
        assert result.reason == "Unschedulable"
        assert "fits the allocatable of no node" in result.message


def test_cordoned_or_unready_nodes_still_count_as_the_cluster_built() -> None:
    snap = snapshot(
        nodes=[node("small", cpu="2"), node("big-cordoned", cpu="16", unschedulable=True)],
        pods=[pod("ns/g-0", cpu="10", group="ns/g")],
        groups=[pg("ns/g", phase="Inqueue", min_resources={"cpu": "1"})],
    )
    assert admit(snap, POLICY)["ns/g"].admitted


def test_a_gang_needs_only_min_member_placeable_pods() -> None:
    pods = [pod("ns/g-0", cpu="1", group="ns/g"), pod("ns/g-1", cpu="99", group="ns/g")]
    snap = cluster(pg("ns/g", phase="Inqueue", min_member=1), pods=tuple(pods))
    assert admit(snap, POLICY)["ns/g"].admitted
    snap = cluster(pg("ns/g", phase="Inqueue", min_member=2), pods=tuple(pods))
    demoted = admit(snap, POLICY)["ns/g"]
    assert demoted.reason == "Unschedulable"
    assert "only 1 of its pods could ever be placed, minMember is 2" in demoted.message


def test_inqueue_timeout_needs_its_inputs_and_spares_groups_with_placed_pods() -> None:
    snap = cluster(
        pg("ns/idle", phase="Inqueue", min_resources={"cpu": "1"}),
        pg("ns/started", phase="Inqueue", min_member=2, min_resources={"cpu": "2"}),
        pods=(
            pod("ns/started-0", cpu="1", group="ns/started", node="n1"),
            pod("ns/started-1", cpu="1", group="ns/started"),
        ),
    )
    since = {"ns/idle": 0.0, "ns/started": 0.0}
    assert all(a.admitted for a in admit(snap, POLICY).values())
    early = admit(snap, POLICY, now=100.0, inqueue_since=since, inqueue_timeout_s=600)
    assert all(a.admitted for a in early.values())
    result = admit(snap, POLICY, now=700.0, inqueue_since=since, inqueue_timeout_s=600)
    assert verdicts(result) == {
        "ns/idle": (False, "Pending", "InqueueTimeout"),
        "ns/started": (True, "Inqueue", ""),
    }
    assert "Inqueue for 700s (timeout 600s)" in result["ns/idle"].message


def test_result_is_in_key_order() -> None:
    snap = cluster(pg("ns/b"), pg("ns/a"), pg("ns/c", phase="Running"))
    assert list(admit(snap, POLICY)) == ["ns/a", "ns/b", "ns/c"]


# --- property: admission never overfills a queue -----------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["Pending", "Inqueue", "Running"]), st.integers(1, 5), st.integers(0, 3)),
        min_size=1,
        max_size=6,
    ),
    st.integers(1, 12),
)
def test_admission_keeps_commitments_within_capability(specs: list[tuple[str, int, int]], capability_cpu: int) -> None:
    """Σ needs of the groups admitted in a queue never exceeds its capability when what was already
    committed did not; and every refusal for queue room is one that would have exceeded it. (The
    Running groups here have no bound pods, so, as in Volcano, they commit nothing: a finished job
    whose PodGroup still reads Running must not hold quota.)"""
    groups = [
        pg(f"ns/g{i}", phase=phase, queue="q", priority=priority, created=i, min_resources={"cpu": str(cpu)})
        for i, (phase, cpu, priority) in enumerate(specs)
    ]
    snap = cluster(*groups, queues=(queue("q", capability={"cpu": str(capability_cpu)}),), cpu="64")
    result = admit(snap, POLICY, overcommit=False)
    need = {g.key: g.min_resources["cpu"] for g in groups}
    already = sum(need[g.key] for g in groups if g.phase == "Inqueue")
    admitted_now = [g for g in groups if g.phase == "Pending" and result[g.key].admitted]
    if already <= capability_cpu * 1000:
        assert already + sum(need[g.key] for g in admitted_now) <= capability_cpu * 1000
    committed = already
    order = sorted((g for g in groups if g.phase == "Pending"), key=lambda g: (-g.priority, g.created))
    for g in order:
        verdict = result[g.key]
        if verdict.admitted:
            committed += need[g.key]
        elif verdict.reason == "QueueOverused":
            assert committed + need[g.key] > capability_cpu * 1000
