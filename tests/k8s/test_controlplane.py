"""Checks that the test control plane behaves like a real cluster and that our CRDs hold.

These pin down what the scheduler and Job controller rely on (nodes with extended resources,
the binding subresource, priority resolution, status subresources) and that deploy/crds accept
Volcano-shaped objects while refusing broken ones with a message that names the field.
"""

from __future__ import annotations

import json
import ssl
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from controlplane import ControlPlane
from kubernetes import client, config

SCHEDULING = ("scheduling.volcano.sh", "v1beta1")
TOPOLOGY = ("topology.volcano.sh", "v1alpha1")
BATCH = ("batch.volcano.sh", "v1alpha1")
# Only its JSON conversion is used: typed client objects become the dicts the server sent.
_SERIALIZER = client.ApiClient()


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def core(k8s_client: Any) -> client.CoreV1Api:
    return client.CoreV1Api(k8s_client)


@pytest.fixture
def custom(k8s_client: Any) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(k8s_client)


@pytest.fixture
def node(core: client.CoreV1Api) -> Iterator[str]:
    """A Ready node with 8 CPUs, 32Gi and 4 GPUs, removed after the test.

    Nodes are cluster-wide, so tests that share the control plane must not leave them behind.
    """
    name = _name("node")
    core.create_node(
        client.V1Node(
            metadata=client.V1ObjectMeta(name=name, labels={"kubernetes.io/hostname": name, "gpu.model": "A100"})
        )
    )
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "4"}
    core.patch_node_status(
        name,
        {
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "set by the test",
                    }
                ],
            }
        },
    )
    yield name
    core.delete_node(name)


def _doc(obj: object) -> dict[str, Any]:
    """An API object as the JSON dict the server sent, whichever client type carried it."""
    doc = _SERIALIZER.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
    assert isinstance(doc, dict)
    return doc


def _unprocessable(exc_info: pytest.ExceptionInfo[client.ApiException]) -> str:
    assert exc_info.value.status == 422, exc_info.value.body
    return str(json.loads(exc_info.value.body or "{}")["message"])


# --- core objects ---------------------------------------------------------------------------


def test_server_reports_the_pinned_version(control_plane: ControlPlane, k8s_client: Any) -> None:
    info = client.VersionApi(k8s_client).get_code()
    assert info.major == "1"
    assert info.git_version.startswith(f"v1.{info.minor}.")
    assert control_plane.server.startswith("https://127.0.0.1:")


def test_kubeconfig_file_reaches_the_server(control_plane: ControlPlane) -> None:
    # What `vcsat scheduler --kubeconfig` and kubectl would load.
    with config.new_client_from_config(config_file=str(control_plane.kubeconfig)) as api:  # type: ignore[no-untyped-call]
        names = [ns.metadata.name for ns in client.CoreV1Api(api).list_namespace().items if ns.metadata]
    assert "default" in names


def test_node_allocatable_includes_gpus(core: client.CoreV1Api, node: str) -> None:
    listed = {n["metadata"]["name"]: n for n in _doc(core.list_node())["items"]}
    assert node in listed
    got = listed[node]
    assert got["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    assert got["status"]["allocatable"]["memory"] == "32Gi"
    assert [c["status"] for c in got["status"]["conditions"] if c["type"] == "Ready"] == ["True"]
    # TaintNodesByCondition is off, so no controller-less not-ready taint blocks test pods.
    assert "taints" not in got["spec"]


def _pod(name: str, priority_class: str | None = None) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, annotations={"scheduling.k8s.io/group-name": "pg-1"}),
        spec=client.V1PodSpec(
            scheduler_name="vcsat",
            priority_class_name=priority_class,
            containers=[
                client.V1Container(
                    name="main",
                    image="registry.invalid/never-pulled:1",
                    resources=client.V1ResourceRequirements(
                        requests={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"},
                        limits={"nvidia.com/gpu": "2"},
                    ),
                )
            ],
        ),
    )


def _bind(core: client.CoreV1Api, namespace: str, pod: str, node: str) -> None:
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=pod),
        target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
    )
    # The server answers a binding with a Status, which the generated client cannot read back
    # as a V1Binding; the raw response avoids that known client bug.
    core.create_namespaced_pod_binding(pod, namespace, body, _preload_content=False)


def test_pod_is_bound_through_the_binding_subresource(core: client.CoreV1Api, k8s_namespace: str, node: str) -> None:
    core.create_namespaced_pod(k8s_namespace, _pod("p0"))
    pending = _doc(core.read_namespaced_pod("p0", k8s_namespace))
    assert "nodeName" not in pending["spec"]
    assert pending["status"]["phase"] == "Pending"
    # The ServiceAccount admission plugin is off: no token volume is injected.
    assert "volumes" not in pending["spec"]

    _bind(core, k8s_namespace, "p0", node)

    bound = _doc(core.read_namespaced_pod("p0", k8s_namespace))
    assert bound["spec"]["nodeName"] == node
    scheduled = [c for c in bound["status"].get("conditions", []) if c["type"] == "PodScheduled"]
    assert [c["status"] for c in scheduled] == ["True"]

    # A second binding is refused: this is what stops two schedulers placing one pod twice.
    with pytest.raises(client.ApiException) as exc_info:
        _bind(core, k8s_namespace, "p0", node)
    assert exc_info.value.status == 409


def test_priority_class_is_resolved_on_pods(core: client.CoreV1Api, k8s_client: Any, k8s_namespace: str) -> None:
    sched = client.SchedulingV1Api(k8s_client)
    pc = _name("high")
    sched.create_priority_class(client.V1PriorityClass(metadata=client.V1ObjectMeta(name=pc), value=1000))
    try:
        core.create_namespaced_pod(k8s_namespace, _pod("p-high", priority_class=pc))
        assert _doc(core.read_namespaced_pod("p-high", k8s_namespace))["spec"]["priority"] == 1000
    finally:
        sched.delete_priority_class(pc)


# --- our CRDs: valid objects ----------------------------------------------------------------


def test_default_queue_is_installed(custom: client.CustomObjectsApi) -> None:
    queue = _doc(custom.get_cluster_custom_object(*SCHEDULING, "queues", "default"))
    assert queue["spec"] == {"weight": 1, "reclaimable": True, "dequeueStrategy": "traverse"}


def test_queue_round_trips_with_defaults(custom: client.CustomObjectsApi) -> None:
    name = _name("q")
    body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {
            "capability": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": 16},
            "deserved": {"cpu": "32", "nvidia.com/gpu": "8"},
            "guarantee": {"resource": {"cpu": "4"}},
            "parent": "root",
        },
    }
    custom.create_cluster_custom_object(*SCHEDULING, "queues", body)
    try:
        got = _doc(custom.get_cluster_custom_object(*SCHEDULING, "queues", name))
        assert got["spec"]["weight"] == 1
        assert "reclaimable" not in got["spec"]  # no default, as in Volcano's schema: absent reads as true
        assert got["spec"]["capability"]["nvidia.com/gpu"] == 16
        custom.patch_cluster_custom_object_status(*SCHEDULING, "queues", name, {"status": {"state": "Closed"}})
        got = _doc(custom.get_cluster_custom_object(*SCHEDULING, "queues", name))
        assert got["status"]["state"] == "Closed"
    finally:
        custom.delete_cluster_custom_object(*SCHEDULING, "queues", name)


def _podgroup(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_podgroup_round_trips_and_takes_status(
    control_plane: ControlPlane, custom: client.CustomObjectsApi, k8s_namespace: str
) -> None:
    body = _podgroup(
        "pg-1",
        minMember=3,
        minTaskMember={"ps": 1, "worker": 2},
        priorityClassName="high",
        minResources={"cpu": "3", "nvidia.com/gpu": "6"},
        networkTopology={"highestTierAllowed": 2},
    )
    custom.create_namespaced_custom_object(*SCHEDULING, k8s_namespace, "podgroups", body)
    got = _doc(custom.get_namespaced_custom_object(*SCHEDULING, k8s_namespace, "podgroups", "pg-1"))
    assert got["spec"]["queue"] == "default"
    assert got["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    assert got["spec"]["minTaskMember"] == {"ps": 1, "worker": 2}

    # As in Volcano's CRD there is no status subresource: the status is written on the PodGroup itself.
    with pytest.raises(client.ApiException) as exc_info:
        custom.patch_namespaced_custom_object_status(
            *SCHEDULING, k8s_namespace, "podgroups", "pg-1", {"status": {"phase": "Running"}}
        )
    assert exc_info.value.status == 404
    custom.patch_namespaced_custom_object(
        *SCHEDULING,
        k8s_namespace,
        "podgroups",
        "pg-1",
        {
            "status": {
                "phase": "Running",
                "running": 3,
                "conditions": [{"type": "Scheduled", "status": "True"}],
            }
        },
    )
    got = _doc(custom.get_namespaced_custom_object(*SCHEDULING, k8s_namespace, "podgroups", "pg-1"))
    assert got["status"]["phase"] == "Running"

    table = _table(control_plane, f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{k8s_namespace}/podgroups")
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns[:6] == ["Name", "STATUS", "minMember", "RUNNINGS", "AGE", "QUEUE"]
    assert table["rows"][0]["cells"][1:4] == ["Running", 3, 3]


def _table(control_plane: ControlPlane, path: str) -> dict[str, Any]:
    """The server-side table kubectl get prints, which is where printer columns show."""
    request = urllib.request.Request(control_plane.server + path)
    request.add_header("Authorization", f"Bearer {control_plane.token}")
    request.add_header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
    context = ssl.create_default_context(cafile=str(control_plane.ca_file))
    with urllib.request.urlopen(request, context=context, timeout=10) as resp:
        return dict(json.load(resp))


def test_hypernode_accepts_each_selector_kind(custom: client.CustomObjectsApi) -> None:
    name = _name("rack")
    body = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {
            "tier": 1,
            "members": [
                {"type": "Node", "selector": {"exactMatch": {"name": "node-0"}}},
                {"type": "Node", "selector": {"regexMatch": {"pattern": "^node-[1-3]$"}}},
                {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "r1"}}}},
                {"type": "HyperNode", "selector": {"exactMatch": {"name": "leaf-0"}}},
            ],
        },
    }
    custom.create_cluster_custom_object(*TOPOLOGY, "hypernodes", body)
    try:
        got = _doc(custom.get_cluster_custom_object(*TOPOLOGY, "hypernodes", name))
        assert len(got["spec"]["members"]) == 4
    finally:
        custom.delete_cluster_custom_object(*TOPOLOGY, "hypernodes", name)


def _task(name: str, replicas: int, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "replicas": replicas,
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.invalid/trainer:1",
                        "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}},
                    }
                ],
            },
        },
        **extra,
    }


def _job(name: str, tasks: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"schedulerName": "vcsat", "tasks": tasks, **spec},
    }


def test_job_round_trips_with_defaults(
    control_plane: ControlPlane, custom: client.CustomObjectsApi, k8s_namespace: str
) -> None:
    body = _job(
        "train",
        [
            _task("ps", 1, minAvailable=1),
            _task(
                "worker",
                4,
                minAvailable=2,
                dependsOn={"name": ["ps"], "iteration": "any"},
                policies=[{"event": "TaskCompleted", "action": "CompleteJob"}],
            ),
        ],
        minAvailable=3,
        minSuccess=4,
        ttlSecondsAfterFinished=60,
        plugins={"ssh": [], "svc": ["--publish-not-ready-addresses"]},
        policies=[
            {"events": ["PodEvicted", "PodFailed"], "action": "RestartJob", "timeout": "5m"},
            {"exitCode": 137, "action": "AbortJob"},
        ],
        networkTopology={"mode": "soft", "highestTierAllowed": 2},
    )
    custom.create_namespaced_custom_object(*BATCH, k8s_namespace, "jobs", body)
    got = _doc(custom.get_namespaced_custom_object(*BATCH, k8s_namespace, "jobs", "train"))
    assert got["spec"]["queue"] == "default"
    assert got["spec"]["maxRetry"] == 3
    # The pod template is kept as written, not pruned.
    template = got["spec"]["tasks"][1]["template"]
    assert template["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"

    custom.patch_namespaced_custom_object_status(
        *BATCH,
        k8s_namespace,
        "jobs",
        "train",
        {
            "status": {
                "state": {"phase": "Running"},
                "minAvailable": 3,
                "running": 5,
                "taskStatusCount": {"worker": {"phase": {"Running": 4}}},
            }
        },
    )
    got = _doc(custom.get_namespaced_custom_object(*BATCH, k8s_namespace, "jobs", "train"))
    assert got["status"]["state"]["phase"] == "Running"

    table = _table(control_plane, f"/apis/batch.volcano.sh/v1alpha1/namespaces/{k8s_namespace}/jobs")
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns[:6] == ["Name", "STATUS", "minAvailable", "RUNNINGS", "AGE", "QUEUE"]
    assert table["rows"][0]["cells"][:4] == ["train", "Running", 3, 5]


# --- our CRDs: refused objects --------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        pytest.param(
            _job("dup", [_task("worker", 1), _task("worker", 2)]),
            "spec.tasks",
            "unique",
            id="duplicate-task-names",
        ),
        pytest.param(
            _job("too-many", [_task("a", 1), _task("b", 2)], minAvailable=4),
            "spec.minAvailable",
            "total replicas",
            id="minAvailable-above-replicas",
        ),
        pytest.param(
            _job("min-success", [_task("a", 2)], minSuccess=3),
            "spec.minSuccess",
            "total replicas",
            id="minSuccess-above-replicas",
        ),
        pytest.param(
            _job("task-min", [_task("a", 2, minAvailable=3)]),
            "spec.tasks[0].minAvailable",
            "replicas",
            id="task-minAvailable-above-replicas",
        ),
        pytest.param(
            _job("bad-name", [_task("Worker_1", 1)]),
            "spec.tasks[0].name",
            "should match",
            id="task-name-not-dns-label",
        ),
        pytest.param(
            _job("no-tasks", []),
            "spec.tasks",
            "at least 1",
            id="no-tasks",
        ),
        pytest.param(
            _job("dep", [_task("a", 1, dependsOn={"name": ["missing"]})]),
            "spec.tasks",
            "dependsOn",
            id="dependsOn-unknown-task",
        ),
        pytest.param(
            _job(
                "policy",
                [_task("a", 1)],
                policies=[{"event": "PodFailed", "exitCode": 1, "action": "AbortJob"}],
            ),
            "spec.policies[0].exitCode",
            "not both",
            id="policy-event-and-exitCode",
        ),
        pytest.param(
            _job("neg", [_task("a", -1)]),
            "spec.tasks[0].replicas",
            "greater than or equal to 0",
            id="negative-replicas",
        ),
    ],
)
def test_invalid_job_is_refused(
    custom: client.CustomObjectsApi, k8s_namespace: str, body: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(client.ApiException) as exc_info:
        custom.create_namespaced_custom_object(*BATCH, k8s_namespace, "jobs", body)
    message = _unprocessable(exc_info)
    assert field in message
    assert words in message


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param({"minMember": -1}, "spec.minMember", id="negative-minMember"),
        pytest.param({"networkTopology": {"mode": "strict"}}, "spec.networkTopology.mode", id="bad-mode"),
        pytest.param({"minResources": {"cpu": "lots"}}, "spec.minResources.cpu", id="bad-quantity"),
    ],
)
def test_invalid_podgroup_is_refused(
    custom: client.CustomObjectsApi, k8s_namespace: str, spec: dict[str, Any], field: str
) -> None:
    with pytest.raises(client.ApiException) as exc_info:
        custom.create_namespaced_custom_object(*SCHEDULING, k8s_namespace, "podgroups", _podgroup("bad", **spec))
    assert field in _unprocessable(exc_info)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param({"weight": 0}, "spec.weight", id="zero-weight"),
        pytest.param({"capability": {"memory": "12XB"}}, "spec.capability.memory", id="bad-quantity"),
        pytest.param({"weight": 65536}, "spec.weight", id="weight-over-volcanos-maximum"),
        pytest.param({"dequeueStrategy": "lifo"}, "spec.dequeueStrategy", id="bad-dequeue-strategy"),
    ],
)
def test_invalid_queue_is_refused(custom: client.CustomObjectsApi, spec: dict[str, Any], field: str) -> None:
    body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": _name("bad")},
        "spec": spec,
    }
    with pytest.raises(client.ApiException) as exc_info:
        custom.create_cluster_custom_object(*SCHEDULING, "queues", body)
    assert field in _unprocessable(exc_info)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param(
            {"members": [{"type": "Node", "selector": {"exactMatch": {"name": "n"}}}]},
            "spec.tier",
            id="no-tier",
        ),
        pytest.param(
            {
                "tier": 1,
                "members": [
                    {
                        "type": "Node",
                        "selector": {"exactMatch": {"name": "n"}, "regexMatch": {"pattern": "n.*"}},
                    }
                ],
            },
            "spec.members[0].selector",
            id="two-selectors",
        ),
        pytest.param(
            {"tier": 1, "members": [{"type": "Switch", "selector": {"exactMatch": {"name": "n"}}}]},
            "spec.members[0].type",
            id="bad-member-type",
        ),
    ],
)
def test_invalid_hypernode_is_refused(custom: client.CustomObjectsApi, spec: dict[str, Any], field: str) -> None:
    body = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": _name("bad")},
        "spec": spec,
    }
    with pytest.raises(client.ApiException) as exc_info:
        custom.create_cluster_custom_object(*TOPOLOGY, "hypernodes", body)
    assert field in _unprocessable(exc_info)


def test_invalid_podgroup_status_is_refused(custom: client.CustomObjectsApi, k8s_namespace: str) -> None:
    custom.create_namespaced_custom_object(*SCHEDULING, k8s_namespace, "podgroups", _podgroup("pg-status", minMember=1))
    with pytest.raises(client.ApiException) as exc_info:
        custom.patch_namespaced_custom_object(
            *SCHEDULING, k8s_namespace, "podgroups", "pg-status", {"status": {"phase": "Sleeping"}}
        )
    assert "status.phase" in _unprocessable(exc_info)
