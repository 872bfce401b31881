"""The live scheduler binds a pod's WaitForFirstConsumer claims before the pod (VolumeBinding's
PreBind), against the real API server and kube-controller-manager's PV controller.

- a static volume: the scheduler writes the volume's ``claimRef`` (with the claim's uid) and
  ``pv.kubernetes.io/bound-by-controller``; the PV controller completes the claim; the pod lands
  on the volume's node;
- dynamic provisioning: the scheduler annotates the claim with ``volume.kubernetes.io/selected-node``;
  a stand-in external provisioner (this test) creates the volume there, the PV controller binds it;
- a provisioner that gives up removes the annotation: the pod is not bound, and a
  ``FailedScheduling`` Event on it says why.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from controlplane import ControlPlane
from kwokcluster import start_kwok_cluster
from scheduler_support import BUBBLE_LABEL, Bubble, running_scheduler, wait_until

from vcsat.adapters.kube.client import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, PODS, STORAGE_CLASSES, ApiError
from vcsat.adapters.live.scheduler import Scheduler

SELECTED_NODE = "volume.kubernetes.io/selected-node"


@pytest.fixture(scope="module", name="control_plane")
def pv_controller_plane() -> Iterator[ControlPlane]:
    """This module's own cluster, with the PV controller (persistentvolume-binder) running."""
    with start_kwok_cluster(node_lifecycle=False, extra_controllers=("persistentvolume-binder-controller",)) as cluster:
        yield cluster.plane


@contextlib.contextmanager
def storage(bubble: Bubble, provisioner: str) -> Iterator[str]:
    """A WaitForFirstConsumer StorageClass of the bubble (and every volume made meanwhile, removed after)."""
    name = f"wffc-{bubble.tag}"
    bubble.kube.post(
        STORAGE_CLASSES.path(),
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": "WaitForFirstConsumer",
        },
    )
    try:
        yield name
    finally:
        for volume in bubble.kube.get(PERSISTENT_VOLUMES.path())["items"]:
            if volume["spec"].get("storageClassName") == name:
                with contextlib.suppress(ApiError):
                    bubble.kube.delete(PERSISTENT_VOLUMES.path(name=volume["metadata"]["name"]))
        with contextlib.suppress(ApiError):
            bubble.kube.delete(STORAGE_CLASSES.path(name=name))


def volume(bubble: Bubble, name: str, storage_class: str, node: str, claim: dict[str, Any] | None = None) -> None:
    """A 10Gi volume of the class that only ``node`` reaches; pre-bound to ``claim`` when given."""
    spec: dict[str, Any] = {
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": storage_class,
        "local": {"path": "/mnt/disk"},
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
                ]
            }
        },
    }
    if claim is not None:
        meta = claim["metadata"]
        spec["claimRef"] = {"namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]}
    bubble.kube.post(
        PERSISTENT_VOLUMES.path(),
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec},
    )


def claim_and_pod(bubble: Bubble, storage_class: str) -> None:
    bubble.kube.post(
        PERSISTENT_VOLUME_CLAIMS.path(bubble.namespace),
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": bubble.namespace},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": storage_class,
                "resources": {"requests": {"storage": "5Gi"}},
            },
        },
    )
    bubble.kube.post(
        PODS.path(bubble.namespace),
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "db", "namespace": bubble.namespace},
            "spec": {
                "schedulerName": bubble.scheduler_name,
                "nodeSelector": {BUBBLE_LABEL: bubble.tag},
                "containers": [
                    {"name": "main", "image": "registry.invalid/db:1", "resources": {"requests": {"cpu": "1"}}}
                ],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
            },
        },
    )


def the_claim(bubble: Bubble) -> dict[str, Any]:
    found: dict[str, Any] = bubble.kube.get(PERSISTENT_VOLUME_CLAIMS.path(bubble.namespace, "data"))
    return found


@contextlib.contextmanager
def provisioner(bubble: Bubble, storage_class: str, *, fail: bool = False) -> Iterator[list[str]]:
    """A stand-in external provisioner for the claim ``data``: once it carries ``selected-node``,
    it creates a volume on that node pre-bound to it (or, ``fail``, removes the annotation, as a
    provisioner that cannot provision does). Yields the nodes it was asked for."""
    asked: list[str] = []
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(0.1):
            claim = the_claim(bubble)
            node = (claim["metadata"].get("annotations") or {}).get(SELECTED_NODE)
            if not node or claim["spec"].get("volumeName"):
                continue
            if asked and asked[-1] == node and not fail:
                continue
            asked.append(node)
            if fail:
                patch = {"metadata": {"annotations": {SELECTED_NODE: None}}}
                with contextlib.suppress(ApiError):
                    bubble.kube.patch(PERSISTENT_VOLUME_CLAIMS.path(bubble.namespace, "data"), patch)
            else:
                volume(bubble, f"pvc-{claim['metadata']['uid']}", storage_class, node, claim)

    thread = threading.Thread(target=run, name="test-provisioner", daemon=True)
    thread.start()
    try:
        yield asked
    finally:
        stop.set()
        thread.join(10)


def test_a_static_volume_is_bound_to_the_claim_before_the_pod(bubble: Bubble) -> None:
    a, b = bubble.node("a", cpu="16"), bubble.node("b", cpu="2")
    with storage(bubble, "kubernetes.io/no-provisioner") as storage_class:
        volume(bubble, f"local-{bubble.tag}", storage_class, b)
        claim_and_pod(bubble, storage_class)
        with running_scheduler(Scheduler(bubble.kube, policy=bubble.policy())):
            wait_until(lambda: bubble.placement()["db"], "the pod bound")
            wait_until(lambda: the_claim(bubble)["status"].get("phase") == "Bound", "the PV controller binds the claim")
        assert bubble.placement()["db"] == b != a
        claim = the_claim(bubble)
        pv = bubble.kube.get(PERSISTENT_VOLUMES.path(name=f"local-{bubble.tag}"))
        assert claim["spec"]["volumeName"] == pv["metadata"]["name"]
        assert pv["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
        assert SELECTED_NODE not in (claim["metadata"].get("annotations") or {})


def test_a_provisioned_claim_gets_the_pods_node_before_the_pod(bubble: Bubble) -> None:
    bubble.node("a", cpu="4")
    bubble.node("b", cpu="4")
    with storage(bubble, f"example.com/fake-{bubble.tag}") as storage_class:
        claim_and_pod(bubble, storage_class)
        with (
            provisioner(bubble, storage_class) as asked,
            running_scheduler(Scheduler(bubble.kube, policy=bubble.policy())),
        ):
            wait_until(lambda: bubble.placement()["db"], "the pod bound")
        claim = the_claim(bubble)
        node = bubble.placement()["db"]
        assert asked == [node]
        assert claim["metadata"]["annotations"][SELECTED_NODE] == node
        # The pod was bound only once its claim was: the PV controller had bound it by then.
        assert claim["spec"]["volumeName"] == f"pvc-{claim['metadata']['uid']}"


def test_a_pod_whose_provisioning_fails_is_not_bound_and_says_why(bubble: Bubble) -> None:
    bubble.node("a", cpu="4")
    with storage(bubble, f"example.com/fake-{bubble.tag}") as storage_class:
        claim_and_pod(bubble, storage_class)
        with (
            provisioner(bubble, storage_class, fail=True) as asked,
            running_scheduler(Scheduler(bubble.kube, policy=bubble.policy())),
        ):
            event = wait_until(
                lambda: [e for e in bubble.events("db") if e["reason"] == "FailedScheduling"],
                "a FailedScheduling Event",
            )[0]
            time.sleep(1.0)  # a little longer: the pod stays unbound while provisioning keeps failing
            assert bubble.placement()["db"] is None
        assert asked
        assert event["type"] == "Warning"
        assert "VolumeBinding" in event["message"] and 'provisioning failed for PVC "data"' in event["message"]
