"""The baseline schedulers: what each one does on small, readable cases, and that every decision any
of them makes keeps contract §3 (the validator finds nothing)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import group, node, pod, queue, snapshot
from tests.builders import term as node_term
from tests.storage_builders import csinode, pv, pvc
from vcsat.model import Decision, Pod, Policy, Snapshot
from vcsat.model.cluster import PreferredSchedulingTerm
from vcsat.solver import check
from vcsat.solver.baselines import BASELINES, Baseline, check_policy
from vcsat.solver.baselines.fgd import FGD, Fragmentation, task_type, typical_tasks
from vcsat.solver.baselines.kube_default import feasible_nodes_to_find
from vcsat.solver.baselines.state import ClusterState
from vcsat.solver.baselines.volcano import Proportion

ALL = sorted(BASELINES)
GANGED = [name for name in ALL if BASELINES[name].gang]


def decide(name: str, snap: Snapshot, policy: Policy | None = None) -> Decision:
    """The baseline's decision, validated (a broken rule fails the test here)."""
    baseline = BASELINES[name]
    policy = policy or Policy()
    decision = baseline.solve(snap, policy)
    assert check(snap, decision, check_policy(baseline, policy)) == []
    return decision


def placed(decision: Decision) -> dict[str, str]:
    return {b.pod: b.node for b in decision.bindings}


def gpus_of(decision: Decision) -> dict[str, list[int]]:
    return {b.pod: b.gpus for b in decision.bindings}


# --- gangs --------------------------------------------------------------------------------------


def gang_of(size: int, free_gpus: int) -> Snapshot:
    return snapshot(
        nodes=[node("n1", cpu="32", memory="128Gi", gpus=free_gpus)],
        pods=[pod(f"ns/w{i}", gpus=1, group="ns/g", task="worker") for i in range(size)],
        groups=[group("ns/g", min_member=size)],
    )


@dataclass(frozen=True)
class GangCase:
    size: int
    free_gpus: int
    placed_by_gang_schedulers: int
    placed_by_kube_default: int


GANG_CASES = [
    GangCase(size=3, free_gpus=3, placed_by_gang_schedulers=3, placed_by_kube_default=3),
    GangCase(size=3, free_gpus=2, placed_by_gang_schedulers=0, placed_by_kube_default=2),
    GangCase(size=4, free_gpus=1, placed_by_gang_schedulers=0, placed_by_kube_default=1),
]


@pytest.mark.parametrize("case", GANG_CASES, ids=lambda c: f"{c.size}-pods-{c.free_gpus}-gpus")
@pytest.mark.parametrize("name", ALL)
def test_gangs_are_whole_except_for_the_default_scheduler(name: str, case: GangCase) -> None:
    decision = decide(name, gang_of(case.size, case.free_gpus))
    want = case.placed_by_kube_default if name == "kube-default" else case.placed_by_gang_schedulers
    assert len(decision.bindings) == want
    outcome = decision.podgroups[0]
    assert (outcome.phase == "Running") == (want > 0)


@pytest.mark.parametrize("name", GANGED)
def test_min_task_member_must_be_met(name: str) -> None:
    # One ps and two workers must run together; only one worker's GPU is free.
    snap = snapshot(
        nodes=[node("n1", cpu="32", memory="128Gi", gpus=1)],
        pods=[
            pod("tf/ps", cpu="2", group="tf/job", task="ps"),
            pod("tf/w0", gpus=1, group="tf/job", task="worker"),
            pod("tf/w1", gpus=1, group="tf/job", task="worker"),
        ],
        groups=[group("tf/job", min_member=2, min_task_member={"ps": 1, "worker": 2})],
    )
    assert decide(name, snap).bindings == []


# --- spread against pack ------------------------------------------------------------------------


def two_pods_two_nodes() -> Snapshot:
    return snapshot(
        nodes=[node("a", cpu="8", memory="32Gi"), node("b", cpu="8", memory="32Gi")],
        pods=[pod("ns/p1", cpu="1", memory="1Gi", created=1), pod("ns/p2", cpu="1", memory="1Gi", created=2)],
    )


@pytest.mark.parametrize(
    ("name", "same_node"),
    [("kube-default", False), ("bestfit", True), ("firstfit", True), ("fgd", True)],
)
def test_spread_or_pack(name: str, same_node: bool) -> None:
    nodes = set(placed(decide(name, two_pods_two_nodes())).values())
    assert len(nodes) == (1 if same_node else 2)


def test_first_fit_takes_the_first_node_in_order() -> None:
    assert set(placed(decide("firstfit", two_pods_two_nodes())).values()) == {"a"}


def test_best_fit_fills_the_fuller_node() -> None:
    snap = snapshot(
        nodes=[node("a", cpu="8", memory="32Gi", gpus=4), node("b", cpu="8", memory="32Gi", gpus=4)],
        pods=[pod("ns/old", gpus=3, node="b"), pod("ns/new", gpus=1)],
    )
    assert placed(decide("bestfit", snap)) == {"ns/new": "b"}


# --- GPU shares ---------------------------------------------------------------------------------


def half_used_gpu() -> Snapshot:
    """GPU 0 free, GPU 1 half taken by a share; a 300/1000 share and a whole-GPU pod to come."""
    return snapshot(
        nodes=[node("n1", cpu="32", memory="128Gi", gpus=2)],
        pods=[
            pod("ns/old", gpu_milli=500, node="n1", gpu_ids=[1]),
            pod("ns/share", gpu_milli=300, created=1),
        ],
    )


def whole_and_share_mix() -> FGD:
    return FGD(typical_tasks([pod("x/whole", gpus=1), pod("x/share", gpu_milli=300)]))


def test_fgd_puts_a_share_on_the_used_gpu_to_keep_a_whole_gpu_free() -> None:
    snap = half_used_gpu()
    decision = whole_and_share_mix()(snap, Policy())
    assert check(snap, decision) == []
    assert gpus_of(decision) == {"ns/share": [1]}


@pytest.mark.parametrize(
    ("name", "gpu"), [("firstfit", 0), ("bestfit", 1), ("volcano", 0), ("volcano-gpu", 0), ("kube-default", 0)]
)
def test_where_other_baselines_put_a_share(name: str, gpu: int) -> None:
    assert gpus_of(decide(name, half_used_gpu())) == {"ns/share": [gpu]}


@pytest.mark.parametrize(("name", "node_name"), [("volcano", "empty"), ("volcano-gpu", "busy")])
def test_volcano_gpu_binpack_fills_the_node_whose_gpus_are_in_use(name: str, node_name: str) -> None:
    """The Helm chart's binpack weighs cpu and memory only, and nodeorder's least-allocated spreads
    a GPU pod onto the empty node; binpack weighting nvidia.com/gpu packs it next to the busy GPUs."""
    snap = snapshot(
        nodes=[node("busy", cpu="64", memory="256Gi", gpus=8), node("empty", cpu="64", memory="256Gi", gpus=8)],
        pods=[pod("ns/old", cpu="2", gpus=4, node="busy", gpu_ids=[0, 1, 2, 3]), pod("ns/new", cpu="2", gpus=2)],
    )
    assert placed(decide(name, snap)) == {"ns/new": node_name}


def test_fgd_prefers_the_node_whose_gpu_is_already_shared() -> None:
    snap = snapshot(
        nodes=[node("a", cpu="32", memory="128Gi", gpus=1), node("b", cpu="32", memory="128Gi", gpus=1)],
        pods=[pod("ns/old", gpu_milli=400, node="b", gpu_ids=[0]), pod("ns/share", gpu_milli=300)],
    )
    decision = whole_and_share_mix()(snap, Policy())
    assert check(snap, decision) == []
    assert placed(decision) == {"ns/share": "b"}


@pytest.mark.parametrize(
    ("lefts", "cpu_left", "expected"),
    [
        ((1000, 1000), 32000, 0.0),  # both types fit, no GPU too small for either
        ((1000, 500), 32000, 0.5 * 500 + 0.5 * 0),  # the 1-GPU type cannot use the half GPU
        ((500, 500), 32000, 0.5 * 1000 + 0.5 * 0),  # no whole GPU: all of it is lost to the 1-GPU type
        ((200, 0), 32000, 0.5 * 200 + 0.5 * 200),  # too small for a 300 share as well
        ((1000, 1000), 0, 2000.0),  # no cpu left: every GPU is a fragment for both types
        ((0, 0), 32000, 0.0),
    ],
)
def test_expected_fragmentation(lefts: tuple[int, ...], cpu_left: int, expected: float) -> None:
    frag = Fragmentation(typical_tasks([pod("x/whole", gpus=1), pod("x/share", gpu_milli=300)]))
    nodes = (node("n", gpus=2),)
    access = frag.access(nodes, ClusterState(snapshot(nodes=nodes)).index)
    assert frag.of(access[0], cpu_left, tuple(sorted(lefts, reverse=True))) == pytest.approx(expected)


def test_typical_tasks_keep_the_popular_types_covering_95_percent() -> None:
    pods = [pod(f"x/a{i}", gpus=1) for i in range(96)] + [pod(f"x/b{i}", gpus=2) for i in range(4)]
    distribution = typical_tasks(pods)
    assert [(t.gpu_count, round(p, 3)) for t, p in distribution] == [(1, 1.0)]
    assert task_type(pod("x/s", gpu_milli=250)).gpu_milli == 250


# --- orders -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_higher_priority_gets_the_last_gpu(name: str) -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="8", memory="32Gi", gpus=1)],
        pods=[pod("ns/low", gpus=1, priority=0, created=1), pod("ns/high", gpus=1, priority=100, created=2)],
    )
    assert placed(decide(name, snap)) == {"ns/high": "n1"}


@pytest.mark.parametrize("name", ALL)
def test_older_first_at_equal_priority(name: str) -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="8", memory="32Gi", gpus=1)],
        pods=[pod("ns/young", gpus=1, created=5), pod("ns/old", gpus=1, created=1)],
    )
    assert placed(decide(name, snap)) == {"ns/old": "n1"}


def test_volcano_serves_the_queue_below_its_deserved_share_first() -> None:
    # Queue a already holds 2 of 4 GPUs; b holds none. Equal weights: b has the lower share and
    # gets the one free GPU although a's job is older.
    snap = snapshot(
        nodes=[node("n1", cpu="32", memory="128Gi", gpus=3)],
        pods=[
            pod("a/running", gpus=2, group="a/r", node="n1"),
            pod("a/new", gpus=1, group="a/g", created=1),
            pod("b/new", gpus=1, group="b/g", created=2),
        ],
        groups=[group("a/r", queue="a"), group("a/g", queue="a"), group("b/g", queue="b")],
        queues=[queue("a"), queue("b")],
    )
    assert placed(decide("volcano", snap)) == {"b/new": "n1"}


def test_volcano_deserved_shares_follow_weights_up_to_demand() -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="30", memory="30Gi")],
        pods=[
            *(pod(f"a/p{i}", cpu="10", memory="1Gi", group=f"a/g{i}") for i in range(3)),
            pod("b/p", cpu="5", memory="1Gi", group="b/g"),
        ],
        groups=[*(group(f"a/g{i}", queue="a") for i in range(3)), group("b/g", queue="b")],
        queues=[queue("a", weight=1), queue("b", weight=2)],
    )
    proportion = Proportion(snap, ClusterState(snap), {"cpu": 30000.0, "memory": 30.0 * 2**30})
    # b asks 5 cores (less than its 2/3 of 30): it deserves 5; a gets the remaining 25.
    assert proportion.attrs["b"].deserved["cpu"] == pytest.approx(5000)
    assert proportion.attrs["a"].deserved["cpu"] == pytest.approx(25000)


# --- hard rules every baseline keeps ------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_queue_capability_and_closed_queues(name: str) -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="32", memory="128Gi", gpus=4)],
        pods=[
            pod("a/p1", gpus=1, group="a/g1", created=1),
            pod("a/p2", gpus=1, group="a/g2", created=2),
            pod("c/p", gpus=1, group="c/g"),
        ],
        groups=[group("a/g1", queue="a"), group("a/g2", queue="a"), group("c/g", queue="closed")],
        queues=[queue("a", capability={"nvidia.com/gpu": 1}), queue("closed", open=False)],
    )
    assert placed(decide(name, snap)) == {"a/p1": "n1"}


@pytest.mark.parametrize("name", ALL)
def test_predicates(name: str) -> None:
    snap = snapshot(
        nodes=[
            node("tainted", cpu="8", taints=["gpu=yes:NoSchedule"]),
            node("other-zone", cpu="8", labels={"zone": "b"}),
            node("ok", cpu="8", labels={"zone": "a"}),
        ],
        pods=[pod("ns/p", cpu="1", selector={"zone": "a"}), pod("ns/q", cpu="1", affinity="zone in (b)")],
    )
    assert placed(decide(name, snap)) == {"ns/p": "ok", "ns/q": "other-zone"}


@pytest.mark.parametrize(("nodes", "expected"), [(10, 10), (99, 99), (100, 100), (1000, 420), (5000, 500)])
def test_kube_default_scores_only_a_sample_of_a_big_cluster(nodes: int, expected: int) -> None:
    assert feasible_nodes_to_find(nodes) == expected


# --- Hypothesis: random small clusters ----------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn) -> Snapshot:
    nodes = []
    pods: list[Pod] = []
    for i in range(draw(st.integers(1, 4))):
        gpus = draw(st.sampled_from([0, 1, 2, 4]))
        labels = {"zone": draw(st.sampled_from(["a", "b"]))}
        taints = ["gpu=yes:NoSchedule"] if draw(st.booleans()) and gpus else []
        nodes.append(node(f"n{i}", cpu="8", memory="32Gi", gpus=gpus, pods=6, labels=labels, taints=taints))
        # A few bound pods that fit: whole GPUs, shares and cpu-only, without GPU annotations.
        cpu_left, whole_left = 8, gpus
        for j in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(["cpu", "whole", "share"]))
            if cpu_left < 1:
                break
            if kind == "whole" and whole_left >= 1:
                pods.append(pod(f"run/w{i}-{j}", cpu=1, gpus=1, node=f"n{i}", tolerations=["gpu"]))
                whole_left -= 1
            elif kind == "share" and whole_left >= 1:
                pods.append(pod(f"run/s{i}-{j}", cpu=1, gpu_milli=400, node=f"n{i}", tolerations=["gpu"]))
                whole_left -= 1  # keep the count simple: a shared GPU is not used whole again
            else:
                pods.append(pod(f"run/c{i}-{j}", cpu=1, node=f"n{i}"))
            cpu_left -= 1
    groups = []
    queue_names = ["default", "q1", "q2"]
    for g in range(draw(st.integers(1, 5))):
        size = draw(st.integers(1, 3))
        min_member = draw(st.integers(1, size))
        name = f"ns/g{g}"
        in_queue = draw(st.sampled_from(queue_names))
        priority = draw(st.sampled_from([0, 10]))
        groups.append(group(name, min_member=min_member, queue=in_queue, priority=priority))
        shape = draw(st.sampled_from(["cpu", "whole", "share", "two"]))
        for k in range(size):
            pods.append(
                pod(
                    f"ns/g{g}-{k}",
                    cpu=draw(st.sampled_from([1, 2, 3])),
                    gpus={"whole": 1, "two": 2}.get(shape, 0),
                    gpu_milli=300 if shape == "share" else 0,
                    group=name,
                    task="worker",
                    selector={"zone": "a"} if draw(st.booleans()) else None,
                    tolerations=["gpu"] if draw(st.booleans()) else [],
                    created=float(g * 10 + k),
                )
            )
    for k in range(draw(st.integers(0, 2))):
        pods.append(pod(f"solo/p{k}", cpu=1, gpus=draw(st.sampled_from([0, 1]))))
    queues = [
        queue("q1", weight=2, capability={"nvidia.com/gpu": draw(st.integers(0, 3))}),
        queue("q2", open=draw(st.booleans())),
    ]
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snap=clusters(), name=st.sampled_from(ALL))
def test_every_decision_keeps_the_hard_rules(snap: Snapshot, name: str) -> None:
    baseline: Baseline = BASELINES[name]
    first = baseline.solve(snap, Policy())
    assert check(snap, first, check_policy(baseline, Policy())) == []
    again = baseline.solve(snap, Policy())
    assert first.model_dump(exclude={"solver"}) == again.model_dump(exclude={"solver"})


# --- Kubernetes semantics every baseline keeps: gates, claims pinned to nodes, queue annotation ---

HOSTNAME = "kubernetes.io/hostname"


@pytest.mark.parametrize("name", ALL)
def test_a_gated_pod_is_never_placed(name: str) -> None:
    snap = snapshot(nodes=[node("a", cpu="8")], pods=[pod("ns/gated", gates=["example.com/hold"]), pod("ns/free")])
    assert set(placed(decide(name, snap))) == {"ns/free"}


@pytest.mark.parametrize("name", ALL)
def test_a_claim_bound_to_a_local_volume_keeps_its_pod_on_that_node(name: str) -> None:
    """Node a comes first and has the room; the volume is pinned to b."""
    snap = snapshot(
        nodes=[node(n, cpu="8", labels={HOSTNAME: n}) for n in "ab"],
        pods=[pod("ns/db", claims=["data"])],
        claims=[pvc("ns/data", volume="local-b")],
        volumes=[pv("local-b", claim="ns/data", node_affinity=[f"{HOSTNAME} in (b)"])],
    )
    assert placed(decide(name, snap)) == {"ns/db": "b"}


@pytest.mark.parametrize("name", ALL)
def test_a_claim_that_is_missing_keeps_its_pod_waiting(name: str) -> None:
    snap = snapshot(nodes=[node("a", cpu="8")], pods=[pod("ns/db", claims=["nowhere"])])
    assert placed(decide(name, snap)) == {}


@pytest.mark.parametrize("name", ALL)
def test_a_lone_pods_queue_annotation_counts_against_that_queue(name: str) -> None:
    """Queue ``small`` may take 1 cpu: of two annotated 1-cpu pods, one goes."""
    snap = snapshot(
        nodes=[node("a", cpu="8")],
        pods=[pod(f"ns/p{i}", cpu="1", queue_name="small", created=i) for i in range(2)],
        queues=[queue("small", capability={"cpu": "1"})],
    )
    assert len(placed(decide(name, snap))) == 1


# --- NodeVolumeLimits and preferred node affinity (kube-scheduler's filter and score) -------------


@pytest.mark.parametrize("name", ALL)
def test_no_baseline_attaches_more_csi_volumes_than_the_csinode_allows(name: str) -> None:
    """Each node attaches one ebs volume and a already holds one: p and q need a node each; r uses
    the volume a holds, so it adds none and still fits there."""
    snap = snapshot(
        nodes=[node(n, cpu="8", labels={HOSTNAME: n}) for n in "abc"],
        pods=[
            pod("ns/held", node="a", claims=["c0"]),
            pod("ns/p", claims=["c1"]),
            pod("ns/q", claims=["c2"]),
            pod("ns/r", claims=["c0"]),
        ],
        claims=[pvc(f"ns/c{i}", volume=f"v{i}") for i in range(3)],
        volumes=[pv(f"v{i}", claim=f"ns/c{i}", csi=("ebs", f"h{i}")) for i in range(3)],
        csinodes=[csinode(n, ebs=1) for n in "abc"],
    )
    where = placed(decide(name, snap))
    assert {where.get("ns/p"), where.get("ns/q")} == {"b", "c"}
    assert where.get("ns/r") == "a"


def test_the_default_scheduler_follows_preferred_node_affinity() -> None:
    """Two equal empty nodes: without the preference the score ties; the preferred term picks b."""
    wish = (PreferredSchedulingTerm(weight=10, preference=node_term(f"{HOSTNAME} in (b)")),)
    pods = [pod(f"ns/p{i}", cpu="1").model_copy(update={"preferred_affinity": wish}) for i in range(3)]
    snap = snapshot(nodes=[node(n, cpu="8", labels={HOSTNAME: n}) for n in "ab"], pods=pods)
    assert set(placed(decide("kube-default", snap)).values()) == {"b"}
