"""Job → PodGroup (the gang the scheduler reads) and Job → pods (names, labels, annotations)."""

from __future__ import annotations

from typing import Any

import pytest
from controller_support import UID, job, task, template

from vcsat.adapters.controller.podgroup import build_podgroup, format_quantity, min_resources, spec_update
from vcsat.adapters.controller.pods import build_pod

PG_NAME = f"train-{UID}"


def _tasks(**worker: Any) -> list[dict[str, Any]]:
    return [
        task("ps", 1, template=template(cpu="1", memory="1Gi")),
        task("worker", 4, template=template(cpu="2", memory="4Gi", gpu=1), **worker),
    ]


def test_podgroup_of_a_job() -> None:
    spec = job(
        tasks=_tasks(minAvailable=2),
        queue="research",
        priorityClassName="high",
        networkTopology={"mode": "soft", "highestTierAllowed": 2},
        minAvailable=3,
    )
    group = build_podgroup(spec)
    assert group["metadata"]["name"] == PG_NAME
    assert group["metadata"]["namespace"] == "ns"
    assert group["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": "train",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert group["spec"] == {
        "minMember": 3,
        "minTaskMember": {"ps": 1, "worker": 2},
        "queue": "research",
        "minResources": {"cpu": "5", "memory": "9Gi", "nvidia.com/gpu": "2"},
        "priorityClassName": "high",
        "networkTopology": {"mode": "soft", "highestTierAllowed": 2},
    }


@pytest.mark.parametrize(
    ("min_available", "priorities", "expected"),
    [
        # Every task's minimum: ps x1 + worker x2.
        (3, {}, {"cpu": "5", "memory": "9Gi", "nvidia.com/gpu": "2"}),
        # The minimums, then spare replicas: ps x1 + worker x4.
        (5, {}, {"cpu": "9", "memory": "17Gi", "nvidia.com/gpu": "4"}),
        # Fewer than the minimums: the first pods by task priority (workers first when they rank higher).
        (2, {"worker-pc": 100}, {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"}),
        # ... or in the job's order when all rank alike.
        (2, {}, {"cpu": "3", "memory": "5Gi", "nvidia.com/gpu": "1"}),
    ],
)
def test_min_resources(min_available: int, priorities: dict[str, int], expected: dict[str, str]) -> None:
    worker_template = template(cpu="2", memory="4Gi", gpu=1)
    worker_template["spec"]["priorityClassName"] = "worker-pc"
    tasks = [
        task("ps", 1, template=template(cpu="1", memory="1Gi")),
        task("worker", 4, template=worker_template, minAvailable=2),
    ]
    spec = job(tasks=tasks, minAvailable=min_available)
    assert build_podgroup(spec, priorities=priorities)["spec"]["minResources"] == expected


def test_pod_requests_count_init_containers_and_overhead() -> None:
    tpl = template(cpu="500m", memory="256Mi")
    tpl["spec"]["initContainers"] = [
        {"name": "warmup", "image": "i", "resources": {"requests": {"cpu": "2", "memory": "128Mi"}}}
    ]
    tpl["spec"]["overhead"] = {"cpu": "100m"}
    spec = job(tasks=[task("a", 2, template=tpl)])
    # max(0.5, 2) + 0.1 = 2.1 cpu per pod; memory max(256Mi, 128Mi) = 256Mi.
    assert min_resources(spec) == {"cpu": 2 * 2_100_000_000, "memory": 2 * 256 * 2**20 * 10**9}


@pytest.mark.parametrize(
    ("name", "nanos", "text"),
    [
        ("cpu", 1_500_000_000, "1500m"),
        ("cpu", 3 * 10**9, "3"),
        ("memory", 9 * 2**30 * 10**9, "9Gi"),
        ("memory", 1000 * 10**9, "1000"),
        ("nvidia.com/gpu", 2 * 10**9, "2"),
        ("cpu", 5, "5n"),
    ],
)
def test_quantities_print_as_kubernetes_does(name: str, nanos: int, text: str) -> None:
    assert format_quantity(name, nanos) == text


def test_spec_update_only_what_drifted() -> None:
    desired = build_podgroup(job(tasks=_tasks()))["spec"]
    same = {**desired, "minResources": {"cpu": "9000m", "memory": "17Gi", "nvidia.com/gpu": 4}}
    assert spec_update(same, desired) == {}
    drifted = {**desired, "minMember": 1, "queue": "elsewhere"}
    assert spec_update(drifted, desired) == {"minMember": 5}


def test_pod_of_a_job() -> None:
    tpl = template()
    tpl["metadata"]["annotations"] = {"team": "ml"}
    spec = job(
        tasks=[task("worker", 2, template=tpl, topologyPolicy="best-effort")],
        queue="research",
        priorityClassName="high",
    )
    worker = spec.task("worker")
    assert worker is not None
    pod = build_pod(spec, worker, 1, version=3, retry_count=2, scheduler_name="vcsat")
    assert pod["metadata"]["name"] == "train-worker-1"
    assert pod["metadata"]["labels"] == {
        "app": "demo",
        "volcano.sh/task-index": "1",
        "volcano.sh/job-name": "train",
        "volcano.sh/task-spec": "worker",
        "volcano.sh/job-namespace": "ns",
        "volcano.sh/queue-name": "research",
    }
    assert pod["metadata"]["annotations"] == {
        "team": "ml",
        "volcano.sh/task-index": "1",
        "volcano.sh/task-spec": "worker",
        "scheduling.k8s.io/group-name": PG_NAME,
        "volcano.sh/job-name": "train",
        "volcano.sh/queue-name": "research",
        "volcano.sh/job-version": "3",
        "volcano.sh/template-uid": "train-worker",
        "volcano.sh/job-retry-count": "2",
        "volcano.sh/numa-topology-policy": "best-effort",
    }
    assert pod["metadata"]["ownerReferences"][0]["uid"] == UID
    assert pod["spec"]["schedulerName"] == "vcsat"
    assert pod["spec"]["priorityClassName"] == "high"
    # The template itself is never touched.
    assert "schedulerName" not in worker.template["spec"]


def test_pod_keeps_its_own_scheduler_and_mounts_volumes() -> None:
    tpl = template()
    tpl["spec"]["schedulerName"] = "other"
    spec = job(
        tasks=[task("worker", 1, template=tpl)],
        volumes=[
            {"mountPath": "/data", "volumeClaimName": "dataset"},
            {"mountPath": "/out", "volumeClaim": {"accessModes": ["ReadWriteOnce"]}},
        ],
    )
    worker = spec.task("worker")
    assert worker is not None
    pod = build_pod(spec, worker, 0, version=0, retry_count=0, scheduler_name="vcsat")
    assert pod["spec"]["schedulerName"] == "other"
    assert pod["spec"]["volumes"] == [
        {"name": "volcano-volume-0", "persistentVolumeClaim": {"claimName": "dataset"}},
        {"name": "volcano-volume-1", "persistentVolumeClaim": {"claimName": "train-pvc-1"}},
    ]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "volcano-volume-0", "mountPath": "/data"},
        {"name": "volcano-volume-1", "mountPath": "/out"},
    ]
