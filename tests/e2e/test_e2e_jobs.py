"""Volcano Jobs end to end on kwok nodes: gangs that take turns, and a node failing under a Job.

The real control plane, kube-controller-manager and kwok (tests/k8s/kwokcluster.py), and
``vcsat scheduler`` and ``vcsat controller`` as processes of their own, one cluster for the module.

- Two Jobs of three 2-GPU pods each compete for two 4-GPU nodes: both gangs cannot run at once,
  and one pod of the second would fit beside the first. vcsat must bind each gang whole or not at
  all; kwok runs the pods for the seconds their annotation says, then they succeed and the Jobs
  complete.
- A node turns NotReady under a running Job: kube-controller-manager taints it and evicts its pod;
  the Job's policy restarts the Job, whose pods run on the healthy nodes and complete.
- Kubernetes' own controllers do their part: a batch/v1 Job runs to Complete, the garbage
  collector removes its pods with it, and a deleted namespace goes away.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from e2e_support import (
    JOBS,
    PodWatch,
    bindings,
    gpu_job,
    gpu_nodes,
    job_phase,
    nodes_by_uid,
    vcsat_daemon,
    wait_until,
)
from kubernetes import client
from kwokcluster import NOT_READY_LABEL, KwokCluster

GANG = 3
GPUS_PER_POD = 2
NODE_GPUS = 4
RUN_SECONDS = 2


def test_two_gangs_share_the_gpus_in_turn_and_complete(
    kwok_cluster: KwokCluster, namespace: str, tmp_path: Path
) -> None:
    plane = kwok_cluster.plane
    logs = (tmp_path / "scheduler.log", tmp_path / "controller.log", kwok_cluster.kwok_log)
    with (
        gpu_nodes(kwok_cluster, [NODE_GPUS] * 2) as nodes,
        plane.api_client() as api,
        PodWatch(api, namespace) as pods,
        vcsat_daemon("scheduler", plane.kubeconfig, logs[0], "--time-limit=2"),
        vcsat_daemon("controller", plane.kubeconfig, logs[1], f"--namespace={namespace}", "--resync=5"),
    ):
        custom = client.CustomObjectsApi(api)
        jobs = ["alpha", "beta"]
        for name in jobs:
            body = gpu_job(name, GANG, gpus=GPUS_PER_POD, run_seconds=RUN_SECONDS)
            custom.create_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], body)

        wait_until(
            lambda: all(job_phase(api, namespace, name) == "Completed" for name in jobs),
            "both Jobs Completed",
            logs=logs,
        )
        changes = pods.snapshot()
        events = client.CoreV1Api(api).list_namespaced_event(namespace).items

    _check_the_run(changes, events, jobs, nodes)


def _check_the_run(changes: list[Any], events: list[Any], jobs: list[str], nodes: list[str]) -> None:
    bound = bindings(changes)
    by_job = {job: [b for b in bound if b.job == job] for job in jobs}
    checked = Counter[str]()

    # Every pod of each gang was bound exactly once, to one of our kwok nodes.
    for job, pods in by_job.items():
        assert len(pods) == GANG, f"Job {job}: {len(pods)} pods bound, expected its gang of {GANG}"
    for uid, seen in nodes_by_uid(changes).items():
        assert len(seen) == 1 and seen <= set(nodes), f"pod {uid} was bound to {sorted(seen)}"
        checked["pods"] += 1
    scheduled = Counter(e.involved_object.name for e in events if e.reason == "Scheduled")
    assert all(count == 1 for count in scheduled.values()), f"a pod was scheduled twice: {scheduled}"
    checked["bindings"] = len(bound)

    # The gangs ran in turn, each bound whole: the second gang's first binding comes after every
    # pod of the first has finished (no pod of it held GPUs while the first ran), and no binding of
    # the other gang falls between the bindings of one.
    order = [b.job for b in bound]
    first, second = order[0], next(job for job in order if job != order[0])
    assert order == [first] * GANG + [second] * GANG, f"gangs interleaved: {order}"
    first_uids = {b.uid for b in by_job[first]}
    finished: set[str] = set()
    for change in changes:
        if change.uid in first_uids and change.phase == "Succeeded":
            finished.add(change.uid)
        if change.job == second and change.node:
            assert finished == first_uids, f"{second} was bound while {first} still ran"
            break
    checked["gangs"] = len(jobs)

    # kwok ran each pod: Running, then Succeeded by vcsat's Stage.
    for uid in first_uids | {b.uid for b in by_job[second]}:
        phases = [c.phase for c in changes if c.uid == uid]
        assert "Running" in phases and "Succeeded" in phases, phases
        assert phases.index("Running") < phases.index("Succeeded"), phases
    print(f"checked: {dict(checked)}, duplicates found: 0")


def test_a_node_failing_under_a_job_restarts_it_on_the_healthy_nodes(
    kwok_cluster: KwokCluster, namespace: str, tmp_path: Path
) -> None:
    plane = kwok_cluster.plane
    logs = (
        tmp_path / "scheduler.log",
        tmp_path / "controller.log",
        kwok_cluster.kwok_log,
        kwok_cluster.controller_manager_log,
    )
    # Each pod takes a whole node; three nodes, two pods: room to restart beside a failed node.
    # The pods run long enough for the failure to come first, then finish on their own.
    policies = [{"event": "PodEvicted", "action": "RestartJob"}, {"event": "PodFailed", "action": "RestartJob"}]
    body = gpu_job("steady", 2, gpus=NODE_GPUS, run_seconds=15, policies=policies, maxRetry=3)
    with (
        gpu_nodes(kwok_cluster, [NODE_GPUS] * 3) as nodes,
        plane.api_client() as api,
        PodWatch(api, namespace) as pods,
        vcsat_daemon("scheduler", plane.kubeconfig, logs[0], "--time-limit=2"),
        vcsat_daemon("controller", plane.kubeconfig, logs[1], f"--namespace={namespace}", "--resync=5"),
    ):
        core = client.CoreV1Api(api)
        client.CustomObjectsApi(api).create_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], body)

        def running() -> list[Any]:
            live = [p for p in core.list_namespaced_pod(namespace).items if p.metadata.deletion_timestamp is None]
            ok = len(live) == 2 and all(p.status.phase == "Running" for p in live)
            return live if ok else []

        first = wait_until(running, "the Job's two pods run", logs=logs)
        failed_node = first[0].spec.node_name
        core.patch_node(failed_node, {"metadata": {"labels": {NOT_READY_LABEL: "true"}}})

        wait_until(lambda: job_phase(api, namespace, "steady") == "Completed", "the Job Completed", logs=logs)
        changes = pods.snapshot()
        job = client.CustomObjectsApi(api).get_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], "steady")
        events = core.list_namespaced_event(namespace).items

    # kube-controller-manager evicted the pod of the failed node (taint eviction), nothing else.
    evicted = {e.involved_object.name for e in events if e.reason == "TaintManagerEviction"}
    assert evicted == {p.metadata.name for p in first if p.spec.node_name == failed_node}, evicted

    first_uids = {p.metadata.uid for p in first}
    # The first run's pods never finished: the failure ended them, and both were replaced.
    for uid in first_uids:
        assert "Succeeded" not in [c.phase for c in changes if c.uid == uid], "a first-run pod finished"
    bound = bindings(changes)
    later = [b for b in bound if b.uid not in first_uids]
    assert len(later) >= 2, f"the Job was not restarted: {[(b.name, b.node) for b in bound]}"
    last_run = later[-2:]
    assert all(b.node != failed_node for b in last_run), f"restarted onto the failed node {failed_node}"
    assert {b.node for b in bound} <= set(nodes)
    for uid, seen in nodes_by_uid(changes).items():
        assert len(seen) == 1, f"pod {uid} was bound to {sorted(seen)}"
    for b in last_run:
        assert "Succeeded" in [c.phase for c in changes if c.uid == b.uid], f"{b.name} did not succeed"
    assert (job.get("status") or {}).get("succeeded") == 2, job.get("status")
    print(f"checked: pods={len(nodes_by_uid(changes))}, bindings={len(bound)}, restarts=1, duplicates found: 0")


def test_kubernetes_controllers_run_a_batch_job_collect_its_pods_and_remove_the_namespace(
    kwok_cluster: KwokCluster, tmp_path: Path
) -> None:
    # kube-controller-manager's Job controller creates the pods, vcsat binds them, kwok runs and
    # completes them (its own pod-complete stage, for batch/v1 Jobs); the garbage collector then
    # removes them with their Job, and the namespace controller finishes deleting the namespace.
    plane = kwok_cluster.plane
    logs = (tmp_path / "scheduler.log", kwok_cluster.controller_manager_log, kwok_cluster.kwok_log)
    namespace = f"e2e-{uuid.uuid4().hex[:8]}"
    pod_spec = {
        "schedulerName": "vcsat",
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "registry.invalid/batch:1", "resources": {"requests": {"cpu": "1"}}}],
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "plain"},
        "spec": {"completions": 2, "parallelism": 2, "template": {"spec": pod_spec}},
    }
    with (
        gpu_nodes(kwok_cluster, [NODE_GPUS]),
        plane.api_client() as api,
        vcsat_daemon("scheduler", plane.kubeconfig, logs[0], "--time-limit=2"),
    ):
        core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
        batch.create_namespaced_job(namespace, job)

        def complete() -> bool:
            conditions = batch.read_namespaced_job("plain", namespace).status.conditions or []
            return any(c.type == "Complete" and c.status == "True" for c in conditions)

        wait_until(complete, "the batch/v1 Job Complete", logs=logs)
        pods = core.list_namespaced_pod(namespace).items
        assert len(pods) == 2 and all(p.status.phase == "Succeeded" and p.spec.node_name for p in pods)

        batch.delete_namespaced_job("plain", namespace, propagation_policy="Background")
        wait_until(lambda: not core.list_namespaced_pod(namespace).items, "the Job's pods collected", logs=logs)
        core.delete_namespace(namespace)

        def gone() -> bool:
            try:
                core.read_namespace(namespace)
            except client.ApiException as error:
                return error.status == 404
            return False

        wait_until(gone, "the namespace deleted", logs=logs)
