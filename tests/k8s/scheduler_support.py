"""Builders and harness for the tests of ``vcsat scheduler`` against the real API server.

The control plane is shared by the whole session, and other tests leave pods and nodes behind
(namespaces stay Terminating: there is no namespace controller). So every scheduler test works in
its own bubble: its own namespace, nodes with a label unique to the test (its pods select them),
and its own scheduler name (so no other test's leftover pending pod is ever placed by it).
Plain module (no pytest imports), beside controlplane.py.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from controlplane import ControlPlane, start_control_plane
from kwokcluster import KWOK_NODE_ANNOTATION, KWOK_NODE_VALUE, start_kwok_cluster

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.kube.client import NODES, PODGROUPS, PODS, SCHEDULING_RESOURCES, ApiError, Kube
from vcsat.adapters.kube.informer import Store
from vcsat.adapters.live.scheduler import Scheduler
from vcsat.model import Policy, Snapshot

BUBBLE_LABEL = "vcsat-test/bubble"
WAIT_S = 60.0
"""The most any condition is waited for: a bound on a hung test, not a speed requirement."""


def wait_until(condition: Callable[[], Any], what: str, timeout_s: float = WAIT_S) -> Any:
    """Poll ``condition`` until it returns something truthy; fail naming ``what`` if it never does."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.05)


@dataclass
class Bubble:
    """One test's namespace, nodes and scheduler name."""

    kube: Kube
    namespace: str
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    nodes: list[str] = field(default_factory=list)
    priority_classes: list[str] = field(default_factory=list)

    @property
    def scheduler_name(self) -> str:
        return f"vcsat-{self.tag}"

    def policy(self, **options: Any) -> Policy:
        return Policy(scheduler_name=self.scheduler_name, time_limit_s=options.pop("time_limit_s", 5.0), **options)

    def node(
        self,
        suffix: str,
        *,
        cpu: str = "4",
        memory: str = "16Gi",
        gpus: int = 0,
        ready: bool = True,
        labels: dict[str, str] | None = None,
    ) -> str:
        """A Ready node of this bubble with these allocatable resources.

        A Ready one is annotated as a kwok node: on a cluster with kwok (:func:`kwok_control_plane`)
        kwok runs the pods bound to it; elsewhere the annotation means nothing and bound pods stay
        Pending. Its status goes in with the Node itself, so kwok never sees it without resources.
        """
        name = f"{suffix}-{self.tag}"
        labels = {BUBBLE_LABEL: self.tag, "kubernetes.io/hostname": name, **(labels or {})}
        metadata: dict[str, Any] = {"name": name, "labels": labels}
        if ready:
            metadata["annotations"] = {KWOK_NODE_ANNOTATION: KWOK_NODE_VALUE}
        resources = {"cpu": cpu, "memory": memory, "pods": "110"}
        if gpus:
            resources["nvidia.com/gpu"] = str(gpus)
        condition = {"type": "Ready", "status": "True" if ready else "False", "reason": "Test", "message": "test"}
        status = {"capacity": resources, "allocatable": resources, "conditions": [condition]}
        self.kube.post(NODES.path(), {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "status": status})
        self.nodes.append(name)
        # The API server keeps a new Node's status, but set it again in case an admission changed it.
        self.kube.patch(NODES.path(name=name, subresource="status"), {"status": status})
        return name

    def pod(
        self,
        name: str,
        *,
        cpu: str = "1",
        gpus: int = 0,
        group: str | None = None,
        scheduler: str | None = None,
        node_name: str | None = None,
        priority_class: str | None = None,
        node_selector: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Create a pod of this bubble (ours unless ``scheduler`` says otherwise); the stored object."""
        requests: dict[str, str] = {"cpu": cpu, "memory": "100Mi"}
        limits: dict[str, str] = {}
        if gpus:
            requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = str(gpus)
        spec: dict[str, Any] = {
            "schedulerName": scheduler or self.scheduler_name,
            "nodeSelector": {BUBBLE_LABEL: self.tag, **(node_selector or {})},
            "terminationGracePeriodSeconds": 30,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.invalid/app:1",
                    "resources": {"requests": requests, "limits": limits},
                }
            ],
        }
        if node_name is not None:
            spec["nodeName"] = node_name
        if priority_class is not None:
            spec["priorityClassName"] = priority_class
        metadata: dict[str, Any] = {"name": name, "namespace": self.namespace, "labels": labels or {}}
        if group is not None:
            metadata["annotations"] = {"scheduling.k8s.io/group-name": group}
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
        created: dict[str, Any] = self.kube.post(PODS.path(self.namespace), body)
        return created

    def priority_class(self, suffix: str, value: int) -> str:
        """A PriorityClass of this bubble (cluster-scoped, removed by :meth:`clean`); its name."""
        name = f"{suffix}-{self.tag}"
        self.kube.post(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value},
        )
        self.priority_classes.append(name)
        return name

    def podgroup(self, name: str, min_member: int, **spec: Any) -> dict[str, Any]:
        body = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            # Ours, as the Job controller marks the PodGroups of its Jobs: admitted by this bubble's
            # scheduler even before it has pods.
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "annotations": {"vcsat.io/scheduler-name": self.scheduler_name},
            },
            "spec": {"minMember": min_member, **spec},
        }
        created: dict[str, Any] = self.kube.post(PODGROUPS.path(self.namespace), body)
        return created

    def gang(self, name: str, size: int, *, min_member: int | None = None, **pod_options: Any) -> list[str]:
        """A PodGroup and its ``size`` pods ``name-0`` ...; the pods' names."""
        group_spec = {}
        if pod_options.get("priority_class"):
            group_spec["priorityClassName"] = pod_options["priority_class"]
        self.podgroup(name, size if min_member is None else min_member, **group_spec)
        names = [f"{name}-{i}" for i in range(size)]
        for pod in names:
            self.pod(pod, group=name, **pod_options)
        return names

    # --- reading back -------------------------------------------------------------------------

    def pods(self) -> dict[str, dict[str, Any]]:
        listing = self.kube.get(PODS.path(self.namespace))
        return {pod["metadata"]["name"]: pod for pod in listing["items"]}

    def placement(self) -> dict[str, str | None]:
        """Pod name → node name (None while unbound)."""
        return {name: pod["spec"].get("nodeName") for name, pod in self.pods().items()}

    def get_podgroup(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.kube.get(PODGROUPS.path(self.namespace, name))
        return found

    def listed(self) -> tuple[Store, Snapshot]:
        """A store filled from one listing of every resource the scheduler reads, and its snapshot
        for this bubble's scheduler: a cache that hears of nothing after it, as if the watch lagged."""
        store = Store()
        for resource in SCHEDULING_RESOURCES:
            store.replace(resource.kind, self.kube.list(resource)[0])
        generation, objects = store.snapshot()
        name = self.scheduler_name
        return store, snapshot_from_objects(objects, scheduler_name=name, strict=False, generation=generation)

    def events(self, involved: str | None = None) -> list[dict[str, Any]]:
        items = self.kube.get(f"/api/v1/namespaces/{self.namespace}/events")["items"]
        return [e for e in items if involved is None or e["involvedObject"]["name"] == involved]

    # --- cleaning up --------------------------------------------------------------------------

    def clean(self) -> None:
        """Delete this bubble's pods at once and its nodes, so nothing dangles for later tests."""
        with contextlib.suppress(ApiError):
            for name in self.pods():
                with contextlib.suppress(ApiError):
                    self.kube.delete(PODS.path(self.namespace, name), gracePeriodSeconds=0)
        for node in self.nodes:
            with contextlib.suppress(ApiError):
                self.kube.delete(NODES.path(name=node))
        for name in self.priority_classes:
            with contextlib.suppress(ApiError):
                self.kube.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


@contextlib.contextmanager
def running_scheduler(scheduler: Scheduler) -> Iterator[Scheduler]:
    """The scheduler's loop in a thread for the duration of the block; stopped and closed after."""
    stop = threading.Event()
    scheduler.start()
    thread = threading.Thread(target=scheduler.run, args=(stop,), name="test-scheduler", daemon=True)
    thread.start()
    try:
        yield scheduler
    finally:
        stop.set()
        scheduler.store.wake()
        thread.join(60)
        scheduler.close()


def cycles_after(scheduler: Scheduler, count: int) -> Callable[[], bool]:
    """A condition: ``count`` more cycles than now have completed."""
    target = scheduler.cycles + count
    return lambda: scheduler.cycles >= target


def wait_cached(scheduler: Scheduler, namespace: str, *, pods: list[str] = (), podgroups: list[str] = ()) -> None:  # type: ignore[assignment]
    """Wait until the scheduler's caches have listed everything and hold these pods and PodGroups."""
    wait_until(lambda: scheduler.store.synced(), "the caches are listed")
    wait_until(
        lambda: (
            all(scheduler.store.get("Pod", f"{namespace}/{name}") for name in pods)
            and all(scheduler.store.get("PodGroup", f"{namespace}/{name}") for name in podgroups)
        ),
        f"the cache holds pods {pods} and podgroups {podgroups}",
    )


@pytest.fixture(scope="module", name="control_plane")
def own_control_plane() -> Iterator[ControlPlane]:
    """A control plane of the importing module's own (import this fixture to use it): the
    session's holds other modules' leftovers, and these tests time the scheduler's cycles against
    a quiet cluster."""
    with start_control_plane() as plane:
        yield plane


@pytest.fixture(scope="module", name="control_plane")
def kwok_control_plane() -> Iterator[ControlPlane]:
    """A control plane with kube-controller-manager and kwok, of the importing module's own (import
    this fixture to use it): kwok plays the kubelet of the bubbles' nodes, so bound pods run and
    pods being deleted go away; :func:`kwokcluster.finish_pod` ends one. Bubbles make nodes that
    kwok does not heartbeat, so the node lifecycle controller stays off."""
    with start_kwok_cluster(node_lifecycle=False) as cluster:
        yield cluster.plane
