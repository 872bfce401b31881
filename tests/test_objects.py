"""The one converter: Kubernetes and Volcano objects to a Snapshot, as contract §1 reads them."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.model import NodeSelectorRequirement, NodeSelectorTerm, Snapshot, Taint, Toleration

Obj = dict[str, Any]


# --- raw objects, as kubectl prints them ------------------------------------------------------


MI = 2**20


def k8s_node(name: str = "n1", *, gpus: int = 0, ready: str | None = "True", **extra: Any) -> Obj:
    allocatable: dict[str, Any] = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {},
        "status": {"allocatable": allocatable},
    }
    if ready is not None:
        obj["status"]["conditions"] = [{"type": "Ready", "status": ready}]
    return _merge(obj, extra)


def k8s_pod(
    name: str = "p1",
    *,
    namespace: str = "ns",
    cpu: str | None = "1",
    gpus: int = 0,
    node: str | None = None,
    group: str | None = None,
    scheduler: str | None = "vcsat",
    annotations: dict[str, str] | None = None,
    created: str | None = None,
    **extra: Any,
) -> Obj:
    requests: dict[str, Any] = {} if cpu is None else {"cpu": cpu}
    limits: dict[str, Any] = {"nvidia.com/gpu": gpus} if gpus else {}
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "annotations": dict(annotations or {})}
    if group is not None:
        metadata["annotations"]["scheduling.k8s.io/group-name"] = group
    if created is not None:
        metadata["creationTimestamp"] = created
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {"requests": requests, "limits": limits}}]}
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    if node is not None:
        spec["nodeName"] = node
    obj: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {}}
    return _merge(obj, extra)


def k8s_podgroup(name: str = "pg", *, namespace: str = "ns", **spec: Any) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def k8s_queue(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def k8s_priority_class(name: str, value: int, *, default: bool = False) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": default,
    }


def _merge(base: Obj, extra: dict[str, Any]) -> Obj:
    """``spec__priority=5`` sets ``base["spec"]["priority"]``."""
    for path, value in extra.items():
        where = base
        *parents, last = path.split("__")
        for part in parents:
            where = where.setdefault(part, {})
        where[last] = value
    return base


def convert(*objects: Obj, strict: bool = True) -> Snapshot:
    return snapshot_from_objects(objects, source="test.yaml", strict=strict)


def only_pod(*objects: Obj, strict: bool = True) -> Any:
    snapshot = convert(*objects, strict=strict)
    assert len(snapshot.pods) == 1
    return snapshot.pods[0]


# --- pod requests -----------------------------------------------------------------------------


def _container(cpu: str | None = None, memory: str | None = None, restart: str | None = None) -> Obj:
    requests = {name: value for name, value in (("cpu", cpu), ("memory", memory)) if value is not None}
    out: Obj = {"name": "c", "resources": {"requests": requests}}
    if restart is not None:
        out["restartPolicy"] = restart
    return out


REQUEST_CASES = [
    pytest.param({"containers": [_container("1", "1Gi")]}, {"cpu": 1000, "memory": 1024 * MI}, id="one container"),
    pytest.param(
        {"containers": [_container("1", "1Gi"), _container("500m", "512Mi")]},
        {"cpu": 1500, "memory": 1536 * MI},
        id="containers are summed",
    ),
    pytest.param(
        {"containers": [_container("1", "1Gi")], "initContainers": [_container("2", "512Mi")]},
        {"cpu": 2000, "memory": 1024 * MI},
        id="max with each init container, per resource",
    ),
    pytest.param(
        {
            "containers": [_container("1")],
            "initContainers": [_container("3"), _container("2")],
        },
        {"cpu": 3000},
        id="init containers run one at a time",
    ),
    pytest.param(
        {
            "containers": [_container("1")],
            "initContainers": [_container("1", restart="Always"), _container("2")],
        },
        {"cpu": 3000},
        id="sidecar runs with the containers and with later init containers",
    ),
    pytest.param(
        {
            "containers": [_container("1")],
            "initContainers": [_container("2"), _container("1", restart="Always")],
        },
        {"cpu": 2000},
        id="init container before the sidecar starts does not add it",
    ),
    pytest.param(
        {
            "containers": [_container("1")],
            "initContainers": [_container("500m", restart="Always"), _container("500m", restart="Always")],
        },
        {"cpu": 2000},
        id="sidecars add to the containers",
    ),
    pytest.param(
        {"containers": [_container("1", "1Gi")], "overhead": {"cpu": "250m", "memory": "64Mi"}},
        {"cpu": 1250, "memory": 1088 * MI},
        id="overhead on top",
    ),
    pytest.param(
        {"containers": [{"name": "c", "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": "1"}}}]},
        {"cpu": 2000, "nvidia.com/gpu": 1},
        id="limits stand in for missing requests",
    ),
    pytest.param(
        {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "4"}}}]},
        {"cpu": 1000},
        id="a request is not replaced by its limit",
    ),
    pytest.param(
        {"containers": [_container("1", "1Gi"), _container("1")], "resources": {"requests": {"cpu": "3"}}},
        {"cpu": 3000, "memory": 1024 * MI},
        id="pod-level resources replace the cpu total",
    ),
    pytest.param({"containers": [{"name": "c"}]}, {}, id="no resources"),
    pytest.param(
        {"containers": [_container("1n", "1")]},
        {"cpu": 1, "memory": 1},
        id="requests round up",
    ),
    pytest.param(
        {"containers": [_container("1", "1G"), _container("333m", "1.5")]},
        {"cpu": 1333, "memory": 10**9 + 2},
        id="exact bytes, a fraction of a byte rounded up once on the total",
    ),
    pytest.param(
        {"containers": [_container("0.0005", "0.5"), _container("0.0005", "0.5")]},
        {"cpu": 1, "memory": 1},
        id="fractions summed before rounding, as PodRequests sums quantities",
    ),
]


@pytest.mark.parametrize(("spec", "expected"), REQUEST_CASES)
def test_pod_requests_as_kubernetes_counts_them(spec: Obj, expected: dict[str, int]) -> None:
    pod = only_pod(k8s_pod(cpu=None, spec=spec), k8s_node())
    assert pod.requests == {**expected, "pods": 1}


def test_gpu_share_is_a_request() -> None:
    raw = k8s_pod(cpu=None, spec={"containers": [{"name": "c", "resources": {"limits": {"vcsat.io/gpu-milli": 250}}}]})
    assert only_pod(raw).gpu_milli == 250


# --- priority ---------------------------------------------------------------------------------

PRIORITY_CASES = [
    pytest.param({"spec__priority": 7}, [], 7, id="spec.priority"),
    pytest.param({"spec__priorityClassName": "high"}, [k8s_priority_class("high", 1000)], 1000, id="class value"),
    pytest.param(
        {"spec__priority": 5, "spec__priorityClassName": "high"},
        [k8s_priority_class("high", 1000)],
        5,
        id="spec.priority wins (admission already resolved it)",
    ),
    pytest.param({}, [k8s_priority_class("base", 10, default=True)], 10, id="globalDefault"),
    pytest.param(
        {"spec__priorityClassName": "low"},
        [k8s_priority_class("base", 10, default=True), k8s_priority_class("low", -5)],
        -5,
        id="a named class beats the default",
    ),
    pytest.param({"spec__priorityClassName": "system-node-critical"}, [], 2000001000, id="built-in class"),
    pytest.param({}, [], 0, id="nothing"),
]


@pytest.mark.parametrize(("pod_fields", "classes", "expected"), PRIORITY_CASES)
def test_pod_priority(pod_fields: dict[str, Any], classes: list[Obj], expected: int) -> None:
    pod = only_pod(k8s_pod(**pod_fields), *classes)
    assert pod.priority == expected


def test_podgroup_priority_from_its_class_or_the_default() -> None:
    snapshot = convert(
        k8s_podgroup("a", priorityClassName="high"),
        k8s_podgroup("b"),
        k8s_priority_class("high", 100),
        k8s_priority_class("base", 1, default=True),
    )
    assert [(group.name, group.priority, group.priority_class) for group in snapshot.podgroups] == [
        ("a", 100, "high"),
        ("b", 1, ""),
    ]


# --- predicates' inputs -----------------------------------------------------------------------


def test_affinity_taints_tolerations_and_selector() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "gpu", "operator": "In", "values": ["a100", "h100"]},
                            {"key": "cores", "operator": "Gt", "values": ["16"]},
                        ]
                    },
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}],
        }
    }
    tolerations = [
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "team", "value": "a"},
        {"operator": "Exists"},
    ]
    pod = only_pod(
        k8s_pod(spec__affinity=affinity, spec__tolerations=tolerations, spec__nodeSelector={"zone": "a"}),
    )
    assert pod.affinity == (
        NodeSelectorTerm(
            match_expressions=(
                NodeSelectorRequirement(key="gpu", operator="In", values=("a100", "h100")),
                NodeSelectorRequirement(key="cores", operator="Gt", values=("16",)),
            )
        ),
        NodeSelectorTerm(match_fields=(NodeSelectorRequirement(key="metadata.name", operator="In", values=("n1",)),)),
    )
    assert pod.tolerations == (
        Toleration(key="gpu", operator="Exists", effect="NoSchedule"),
        Toleration(key="team", operator="Equal", value="a"),
        Toleration(operator="Exists"),
    )
    assert pod.node_selector == {"zone": "a"}


def test_only_empty_affinity_terms_match_no_node() -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}
    (term,) = only_pod(k8s_pod(spec__affinity=affinity)).affinity
    assert term.match_fields == (NodeSelectorRequirement(key="metadata.name", operator="In", values=()),)


def test_node_fields() -> None:
    raw = k8s_node(
        "n1",
        gpus=8,
        metadata__labels={"zone": "a"},
        metadata__annotations={"vcsat.io/gpu-topology": "preset:hgx-h100-8"},
        spec__unschedulable=True,
        spec__taints=[
            {"key": "gpu", "effect": "NoSchedule"},
            {"key": "x", "value": "y", "effect": "NoExecute"},
        ],
    )
    (node,) = convert(raw).nodes
    assert node.labels == {"zone": "a"}
    assert node.unschedulable
    assert node.taints == (
        Taint(key="gpu", effect="NoSchedule"),
        Taint(key="x", value="y", effect="NoExecute"),
    )
    assert node.allocatable == {"cpu": 8000, "memory": 32 * 2**30, "pods": 110, "nvidia.com/gpu": 8}
    assert node.gpu_topology == "preset:hgx-h100-8"


@pytest.mark.parametrize(
    ("ready", "expected"),
    [("True", True), ("False", False), ("Unknown", False), (None, True)],
    ids=["True", "False", "Unknown", "no Ready condition"],
)
def test_node_readiness(ready: str | None, expected: bool) -> None:
    (node,) = convert(k8s_node(ready=ready)).nodes
    assert node.ready is expected


def test_allocatable_is_exact_and_falls_back_to_capacity() -> None:
    exact = k8s_node(status__allocatable={"cpu": "1999999u", "memory": "1048575", "pods": "3", "hugepages-2Mi": "4G"})
    capacity_only = k8s_node("n2", status={"capacity": {"cpu": "2", "pods": "10"}})
    nodes = convert(exact, capacity_only).nodes
    # kube-scheduler's NodeInfo reads allocatable by MilliValue()/Value(), which round up.
    assert nodes[0].allocatable == {"cpu": 2000, "memory": 1048575, "pods": 3, "hugepages-2Mi": 4 * 10**9}
    assert nodes[1].allocatable == {"cpu": 2000, "pods": 10}


# --- pod fields and annotations ---------------------------------------------------------------


def test_pod_fields() -> None:
    raw = k8s_pod(
        group="pg",
        node="n1",
        annotations={"volcano.sh/task-spec": "worker", "volcano.sh/preemptable": "false"},
        created="2024-01-01T00:00:10Z",
        metadata__uid="u-1",
        metadata__deletionTimestamp="2024-01-02T00:00:00Z",
        status__phase="Running",
    )
    pod = only_pod(raw, k8s_node(), k8s_podgroup("pg"))
    assert (pod.key, pod.uid, pod.group, pod.task, pod.node_name, pod.phase) == (
        "ns/p1",
        "u-1",
        "ns/pg",
        "worker",
        "n1",
        "Running",
    )
    assert pod.terminating and not pod.preemptable and pod.managed
    assert pod.created == 1704067210.0


@pytest.mark.parametrize(
    ("scheduler", "managed"),
    [("vcsat", True), ("volcano", False), (None, False)],
    ids=["ours", "other", "missing"],
)
def test_managed_means_our_scheduler_name(scheduler: str | None, managed: bool) -> None:
    assert only_pod(k8s_pod(scheduler=scheduler)).managed is managed


def test_default_scheduler_pods_are_ours_when_we_are_the_default() -> None:
    snapshot = snapshot_from_objects([k8s_pod(scheduler=None)], scheduler_name="default-scheduler")
    assert snapshot.pods[0].managed


# --- GPU indices ------------------------------------------------------------------------------


def _gpu_ids(snapshot: Snapshot) -> dict[str, tuple[int, ...] | None]:
    return {pod.name: pod.gpu_ids for pod in snapshot.pods}


def test_unannotated_gpu_pods_take_the_lowest_free_indices_oldest_first() -> None:
    snapshot = convert(
        k8s_node(gpus=8),
        k8s_pod("annotated", gpus=2, node="n1", annotations={"vcsat.io/gpu-ids": "0,2"}),
        k8s_pod("young", gpus=2, node="n1", created="2024-01-01T00:00:02Z"),
        k8s_pod("old", gpus=1, node="n1", created="2024-01-01T00:00:01Z"),
        k8s_pod("b-same-age", gpus=1, node="n1", created="2024-01-01T00:00:03Z"),
        k8s_pod("a-same-age", gpus=1, node="n1", created="2024-01-01T00:00:03Z"),
        k8s_pod("finished", gpus=4, node="n1", status__phase="Succeeded"),
        k8s_pod("pending", gpus=1),
    )
    assert _gpu_ids(snapshot) == {
        "a-same-age": (5,),
        "annotated": (0, 2),
        "b-same-age": (6,),
        "finished": None,
        "old": (1,),
        "pending": None,
        "young": (3, 4),
    }


def test_a_gpu_share_that_fits_no_gpu_is_an_error_in_a_file() -> None:
    containers = [{"name": "c", "resources": {"limits": {"vcsat.io/gpu-milli": 600}}}]
    with pytest.raises(InputError, match="no GPU of Node n1 has room for 600/1000 more"):
        convert(
            k8s_node(gpus=2),
            k8s_pod("whole", gpus=1, node="n1", annotations={"vcsat.io/gpu-ids": "0"}),
            k8s_pod(
                "half",
                cpu=None,
                node="n1",
                spec__containers=containers,
                annotations={"vcsat.io/gpu-ids": "1"},
            ),
            k8s_pod("more", cpu=None, node="n1", spec__containers=containers),
        )


def test_gpu_shares_fill_the_lowest_gpu_with_room() -> None:
    def share(name: str, milli: int, created: str) -> Obj:
        containers = [{"name": "c", "resources": {"limits": {"vcsat.io/gpu-milli": milli}}}]
        return k8s_pod(name, cpu=None, node="n1", spec__containers=containers, created=created)

    snapshot = convert(
        k8s_node(gpus=3),
        k8s_pod("whole", gpus=1, node="n1", annotations={"vcsat.io/gpu-ids": "0"}),
        share("s1", 600, "2024-01-01T00:00:01Z"),
        share("s2", 400, "2024-01-01T00:00:02Z"),
        share("s3", 500, "2024-01-01T00:00:03Z"),
    )
    assert _gpu_ids(snapshot) == {"whole": (0,), "s1": (1,), "s2": (1,), "s3": (2,)}


GPU_ID_ERRORS = [
    pytest.param("0,x", 2, "GPU indices separated by commas", id="not a number"),
    pytest.param("", 1, "GPU indices separated by commas", id="empty"),
    pytest.param("-1", 1, "GPU indices separated by commas", id="negative"),
    pytest.param("1,1", 2, "lists an index twice", id="twice"),
    pytest.param("0", 2, "lists 1 GPU indices but the pod holds 2", id="too few"),
    pytest.param("9", 1, "index 9 is not a GPU of Node n1", id="beyond the node"),
]


@pytest.mark.parametrize(("ids", "gpus", "message"), GPU_ID_ERRORS)
def test_bad_gpu_ids(ids: str, gpus: int, message: str) -> None:
    raw = k8s_pod(gpus=gpus, node="n1", annotations={"vcsat.io/gpu-ids": ids})
    with pytest.raises(InputError, match=message) as caught:
        convert(k8s_node(gpus=4), raw)
    assert 'Pod ns/p1: metadata.annotations["vcsat.io/gpu-ids"]' in str(caught.value)


def test_two_pods_on_one_gpu_is_an_error_in_a_file() -> None:
    with pytest.raises(InputError, match="GPU 1 of Node n1 is held by another pod too"):
        convert(
            k8s_node(gpus=4),
            k8s_pod("a", gpus=1, node="n1", annotations={"vcsat.io/gpu-ids": "1"}),
            k8s_pod("b", gpus=1, node="n1", annotations={"vcsat.io/gpu-ids": "1"}),
        )


@pytest.mark.parametrize(
    ("held", "ids", "message"),
    [
        pytest.param("1", "0,1,2", "Pod ns/b: .*GPU 1 of Node n1 is held by another pod too", id="second taken"),
        pytest.param("1", "2,3,1", "Pod ns/b: .*GPU 1 of Node n1 is held by another pod too", id="last taken"),
        pytest.param("1", "0,9,3", "Pod ns/b: .*index 9 is not a GPU of Node n1", id="second beyond"),
        pytest.param("1", "9,1,0", "Pod ns/b: .*index 9 is not a GPU of Node n1", id="beyond before taken"),
        pytest.param("1", "1,9,0", "Pod ns/b: .*GPU 1 of Node n1 is held", id="taken before beyond"),
        pytest.param("3", "2,1,0", None, id="none taken"),
    ],
)
def test_a_pods_first_bad_gpu_index_is_named_and_its_others_held(held: str, ids: str, message: str | None) -> None:
    objects = (
        k8s_node(gpus=8),
        k8s_pod("a", gpus=1, node="n1", annotations={"vcsat.io/gpu-ids": held}),
        k8s_pod("b", gpus=3, node="n1", annotations={"vcsat.io/gpu-ids": ids}),
        k8s_pod("c", gpus=1, node="n1"),
    )
    if message is not None:
        with pytest.raises(InputError, match=message):
            convert(*objects)
        return
    # a's and b's indices are all held, so c takes the lowest one left.
    assert _gpu_ids(convert(*objects)) == {"a": (3,), "b": (2, 1, 0), "c": (4,)}


def test_too_few_free_gpus_is_an_error_in_a_file_and_tolerated_live() -> None:
    objects = (k8s_node(gpus=2), k8s_pod("a", gpus=2, node="n1"), k8s_pod("b", gpus=1, node="n1"))
    with pytest.raises(InputError, match="Node n1 has 0 free GPU"):
        convert(*objects)
    assert _gpu_ids(convert(*objects, strict=False)) == {"a": (0, 1), "b": (0,)}


# --- Volcano objects --------------------------------------------------------------------------


def test_podgroup_fields() -> None:
    raw = k8s_podgroup(
        "pg",
        minMember=4,
        minTaskMember={"ps": 1, "worker": 3},
        queue="q",
        minResources={"cpu": "1500m", "nvidia.com/gpu": 4},
        networkTopology={"mode": "soft", "highestTierAllowed": 2},
    )
    raw["status"] = {"phase": "Inqueue"}
    raw["metadata"]["creationTimestamp"] = "1970-01-01T00:01:00Z"
    (group,) = convert(raw, k8s_queue("q")).podgroups
    assert (group.key, group.min_member, group.min_task_member, group.queue, group.phase, group.created) == (
        "ns/pg",
        4,
        {"ps": 1, "worker": 3},
        "q",
        "Inqueue",
        60.0,
    )
    assert group.min_resources == {"cpu": 1500, "nvidia.com/gpu": 4}
    assert group.network_topology is not None
    assert (group.network_topology.mode, group.network_topology.highest_tier_allowed) == ("soft", 2)


def test_podgroup_defaults() -> None:
    (group,) = convert(k8s_podgroup("pg")).podgroups
    assert (group.min_member, group.queue, group.network_topology) == (1, "default", None)


def test_queue_fields_and_the_default_queue() -> None:
    raw = k8s_queue(
        "q",
        weight=3,
        capability={"cpu": "10", "nvidia.com/gpu": 0},
        deserved={"cpu": "4500m"},
        guarantee={"resource": {"memory": "1Gi"}},
        reclaimable=False,
        parent="root",
    )
    raw["status"] = {"state": "Closed"}
    queues = {queue.name: queue for queue in convert(raw, k8s_queue("child", parent="q")).queues}
    assert sorted(queues) == ["child", "default", "q"]
    queue = queues["q"]
    assert queue.capability == {"cpu": 10000, "nvidia.com/gpu": 0}  # a zero cap is kept: no GPUs at all
    assert (queue.weight, queue.deserved, queue.guarantee) == (3, {"cpu": 4500}, {"memory": 2**30})
    assert (queue.reclaimable, queue.open, queue.parent) == (False, False, None)
    assert queues["child"].parent == "q"
    assert queues["default"].capability is None and queues["default"].weight == 1


def test_hypernodes() -> None:
    raw = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "rack-1"},
        "spec": {
            "tier": 1,
            "members": [
                {"type": "Node", "selector": {"exactMatch": {"name": "n1"}}},
                {"type": "Node", "selector": {"regexMatch": {"pattern": "^n[2-3]$"}}},
                {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "2"}}}},
            ],
        },
    }
    (hypernode,) = convert(raw).hypernodes
    assert hypernode.tier == 1
    assert [(m.type, m.exact_name, m.regex, m.labels) for m in hypernode.members] == [
        ("Node", "n1", None, None),
        ("Node", None, "^n[2-3]$", None),
        ("Node", None, None, {"rack": "2"}),
    ]


def test_a_bad_gpu_topology_or_hypernode_graph_is_bad_input() -> None:
    with pytest.raises(InputError, match=r'Node n1: metadata.annotations\["vcsat.io/gpu-topology"\]: unknown preset'):
        convert(k8s_node("n1", metadata__annotations={"vcsat.io/gpu-topology": "preset:nope"}))
    member = {"type": "HyperNode", "selector": {"regexMatch": {"pattern": "rack-.*"}}}
    spine = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "spine"},
        "spec": {"tier": 2, "members": [member]},
    }
    with pytest.raises(InputError, match="exactMatch only"):
        convert(spine)


def test_other_kinds_and_other_apis_are_ignored_and_output_is_sorted() -> None:
    snapshot = convert(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Queue", "metadata": {"name": "q"}, "spec": "?"},
        k8s_node("b"),
        k8s_node("a"),
        k8s_pod("z", namespace="a"),
        k8s_pod("a", namespace="b"),
    )
    assert [node.name for node in snapshot.nodes] == ["a", "b"]
    assert [pod.key for pod in snapshot.pods] == ["a/z", "b/a"]
    assert [queue.name for queue in snapshot.queues] == ["default"]


def test_the_snapshot_is_what_pydantic_validation_makes_of_it() -> None:
    """The converter skips pydantic's validation for speed; what it builds must still be valid."""
    snapshot = convert(
        k8s_node(gpus=2, spec__taints=[{"key": "t", "effect": "NoSchedule"}]),
        k8s_pod(gpus=1, node="n1", group="pg", spec__tolerations=[{"operator": "Exists"}]),
        k8s_podgroup("pg", networkTopology={"mode": "hard"}),
        k8s_queue("q"),
    )
    assert Snapshot.model_validate(snapshot.model_dump()) == snapshot
    assert snapshot.pod_by_key["ns/p1"].gpu_ids == (0,)


# --- references: strict (files) and tolerant (live) -------------------------------------------

REFERENCE_CASES = [
    pytest.param(
        [k8s_pod(group="missing")],
        "test.yaml: Pod ns/p1: metadata.annotations[\"scheduling.k8s.io/group-name\"]: unknown PodGroup 'ns/missing'",
        id="podgroup",
    ),
    pytest.param(
        [k8s_podgroup("pg", queue="nope")],
        "test.yaml: PodGroup ns/pg: spec.queue: unknown Queue 'nope'",
        id="queue",
    ),
    pytest.param(
        [k8s_pod(spec__priorityClassName="gold")],
        "test.yaml: Pod ns/p1: spec.priorityClassName: unknown PriorityClass 'gold'",
        id="pod priority class",
    ),
    pytest.param(
        [k8s_podgroup("pg", priorityClassName="gold")],
        "test.yaml: PodGroup ns/pg: spec.priorityClassName: unknown PriorityClass 'gold'",
        id="podgroup priority class",
    ),
    pytest.param(
        [k8s_queue("q", parent="nope")],
        "test.yaml: Queue q: spec.parent: unknown Queue 'nope'",
        id="queue parent",
    ),
    pytest.param(
        [k8s_pod(node="gone")],
        "test.yaml: Pod ns/p1: spec.nodeName: unknown Node 'gone'",
        id="node",
    ),
]


@pytest.mark.parametrize(("objects", "message"), REFERENCE_CASES)
def test_unknown_references_are_errors_in_a_file(objects: list[Obj], message: str) -> None:
    with pytest.raises(InputError) as caught:
        convert(*copy.deepcopy(objects))
    assert str(caught.value) == message


def test_unknown_references_are_tolerated_live() -> None:
    snapshot = convert(
        k8s_pod("orphan", group="missing"),
        k8s_pod("queueless", group="pg"),
        k8s_pod("gold", spec__priorityClassName="gold"),
        k8s_pod("lost", node="gone"),
        k8s_podgroup("pg", queue="nope"),
        k8s_queue("q", parent="nope"),
        strict=False,
    )
    pods = snapshot.pod_by_key
    assert "ns/lost" not in pods  # bound to a node we do not know: left out
    # Kept, so that they wait saying why (PodGroupNotFound, QueueNotFound), never silently.
    assert (pods["ns/orphan"].managed, pods["ns/orphan"].group) == (True, "ns/missing")
    assert (pods["ns/queueless"].managed, pods["ns/queueless"].group) == (True, "ns/pg")
    assert pods["ns/gold"].priority == 0
    assert [(g.key, g.queue) for g in snapshot.podgroups] == [("ns/pg", "nope")]
    assert snapshot.queue_by_name["q"].parent is None
    assert [(n.kind, n.key, n.reason) for n in snapshot.notices] == [
        ("PodGroup", "ns/pg", "QueueNotFound"),
        ("Pod", "ns/orphan", "PodGroupNotFound"),
    ]


def test_queue_parent_cycles() -> None:
    objects = (k8s_queue("a", parent="b"), k8s_queue("b", parent="a"))
    with pytest.raises(InputError, match="cycle"):
        convert(*objects)
    assert {queue.name: queue.parent for queue in convert(*objects, strict=False).queues} == {
        "a": "b",
        "b": None,  # the cycle is cut where it closes
        "default": None,
    }


# --- bad input: one line naming the object and the field --------------------------------------


def _edit(raw: Obj, change: Callable[[Obj], None]) -> Obj:
    change(raw)
    return raw


BAD_INPUT = [
    pytest.param(
        k8s_pod(cpu="1.2.3"),
        "Pod ns/p1: spec.containers[0].resources.requests.cpu: not a quantity: '1.2.3'",
        id="bad quantity",
    ),
    pytest.param(
        k8s_pod(cpu="-1"),
        "Pod ns/p1: spec.containers[0].resources.requests.cpu: must not be negative (-1)",
        id="negative request",
    ),
    pytest.param(
        k8s_pod(cpu=True),  # type: ignore[arg-type]
        "Pod ns/p1: spec.containers[0].resources.requests.cpu: expected a quantity, got a boolean (true)",
        id="boolean quantity",
    ),
    pytest.param(
        k8s_pod(gpus=0, spec__containers=[{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "0.5"}}}]),
        'Pod ns/p1: spec.containers[0].resources.limits["nvidia.com/gpu"]: must be a whole number',
        id="half a GPU",
    ),
    pytest.param(
        k8s_pod(spec__containers=[{"name": "c", "resources": {"limits": {"vcsat.io/gpu-milli": 1001}}}]),
        'Pod ns/p1: spec.containers[0].resources.limits["vcsat.io/gpu-milli"]: must be 1 to 1000',
        id="gpu-milli above 1000",
    ),
    pytest.param(
        k8s_pod(
            spec__containers=[{"name": "c", "resources": {"limits": {"vcsat.io/gpu-milli": 1, "nvidia.com/gpu": 1}}}]
        ),
        "cannot be asked together with nvidia.com/gpu",
        id="share and whole GPU",
    ),
    pytest.param(
        k8s_pod(spec__containers={"name": "c"}),
        "Pod ns/p1: spec.containers: must be a list, not a mapping",
        id="containers not a list",
    ),
    pytest.param(
        k8s_pod(spec__containers=[]),
        "Pod ns/p1: spec.containers: missing",
        id="no containers",
    ),
    pytest.param(
        k8s_pod(spec__containers=["main"]),
        "Pod ns/p1: spec.containers[0]: must be a mapping, not a string",
        id="container not a mapping",
    ),
    pytest.param(
        _edit(k8s_pod(), lambda raw: raw.pop("spec")),
        "Pod ns/p1: spec: missing",
        id="pod without spec",
    ),
    pytest.param(
        k8s_pod(spec__priority="high"),
        "Pod ns/p1: spec.priority: must be an integer, not a string",
        id="priority not an integer",
    ),
    pytest.param(
        k8s_pod(spec__nodeSelector={"zone": 1}),
        "Pod ns/p1: spec.nodeSelector.zone: must be a string, not an integer",
        id="selector value not a string",
    ),
    pytest.param(
        k8s_pod(spec__tolerations=[{"key": "k", "operator": "Equals"}]),
        "Pod ns/p1: spec.tolerations[0].operator: must be Equal or Exists, not 'Equals'",
        id="toleration operator",
    ),
    pytest.param(
        k8s_pod(spec__tolerations=[{"key": "k", "effect": "NoRun"}]),
        "Pod ns/p1: spec.tolerations[0].effect: must be one of NoSchedule, PreferNoSchedule, NoExecute",
        id="toleration effect",
    ),
    pytest.param(
        k8s_pod(
            spec__affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In"}]}]
                    }
                }
            }
        ),
        "Pod ns/p1: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
        "nodeSelectorTerms[0].matchExpressions[0].values: In needs at least one value",
        id="In without values",
    ),
    pytest.param(
        k8s_pod(
            spec__affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}]
                    }
                }
            }
        ),
        "matchExpressions[0].operator: must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt, not 'Near'",
        id="unknown operator",
    ),
    pytest.param(
        k8s_pod(annotations={"volcano.sh/preemptable": "nope"}),
        'Pod ns/p1: metadata.annotations["volcano.sh/preemptable"]: must be true or false',
        id="preemptable",
    ),
    pytest.param(
        k8s_pod(status__phase="Sleeping"),
        "Pod ns/p1: status.phase: must be one of",
        id="phase",
    ),
    pytest.param(
        k8s_pod(created="yesterday"),
        "Pod ns/p1: metadata.creationTimestamp: not an RFC 3339 time: 'yesterday'",
        id="timestamp",
    ),
    pytest.param(
        k8s_node(status__allocatable={"memory": "lots"}),
        "Node n1: status.allocatable.memory: not a quantity: 'lots'",
        id="node quantity",
    ),
    pytest.param(
        k8s_node(status__allocatable={"nvidia.com/gpu": "-8"}),
        'Node n1: status.allocatable["nvidia.com/gpu"]: must not be negative (-8)',
        id="negative allocatable",
    ),
    pytest.param(
        k8s_node(status__allocatable={"cpu": "1e30"}),
        "Node n1: status.allocatable.cpu: too large",
        id="absurd allocatable",
    ),
    pytest.param(
        k8s_node(spec__taints=[{"key": "a", "effect": "Sometimes"}]),
        "Node n1: spec.taints[0].effect: must be one of NoSchedule, PreferNoSchedule, NoExecute, not 'Sometimes'",
        id="taint effect",
    ),
    pytest.param(
        k8s_node(spec__unschedulable="yes"),
        "Node n1: spec.unschedulable: must be true or false, not a string",
        id="unschedulable",
    ),
    pytest.param(
        k8s_node(metadata__labels=["a"]),
        "Node n1: metadata.labels: must be a mapping, not a list",
        id="labels",
    ),
    pytest.param(
        k8s_podgroup("pg", minMember=-1),
        "PodGroup ns/pg: spec.minMember: must be at least 0, not -1",
        id="minMember",
    ),
    pytest.param(
        k8s_podgroup("pg", minMember="2"),
        "PodGroup ns/pg: spec.minMember: must be an integer, not a string",
        id="minMember type",
    ),
    pytest.param(
        k8s_podgroup("pg", networkTopology={"mode": "strict"}),
        "PodGroup ns/pg: spec.networkTopology.mode: must be hard or soft, not 'strict'",
        id="topology mode",
    ),
    pytest.param(
        k8s_queue("q", weight=0),
        "Queue q: spec.weight: must be at least 1, not 0",
        id="queue weight",
    ),
    pytest.param(
        k8s_queue("q", capability={"cpu": "ten"}),
        "Queue q: spec.capability.cpu: not a quantity: 'ten'",
        id="queue capability",
    ),
    pytest.param(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "x"}},
        "PriorityClass x: value: missing",
        id="priority class without value",
    ),
    pytest.param(
        {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": "h"},
            "spec": {},
        },
        "HyperNode h: spec.tier: missing",
        id="hypernode tier",
    ),
    pytest.param(
        {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": "h"},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "("}}}]},
        },
        "HyperNode h: spec.members[0].selector.regexMatch.pattern: not a regular expression",
        id="hypernode regex",
    ),
    pytest.param(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"labels": {}}},
        "Node: objects[0].metadata.name: missing",
        id="no name",
    ),
    pytest.param(
        {"apiVersion": "v1", "kind": "Pod", "spec": {}},
        "Pod: objects[0].metadata: missing",
        id="no metadata",
    ),
]


@pytest.mark.parametrize(("raw", "message"), BAD_INPUT)
def test_bad_input_names_object_and_field(raw: Obj, message: str) -> None:
    with pytest.raises(InputError) as caught:
        convert(raw, k8s_node("other"))
    text = str(caught.value)
    assert text.startswith("test.yaml: ")
    assert message in text
    assert "\n" not in text


def test_duplicates_are_errors() -> None:
    with pytest.raises(InputError, match=r"test\.yaml: Pod ns/p1: metadata\.name: duplicate object"):
        convert(k8s_pod(), k8s_pod())


# --- speed ------------------------------------------------------------------------------------


def _cluster(nodes: int, pods: int) -> list[Obj]:
    objects: list[Obj] = [
        k8s_node(f"node-{index:04d}", gpus=8, metadata__labels={"zone": f"z{index % 4}"}) for index in range(nodes)
    ]
    objects += [k8s_podgroup(f"job-{index}", minMember=10) for index in range(pods // 10)]
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    for index in range(pods):
        objects.append(
            k8s_pod(
                f"job-{index // 10}-{index % 10}",
                cpu=("1", "500m", "2")[index % 3],
                gpus=1 if index % 3 == 0 else 0,
                node=f"node-{index % nodes:04d}" if index % 2 else None,
                group=f"job-{index // 10}",
                created=f"2024-01-01T00:{index % 60:02d}:00Z",
                spec__tolerations=tolerations,
                spec__nodeSelector={"kubernetes.io/os": "linux"},
            )
        )
    return objects


def test_a_thousand_nodes_and_ten_thousand_pods_convert() -> None:
    objects = _cluster(1000, 10000)
    snapshot = snapshot_from_objects(objects)
    assert (len(snapshot.nodes), len(snapshot.pods), len(snapshot.podgroups)) == (1000, 10000, 1000)
