"""deploy/crds take Volcano's newer fields and keep them; status goes where discovery says.

- PodGroup ``spec.subGroupPolicy``; Queue ``spec.affinity``, ``dequeueStrategy``,
  ``extendClusters``, ``status.reservation``; Job ``tasks[].partitionPolicy``,
  ``runningEstimate`` and the policy action ``RestartPartition``: created, read back unchanged.
- :class:`StatusWriter` writes through ``…/status`` where the CRD serves it and on the object
  itself where not, and follows a CRD that changes under it (a 404, discovery asked again).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from vcsat.adapters.kube.client import PODGROUPS, Kube, Resource
from vcsat.adapters.kube.status_subresource import StatusWriter

SCHEDULING = ("scheduling.volcano.sh", "v1beta1")
BATCH = ("batch.volcano.sh", "v1alpha1")


def test_podgroup_keeps_sub_group_policy(k8s_client: Any, k8s_namespace: str) -> None:
    custom = client.CustomObjectsApi(k8s_client)
    policy = [
        {
            "name": "worker",
            "subGroupSize": 4,
            "minSubGroups": 2,
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "worker"}},
            "matchLabelKeys": ["volcano.sh/partition-id"],
            "networkTopology": {"mode": "soft", "highestTierAllowed": 1},
        }
    ]
    body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"minMember": 8, "subGroupPolicy": policy},
    }
    custom.create_namespaced_custom_object(*SCHEDULING, k8s_namespace, "podgroups", body)
    got = custom.get_namespaced_custom_object(*SCHEDULING, k8s_namespace, "podgroups", "pg")
    assert got["spec"]["subGroupPolicy"] == policy
    # spec.preemptable is gone, as in Volcano's schema: pruned (the pod annotation
    # volcano.sh/preemptable says it instead).
    custom.create_namespaced_custom_object(
        *SCHEDULING, k8s_namespace, "podgroups", {**body, "metadata": {"name": "pg2"}, "spec": {"preemptable": False}}
    )
    got = custom.get_namespaced_custom_object(*SCHEDULING, k8s_namespace, "podgroups", "pg2")
    assert "preemptable" not in got["spec"]


@pytest.fixture
def queue_name(k8s_client: Any) -> Iterator[str]:
    name = f"q-{uuid.uuid4().hex[:8]}"
    yield name
    with contextlib.suppress(client.ApiException):
        client.CustomObjectsApi(k8s_client).delete_cluster_custom_object(*SCHEDULING, "queues", name)


def test_queue_keeps_affinity_dequeue_strategy_clusters_and_reservation(k8s_client: Any, queue_name: str) -> None:
    custom = client.CustomObjectsApi(k8s_client)
    spec = {
        "weight": 2,
        "affinity": {
            "nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["group-a"]},
            "nodeGroupAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": ["group-b"]},
        },
        "dequeueStrategy": "fifo",
        "extendClusters": [{"name": "east", "weight": 3, "capacity": {"cpu": "64"}}],
    }
    body = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": queue_name},
        "spec": spec,
    }
    custom.create_cluster_custom_object(*SCHEDULING, "queues", body)
    reservation = {"nodes": ["n1"], "resource": {"cpu": "4"}}
    custom.patch_cluster_custom_object_status(
        *SCHEDULING, "queues", queue_name, {"status": {"reservation": reservation}}
    )
    got = custom.get_cluster_custom_object(*SCHEDULING, "queues", queue_name)
    assert {k: got["spec"][k] for k in spec} == spec
    assert got["status"]["reservation"] == reservation


def test_job_keeps_partition_policy_running_estimate_and_restart_partition(k8s_client: Any, k8s_namespace: str) -> None:
    custom = client.CustomObjectsApi(k8s_client)
    partition = {"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1}
    body = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "parted"},
        "spec": {
            "runningEstimate": "2h",
            "policies": [{"event": "PodFailed", "action": "RestartPartition"}],
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 4,
                    "partitionPolicy": partition,
                    "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
                }
            ],
        },
    }
    custom.create_namespaced_custom_object(*BATCH, k8s_namespace, "jobs", body)
    got = custom.get_namespaced_custom_object(*BATCH, k8s_namespace, "jobs", "parted")
    assert got["spec"]["runningEstimate"] == "2h"
    assert got["spec"]["policies"][0]["action"] == "RestartPartition"
    assert got["spec"]["tasks"][0]["partitionPolicy"] == partition


def _crd(group: str, *, status: bool) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }
        },
    }
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
            "versions": [version],
        },
    }


def _established(ext: client.ApiextensionsV1Api, name: str, *, status: bool) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        crd = ext.read_custom_resource_definition(name)
        conditions = {c.type: c.status for c in (crd.status.conditions if crd.status else None) or []}
        served = bool(crd.spec.versions[0].subresources and crd.spec.versions[0].subresources.status is not None)
        if conditions.get("Established") == "True" and served == status:
            return
        time.sleep(0.1)
    raise AssertionError(f"CRD {name} never Established")


def test_status_writer_follows_discovery_and_a_crd_that_changes(
    k8s_client: Any, kube: Kube, k8s_namespace: str
) -> None:
    ext = client.ApiextensionsV1Api(k8s_client)
    group = f"t{uuid.uuid4().hex[:8]}.vcsat.test"
    widgets = Resource("Widget", f"{group}/v1", "widgets", namespaced=True)
    ext.create_custom_resource_definition(_crd(group, status=True))
    try:
        _established(ext, f"widgets.{group}", status=True)
        writer = StatusWriter(kube)
        kube.post(
            widgets.path(k8s_namespace), {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"}}
        )
        deadline = time.monotonic() + 10
        while not writer.has_status_subresource(widgets, refresh=True) and time.monotonic() < deadline:
            time.sleep(0.1)
        writer.patch_status(widgets, k8s_namespace, "w", {"phase": "A"})
        assert kube.get(widgets.path(k8s_namespace, "w"))["status"] == {"phase": "A"}

        # The CRD loses its status subresource under the running writer (Volcano's CRD installed
        # over ours): the write through /status is a 404, discovery is asked again, the object
        # itself takes the status.
        crd = ext.read_custom_resource_definition(f"widgets.{group}")
        crd.spec.versions[0].subresources = None
        ext.replace_custom_resource_definition(f"widgets.{group}", crd)
        _established(ext, f"widgets.{group}", status=False)
        deadline = time.monotonic() + 10
        while True:
            try:
                writer.patch_status(widgets, k8s_namespace, "w", {"phase": "B"})
                if kube.get(widgets.path(k8s_namespace, "w")).get("status") == {"phase": "B"}:
                    break
            except Exception:
                if time.monotonic() > deadline:
                    raise
            assert time.monotonic() < deadline, "the status never reached the object"
            time.sleep(0.1)
        assert writer.has_status_subresource(widgets) is False
    finally:
        ext.delete_custom_resource_definition(f"widgets.{group}")


def test_podgroups_take_status_on_the_object(kube: Kube, k8s_namespace: str) -> None:
    writer = StatusWriter(kube)
    assert writer.has_status_subresource(PODGROUPS) is False  # deploy/crds: as Volcano's
    body = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"}, "spec": {}}
    kube.post(PODGROUPS.path(k8s_namespace), body)
    writer.patch_status(PODGROUPS, k8s_namespace, "g", {"phase": "Inqueue"})
    assert kube.get(PODGROUPS.path(k8s_namespace, "g"))["status"]["phase"] == "Inqueue"
