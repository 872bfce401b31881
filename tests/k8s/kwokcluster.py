"""A whole throwaway cluster with fake nodes: control plane + kube-controller-manager + kwok.

controlplane.py runs etcd and kube-apiserver only: objects are stored, nothing reconciles them.
This module adds what the end-to-end tests (tests/e2e) need for pods that run and finish:

- the genuine **kube-controller-manager**: garbage collector, namespace lifecycle, the Job and
  ReplicaSet controllers, service accounts and their tokens (signed with the control plane's
  service-account key; the ServiceAccount admission plugin stays off as in controlplane.py, so
  pods need none), pod garbage collection, and the node lifecycle and taint eviction
  controllers (a node that turns NotReady is tainted and its pods are evicted after the short
  tolerations the API server here hands out). No leader election, no HTTPS port.
- **kwok** (sigs.k8s.io/kwok), the kubelet of fake nodes: it manages every Node annotated
  ``kwok.x-k8s.io/node: fake`` (:func:`kwok_node` builds one), keeps its heartbeat and Lease, and
  moves the pods bound to it through their lifecycle by Stage objects: its Stage CRD, its default
  node and pod stages, and vcsat's own (tools/controlplane/kwok/stages.yaml): a pod annotated
  ``vcsat.io/run-seconds`` ends that many seconds after it started Running, with the exit code of
  ``vcsat.io/exit-code`` (0 by default).

Everything listens on loopback only, and the binaries are the ones tools/controlplane/build.sh
builds and caches. Plain module (no pytest imports), so scripts can use it too:

    with start_kwok_cluster() as cluster:
        cluster.plane.create_objects([kwok_node("n0", gpus=8)])
"""

from __future__ import annotations

import contextlib
import copy
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlplane import (
    CRD_DIR,
    REPO_ROOT,
    START_TIMEOUT_S,
    ControlPlane,
    ControlPlaneError,
    _Proc,
    _spawn,
    _wait_until,
    load_manifests,
    locate_binaries,
    start_control_plane,
    write_kubeconfig,
)
from kubernetes import client

BINARIES = ("kube-apiserver", "etcd", "kube-controller-manager", "kwok")
VCSAT_STAGES = REPO_ROOT / "tools" / "controlplane" / "kwok" / "stages.yaml"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_VALUE = "fake"
RUN_SECONDS = "vcsat.io/run-seconds"
"""Pod annotation: seconds the pod runs before kwok ends it (vcsat's Stage)."""
EXIT_CODE = "vcsat.io/exit-code"
"""Pod annotation: exit code its containers end with (0: Succeeded, else Failed)."""
EXIT_REASON = "vcsat.io/exit-reason"
"""Pod annotation: the containers' termination reason (default Completed or Error)."""
NOT_READY_LABEL = "node-not-ready.stage.kwok.x-k8s.io"
"""Node label ("true") that makes kwok report the node NotReady (its node-not-ready Stage)."""

# Controllers this cluster runs; everything else in kube-controller-manager stays off (no
# volumes, endpoints, daemon sets, certificates or quotas exist in these tests).
CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "job-controller",
    "replicaset-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "pod-garbage-collector-controller",
    "node-lifecycle-controller",
    "taint-eviction-controller",
)
NODE_HEALTH = ("node-lifecycle-controller", "taint-eviction-controller")
NODE_LEASE_S = 40
"""kwok's node Lease duration (the kubelet's default), renewed every 10 s."""
# Pods tolerate a NotReady or unreachable node this long (the API server's default tolerations)
# before the taint eviction controller evicts them: seconds here, where clusters use 300.
NOT_READY_TOLERATION_S = 2

# kwok's stages that build.sh copies next to its binary, applied in this order: its default node
# (fast initialisation, heartbeat with Leases) and pod (fast) stages, and its node-not-ready chaos
# stage, which turns a node labelled NOT_READY_LABEL NotReady.
KWOK_DEFAULT_STAGES = (
    "node-initialize.yaml",
    "node-heartbeat-with-lease.yaml",
    "node-not-ready.yaml",
    "pod-ready.yaml",
    "pod-complete.yaml",
    "pod-delete.yaml",
)
STAGES_GROUP = "kwok.x-k8s.io"
STAGES_VERSION = "v1alpha1"


@dataclass(frozen=True)
class KwokCluster:
    """A running control plane with kube-controller-manager and kwok."""

    plane: ControlPlane
    controller_manager_log: Path
    kwok_log: Path


def kwok_node(
    name: str,
    *,
    cpu: str = "32",
    memory: str = "256Gi",
    gpus: int = 0,
    pods: str = "110",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Node object that kwok manages, with this allocatable (and capacity)."""
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpus:
        resources["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: KWOK_NODE_VALUE},
            "labels": {"kubernetes.io/hostname": name, "type": "kwok", **(labels or {})},
        },
        "status": {"allocatable": dict(resources), "capacity": dict(resources)},
    }


def stage_objects(bin_dir: Path) -> list[dict[str, Any]]:
    """kwok's Stages (pod-complete and node-initialize narrowed) followed by vcsat's own."""
    stage_dir = bin_dir / "kwok-stages"
    stages: list[dict[str, Any]] = []
    for name in KWOK_DEFAULT_STAGES:
        for doc in load_manifests(stage_dir / name):
            if doc["metadata"]["name"] == "pod-complete":
                doc = _without_run_seconds(doc)
            elif doc["metadata"]["name"] == "node-initialize":
                doc = _not_when_failing(doc)
            stages.append(doc)
    stages.extend(load_manifests(VCSAT_STAGES))
    return stages


def _without_run_seconds(stage: dict[str, Any]) -> dict[str, Any]:
    # kwok ends the pods of any owner of kind Job as soon as they run, Volcano's included; only
    # batch/v1 Jobs' pods that do not say how long they run are left to it (vcsat-pod-finish).
    narrowed = copy.deepcopy(stage)
    expressions = narrowed["spec"]["selector"]["matchExpressions"]
    expressions.append({"key": ".metadata.ownerReferences.[].apiVersion", "operator": "In", "values": ["batch/v1"]})
    expressions.append({"key": f'.metadata.annotations["{RUN_SECONDS}"]', "operator": "DoesNotExist"})
    return narrowed


def finish_pod(api: Any, namespace: str, name: str, exit_code: int = 0, reason: str | None = None) -> None:
    """End a pod's containers with ``exit_code`` now (once it runs): kwok's vcsat-pod-finish Stage.

    ``api`` is a kubernetes.client.ApiClient. The pod's phase becomes Succeeded for 0, else Failed.
    """
    annotations = {RUN_SECONDS: "0", EXIT_CODE: str(exit_code)}
    if reason is not None:
        annotations[EXIT_REASON] = reason
    client.CoreV1Api(api).patch_namespaced_pod(name, namespace, {"metadata": {"annotations": annotations}})


class PodEnds:
    """Ends running pods on kwok nodes on request, the way their containers would exit."""

    def __init__(self, api: Any) -> None:
        self.api = api

    def succeed(self, namespace: str, name: str, exit_code: int = 0) -> None:
        """The pod's containers exit with ``exit_code`` (0 by default): phase Succeeded."""
        finish_pod(self.api, namespace, name, exit_code)

    def fail(self, namespace: str, name: str, exit_code: int = 1, reason: str = "Error") -> None:
        """The pod's containers exit with ``exit_code``: phase Failed."""
        finish_pod(self.api, namespace, name, exit_code, reason)


def _not_when_failing(stage: dict[str, Any]) -> dict[str, Any]:
    # node-initialize makes any node that is not Ready Ready again; a node made to fail must stay
    # NotReady, or the two stages would flip it back and forth.
    narrowed = copy.deepcopy(stage)
    expressions = narrowed["spec"]["selector"]["matchExpressions"]
    expressions.append({"key": f'.metadata.labels["{NOT_READY_LABEL}"]', "operator": "DoesNotExist"})
    return narrowed


@contextlib.contextmanager
def start_kwok_cluster(
    *,
    bin_dir: Path | None = None,
    node_lifecycle: bool = True,
    crd_dir: Path = CRD_DIR,
    extra_controllers: tuple[str, ...] = (),
) -> Iterator[KwokCluster]:
    """etcd, kube-apiserver (vcsat's CRDs installed, or those in ``crd_dir``), kube-controller-manager
    and kwok, ready.

    ``node_lifecycle=False`` leaves out the node lifecycle and taint eviction controllers, for
    tests that also make Nodes of their own that no kwok heartbeats (they would turn Unknown and
    their pods be evicted). ``extra_controllers``: more kube-controller-manager controllers (e.g.
    ``persistentvolume-binder-controller``, which completes the volume bindings a scheduler starts).
    """
    bin_dir = bin_dir or locate_binaries(BINARIES)
    apiserver_args = (
        f"--default-not-ready-toleration-seconds={NOT_READY_TOLERATION_S}",
        f"--default-unreachable-toleration-seconds={NOT_READY_TOLERATION_S}",
    )
    controllers = CONTROLLERS if node_lifecycle else tuple(c for c in CONTROLLERS if c not in NODE_HEALTH)
    controllers += extra_controllers
    with (
        start_control_plane(bin_dir=bin_dir, apiserver_args=apiserver_args, crd_dir=crd_dir) as plane,
        contextlib.ExitStack() as stack,
    ):
        kcm = _start_controller_manager(plane, bin_dir, controllers)
        stack.callback(kcm.stop)
        kwok = _start_kwok(plane, bin_dir)
        stack.callback(kwok.stop)
        yield KwokCluster(plane=plane, controller_manager_log=kcm.log, kwok_log=kwok.log)


def _start_controller_manager(plane: ControlPlane, bin_dir: Path, controllers: tuple[str, ...]) -> _Proc:
    workdir = plane.workdir / "kube-controller-manager"
    workdir.mkdir()
    kubeconfig = workdir / "kubeconfig"
    write_kubeconfig(kubeconfig, plane.server, plane.ca_file, plane.token)
    pki = plane.workdir / "pki"
    argv = [
        str(bin_dir / "kube-controller-manager"),
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=false",
        # No HTTPS endpoint: nothing probes it, and it would be one more port to pick.
        "--secure-port=0",
        f"--controllers={','.join(controllers)}",
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--root-ca-file={plane.ca_file}",
        # Node health is looked at every second, so a node kwok reports NotReady is tainted soon.
        "--node-monitor-period=1s",
        "--concurrent-gc-syncs=5",
        "--v=1",
    ]
    proc = _spawn("kube-controller-manager", argv, workdir / "kube-controller-manager.log")
    try:
        # The service account controller gives every namespace its `default` account: once the
        # one of `default` exists, the controllers run against this API server.
        with plane.api_client() as api:
            core = client.CoreV1Api(api)
            _wait_until(
                lambda: core.read_namespaced_service_account("default", "default") is not None,
                "kube-controller-manager to create the default ServiceAccount",
                time.monotonic() + START_TIMEOUT_S,
                [proc],
                interval=0.2,
            )
    except BaseException:
        proc.stop()
        raise
    return proc


def _start_kwok(plane: ControlPlane, bin_dir: Path) -> _Proc:
    workdir = plane.workdir / "kwok"
    workdir.mkdir()
    kubeconfig = workdir / "kubeconfig"
    write_kubeconfig(kubeconfig, plane.server, plane.ca_file, plane.token)
    deadline = time.monotonic() + START_TIMEOUT_S
    _install_stages(plane, bin_dir, deadline)
    argv = [
        str(bin_dir / "kwok"),
        f"--kubeconfig={kubeconfig}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}={KWOK_NODE_VALUE}",
        "--enable-crds=Stage",
        # Node Leases, renewed every quarter of this (as the kubelet does): the heartbeat the node
        # lifecycle controller reads. Without the flag kwok keeps none, and its heartbeat stage
        # writes node status only every ten minutes, so every node went NotReady 50 s (the
        # controller's grace period) after it was made and the taint eviction deleted its pods.
        f"--node-lease-duration-seconds={NODE_LEASE_S}",
        # kwok serves nothing (no --server-address, no --node-port): no exec, logs or metrics.
    ]
    # HOME: kwok also reads ~/.kwok/kwok.yaml when it exists; a user's must not change the tests.
    env = {**os.environ, "HOME": str(workdir)}
    # Under heavy load (CI beside other work) a kwok has, once in many runs, not made its canary
    # node Ready in the whole start budget. So the first kwok gets half the budget and, if it
    # does not make it, a fresh one gets the rest; the first one's log stays beside the second's
    # and its tail is part of the error when both fail.
    first_deadline = time.monotonic() + (deadline - time.monotonic()) / 2
    try:
        return _spawn_ready_kwok(plane, argv, env, workdir / "kwok.log", first_deadline)
    except ControlPlaneError as first_error:
        first_failure = str(first_error)
    try:
        return _spawn_ready_kwok(plane, argv, env, workdir / "kwok-second.log", deadline)
    except ControlPlaneError as second_error:
        raise ControlPlaneError(f"{second_error}\n--- the first kwok, stopped ---\n{first_failure}") from None


def _spawn_ready_kwok(plane: ControlPlane, argv: list[str], env: dict[str, str], log: Path, deadline: float) -> _Proc:
    """A kwok that has made its canary node Ready by ``deadline``; stopped again if it has not."""
    proc = _spawn("kwok", argv, log, env=env)
    try:
        _wait_for_kwok_canary(plane, proc, deadline)
    except BaseException:
        proc.stop()
        raise
    return proc


def _install_stages(plane: ControlPlane, bin_dir: Path, deadline: float) -> None:
    crd_file = bin_dir / "kwok-stages" / "stage-crd.yaml"
    if not crd_file.is_file():
        raise ControlPlaneError(f"{crd_file} is missing: run tools/controlplane/build.sh")
    with plane.api_client() as api:
        ext = client.ApiextensionsV1Api(api)
        for doc in load_manifests(crd_file):
            ext.create_custom_resource_definition(body=doc)  # type: ignore[arg-type]
            name = doc["metadata"]["name"]

            def established(crd_name: str = name) -> bool:
                crd = ext.read_custom_resource_definition(crd_name)
                conditions = {c.type: c.status for c in (crd.status.conditions if crd.status else None) or []}
                return conditions.get("Established") == "True"

            _wait_until(established, f"CRD {name} to be Established", deadline, [])
        custom = client.CustomObjectsApi(api)
        for stage in stage_objects(bin_dir):
            custom.create_cluster_custom_object(STAGES_GROUP, STAGES_VERSION, "stages", stage)


def _wait_for_kwok_canary(plane: ControlPlane, proc: _Proc, deadline: float) -> None:
    name = f"kwok-canary-{secrets.token_hex(4)}"
    with plane.api_client() as api:
        core = client.CoreV1Api(api)
        core.create_node(body=kwok_node(name, cpu="1", memory="1Gi"))
        try:

            def ready() -> bool:
                node = core.read_node(name)
                conditions = {c.type: c.status for c in (node.status.conditions or [])}
                return conditions.get("Ready") == "True"

            _wait_until(ready, "kwok to make its canary node Ready", deadline, [proc], interval=0.1)
        finally:
            with contextlib.suppress(client.ApiException):
                core.delete_node(name)
