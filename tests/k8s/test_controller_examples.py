"""deploy/examples, applied as users apply them: each Job's objects are created as specified, and it runs
to completion. The last test runs one example under the real ``vcsat scheduler`` instead of the
stand-in (so PodGroup admission and binding are the scheduler's own)."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from controller_harness import Jobs, StandInScheduler, running_controller
from controlplane import ControlPlane, load_manifests
from kwokcluster import PodEnds
from scheduler_support import (  # kwok_control_plane: the fixture control_plane, this module's own
    BUBBLE_LABEL,
    Bubble,
    kwok_control_plane,  # noqa: F401
    running_scheduler,
    wait_until,
)

from vcsat.adapters.cli.app import main
from vcsat.adapters.kube.client import ApiError, Kube
from vcsat.adapters.live.scheduler import Scheduler

EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"


def _env(pod: dict[str, Any], container: int = 0) -> dict[str, Any]:
    return {
        e["name"]: e.get("value", e.get("valueFrom")) for e in pod["spec"]["containers"][container].get("env") or []
    }


def _read(kube: Kube, namespace: str, kind: str, name: str) -> dict[str, Any] | None:
    path = {
        "Secret": f"/api/v1/namespaces/{namespace}/secrets/{name}",
        "ConfigMap": f"/api/v1/namespaces/{namespace}/configmaps/{name}",
        "Service": f"/api/v1/namespaces/{namespace}/services/{name}",
        "NetworkPolicy": f"/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies/{name}",
    }[kind]
    try:
        found: dict[str, Any] = kube.get(path)
    except ApiError as error:
        if error.status == 404:
            return None
        raise
    return found


def _check_mpi(kube: Kube, ns: str, pods: dict[str, dict[str, Any]]) -> list[str]:
    job = "lm-mpi-job"
    secret = _read(kube, ns, "Secret", f"{job}-ssh")
    assert secret is not None
    assert set(secret["data"]) == {"id_ed25519", "id_ed25519.pub", "authorized_keys", "config"}
    config = base64.b64decode(secret["data"]["config"]).decode()
    assert f"Host {job}-mpiworker-1\n  HostName {job}-mpiworker-1.{job}\n" in config
    hosts = _read(kube, ns, "ConfigMap", f"{job}-svc")
    assert hosts is not None
    assert hosts["data"]["mpiworker.host"] == f"{job}-mpiworker-0.{job}\n{job}-mpiworker-1.{job}"
    assert hosts["data"]["VC_MPIWORKER_NUM"] == "2"
    service = _read(kube, ns, "Service", job)
    assert service is not None and service["spec"]["clusterIP"] == "None"
    assert _read(kube, ns, "NetworkPolicy", job) is not None
    master = pods[f"{job}-mpimaster-0"]
    assert _env(master)["MPI_HOST"] == f"{job}-mpiworker-0.{job},{job}-mpiworker-1.{job}"
    assert "MPI_HOST" not in _env(pods[f"{job}-mpiworker-0"])
    assert (master["spec"]["hostname"], master["spec"]["subdomain"]) == (f"{job}-mpimaster-0", job)
    mounts = {
        m["mountPath"]: m
        for m in master["spec"]["containers"][0]["volumeMounts"]
        if "ssh" in m["name"] or "svc" in m["name"]
    }
    assert set(mounts) == {"/root/.ssh", "/etc/volcano"}
    (ssh_volume,) = [v for v in master["spec"]["volumes"] if v["name"] == f"{job}-ssh"]
    assert ssh_volume["secret"]["defaultMode"] == 0o600
    return [f"{job}-mpimaster-0"]  # the master's completion completes the job


def _check_tensorflow(kube: Kube, ns: str, pods: dict[str, dict[str, Any]]) -> list[str]:
    job = "tf-dist-mnist"
    config = json.loads(_env(pods[f"{job}-worker-1"])["TF_CONFIG"])
    assert config == {
        "cluster": {
            "ps": [f"{job}-ps-0.{job}:2222"],
            "worker": [f"{job}-worker-0.{job}:2222", f"{job}-worker-1.{job}:2222"],
        },
        "task": {"type": "worker", "index": 1},
    }
    assert json.loads(_env(pods[f"{job}-ps-0"])["TF_CONFIG"])["task"] == {"type": "ps", "index": 0}
    assert _env(pods[f"{job}-worker-1"])["VC_TASK_INDEX"] == "1"
    assert _read(kube, ns, "Service", job) is not None
    return [f"{job}-worker-0", f"{job}-worker-1"]  # the workers' completion completes the job


def _check_pytorch(kube: Kube, ns: str, pods: dict[str, dict[str, Any]]) -> list[str]:
    job = "pytorch-ddp"
    for name, rank in ((f"{job}-master-0", "0"), (f"{job}-worker-0", "1"), (f"{job}-worker-1", "2")):
        env = _env(pods[name])
        assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["WORLD_SIZE"], env["RANK"]) == (
            f"{job}-master-0.{job}",
            "23456",
            "3",
            rank,
        )
    (wait,) = pods[f"{job}-worker-0"]["spec"]["initContainers"]
    assert wait["name"] == "wait-for-master"
    assert "initContainers" not in pods[f"{job}-master-0"]["spec"]
    return [f"{job}-master-0"]


@pytest.mark.parametrize(
    ("example", "job", "check"),
    [
        pytest.param("mpi-job.yaml", "lm-mpi-job", _check_mpi, id="mpi"),
        pytest.param("tensorflow-job.yaml", "tf-dist-mnist", _check_tensorflow, id="tensorflow"),
        pytest.param("pytorch-job.yaml", "pytorch-ddp", _check_pytorch, id="pytorch"),
    ],
)
def test_example_runs_as_specified(
    example: str,
    job: str,
    check: Callable[[Kube, str, dict[str, dict[str, Any]]], list[str]],
    bubble: Bubble,
    kube: Kube,
    k8s_client: Any,
    control_plane: ControlPlane,
) -> None:
    nodes = [bubble.node(f"n{i}", cpu="32", memory="128Gi", gpus=8) for i in range(2)]
    jobs = Jobs(kube, bubble)
    with contextlib.ExitStack() as stack:
        life = PodEnds(k8s_client)
        stack.enter_context(StandInScheduler(kube, bubble.namespace, nodes, "vcsat"))
        stack.enter_context(running_controller(k8s_client, bubble.namespace, "vcsat"))

        result = CliRunner().invoke(
            main,
            [
                "job",
                "run",
                "-f",
                str(EXAMPLES / example),
                "-n",
                bubble.namespace,
                "--kubeconfig",
                str(control_plane.kubeconfig),
            ],
        )
        assert result.exit_code == 0, result.stderr
        uid = jobs.get(job)["metadata"]["uid"]
        group = wait_until(lambda: jobs.podgroup(f"{job}-{uid}"), "the PodGroup exists")
        assert group["spec"]["minMember"] == 3
        pods = jobs.running_pods(job, 3)
        jobs.wait_phase(job, "Running")
        finishers = check(kube, bubble.namespace, pods)

        for name in finishers:
            life.succeed(bubble.namespace, name)
        status = jobs.wait_phase(job, "Completed")
        assert [c["status"] for c in status["conditions"]][-2:] == ["Completing", "Completed"]
        # Whatever did not finish by itself is removed; what finished stays for its logs.
        wait_until(lambda: set(jobs.pods(job)) == set(finishers), "only the finished pods remain")


def test_example_under_the_real_scheduler(bubble: Bubble, kube: Kube, k8s_client: Any) -> None:
    (body,) = load_manifests(EXAMPLES / "tensorflow-job.yaml")
    body["spec"]["schedulerName"] = bubble.scheduler_name
    for task in body["spec"]["tasks"]:
        # Only this test's nodes (the control plane is shared with other tests).
        task["template"]["spec"]["nodeSelector"] = {BUBBLE_LABEL: bubble.tag}
    nodes = [bubble.node("n0", cpu="4", memory="16Gi"), bubble.node("n1", cpu="4", memory="16Gi")]
    jobs = Jobs(kube, bubble)
    with contextlib.ExitStack() as stack:
        life = PodEnds(k8s_client)
        stack.enter_context(running_scheduler(Scheduler(bubble.kube, policy=bubble.policy())))
        # The scheduler writes a PodGroup's phase only once the group has pods (it admits groups
        # with pending pods), so the pods are made at once here rather than after admission.
        stack.enter_context(
            running_controller(k8s_client, bubble.namespace, bubble.scheduler_name, wait_for_admission=False)
        )
        jobs.create(body)
        uid = jobs.get("tf-dist-mnist")["metadata"]["uid"]
        pods = jobs.running_pods("tf-dist-mnist", 3)
        # The gang was admitted and placed by the scheduler itself.
        group = wait_until(
            lambda: (
                (g := jobs.podgroup(f"tf-dist-mnist-{uid}")) and (g.get("status") or {}).get("phase") == "Running" and g
            ),
            "the scheduler marks the PodGroup Running",
        )
        assert group["spec"]["minMember"] == 3
        assert {pod["spec"]["nodeName"] for pod in pods.values()} <= set(nodes)
        jobs.wait_phase("tf-dist-mnist", "Running")
        for name in ("tf-dist-mnist-worker-0", "tf-dist-mnist-worker-1"):
            life.succeed(bubble.namespace, name)
        jobs.wait_phase("tf-dist-mnist", "Completed")
