"""vcsat on Volcano's CRDs and on its own: the same runs on both, side by side.

A cluster that runs Volcano keeps Volcano's CRDs (they are cluster-wide), and Volcano's PodGroup
CRD has no status subresource. The module runs once on Volcano-shaped CRDs (test data written
from Volcano's documented schema, tests/k8s/data/volcano-crds) and once on deploy/crds:

- a gang Job runs to completion through ``vcsat scheduler`` and ``vcsat controller``: the
  PodGroup's status is written (the controller creates pods only once it is admitted), and
  neither daemon logs a failed write;
- the scheduler alone, beside Volcano's controllers: a PodGroup and its pods made as Volcano's
  job controller makes them are admitted and bound, the status written where the CRD takes it;
- a Job suspended and resumed through Command objects made as Volcano's vcctl makes them: the
  controller acts on each once and deletes it.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_support import JOBS, gpu_job, job_phase, vcsat_daemon, wait_until
from kubernetes import client
from kwokcluster import KwokCluster, kwok_node, start_kwok_cluster

from vcsat.adapters.controller.commands import command_body

REPO = Path(__file__).resolve().parents[2]
CRD_SETS = {"volcano-crds": REPO / "tests" / "k8s" / "data" / "volcano-crds", "vcsat-crds": REPO / "deploy" / "crds"}
SCHEDULING = ("scheduling.volcano.sh", "v1beta1")
BUS = ("bus.volcano.sh", "v1alpha1")
FAILED_WRITES = ("status not written", "queue command not applied", "reconcile failed")


@pytest.fixture(scope="module", params=sorted(CRD_SETS))
def cluster(request: pytest.FixtureRequest) -> Iterator[KwokCluster]:
    with start_kwok_cluster(crd_dir=CRD_SETS[request.param]) as started:
        yield started


@pytest.fixture
def namespace(cluster: KwokCluster) -> Iterator[str]:
    name = f"vc-{uuid.uuid4().hex[:8]}"
    with cluster.plane.api_client() as api:
        core = client.CoreV1Api(api)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        yield name
        core.delete_namespace(name)


@contextlib.contextmanager
def gpu_nodes(cluster: KwokCluster, count: int) -> Iterator[list[str]]:
    tag = uuid.uuid4().hex[:6]
    names = [f"kwok-{tag}-{i}" for i in range(count)]
    cluster.plane.create_objects([kwok_node(n, cpu="16", memory="64Gi", gpus=4) for n in names])
    with cluster.plane.api_client() as api:
        core = client.CoreV1Api(api)

        def ready() -> bool:
            conditions = [{c.type: c.status for c in core.read_node(n).status.conditions or []} for n in names]
            return all(c.get("Ready") == "True" for c in conditions)

        wait_until(ready, "kwok reports its nodes Ready", logs=(cluster.kwok_log,))
        yield names
        for name in names:
            core.delete_node(name)


def _podgroup_phases(api: client.ApiClient, namespace: str) -> set[str]:
    groups = client.CustomObjectsApi(api).list_namespaced_custom_object(*SCHEDULING, namespace, "podgroups")
    return {str((g.get("status") or {}).get("phase") or "") for g in groups["items"]}


def _no_failed_writes(*logs: Path) -> None:
    for log in logs:
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            assert not any(marker in line for marker in FAILED_WRITES), f"{log.name}: {line}"


def test_gang_job_runs_to_completion(cluster: KwokCluster, namespace: str, tmp_path: Path) -> None:
    plane = cluster.plane
    logs = (tmp_path / "scheduler.log", tmp_path / "controller.log")
    with (
        gpu_nodes(cluster, 2),
        plane.api_client() as api,
        vcsat_daemon("scheduler", plane.kubeconfig, logs[0], "--time-limit=2"),
        vcsat_daemon("controller", plane.kubeconfig, logs[1], f"--namespace={namespace}", "--resync=5"),
    ):
        body = gpu_job("gang", 3, gpus=2, run_seconds=3)
        client.CustomObjectsApi(api).create_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], body)
        # The scheduler's status write is what lets the controller create the pods at all.
        wait_until(
            lambda: _podgroup_phases(api, namespace) & {"Inqueue", "Running"}, "the PodGroup is admitted", logs=logs
        )
        wait_until(lambda: job_phase(api, namespace, "gang") == "Completed", "the Job Completed", logs=logs)
        job = client.CustomObjectsApi(api).get_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], "gang")
    assert job["status"].get("succeeded") == 3, json.dumps(job["status"])
    _no_failed_writes(*logs)
    assert any('"status_subresource"' in line for line in logs[0].read_text().splitlines())


def test_scheduler_alone_beside_volcanos_controllers(cluster: KwokCluster, namespace: str, tmp_path: Path) -> None:
    """Only the scheduler replaced: the PodGroup and pods come as Volcano's job controller makes them."""
    plane = cluster.plane
    log = tmp_path / "scheduler.log"
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "train-0123", "namespace": namespace},
        "spec": {"minMember": 2, "queue": "default", "minResources": {"cpu": "2", "nvidia.com/gpu": "4"}},
    }
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"train-worker-{i}",
                "namespace": namespace,
                "annotations": {
                    "scheduling.k8s.io/group-name": "train-0123",
                    "volcano.sh/job-name": "train",
                    "volcano.sh/task-spec": "worker",
                },
                "labels": {"volcano.sh/job-name": "train", "volcano.sh/queue-name": "default"},
            },
            "spec": {
                "schedulerName": "vcsat",
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.invalid/trainer:1",
                        "resources": {
                            "requests": {"cpu": "1", "nvidia.com/gpu": "2"},
                            "limits": {"nvidia.com/gpu": "2"},
                        },
                    }
                ],
            },
        }
        for i in range(2)
    ]
    with (
        gpu_nodes(cluster, 1) as nodes,
        plane.api_client() as api,
        vcsat_daemon("scheduler", plane.kubeconfig, log, "--time-limit=2"),
    ):
        plane.create_objects([group, *pods])
        core = client.CoreV1Api(api)
        wait_until(
            lambda: all(core.read_namespaced_pod(p["metadata"]["name"], namespace).spec.node_name for p in pods),
            "both pods bound",
            logs=(log,),
        )
        assert {core.read_namespaced_pod(p["metadata"]["name"], namespace).spec.node_name for p in pods} == set(nodes)
        wait_until(
            lambda: _podgroup_phases(api, namespace) & {"Inqueue", "Running"},
            "the PodGroup's status written",
            logs=(log,),
        )
    _no_failed_writes(log)


def test_job_suspended_and_resumed_by_vcctl_commands(cluster: KwokCluster, namespace: str, tmp_path: Path) -> None:
    plane = cluster.plane
    logs = (tmp_path / "scheduler.log", tmp_path / "controller.log")
    with (
        gpu_nodes(cluster, 1),
        plane.api_client() as api,
        vcsat_daemon("scheduler", plane.kubeconfig, logs[0], "--time-limit=2"),
        vcsat_daemon("controller", plane.kubeconfig, logs[1], f"--namespace={namespace}", "--resync=5"),
    ):
        custom = client.CustomObjectsApi(api)
        custom.create_namespaced_custom_object(
            *JOBS[:2], namespace, JOBS[2], gpu_job("long", 2, gpus=1, run_seconds=600)
        )
        wait_until(lambda: job_phase(api, namespace, "long") == "Running", "the Job Running", logs=logs)

        def command(action: str) -> None:
            job = custom.get_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], "long")
            body = command_body(job, action, namespace=namespace)  # as vcctl makes one
            custom.create_namespaced_custom_object(*BUS, namespace, "commands", body)

        def consumed() -> bool:
            return not custom.list_namespaced_custom_object(*BUS, namespace, "commands")["items"]

        command("AbortJob")
        wait_until(lambda: job_phase(api, namespace, "long") == "Aborted", "the Job Aborted", logs=logs)
        wait_until(consumed, "the AbortJob Command deleted", logs=logs)
        command("ResumeJob")
        wait_until(lambda: job_phase(api, namespace, "long") == "Running", "the Job Running again", logs=logs)
        wait_until(consumed, "the ResumeJob Command deleted", logs=logs)
        job = custom.get_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], "long")
        assert (job["status"].get("retryCount") or 0) == 0, json.dumps(job["status"])
    _no_failed_writes(*logs)
