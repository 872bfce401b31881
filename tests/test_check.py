"""The validator: for every hard rule a decision that keeps it and a twin that breaks exactly it."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import (
    bind,
    decision,
    evict,
    group,
    node,
    nominate,
    outcome,
    outcomes_for,
    pod,
    queue,
    snapshot,
)
from tests.builders import spread as spread_rule
from tests.storage_builders import RWOP, csinode, pv, pvc, storage_class
from vcsat.model import (
    Binding,
    Decision,
    HyperNode,
    HyperNodeMember,
    NetworkTopology,
    Pod,
    Policy,
    Snapshot,
    SolverStats,
)
from vcsat.model import resources as res
from vcsat.model.cluster import PodAffinityRules, PodAffinityTerm
from vcsat.model.selectors import label_selector
from vcsat.solver.rules.predicates import predicate_failure
from vcsat.solver.validator import check as check_module
from vcsat.solver.validator.check import RULES, Violation, check


@dataclass
class Case:
    name: str
    snap: Snapshot
    dec: Decision
    rules: list[str]
    policy: Policy = field(default_factory=Policy)


CASES: list[Case] = []


def case(name: str, snap: Snapshot, dec: Decision, *rules: str, policy: Policy | None = None) -> None:
    CASES.append(Case(name, snap, dec, sorted(rules), policy or Policy()))


# --- identity: the pod exists, is ours, pending, placed once; the node exists -----------------

one = snapshot(nodes=[node("n1", cpu="4", memory="8Gi")], pods=[pod("ns/p", cpu="1")])
case("bind", one, decision(one, bindings=[bind("ns/p", "n1")]))
case("nominate", one, decision(one, nominations=[nominate("ns/p", "n1")]))
case("unknown pod", one, decision(one, bindings=[bind("ns/ghost", "n1")]), "UnknownPod")
case("unknown node", one, decision(one, bindings=[bind("ns/p", "n9")]), "UnknownNode")
gated = snapshot(nodes=[node("n1")], pods=[pod("ns/p", gates=["example.com/wait"])])
case("gated pod placed", gated, decision(gated, bindings=[bind("ns/p", "n1")]), "SchedulingGated")
dra_claims = snapshot(nodes=[node("n1")], pods=[pod("ns/p", resource_claims=["gpu"])])
case(
    "resourceClaims placed",
    dra_claims,
    decision(dra_claims, bindings=[bind("ns/p", "n1")]),
    "ResourceClaimsUnsupported",
)
case("bound twice", one, decision(one, bindings=[bind("ns/p", "n1")] * 2), "DuplicatePlacement")
case(
    "bound and nominated",
    one,
    decision(one, bindings=[bind("ns/p", "n1")], nominations=[nominate("ns/p", "n1")]),
    "DuplicatePlacement",
)

for label, other in [
    ("not managed", pod("ns/x", managed=False)),
    ("already bound", pod("ns/x", node="n1")),
    ("finished", pod("ns/x", phase="Succeeded")),
    ("terminating", pod("ns/x", terminating=True)),
]:
    snap = snapshot(nodes=[node("n1")], pods=[other])
    rule = "PodNotManaged" if label == "not managed" else "PodNotPending"
    case(f"placing a pod {label}", snap, decision(snap, bindings=[bind("ns/x", "n1")]), rule)

# --- predicates -------------------------------------------------------------------------------

for label, n, p, fixed, rule in [
    ("NotReady", node("n1", ready=False), pod("ns/p"), node("n1"), "NodeNotReady"),
    ("cordoned", node("n1", unschedulable=True), pod("ns/p"), node("n1"), "NodeUnschedulable"),
    (
        "cordon tolerated",
        node("n1", unschedulable=True),
        pod("ns/p", tolerations=["node.kubernetes.io/unschedulable:NoSchedule"]),
        None,
        "NodeUnschedulable",
    ),
    (
        "selector",
        node("n1", labels={"zone": "b"}),
        pod("ns/p", selector={"zone": "a"}),
        None,
        "NodeSelectorMismatch",
    ),
    (
        "affinity",
        node("n1", labels={"zone": "b"}),
        pod("ns/p", affinity="zone in (a)"),
        None,
        "NodeAffinityMismatch",
    ),
    ("taint", node("n1", taints=["gpu=true:NoSchedule"]), pod("ns/p"), None, "TaintNotTolerated"),
]:
    good = fixed or node("n1", labels={"zone": "a"})
    for n_, ok in ((n, False), (good, True)):
        snap = snapshot(nodes=[n_], pods=[p])
        expected: tuple[str, ...] = () if ok or label == "cordon tolerated" else (rule,)
        case(
            f"predicate {label} ({'ok' if ok else 'broken'})",
            snap,
            decision(snap, bindings=[bind("ns/p", "n1")]),
            *expected,
        )

# --- inter-pod affinity, anti-affinity and host ports -------------------------------------------


def _term(key: str, **labels: str) -> PodAffinityTerm:
    return PodAffinityTerm(label_selector=label_selector(labels), topology_key=key)


def _labelled(p: Pod, **update: object) -> Pod:
    return p.model_copy(update=update)


zoned = [node(f"z{i}", labels={"zone": "a" if i < 2 else "b"}) for i in range(3)]
web = {"app": "web"}
anti_web = PodAffinityRules(required=(_term("zone", app="web"),))
spread = [_labelled(pod(f"ns/w{i}"), labels=web, pod_anti_affinity=anti_web) for i in range(2)]
snap = snapshot(nodes=zoned, pods=spread)
case("anti-affinity kept", snap, decision(snap, bindings=[bind("ns/w0", "z0"), bind("ns/w1", "z2")]))
case(
    "anti-affinity in one zone",
    snap,
    decision(snap, bindings=[bind("ns/w0", "z0"), bind("ns/w1", "z1")]),
    "PodAntiAffinityRulesNotMatch",
    "PodAntiAffinityRulesNotMatch",
)
snap = snapshot(
    nodes=zoned,
    pods=[_labelled(pod("ns/guard", node="z0"), pod_anti_affinity=anti_web), _labelled(pod("ns/w"), labels=web)],
)
case(
    "bound anti-affinity",
    snap,
    decision(snap, bindings=[bind("ns/w", "z1")]),
    "ExistingPodsAntiAffinityRulesNotMatch",
)
case("bound anti-affinity kept", snap, decision(snap, bindings=[bind("ns/w", "z2")]))
near_web = PodAffinityRules(required=(_term("zone", app="web"),))
snap = snapshot(
    nodes=zoned,
    pods=[_labelled(pod("ns/w", node="z2"), labels=web), _labelled(pod("ns/c"), pod_affinity=near_web)],
)
case("affinity met", snap, decision(snap, bindings=[bind("ns/c", "z2")]))
case("affinity unmet", snap, decision(snap, bindings=[bind("ns/c", "z0")]), "PodAffinityRulesNotMatch")
snap = snapshot(nodes=zoned, pods=[_labelled(pod(f"ns/h{i}"), host_ports=(("TCP", "", 80),)) for i in range(2)])
case("host ports apart", snap, decision(snap, bindings=[bind("ns/h0", "z0"), bind("ns/h1", "z1")]))
case(
    "host port twice",
    snap,
    decision(snap, bindings=[bind("ns/h0", "z0"), bind("ns/h1", "z0")]),
    "NodePortsConflict",
    "NodePortsConflict",
)

# --- capacity, now and after evictions ----------------------------------------------------------


def on_n1(*pods_: object, **node_kwargs: object) -> Snapshot:
    kwargs = {"cpu": "4", "memory": "8Gi", **node_kwargs}
    return snapshot(nodes=[node("n1", **kwargs)], pods=pods_)  # type: ignore[arg-type]


snap = on_n1(pod("ns/b", cpu="2", node="n1"), pod("ns/p", cpu="2"))
case("fits beside a bound pod", snap, decision(snap, bindings=[bind("ns/p", "n1")]))
snap = on_n1(pod("ns/b", cpu="2", node="n1"), pod("ns/p", cpu="3"))
case(
    "over cpu now and after",
    snap,
    decision(snap, bindings=[bind("ns/p", "n1")]),
    "CapacityNow",
    "CapacityAfterEvictions",
)
case(
    "nominated over cpu after",
    snap,
    decision(snap, nominations=[nominate("ns/p", "n1")]),
    "CapacityAfterEvictions",
)

snap = on_n1(pod("ns/v", cpu="3", node="n1"), pod("ns/p", cpu="2", priority=10))
case(
    "bound into a victim's room",
    snap,
    decision(snap, bindings=[bind("ns/p", "n1")], evictions=[evict("ns/v")]),
    "CapacityNow",
)
case(
    "nominated into a victim's room",
    snap,
    decision(snap, nominations=[nominate("ns/p", "n1")], evictions=[evict("ns/v")]),
)

# a running pod's required affinity relies on the victim (issue 10: evictions keep it satisfied)
near_v = PodAffinityRules(required=(_term("kubernetes.io/hostname", app="v"),))
snap = on_n1(
    _labelled(pod("ns/v", cpu="3", node="n1"), labels={"app": "v"}),
    _labelled(pod("ns/c", cpu="100m", node="n1"), pod_affinity=near_v),
    pod("ns/p", cpu="2", priority=10),
    labels={"kubernetes.io/hostname": "n1"},
)
case(
    "eviction leaves a running pod's affinity unmet",
    snap,
    decision(snap, nominations=[nominate("ns/p", "n1")], evictions=[evict("ns/v")]),
    "AffinityBrokenByEviction",
)
snap = on_n1(
    _labelled(pod("ns/v", cpu="3", node="n1"), labels={"app": "v"}),
    _labelled(pod("ns/c", cpu="100m", node="n1"), pod_affinity=near_v),
    _labelled(pod("ns/p", cpu="2", priority=10), labels={"app": "v"}),
    labels={"kubernetes.io/hostname": "n1"},
)
case(
    "eviction replaced by a matching preemptor",
    snap,
    decision(snap, nominations=[nominate("ns/p", "n1")], evictions=[evict("ns/v")]),
)

snap = on_n1(pod("ns/b", cpu="100m", node="n1"), pod("ns/p", cpu="100m"), pods=1)
case("pods limit", snap, decision(snap, nominations=[nominate("ns/p", "n1")]), "CapacityAfterEvictions")
snap = on_n1(pod("ns/b", cpu="100m", node="n1"), pod("ns/p", cpu="100m"), pods=2)
case("pods limit kept", snap, decision(snap, nominations=[nominate("ns/p", "n1")]))
bare = pod("ns/p", cpu="100m")
bare = bare.model_copy(update={"requests": {"cpu": 100}})
snap = on_n1(pod("ns/b", cpu="100m", node="n1"), bare, pods=1)
case(
    "pods limit without a pods request",
    snap,
    decision(snap, nominations=[nominate("ns/p", "n1")]),
    "CapacityAfterEvictions",
)

snap = on_n1(pod("ns/p", extra={"example.com/fpga": 1}))
case(
    "resource the node lacks",
    snap,
    decision(snap, bindings=[bind("ns/p", "n1")]),
    "CapacityNow",
    "CapacityAfterEvictions",
)
snap = on_n1(pod("ns/p", extra={"example.com/fpga": 1}), extra={"example.com/fpga": 1})
case("resource the node lists", snap, decision(snap, bindings=[bind("ns/p", "n1")]))

snap = on_n1(pod("ns/b", cpu="1", memory="10Gi", node="n1"), pod("ns/p", cpu="1", memory=0))
case(
    "a node already over on memory takes a pod that asks none",
    snap,
    decision(snap, bindings=[bind("ns/p", "n1")]),
)
snap = on_n1(pod("ns/b", cpu="1", memory="10Gi", node="n1"), pod("ns/p", cpu="1", memory="1Gi"))
case(
    "a node already over on memory takes a pod that asks some",
    snap,
    decision(snap, bindings=[bind("ns/p", "n1")]),
    "CapacityNow",
    "CapacityAfterEvictions",
)
snap = on_n1(pod("ns/b", cpu="8", node="n1"))
case("an overfull node that gets nothing is not the decision's fault", snap, decision(snap))

# --- GPUs -------------------------------------------------------------------------------------


def gpu_node(*pods_: object, gpus: int = 4) -> Snapshot:
    return snapshot(nodes=[node("n1", cpu="32", memory="64Gi", gpus=gpus)], pods=pods_)  # type: ignore[arg-type]


snap = gpu_node(pod("ns/g1", gpus=1), pod("ns/g2", gpus=2), pod("ns/s", gpu_milli=500), pod("ns/c"))
GPU_TABLE: list[tuple[str, list[Binding], tuple[str, ...]]] = [
    ("one GPU", [bind("ns/g1", "n1", [3])], ()),
    ("two GPUs", [bind("ns/g2", "n1", [0, 2])], ()),
    ("a share", [bind("ns/s", "n1", [1])], ()),
    ("GPU list empty", [bind("ns/g1", "n1", [])], ("GpuIndices",)),
    ("GPU list too long", [bind("ns/g1", "n1", [0, 1])], ("GpuIndices",)),
    ("GPU index repeated", [bind("ns/g2", "n1", [1, 1])], ("GpuIndices",)),
    ("GPU index out of range", [bind("ns/g1", "n1", [4])], ("GpuIndices",)),
    ("GPU index negative", [bind("ns/g1", "n1", [-1])], ("GpuIndices",)),
    ("GPU listed for a CPU pod", [bind("ns/c", "n1", [0])], ("GpuIndices",)),
    ("share without index", [bind("ns/s", "n1", [])], ("GpuIndices",)),
    ("share on two GPUs", [bind("ns/s", "n1", [0, 1])], ("GpuIndices",)),
    ("two pods on one GPU", [bind("ns/g1", "n1", [2]), bind("ns/g2", "n1", [1, 2])], ("GpuConflict",)),
    ("whole GPU and share on one GPU", [bind("ns/g1", "n1", [2]), bind("ns/s", "n1", [2])], ("GpuConflict",)),
]
for label, placements, rules in GPU_TABLE:
    case(label, snap, decision(snap, bindings=placements), *rules)

snap = gpu_node(pod("ns/s", gpu_milli=500), gpus=0)
case("share on a node without GPUs", snap, decision(snap, bindings=[bind("ns/s", "n1", [0])]), "GpuIndices")

held = pod("ns/b", gpus=1, node="n1", gpu_ids=[0])
snap = gpu_node(held, pod("ns/g1", gpus=1))
case("GPU held by a bound pod", snap, decision(snap, bindings=[bind("ns/g1", "n1", [0])]), "GpuConflict")
case("GPU free beside a bound pod", snap, decision(snap, bindings=[bind("ns/g1", "n1", [1])]))
case(
    "nominated onto a GPU not freed",
    snap,
    decision(snap, nominations=[nominate("ns/g1", "n1", [0])]),
    "GpuConflict",
)

snap = gpu_node(pod("ns/b", gpus=2, node="n1"), pod("ns/g1", gpus=1))
case(
    "unannotated bound pod holds the lowest GPUs",
    snap,
    decision(snap, bindings=[bind("ns/g1", "n1", [1])]),
    "GpuConflict",
)
case("GPU above an unannotated bound pod", snap, decision(snap, bindings=[bind("ns/g1", "n1", [2])]))
snap = gpu_node(pod("ns/a", gpus=1, node="n1", gpu_ids=[0]), pod("ns/b", gpus=1, node="n1"), pod("ns/g1", gpus=1))
case(
    "unannotated skips annotated GPUs",
    snap,
    decision(snap, bindings=[bind("ns/g1", "n1", [1])]),
    "GpuConflict",
)
case("unannotated leaves higher GPUs", snap, decision(snap, bindings=[bind("ns/g1", "n1", [2])]))
snap = gpu_node(
    pod("ns/young", gpus=1, node="n1", created=2.0),
    pod("ns/old", gpu_milli=500, node="n1", created=1.0),
    pod("ns/g1", gpus=1),
    pod("ns/s5", gpu_milli=500),
)
case("unannotated oldest first: a share", snap, decision(snap, bindings=[bind("ns/s5", "n1", [0])]))
case(
    "unannotated oldest first: then a whole GPU",
    snap,
    decision(snap, bindings=[bind("ns/g1", "n1", [1])]),
    "GpuConflict",
)
case("unannotated oldest first: GPU left", snap, decision(snap, bindings=[bind("ns/g1", "n1", [2])]))

snap = gpu_node(pod("ns/v", gpus=1, node="n1", gpu_ids=[0]), pod("ns/p", gpus=1, priority=10))
case(
    "bound onto a victim's GPU",
    snap,
    decision(snap, bindings=[bind("ns/p", "n1", [0])], evictions=[evict("ns/v")]),
    "GpuConflict",
)
case(
    "nominated onto a victim's GPU",
    snap,
    decision(snap, nominations=[nominate("ns/p", "n1", [0])], evictions=[evict("ns/v")]),
)

share_held = pod("ns/sh", gpu_milli=300, node="n1", gpu_ids=[0])
snap = gpu_node(share_held, pod("ns/g1", gpus=1), pod("ns/s5", gpu_milli=500), pod("ns/s8", gpu_milli=800))
case("whole GPU onto shares", snap, decision(snap, bindings=[bind("ns/g1", "n1", [0])]), "GpuConflict")
case("share beside a share", snap, decision(snap, bindings=[bind("ns/s5", "n1", [0])]))
case("shares over one GPU", snap, decision(snap, bindings=[bind("ns/s8", "n1", [0])]), "GpuShareOverflow")
case(
    "two new shares over one GPU",
    snap,
    decision(snap, bindings=[bind("ns/s5", "n1", [1]), bind("ns/s8", "n1", [1])]),
    "GpuShareOverflow",
)
case(
    "two new shares within one GPU",
    snap,
    decision(snap, bindings=[bind("ns/s5", "n1", [1]), bind("ns/s8", "n1", [2])]),
)
snap = gpu_node(held, pod("ns/s5", gpu_milli=500))
case("share onto a whole GPU", snap, decision(snap, bindings=[bind("ns/s5", "n1", [0])]), "GpuConflict")

# --- hard networkTopology: a gang's pods of one cycle within one HyperNode of its tier ------------

_racks = [
    HyperNode(name="r1", tier=1, members=(HyperNodeMember(type="Node", regex="^a"),)),
    HyperNode(name="r2", tier=1, members=(HyperNodeMember(type="Node", regex="^b"),)),
]
_pair = [pod(f"ns/t-{i}", group="ns/t") for i in range(2)]
for _mode, _spanning in (("hard", ["NetworkTopologyHard"]), ("soft", [])):
    _topology = NetworkTopology(mode=_mode, highest_tier_allowed=1)
    snap = snapshot(
        nodes=[node(n) for n in ("a1", "a2", "b1", "c1")],
        pods=_pair,
        groups=[group("ns/t", min_member=2).model_copy(update={"network_topology": _topology})],
        hypernodes=_racks,
    )
    case(f"{_mode} topology, one rack", snap, decision(snap, bindings=[bind("ns/t-0", "a1"), bind("ns/t-1", "a2")]))
    case(
        f"{_mode} topology, two racks",
        snap,
        decision(snap, bindings=[bind("ns/t-0", "a1"), bind("ns/t-1", "b1")]),
        *_spanning,
    )
    case(
        f"{_mode} topology, a rack and a node outside every rack, one pod nominated",
        snap,
        decision(snap, bindings=[bind("ns/t-0", "a1")], nominations=[nominate("ns/t-1", "c1")]),
        *_spanning,
    )
# The group's running pods hold its new ones to their rack (Volcano's allocated HyperNode).
_running = pod("ns/t-run", group="ns/t", node="a1", phase="Running")
for _mode, _spanning in (("hard", ["NetworkTopologyHard"]), ("soft", [])):
    _topology = NetworkTopology(mode=_mode, highest_tier_allowed=1)
    _grown = snapshot(
        nodes=[node(n) for n in ("a1", "a2", "b1", "c1")],
        pods=[_running, *_pair],
        groups=[group("ns/t", min_member=2).model_copy(update={"network_topology": _topology})],
        hypernodes=_racks,
    )
    case(
        f"{_mode} topology, new pods in the running pod's rack",
        _grown,
        decision(_grown, bindings=[bind("ns/t-0", "a2")]),
    )
    case(
        f"{_mode} topology, one new pod in another rack than the running pod",
        _grown,
        decision(_grown, bindings=[bind("ns/t-0", "b1")]),
        *_spanning,
    )
_leaving = snapshot(
    nodes=[node(n) for n in ("a1", "a2", "b1", "c1")],
    pods=[_running.model_copy(update={"terminating": True}), *_pair],
    groups=[group("ns/t", min_member=2).model_copy(update={"network_topology": NetworkTopology(mode="hard")})],
    hypernodes=_racks,
)
case("hard topology, the running pod terminating", _leaving, decision(_leaving, bindings=[bind("ns/t-0", "b1")]))
case(
    "hard topology, two racks, topology off",
    snap,
    decision(snap, bindings=[bind("ns/t-0", "a1"), bind("ns/t-1", "b1")]),
    policy=Policy(topology=False),
)

# --- gangs ------------------------------------------------------------------------------------

gang3 = [pod(f"ns/g-{i}", group="ns/g") for i in range(3)]
snap = snapshot(nodes=[node("n1")], pods=gang3, groups=[group("ns/g", min_member=3)])
all3 = [bind(f"ns/g-{i}", "n1") for i in range(3)]
case("whole gang", snap, decision(snap, bindings=all3))
case("partial gang", snap, decision(snap, bindings=all3[:2]), "GangUnsatisfied")
case("partial gang, gang off", snap, decision(snap, bindings=all3[:2]), policy=Policy(gang=False))
case("gang partly nominated", snap, decision(snap, bindings=all3[:2], nominations=[nominate("ns/g-2", "n1")]))
snap = snapshot(
    nodes=[node("n1")],
    pods=[*gang3[:2], pod("ns/g-run", group="ns/g", node="n1")],
    groups=[group("ns/g", min_member=3)],
)
case("running members count", snap, decision(snap, bindings=all3[:2]))
snap = snapshot(
    nodes=[node("n1")],
    pods=[*gang3[:2], pod("ns/g-done", group="ns/g", node="n1", phase="Succeeded")],
    groups=[group("ns/g", min_member=3, phase="Completed")],
)
case("succeeded members count", snap, decision(snap, bindings=all3[:2]))
snap = snapshot(
    nodes=[node("n1")],
    pods=[*gang3[:2], pod("ns/g-bad", group="ns/g", node="n1", phase="Failed")],
    groups=[group("ns/g", min_member=3)],
)
case("failed members do not count", snap, decision(snap, bindings=all3[:2]), "GangUnsatisfied")

tasks = [
    pod("ns/ps-0", group="ns/t", task="ps"),
    *(pod(f"ns/w-{i}", group="ns/t", task="worker") for i in range(2)),
]
snap = snapshot(
    nodes=[node("n1")],
    pods=tasks,
    groups=[group("ns/t", min_member=2, min_task_member={"ps": 1, "worker": 1})],
)
case("every task satisfied", snap, decision(snap, bindings=[bind("ns/ps-0", "n1"), bind("ns/w-0", "n1")]))
case(
    "a task short",
    snap,
    decision(snap, bindings=[bind("ns/w-0", "n1"), bind("ns/w-1", "n1")]),
    "GangTaskUnsatisfied",
)

snap = snapshot(nodes=[node("n1")], pods=[pod("ns/p", group="ns/missing")])
case("PodGroup not in the snapshot", snap, decision(snap, bindings=[bind("ns/p", "n1")]), "UnknownPodGroup")

# --- queues -----------------------------------------------------------------------------------


def queued(*pods_: object, q: object = None, extra_groups: tuple[object, ...] = ()) -> Snapshot:
    return snapshot(
        nodes=[node("n1", cpu="8", gpus=4)],
        pods=pods_,  # type: ignore[arg-type]
        groups=[group("ns/q-run", queue="q"), group("ns/q-new", queue="q"), *extra_groups],  # type: ignore[list-item]
        queues=[q or queue("q", capability={"cpu": "2"})],  # type: ignore[list-item]
    )


run1 = pod("ns/r", cpu="1", group="ns/q-run", node="n1")
snap = queued(run1, pod("ns/p", cpu="1", group="ns/q-new"))
case("queue within capability", snap, decision(snap, bindings=[bind("ns/p", "n1")]))
snap = queued(run1, pod("ns/p", cpu="2", group="ns/q-new"))
case("queue over capability", snap, decision(snap, bindings=[bind("ns/p", "n1")]), "QueueOverCapability")
snap = queued(pod("ns/r", cpu="2", group="ns/q-run", node="n1"), pod("ns/p", cpu="2", group="ns/q-new", priority=5))
case(
    "queue room freed by a victim",
    snap,
    decision(snap, nominations=[nominate("ns/p", "n1")], evictions=[evict("ns/r")]),
)
case("queue room not freed", snap, decision(snap, nominations=[nominate("ns/p", "n1")]), "QueueOverCapability")
snap = queued(
    pod("ns/r", cpu="1", gpus=2, group="ns/q-run", node="n1", gpu_ids=[0, 1]),
    pod("ns/p", cpu="1", group="ns/q-new"),
    pod("ns/pg", cpu="1", gpus=1, group="ns/q-new"),
    q=queue("q", capability={"cpu": "4", "nvidia.com/gpu": 1}),
)
case(
    "queue already over on a resource the new pods do not ask",
    snap,
    decision(snap, bindings=[bind("ns/p", "n1")]),
)
case(
    "queue already over on a resource the new pods ask",
    snap,
    decision(snap, bindings=[bind("ns/p", "n1"), bind("ns/pg", "n1", [2])]),
    "QueueOverCapability",
)
snap = snapshot(
    nodes=[node("n1")],
    pods=[pod("ns/other", cpu="2", node="n1", managed=False), pod("ns/p", cpu="2")],
    queues=[queue("default", capability={"cpu": "2"})],
)
case("other schedulers' pods are in no queue", snap, decision(snap, bindings=[bind("ns/p", "n1")]))
snap = snapshot(
    nodes=[node("n1")],
    pods=[pod("ns/mine", cpu="2", node="n1"), pod("ns/p", cpu="2")],
    queues=[queue("default", capability={"cpu": "2"})],
)
case(
    "group-less pods are in queue default",
    snap,
    decision(snap, bindings=[bind("ns/p", "n1")]),
    "QueueOverCapability",
)

snap = queued(pod("ns/p", cpu="1", group="ns/q-new"), q=queue("q", open=False))
case("closed queue", snap, decision(snap, bindings=[bind("ns/p", "n1")]), "QueueClosed")
case("closed queue gets nothing", snap, decision(snap))
snap = snapshot(nodes=[node("n1")], pods=[pod("ns/p", group="ns/g")], groups=[group("ns/g", queue="nope")])
case("queue not in the snapshot", snap, decision(snap, bindings=[bind("ns/p", "n1")]), "UnknownQueue")
no_default = Snapshot(nodes=(node("n1"),), pods=(pod("ns/p"),))
case("queue default exists unlisted", no_default, decision(no_default, bindings=[bind("ns/p", "n1")]))

# --- evictions --------------------------------------------------------------------------------


def preemption(
    victim_key: str = "ns/v", *, p_priority: int = 10, p_group: str | None = None, **victim: object
) -> Snapshot:
    return snapshot(
        nodes=[node("n1", cpu="4")],
        pods=[
            pod(victim_key, cpu="4", node="n1", **victim),  # type: ignore[arg-type]
            pod("ns/p", cpu="4", priority=p_priority, group=p_group),
            pod("ns/w", cpu="1", node=None),
        ],
        groups=[group("ns/other", queue="qb"), group("ns/vg", queue="qa"), group("ns/pg", queue="qb")],
        queues=[queue("qa"), queue("qb"), queue("qn", reclaimable=False)],
    )


def preempting(snap: Snapshot, victim: str = "ns/v", reason: str = "preempt", *more: str) -> Decision:
    evictions = [evict(victim, reason), *(evict(k) for k in more)]  # type: ignore[arg-type]
    return decision(snap, nominations=[nominate("ns/p", "n1")], evictions=evictions)


snap = preemption()
case("preempt a lower priority", snap, preempting(snap))
case(
    "preempt an equal priority",
    preemption(p_priority=0),
    preempting(preemption(p_priority=0)),
    "PreemptUnjustified",
)
snap = preemption(p_group="ns/other")
case("preempt across queues", snap, preempting(snap), "PreemptUnjustified")
snap = preemption()
case("preempt for nobody", snap, decision(snap, evictions=[evict("ns/v")]), "PreemptUnjustified")
case("evict a pod not in the snapshot", snap, preempting(snap, "ns/v", "preempt", "ns/ghost"), "UnknownVictim")
case("evict twice", snap, preempting(snap, "ns/v", "preempt", "ns/v"), "DuplicateEviction")
case("evict a pending pod", snap, preempting(snap, "ns/v", "preempt", "ns/w"), "VictimNotRunning")
case(
    "evict a pending pod twice",
    snap,
    preempting(snap, "ns/v", "preempt", "ns/w", "ns/w"),
    "VictimNotRunning",
    "DuplicateEviction",
)
snap = preemption(phase="Succeeded")
case("evict a finished pod", snap, decision(snap, evictions=[evict("ns/v")]), "VictimNotRunning")
PROTECTED: list[tuple[str, str, dict[str, Any]]] = [
    ("in kube-system", "kube-system/v", {}),
    ("system-cluster-critical", "ns/v", {"priority_class": "system-cluster-critical"}),
    ("system-node-critical", "ns/v", {"priority_class": "system-node-critical"}),
    ("preemptable false", "ns/v", {"preemptable": False}),
    ("terminating", "ns/v", {"terminating": True}),
    ("of another scheduler", "ns/v", {"managed": False}),
]
for label, victim_key, victim_kwargs in PROTECTED:
    snap = preemption(victim_key, **victim_kwargs)
    case(f"victim {label}", snap, preempting(snap, victim_key), "VictimProtected")

snap = preemption(group="ns/vg", p_group="ns/pg", p_priority=0)
case("reclaim from another queue", snap, preempting(snap, reason="reclaim"))
snap = preemption(group="ns/vg", p_group=None, p_priority=0)
case("reclaim into the default queue", snap, preempting(snap, reason="reclaim"))
snap = snapshot(
    nodes=[node("n1", cpu="4")],
    pods=[pod("ns/v", cpu="4", node="n1", group="ns/vn"), pod("ns/p", cpu="4", group="ns/pg")],
    groups=[group("ns/vn", queue="qn"), group("ns/pg", queue="qb")],
    queues=[queue("qn", reclaimable=False), queue("qb")],
)
case("reclaim from a non-reclaimable queue", snap, preempting(snap, reason="reclaim"), "ReclaimUnjustified")
snap = snapshot(
    nodes=[node("n1", cpu="4")],
    pods=[pod("ns/v", cpu="4", node="n1", group="ns/vg"), pod("ns/p", cpu="4", group="ns/pg")],
    groups=[group("ns/vg", queue="qa"), group("ns/pg", queue="qa")],
    queues=[queue("qa")],
)
case("reclaim within one queue", snap, preempting(snap, reason="reclaim"), "ReclaimUnjustified")

gang_running = [pod(f"ns/g-{i}", cpu="1", node="n1", group="ns/g") for i in range(3)]
snap = snapshot(
    nodes=[node("n1", cpu="4")],
    pods=[*gang_running, pod("ns/p", cpu="2", priority=10)],
    groups=[group("ns/g", min_member=2)],
)
case("victim gang keeps minMember", snap, preempting(snap, "ns/g-0"))
case("victim gang broken", snap, preempting(snap, "ns/g-0", "preempt", "ns/g-1"), "VictimGangBroken")
case(
    "victim gang broken, gang off",
    snap,
    preempting(snap, "ns/g-0", "preempt", "ns/g-1"),
    policy=Policy(gang=False),
)
case("victim gang evicted whole", snap, preempting(snap, "ns/g-0", "preempt", "ns/g-1", "ns/g-2"))

# --- podgroup outcomes ------------------------------------------------------------------------

snap = snapshot(
    nodes=[node("n1")],
    pods=[pod("ns/a"), pod("ns/g-0", group="ns/g"), pod("ns/g-1", group="ns/g"), pod("ns/z", node="n1")],
    groups=[group("ns/g", min_member=2), group("ns/idle")],
)
placed = [bind("ns/a", "n1")]
right = outcomes_for(snap, ["ns/a"])
assert [o.podgroup for o in right] == ["ns/a", "ns/g"]
case("podgroups right", snap, decision(snap, bindings=placed, podgroups=right))
case("podgroup missing", snap, decision(snap, bindings=placed, podgroups=right[:1]), "PodGroupMissing")
case(
    "podgroup without pending pods",
    snap,
    decision(snap, bindings=placed, podgroups=[*right, outcome("ns/idle", "Pending", "Unschedulable")]),
    "PodGroupUnexpected",
)
case(
    "podgroup twice",
    snap,
    decision(snap, bindings=placed, podgroups=[right[0], right[0], right[1]]),
    "PodGroupDuplicate",
)
case("podgroups out of order", snap, decision(snap, bindings=placed, podgroups=right[::-1]), "PodGroupOrder")
case(
    "placed but Pending",
    snap,
    decision(snap, bindings=placed, podgroups=[outcome("ns/a", "Pending", "Unschedulable"), right[1]]),
    "PodGroupPhase",
)
case(
    "Running but not placed",
    snap,
    decision(snap, bindings=placed, podgroups=[right[0], outcome("ns/g")]),
    "PodGroupPhase",
)
case(
    "Running with a reason",
    snap,
    decision(snap, bindings=placed, podgroups=[outcome("ns/a", reason="Unschedulable"), right[1]]),
    "PodGroupReason",
)
case(
    "Pending without a reason",
    snap,
    decision(snap, bindings=placed, podgroups=[right[0], outcome("ns/g", "Pending")]),
    "PodGroupReason",
)
case(
    "Inqueue with a reason",
    snap,
    decision(snap, bindings=placed, podgroups=[right[0], outcome("ns/g", "Inqueue", "QueueOverused")]),
)
snap = preemption()
waiting = [outcome("ns/p", "Inqueue", "WaitingForEviction"), outcome("ns/w", "Pending", "Unschedulable")]
case(
    "nominated and waiting for eviction",
    snap,
    decision(snap, nominations=[nominate("ns/p", "n1")], evictions=[evict("ns/v")], podgroups=waiting),
)
waiting[0] = outcome("ns/p", "Inqueue", "Unschedulable")
case(
    "nominated but called unschedulable",
    snap,
    decision(snap, nominations=[nominate("ns/p", "n1")], evictions=[evict("ns/v")], podgroups=waiting),
    "PodGroupPhase",
)

# --- solver stats -----------------------------------------------------------------------------

snap = snapshot(nodes=[node("n1")])
SOLVER_TABLE: list[tuple[str, str, float, float, float, tuple[str, ...]]] = [
    ("optimal", "OPTIMAL", 10.0, 10.0, 0.0, ()),
    ("optimal with a gap", "OPTIMAL", 10.0, 12.0, 0.0, ("SolverStats",)),
    ("optimal within the allowed gap", "OPTIMAL", 10.0, 12.0, 0.5, ()),
    ("feasible", "FEASIBLE", 10.0, 12.0, 0.0, ()),
    ("feasible bound below objective", "FEASIBLE", 10.0, 9.0, 0.0, ("SolverStats",)),
    ("fallback without a bound", "FALLBACK", 5.0, 0.0, 0.0, ()),
    ("objective not a number", "FEASIBLE", math.nan, 1.0, 0.0, ("SolverStats",)),
    ("bound infinite", "FEASIBLE", 1.0, math.inf, 0.0, ("SolverStats",)),
]
for label, status, objective, bound, gap, rules in SOLVER_TABLE:
    dec = decision(snap, status=status, objective=objective, bound=bound)  # type: ignore[arg-type]
    case(f"solver {label}", snap, dec, *rules, policy=Policy(relative_gap=gap))
dec = decision(snap)
case(
    "negative seconds",
    snap,
    dec.model_copy(update={"solver": dec.solver.model_copy(update={"seconds": -1.0})}),
    "SolverStats",
)


# --- volumes (check_volumes): each rule kept and broken --------------------------------------

_zones = [node(name, labels={"topology.kubernetes.io/zone": zone}) for name, zone in (("a", "z1"), ("b", "z2"))]
_pinned = snapshot(
    nodes=_zones,
    pods=[pod("ns/p", claims=["data"])],
    claims=[pvc("ns/data", volume="pv")],
    volumes=[pv("pv", node_affinity=["topology.kubernetes.io/zone in (z2)"], claim="ns/data")],
)
case("volume node affinity kept", _pinned, decision(_pinned, bindings=[bind("ns/p", "b")]))
case("volume node affinity broken", _pinned, decision(_pinned, bindings=[bind("ns/p", "a")]), "VolumeBinding")
_zoned = snapshot(
    nodes=_zones,
    pods=[pod("ns/p", claims=["data"])],
    claims=[pvc("ns/data", volume="pv")],
    volumes=[pv("pv", claim="ns/data", labels={"failure-domain.beta.kubernetes.io/zone": "z1"})],
)
case("volume zone kept", _zoned, decision(_zoned, bindings=[bind("ns/p", "a")]))
case("volume zone broken", _zoned, decision(_zoned, bindings=[bind("ns/p", "b")]), "VolumeZone")
_rwop = snapshot(
    nodes=_zones,
    pods=[pod("ns/p", claims=["data"]), pod("ns/q", claims=["data"])],
    claims=[pvc("ns/data", storage_class="wffc", modes=[RWOP])],
    storage_classes=[storage_class("wffc")],
)
case("one ReadWriteOncePod user", _rwop, decision(_rwop, bindings=[bind("ns/p", "a")]))
case(
    "two ReadWriteOncePod users",
    _rwop,
    decision(_rwop, bindings=[bind("ns/p", "a"), bind("ns/q", "a")]),
    "VolumeRestrictions",
)
_csi = snapshot(
    nodes=_zones,
    pods=[pod("ns/p", claims=["c1"]), pod("ns/q", claims=["c2"])],
    claims=[pvc("ns/c1", volume="v1"), pvc("ns/c2", volume="v2")],
    volumes=[pv("v1", claim="ns/c1", csi=("ebs", "h1")), pv("v2", claim="ns/c2", csi=("ebs", "h2"))],
    csinodes=[csinode("a", ebs=1), csinode("b", ebs=1)],
)
case("volume limit kept", _csi, decision(_csi, bindings=[bind("ns/p", "a"), bind("ns/q", "b")]))
case(
    "volume limit broken",
    _csi,
    decision(_csi, bindings=[bind("ns/p", "a"), bind("ns/q", "a")]),
    "NodeVolumeLimits",
)
# --- pod topology spread (DoNotSchedule) ------------------------------------------------------

_web = {"app": "web"}
snap = snapshot(
    nodes=[node(f"n{z}", labels={"zone": z}) for z in "ab"] + [node("bare")],
    pods=[pod(f"ns/w{i}", cpu="0.5", labels=_web, spread=[spread_rule("zone", 1, _web)]) for i in range(2)],
)
case("spread kept", snap, decision(snap, bindings=[bind("ns/w0", "na"), bind("ns/w1", "nb")]))
case(
    "spread: both in one zone",
    snap,
    decision(snap, bindings=[bind("ns/w0", "na"), bind("ns/w1", "na")]),
    "PodTopologySpread",
    "PodTopologySpread",
)
case("spread: node without the key", snap, decision(snap, bindings=[bind("ns/w0", "bare")]), "PodTopologySpread")


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_rule(c: Case) -> None:
    violations = check(c.snap, c.dec, c.policy)
    assert [v.rule for v in violations] == c.rules, [str(v) for v in violations]
    assert violations == sorted(violations)
    assert all(v.rule in RULES for v in violations)
    assert all(v.subject and v.message and "\n" not in v.message for v in violations)


def test_every_rule_has_a_broken_case() -> None:
    broken = {rule for c in CASES for rule in c.rules}
    assert broken == set(RULES)


def test_builders_take_model_units_too() -> None:
    mi = 2**20
    assert node("n1", cpu_milli=1500, memory_mib=100).allocatable == {"cpu": 1500, "memory": 100 * mi, "pods": 110}
    assert pod("ns/p", cpu_milli=250, memory_mib=64).requests == {"cpu": 250, "memory": 64 * mi, "pods": 1}
    assert pod("ns/p", cpu="250m", memory="64Mi").requests == {"cpu": 250, "memory": 64 * mi, "pods": 1}
    assert node("n1", cpu=1.5, memory=100).allocatable == {"cpu": 1500, "memory": 100 * mi, "pods": 110}
    assert pod("ns/p", cpu="0.0001", memory="1G").requests == {"cpu": 1, "memory": 10**9, "pods": 1}


def test_violations_name_subject_and_amounts() -> None:
    snap = on_n1(pod("ns/b", cpu="2", node="n1"), pod("ns/p", cpu="3"))
    [violation] = check(snap, decision(snap, nominations=[nominate("ns/p", "n1")]))
    assert violation == Violation(
        "CapacityAfterEvictions",
        "n1",
        "cpu after evictions: 2000m cpu held + 3000m cpu new > 4000m cpu allocatable",
    )
    snap = gpu_node(held, pod("ns/g1", gpus=1))
    [violation] = check(snap, decision(snap, bindings=[bind("ns/g1", "n1", [0])]))
    assert (violation.subject, violation.message) == ("n1", "GPU 0 now held by ns/b, ns/g1")


# --- properties: never raises; a decision valid by construction passes -------------------------

ZONES = ["a", "b"]
NODE_TAINTS = ["gpu=true:NoSchedule", "maint:NoExecute", "soft:PreferNoSchedule"]
POD_TOLERATIONS = ["gpu", "maint", "node.kubernetes.io/unschedulable:NoSchedule", "*"]


@st.composite
def clusters(draw: st.DrawFn) -> Snapshot:
    nodes = [
        node(
            f"n{i}",
            cpu=draw(st.sampled_from(["1", "2", "4"])),
            memory=draw(st.sampled_from(["2Gi", "4Gi"])),
            gpus=draw(st.sampled_from([0, 0, 1, 2, 4])),
            pods=draw(st.integers(1, 5)),
            labels={"zone": draw(st.sampled_from(ZONES))} if draw(st.booleans()) else {},
            taints=draw(st.lists(st.sampled_from(NODE_TAINTS), max_size=2, unique=True)),
            unschedulable=draw(st.integers(0, 5)) == 0,
            ready=draw(st.integers(0, 5)) > 0,
        )
        for i in range(draw(st.integers(1, 4)))
    ]
    queues = [
        queue(
            "q1",
            capability=draw(st.sampled_from([None, {"cpu": "2"}, {"nvidia.com/gpu": 1}, {"pods": 2}])),
            open=draw(st.integers(0, 4)) > 0,
        ),
        queue("q2", reclaimable=draw(st.booleans())),
    ]
    groups = [
        group(
            f"ns/g{i}",
            min_member=draw(st.integers(1, 3)),
            queue=draw(st.sampled_from(["default", "q1", "q2"])),
            min_task_member=draw(st.sampled_from([{}, {"a": 1}])),
        )
        for i in range(draw(st.integers(0, 3)))
    ]
    group_keys = [None, "ns/missing", *(g.key for g in groups)]

    def gpu_kwargs() -> dict[str, int]:
        kind = draw(st.sampled_from(["none", "none", "whole", "share"]))
        if kind == "whole":
            return {"gpus": draw(st.integers(1, 2))}
        if kind == "share":
            return {"gpu_milli": draw(st.sampled_from([250, 500, 1000]))}
        return {}

    pods = []
    for i in range(draw(st.integers(0, 5))):
        gpu = gpu_kwargs()
        pods.append(
            pod(
                f"ns/b{i}",
                cpu=draw(st.sampled_from(["100m", "500m", "1"])),
                memory="512Mi",
                node=draw(st.sampled_from([n.name for n in nodes])),
                group=draw(st.sampled_from(group_keys)),
                task=draw(st.sampled_from(["", "a"])),
                managed=draw(st.integers(0, 4)) > 0,
                phase=draw(st.sampled_from(["Running", "Running", "Succeeded"])),
                priority=draw(st.integers(0, 2)),
                gpu_ids=draw(st.sampled_from([None, [0], [1], [0, 1]])) if gpu else None,
                **gpu,  # type: ignore[arg-type]
            )
        )
    for i in range(draw(st.integers(0, 8))):
        pods.append(
            pod(
                f"ns/p{i}",
                cpu=draw(st.sampled_from(["100m", "500m", "1"])),
                memory=draw(st.sampled_from(["256Mi", "1Gi"])),
                group=draw(st.sampled_from(group_keys)),
                task=draw(st.sampled_from(["", "a"])),
                managed=draw(st.integers(0, 6)) > 0,
                priority=draw(st.integers(0, 2)),
                selector={"zone": draw(st.sampled_from(ZONES))} if draw(st.integers(0, 3)) == 0 else None,
                affinity="zone notin (b)" if draw(st.integers(0, 3)) == 0 else (),
                tolerations=draw(st.lists(st.sampled_from(POD_TOLERATIONS), max_size=2)),
                **gpu_kwargs(),  # type: ignore[arg-type]
            )
        )
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=queues)


def _demand(p: Pod) -> dict[str, int]:
    out = {r: a for r, a in p.requests.items() if r != res.GPU_MILLI and a > 0}
    out[res.PODS] = max(out.get(res.PODS, 0), 1)
    return out


def _queue_of(snap: Snapshot, p: Pod) -> str | None:
    if p.group is None:
        return "default"
    g = snap.podgroup_by_key.get(p.group)
    return g.queue if g else None


def greedy_decision(snap: Snapshot, policy: Policy) -> Decision:
    """Place gang by gang, pod by pod, first node that passes predicates, capacity, GPUs and quota;
    keep a gang only when it reaches its minimums. Valid by construction, independent of check."""
    free = {n.name: dict(n.allocatable) for n in snap.nodes}
    whole: dict[str, set[int]] = {n.name: set() for n in snap.nodes}
    shares: dict[str, dict[int, int]] = {n.name: {} for n in snap.nodes}
    used: dict[str, dict[str, int]] = {q.name: {} for q in snap.queues}
    for n in snap.nodes:
        bound = [p for p in snap.pods if p.bound and p.node_name == n.name]
        for p in bound:
            for r, a in _demand(p).items():
                free[n.name][r] = free[n.name].get(r, 0) - a
        for p in bound:
            for i in p.gpu_ids or ():
                if p.gpus:
                    whole[n.name].add(i)
                elif p.gpu_milli:
                    shares[n.name][i] = shares[n.name].get(i, 0) + p.gpu_milli
        # Pods without gpu-ids, oldest first, take the lowest indices left (contract §1).
        for p in sorted((p for p in bound if p.gpu_ids is None), key=lambda p: (p.created, p.key)):
            w, sh = whole[n.name], shares[n.name]
            if p.gpus:
                w.update([i for i in range(n.gpus) if i not in w and i not in sh][: p.gpus])
            elif p.gpu_milli:
                room = [i for i in range(n.gpus) if i not in w and sh.get(i, 0) + p.gpu_milli <= 1000]
                if room:
                    sh[room[0]] = sh.get(room[0], 0) + p.gpu_milli
    for p in snap.pods:
        held_in = _queue_of(snap, p)
        if p.bound and p.managed and held_in in used:
            for r, a in p.requests.items():
                used[held_in][r] = used[held_in].get(r, 0) + a

    bindings = []
    gangs: dict[str, list[Pod]] = {}
    for p in snap.pods:
        if p.pending:
            gangs.setdefault(p.group or p.key, []).append(p)
    for _gang, members in sorted(gangs.items()):
        q_name = _queue_of(snap, members[0])
        q = snap.queue_by_name.get(q_name or "")
        if q is None or not q.open:
            continue
        trial_free, trial_whole = copy.deepcopy(free), copy.deepcopy(whole)
        trial_shares, trial_used = copy.deepcopy(shares), copy.deepcopy(used[q.name])
        placed: list[tuple[Pod, str, list[int]]] = []
        for p in sorted(members, key=lambda p: p.key):
            for n in snap.nodes:
                if predicate_failure(p, n) is not None:
                    continue
                d = _demand(p)
                if any(a > trial_free[n.name].get(r, 0) for r, a in d.items()):
                    continue
                cap = q.capability or {}
                if any(r in cap and a > 0 and trial_used.get(r, 0) + a > cap[r] for r, a in p.requests.items()):
                    continue
                taken = trial_whole[n.name] | set(trial_shares[n.name])
                if p.gpus:
                    ids = [i for i in range(n.gpus) if i not in taken][: p.gpus]
                    if len(ids) < p.gpus:
                        continue
                elif p.gpu_milli:
                    ids = [
                        i
                        for i in range(n.gpus)
                        if i not in trial_whole[n.name] and trial_shares[n.name].get(i, 0) + p.gpu_milli <= 1000
                    ][:1]
                    if not ids:
                        continue
                else:
                    ids = []
                for r, a in d.items():
                    trial_free[n.name][r] = trial_free[n.name].get(r, 0) - a
                for r, a in p.requests.items():
                    trial_used[r] = trial_used.get(r, 0) + a
                for i in ids:
                    if p.gpus:
                        trial_whole[n.name].add(i)
                    else:
                        trial_shares[n.name][i] = trial_shares[n.name].get(i, 0) + p.gpu_milli
                placed.append((p, n.name, ids))
                break
        g = snap.podgroup_by_key.get(members[0].group or "")
        if members[0].group is not None and g is None:
            continue
        if g is not None and policy.gang:
            running = [m for m in snap.pods_of_group.get(g.key, ()) if m.bound]
            everyone = [m.task for m in running] + [m.task for m, _, _ in placed]
            if len(everyone) < g.min_member:
                continue
            if any(everyone.count(task) < need for task, need in g.min_task_member.items()):
                continue
        if not placed:
            continue
        free, whole, shares, used[q.name] = trial_free, trial_whole, trial_shares, trial_used
        bindings += [bind(p.key, name, ids) for p, name, ids in placed]
    return decision(snap, bindings=bindings)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.booleans())
def test_greedy_decision_is_valid(snap: Snapshot, gang: bool) -> None:
    policy = Policy(gang=gang)
    dec = greedy_decision(snap, policy)
    assert check(snap, dec, policy) == []


@st.composite
def random_decisions(draw: st.DrawFn, snap: Snapshot) -> Decision:
    pod_keys = st.sampled_from([p.key for p in snap.pods] + ["ns/ghost", "kube-system/x"])
    node_names = st.sampled_from([n.name for n in snap.nodes] + ["nx"])
    gpu_lists = st.lists(st.integers(-1, 4), max_size=3)
    numbers = st.floats(allow_nan=True, allow_infinity=True)
    placements = st.tuples(pod_keys, node_names, gpu_lists)
    return Decision(
        bindings=[bind(*b) for b in draw(st.lists(placements, max_size=6))],
        nominations=[nominate(*n) for n in draw(st.lists(placements, max_size=4))],
        evictions=[
            evict(k, r)  # type: ignore[arg-type]
            for k, r in draw(st.lists(st.tuples(pod_keys, st.sampled_from(["preempt", "reclaim"])), max_size=4))
        ],
        podgroups=[
            outcome(k, ph, rs)  # type: ignore[arg-type]
            for k, ph, rs in draw(
                st.lists(
                    st.tuples(
                        st.sampled_from(["ns/g0", "ns/g1", "ns/p0", "ns/missing", "x"]),
                        st.sampled_from(["Running", "Inqueue", "Pending"]),
                        st.sampled_from(["", "Unschedulable", "WaitingForEviction"]),
                    ),
                    max_size=4,
                )
            )
        ],
        solver=SolverStats(
            status=draw(st.sampled_from(["OPTIMAL", "FEASIBLE", "FALLBACK"])),
            objective=draw(numbers),
            bound=draw(numbers),
            seconds=draw(numbers),
        ),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.booleans())
def test_check_never_raises(data: st.DataObject, gang: bool) -> None:
    snap = data.draw(clusters())
    dec = data.draw(random_decisions(snap))
    violations = check(snap, dec, Policy(gang=gang))
    assert violations == sorted(violations)
    assert all(isinstance(v, Violation) and v.rule in RULES for v in violations)
    assert check(snap, dec, Policy(gang=gang)) == violations


# --- speed ------------------------------------------------------------------------------------


def test_large_valid_decision_has_no_violation() -> None:
    """1,000 nodes, 4,000 bound pods, 3,000 new placements (its speed is in benchmarks/)."""
    names = [f"n{i:04d}" for i in range(1000)]
    nodes = [
        node(
            name,
            cpu="64",
            memory="256Gi",
            gpus=8,
            labels={"zone": f"z{i % 10}"},
            taints=["dedicated=a:NoSchedule"] if i % 10 == 0 else [],
        )
        for i, name in enumerate(names)
    ]
    bound = [
        pod(
            f"run/p{i}-{j}",
            cpu="4",
            memory="8Gi",
            gpus=1,
            node=names[i],
            gpu_ids=[j],
            group=f"run/g{i // 10}",
        )
        for i in range(1000)
        for j in range(4)
    ]
    pending = [
        pod(
            f"new/p{k:04d}",
            cpu="2",
            memory="4Gi",
            gpus=1,
            group=f"new/g{k // 10:03d}",
            selector={"zone": f"z{k % 10}"},
            tolerations=["dedicated"] if k % 10 == 0 else [],
        )
        for k in range(3000)
    ]
    groups = [group(f"run/g{i}", min_member=40) for i in range(100)]
    groups += [group(f"new/g{k:03d}", min_member=10, queue=f"q{k % 3}") for k in range(300)]
    queues = [queue(f"q{i}", capability={"cpu": "4000", "nvidia.com/gpu": 1000}) for i in range(3)]
    snap = snapshot(nodes=nodes, pods=[*bound, *pending], groups=groups, queues=queues)
    dec = decision(snap, bindings=[bind(p.key, names[k % 1000], [4 + k // 1000]) for k, p in enumerate(pending)])
    assert check(snap, dec) == []


def _capacity_reference(snap: Snapshot, dec: Decision) -> list[Violation]:
    """Node capacity as the module docstring reads it, pod by pod: bindings beside every bound pod
    now, and every placement once the victims are gone, on the resources the placements ask."""
    accepted: list[tuple[str, Pod, str]] = []
    seen: set[str] = set()
    entries = [("binding", b.pod, b.node) for b in dec.bindings] + [
        ("nomination", n.pod, n.node) for n in dec.nominations
    ]
    for kind, key, node_name in entries:
        p = snap.pod_by_key.get(key)
        if p is None or key in seen:
            continue
        seen.add(key)
        if p.managed and p.pending and node_name in snap.node_by_name:
            accepted.append((kind, p, node_name))
    victims: set[str] = set()
    for e in dec.evictions:
        p = snap.pod_by_key.get(e.pod)
        if p is not None and p.bound:
            victims.add(e.pod)
    out: list[Violation] = []
    for name in {node_name for _, _, node_name in accepted}:
        n = snap.node_by_name[name]
        mine = [(kind, p) for kind, p, node_name in accepted if node_name == name]
        added: dict[str, int] = {}
        now: dict[str, int] = {}
        for kind, p in mine:
            asked = {r: a for r, a in p.requests.items() if r != res.GPU_MILLI}
            asked[res.PODS] = max(asked.get(res.PODS, 0), 1)
            for r, a in asked.items():
                added[r] = added.get(r, 0) + a
                if kind == "binding":
                    now[r] = now.get(r, 0) + a
        for r in sorted(r for r, a in added.items() if a > 0):
            held = freed = 0
            for p in snap.pods:
                if p.bound and p.node_name == name:
                    a = max(p.requests.get(r, 0), 1) if r == res.PODS else p.requests.get(r, 0)
                    held += a
                    freed += a if p.key in victims else 0
            cap = n.allocatable.get(r, 0)
            total = res.format_amount(r, cap)
            if now.get(r, 0) > 0 and held + now[r] > cap:
                message = f"{res.format_amount(r, held)} held + {res.format_amount(r, now[r])} new > {total}"
                out.append(Violation("CapacityNow", name, f"{r} now: {message} allocatable"))
            if held - freed + added[r] > cap:
                message = f"{res.format_amount(r, held - freed)} held + {res.format_amount(r, added[r])} new > {total}"
                out.append(Violation("CapacityAfterEvictions", name, f"{r} after evictions: {message} allocatable"))
    return sorted(out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_capacity_is_the_pod_by_pod_reading(data: st.DataObject) -> None:
    """The checker sums each node's bound pods per resource at once; a pod-by-pod reading gives
    the same capacity violations, victims and nominations included."""
    snap = data.draw(clusters())
    dec = data.draw(random_decisions(snap))
    found = [v for v in check(snap, dec) if v.rule in ("CapacityNow", "CapacityAfterEvictions")]
    assert found == _capacity_reference(snap, dec)


def _gpu_reference(snap: Snapshot, dec: Decision) -> set[tuple[str, str, int]]:
    """GPU conflicts and share overflows as the module docstring reads them, index by index: each
    index a new placement lists, now (every bound pod and the bindings) and after evictions (bound
    pods less the victims, bindings and nominations), as (rule, node, index)."""
    accepted: list[tuple[str, Pod, str, tuple[int, ...]]] = []
    seen: set[str] = set()
    entries = [("binding", b.pod, b.node, tuple(b.gpus)) for b in dec.bindings]
    entries += [("nomination", n.pod, n.node, tuple(n.gpus)) for n in dec.nominations]
    for kind, key, node_name, ids in entries:
        p = snap.pod_by_key.get(key)
        if p is None or key in seen:
            continue
        seen.add(key)
        n = snap.node_by_name.get(node_name)
        if not p.managed or not p.pending or n is None or not ids:
            continue
        wanted = p.gpus if p.gpus else (1 if p.gpu_milli else 0)
        if len(ids) == wanted and len(set(ids)) == len(ids) and all(0 <= i < n.gpus for i in ids):
            accepted.append((kind, p, node_name, ids))
    victims = {e.pod for e in dec.evictions if (v := snap.pod_by_key.get(e.pod)) is not None and v.bound}
    out: set[tuple[str, str, int]] = set()
    for n in snap.nodes:
        mine = [(kind, p, ids) for kind, p, name, ids in accepted if name == n.name]
        if not mine:
            continue
        # (pod key, index, milli: 0 for a whole GPU) of the bound pods, unannotated ones resolved
        # oldest first onto the lowest indices left (contract §1).
        held: list[tuple[str, int, int]] = []
        bound = [p for p in snap.pods if p.bound and p.node_name == n.name and (p.gpus or p.gpu_milli)]
        for p in bound:
            # A share holds part of the first GPU it lists, whatever else it lists (contract §1).
            for i in (p.gpu_ids or ()) if p.gpus else (p.gpu_ids or ())[:1]:
                held.append((p.key, i, 0 if p.gpus else p.gpu_milli))
        for p in sorted((p for p in bound if p.gpu_ids is None), key=lambda p: (p.created, p.key)):
            whole = {i for _, i, m in held if m == 0}
            used = {i: sum(m for _, j, m in held if j == i) for i in range(n.gpus)}
            if p.gpus:
                free = [i for i in range(n.gpus) if i not in whole and not used[i]]
                if len(free) >= p.gpus:
                    held += [(p.key, i, 0) for i in free[: p.gpus]]
            else:
                room = [i for i in range(n.gpus) if i not in whole and used[i] + p.gpu_milli <= 1000]
                if room:
                    held.append((p.key, room[0], p.gpu_milli))
        new = [(p.key, i, 0 if p.gpus else p.gpu_milli, kind) for kind, p, ids in mine for i in ids]
        fresh = {i for _, i, _, _ in new}
        states = [
            held + [(k, i, m) for k, i, m, kind in new if kind == "binding"],
            [h for h in held if h[0] not in victims] + [(k, i, m) for k, i, m, _ in new],
        ]
        for state in states:
            for i in fresh:
                whole_holders = [k for k, j, m in state if j == i and m == 0]
                shares = [m for _, j, m in state if j == i and m > 0]
                if len(whole_holders) > 1 or (whole_holders and shares):
                    out.add(("GpuConflict", n.name, i))
                if sum(shares) > 1000:
                    out.add(("GpuShareOverflow", n.name, i))
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_gpus_are_the_index_by_index_reading(data: st.DataObject) -> None:
    """The checker judges a node's GPUs from per-pod holds, skipping nodes where each new index has
    one holder; an index-by-index reading gives the same conflicts and overflows."""
    snap = data.draw(clusters())
    dec = data.draw(random_decisions(snap))
    found = {
        (v.rule, v.subject, int(v.message.split()[1]))
        for v in check(snap, dec)
        if v.rule in ("GpuConflict", "GpuShareOverflow")
    }
    assert found == _gpu_reference(snap, dec)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_nodes_judged_apart_are_those_the_holds_find_clean(data: st.DataObject) -> None:
    """Nodes whose new GPU indices are distinct and held by no bound pod are passed over before
    any hold is listed: the check finds the same violations as judging every node by its holds."""
    snap = data.draw(clusters())
    dec = data.draw(random_decisions(snap))
    with patch.object(check_module, "_apart", lambda *_: False):
        plain = check(snap, dec)
    assert check(snap, dec) == plain


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.data())
def test_a_gpu_taken_twice_is_reported(snap: Snapshot, data: st.DataObject) -> None:
    """A valid decision with one pending whole-GPU pod bound onto a GPU that a bound pod or another
    binding holds by its listed indices: the check reports that GPU's conflict."""
    dec = greedy_decision(snap, Policy())
    # A bound pod holds its listed whole GPUs, or for a share the first listed index (vcsat.model.gpus).
    holders = [
        (p.node_name, i)
        for p in snap.pods
        if p.bound and p.gpu_ids and p.node_name is not None and (p.gpus or p.gpu_milli)
        for i in (p.gpu_ids if p.gpus else p.gpu_ids[:1])
    ]
    holders += [(b.node, i) for b in dec.bindings for i in b.gpus]
    holders = [(name, i) for name, i in holders if 0 <= i < snap.node_by_name[name].gpus]  # a real GPU
    movers = [p for p in snap.pods if p.pending and p.managed and p.gpus > 0]
    if not holders or not movers:
        return
    node_name, index = data.draw(st.sampled_from(holders))
    mover = data.draw(st.sampled_from(movers))
    gpus = snap.node_by_name[node_name].gpus
    others = [i for i in range(gpus) if i != index][: mover.gpus - 1]
    if 1 + len(others) < mover.gpus or any(b.pod == mover.key and index in b.gpus for b in dec.bindings):
        return  # the node has too few GPUs for the pod, or the holder is the pod itself
    bindings = [b for b in dec.bindings if b.pod != mover.key] + [bind(mover.key, node_name, [index, *others])]
    broken = dec.model_copy(update={"bindings": bindings})
    found = check(snap, broken)
    assert any(v.rule == "GpuConflict" and v.subject == node_name and f"GPU {index} " in v.message for v in found)


def test_predicates_are_judged_per_spec_of_each_pod() -> None:
    """Pods of one spec share their selector object (the check makes their predicates once);
    a pod of another spec on the same node is judged by its own selector."""
    template = pod("ns/a").model_copy(update={"node_selector": {"zone": "a"}})
    same = [template.model_copy(update={"name": name}) for name in ("a1", "a2")]
    other = template.model_copy(update={"name": "b1", "node_selector": {"zone": "b"}})
    other_again = other.model_copy(update={"name": "b2"})
    assert same[0].node_selector is same[1].node_selector and other.node_selector is other_again.node_selector
    snap = snapshot(nodes=[node("n1", labels={"zone": "a"})], pods=[*same, other, other_again])
    dec = decision(snap, bindings=[bind(p.key, "n1") for p in (*same, other, other_again)])
    found = sorted((v.rule, v.subject) for v in check(snap, dec))
    assert found == [("NodeSelectorMismatch", "ns/b1"), ("NodeSelectorMismatch", "ns/b2")]
    for p in (*same, other, other_again):
        failure = predicate_failure(p, snap.nodes[0])
        assert (failure is not None) == (p.node_selector == {"zone": "b"})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.booleans())
def test_gangs_whole_by_their_new_pods_are_those_the_counts_find_whole(data: st.DataObject, gang: bool) -> None:
    """Groups whose new pods alone reach every minimum are passed before their running pods are
    read: the check finds the same violations as counting every group's pods."""
    snap = data.draw(clusters())
    dec = data.draw(random_decisions(snap))
    policy = Policy(gang=gang)
    with patch.object(check_module, "_whole_alone", lambda *_: False):
        plain = check(snap, dec, policy)
    assert check(snap, dec, policy) == plain
