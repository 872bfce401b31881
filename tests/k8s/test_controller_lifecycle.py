"""The Job controller against the real API server: phases, restarts, policies, TTL, invalid Jobs.

Pods are bound by a stand-in scheduler (admit, bind; no solving) and run by kwok on the module's
own cluster; the tests end pods with ``succeed``/``fail`` (kwokcluster.PodEnds) and wait (with a deadline) for what the
controller must do.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from controller_harness import Jobs, StandInScheduler, job_body, running_controller, task_body, uids
from kwokcluster import PodEnds
from scheduler_support import (
    Bubble,
    kwok_control_plane,  # noqa: F401 (the fixture control_plane: this module's own, with kwok)
    wait_until,
)

from vcsat.adapters.controller.controller import JobController
from vcsat.adapters.kube.client import PODS, ApiError, Kube


@dataclass
class World:
    bubble: Bubble
    jobs: Jobs
    life: PodEnds
    scheduler: StandInScheduler
    controller: JobController

    @property
    def namespace(self) -> str:
        return self.bubble.namespace

    def job(self, name: str, tasks: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
        return self.jobs.create(job_body(name, self.bubble.scheduler_name, tasks, **spec))


@pytest.fixture
def world(bubble: Bubble, kube: Kube, k8s_client: Any) -> Iterator[World]:
    nodes = [bubble.node("n0", cpu="16", memory="64Gi", gpus=8), bubble.node("n1", cpu="16", memory="64Gi", gpus=8)]
    with contextlib.ExitStack() as stack:
        life = PodEnds(k8s_client)
        scheduler = stack.enter_context(StandInScheduler(kube, bubble.namespace, nodes, bubble.scheduler_name))
        controller = stack.enter_context(running_controller(k8s_client, bubble.namespace, bubble.scheduler_name))
        yield World(bubble, Jobs(kube, bubble), life, scheduler, controller)


def test_job_runs_through_its_phases(world: World) -> None:
    world.scheduler.admitting.clear()
    world.job("train", [task_body("ps", 1), task_body("worker", 2, minAvailable=1)], minAvailable=2)
    uid = world.jobs.get("train")["metadata"]["uid"]

    # The PodGroup comes first; no pod exists until the scheduler admits it.
    group = wait_until(lambda: world.jobs.podgroup(f"train-{uid}"), "the PodGroup exists")
    assert group["spec"]["minMember"] == 2
    assert group["spec"]["minTaskMember"] == {"ps": 1, "worker": 1}
    assert group["spec"]["minResources"] == {"cpu": "200m", "memory": "128Mi"}
    status = world.jobs.wait_phase("train", "Pending")
    assert status["minAvailable"] == 2
    assert world.jobs.pods("train") == {}

    world.scheduler.admitting.set()
    pods = world.jobs.running_pods("train", 3)
    assert sorted(pods) == ["train-ps-0", "train-worker-0", "train-worker-1"]
    labels = pods["train-worker-1"]["metadata"]["labels"]
    assert labels["volcano.sh/job-name"] == "train" and labels["volcano.sh/task-index"] == "1"
    annotations = pods["train-worker-1"]["metadata"]["annotations"]
    assert annotations["scheduling.k8s.io/group-name"] == f"train-{uid}"
    assert annotations["volcano.sh/task-spec"] == "worker"
    assert annotations["volcano.sh/job-version"] == "0"
    status = world.jobs.wait_phase("train", "Running")
    wait_until(lambda: world.jobs.status("train").get("running") == 3, "status counts 3 running")

    for name in pods:
        world.life.succeed(world.namespace, name)
    status = world.jobs.wait_phase("train", "Completed")
    assert status["succeeded"] == 3
    assert status["taskStatusCount"] == {"ps": {"phase": {"Succeeded": 1}}, "worker": {"phase": {"Succeeded": 2}}}
    assert [c["status"] for c in status["conditions"]] == ["Pending", "Running", "Completed"]
    assert re.fullmatch(r"(\d+h)?(\d+m)?\d+s", status["runningDuration"]), "how long it ran, as a Go duration"
    # A finished job keeps its pods (logs, exit codes) but gives back its PodGroup.
    wait_until(lambda: world.jobs.podgroup(f"train-{uid}") is None, "the PodGroup is removed")
    assert len(world.jobs.pods("train")) == 3


def test_failed_pod_restarts_the_job_until_max_retry_then_failed(world: World) -> None:
    world.job(
        "flaky",
        [task_body("worker", 2)],
        maxRetry=2,
        policies=[{"event": "PodFailed", "action": "RestartJob"}],
    )
    first = world.jobs.running_pods("flaky", 2)
    world.jobs.wait_phase("flaky", "Running")

    world.life.fail(world.namespace, "flaky-worker-0", exit_code=3)
    # The whole job restarts: new pods (new uids) at job version 1, one retry used.
    second = wait_until(
        lambda: (
            (pods := world.jobs.running_pods("flaky", 2))
            and not set(uids(pods).values()) & set(uids(first).values())
            and pods
        ),
        "a second run with new pods",
    )
    assert {p["metadata"]["annotations"]["volcano.sh/job-version"] for p in second.values()} == {"1"}
    status = world.jobs.wait_phase("flaky", "Running")
    assert status["retryCount"] == 1 and status["version"] == 1

    world.life.fail(world.namespace, "flaky-worker-1", exit_code=3)
    status = world.jobs.wait_phase("flaky", "Failed")
    assert status["retryCount"] == 2
    assert status["state"]["reason"] == "RetryLimitReached"
    phases = [c["status"] for c in status["conditions"]]
    assert phases[-2:] == ["Restarting", "Failed"] and "Running" in phases
    # The last run's failed pod is kept for the post-mortem; the one still running is gone.
    wait_until(lambda: set(world.jobs.pods("flaky")) == {"flaky-worker-1"}, "only the failed pod remains")
    assert world.jobs.pods("flaky")["flaky-worker-1"]["status"]["phase"] == "Failed"
    reasons = [e["reason"] for e in world.jobs.events("flaky")]
    assert reasons.count("RestartJob") == 2 and "Failed" in reasons


def test_eviction_restarts_the_job_without_using_a_retry(world: World, kube: Kube) -> None:
    world.job(
        "evictee",
        [task_body("worker", 2)],
        maxRetry=1,
        policies=[{"event": "PodEvicted", "action": "RestartJob"}, {"event": "PodFailed", "action": "AbortJob"}],
    )
    first = world.jobs.running_pods("evictee", 2)
    world.jobs.wait_phase("evictee", "Running")
    # What a preemption does: the pod is deleted by someone other than the controller.
    kube.delete(PODS.path(world.namespace, "evictee-worker-0"))
    second = wait_until(
        lambda: (
            (pods := world.jobs.running_pods("evictee", 2))
            and not set(uids(pods).values()) & set(uids(first).values())
            and pods
        ),
        "the job restarted with new pods",
    )
    assert len(second) == 2
    status = world.jobs.wait_phase("evictee", "Running")
    assert status.get("retryCount", 0) == 0 and status["version"] == 1


def test_a_spec_update_raises_job_updated_once(world: World, kube: Kube) -> None:
    world.job("rolling", [task_body("worker", 2)], policies=[{"event": "JobUpdated", "action": "RestartJob"}])
    first = world.jobs.running_pods("rolling", 2)
    world.jobs.wait_phase("rolling", "Running")
    # A new image: the running pods are stale, and the policy restarts the job to pick it up.
    updated = task_body("worker", 2)
    updated["template"]["spec"]["containers"][0]["image"] = "registry.invalid/app:2"
    kube.patch(
        f"/apis/batch.volcano.sh/v1alpha1/namespaces/{world.namespace}/jobs/rolling", {"spec": {"tasks": [updated]}}
    )
    second = wait_until(
        lambda: (
            (pods := world.jobs.running_pods("rolling", 2))
            and not set(uids(pods).values()) & set(uids(first).values())
            and pods
        ),
        "the job restarted with new pods",
    )
    assert {p["spec"]["containers"][0]["image"] for p in second.values()} == {"registry.invalid/app:2"}
    status = world.jobs.wait_phase("rolling", "Running")
    # Once: the update is acted on a single time, and a spec change is not a failure of the job.
    assert status["version"] == 1 and status.get("retryCount", 0) == 0
    assert [e["reason"] for e in world.jobs.events("rolling")].count("RestartJob") == 1


def test_abort_job_on_an_exit_code(world: World) -> None:
    uid = world.job("oom", [task_body("worker", 2)], policies=[{"exitCode": 137, "action": "AbortJob"}])["metadata"][
        "uid"
    ]
    world.jobs.running_pods("oom", 2)
    world.jobs.wait_phase("oom", "Running")
    world.life.fail(world.namespace, "oom-worker-1", exit_code=137, reason="OOMKilled")
    status = world.jobs.wait_phase("oom", "Aborted")
    assert status["state"]["reason"] == "AbortJob"
    # The failed pod stays; the running one is removed, and so is the PodGroup.
    wait_until(lambda: set(world.jobs.pods("oom")) == {"oom-worker-1"}, "only the failed pod remains")
    assert world.jobs.podgroup(f"oom-{uid}") is None
    assert [c["status"] for c in status["conditions"]][-2:] == ["Aborting", "Aborted"]


def test_complete_job_when_the_master_completes(world: World, kube: Kube) -> None:
    world.job(
        "mpi",
        [
            task_body("master", 1, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]),
            task_body("worker", 2),
        ],
        plugins={"svc": []},
    )
    world.jobs.running_pods("mpi", 3)
    world.jobs.wait_phase("mpi", "Running")
    assert kube.get(f"/api/v1/namespaces/{world.namespace}/services/mpi")["spec"]["clusterIP"] == "None"
    world.life.succeed(world.namespace, "mpi-master-0")
    status = world.jobs.wait_phase("mpi", "Completed")
    assert [c["status"] for c in status["conditions"]][-2:] == ["Completing", "Completed"]
    wait_until(lambda: set(world.jobs.pods("mpi")) == {"mpi-master-0"}, "the workers are removed")

    # A finished job gives back what its plugins made.
    def gone(path: str) -> bool:
        try:
            kube.get(path)
        except ApiError as error:
            return error.status == 404
        return False

    wait_until(lambda: gone(f"/api/v1/namespaces/{world.namespace}/services/mpi"), "the Service is removed")
    assert gone(f"/api/v1/namespaces/{world.namespace}/configmaps/mpi-svc")


def test_finished_job_is_deleted_after_its_ttl(world: World) -> None:
    world.job("short", [task_body("worker", 1)], ttlSecondsAfterFinished=0)
    world.jobs.running_pods("short", 1)
    world.life.succeed(world.namespace, "short-worker-0")

    def deleted() -> bool:
        try:
            world.jobs.get("short")
        except ApiError as error:
            return error.status == 404
        return False

    wait_until(deleted, "the Job is deleted once finished")
    # What it owned goes with it (the controller collects orphans when no garbage collector runs).
    wait_until(lambda: world.jobs.pods("short") == {}, "its pods are removed")


def test_invalid_jobs_get_a_reason_and_never_stall_the_controller(world: World, kube: Kube) -> None:
    # Refused at admission by the CRD's CEL rules: never stored, the controller never sees it.
    with pytest.raises(ApiError) as refused:
        world.job("dup", [task_body("worker", 1), task_body("worker", 1)])
    assert refused.value.status == 422 and "task names must be unique" in refused.value.message

    # Accepted by the schema, refused by the controller's own checks.
    world.job(
        "cycle",
        [task_body("a", 1, dependsOn={"name": ["b"]}), task_body("b", 1, dependsOn={"name": ["a"]})],
    )
    world.job("internal", [task_body("worker", 1)], policies=[{"event": "OutOfSync", "action": "RestartJob"}])
    world.job("fine", [task_body("worker", 1)])

    status = wait_until(
        lambda: (s := world.jobs.status("cycle")).get("state", {}).get("reason") == "InvalidSpec" and s,
        "the cycle job is marked invalid",
    )
    assert status["state"]["phase"] == "Pending"
    assert (
        status["state"]["message"]
        == "spec.tasks[0].dependsOn: dependsOn forms a cycle: a → b → a (tasks would wait for each other forever)"
    )
    status = wait_until(
        lambda: (s := world.jobs.status("internal")).get("state", {}).get("reason") == "InvalidSpec" and s,
        "the internal-event job is marked invalid",
    )
    assert "OutOfSync is raised by the controller itself" in status["state"]["message"]
    assert world.jobs.pods("cycle") == {} and world.jobs.pods("internal") == {}
    # The status is written first, the Event after it: wait for the Event, then look at them all.
    warnings = wait_until(
        lambda: [e for e in world.jobs.events("cycle") if e["type"] == "Warning"], "the cycle job's Warning"
    )
    assert [e["reason"] for e in warnings] == ["InvalidSpec"]

    world.jobs.running_pods("fine", 1)
    world.jobs.wait_phase("fine", "Running")

    # Fixing the spec brings the job back to life.
    kube.patch(
        f"/apis/batch.volcano.sh/v1alpha1/namespaces/{world.namespace}/jobs/cycle",
        {"spec": {"tasks": [task_body("a", 1), task_body("b", 1, dependsOn={"name": ["a"]})]}},
    )
    world.jobs.running_pods("cycle", 2)
    status = world.jobs.wait_phase("cycle", "Running")
    assert "reason" not in status["state"]


def test_scaling_a_task_follows_the_job(world: World, kube: Kube) -> None:
    uid = world.job("elastic", [task_body("worker", 2)], minAvailable=1, plugins={"svc": []})["metadata"]["uid"]
    world.jobs.running_pods("elastic", 2)
    world.jobs.wait_phase("elastic", "Running")
    path = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{world.namespace}/jobs/elastic"
    hosts = f"/api/v1/namespaces/{world.namespace}/configmaps/elastic-svc"

    kube.patch(path, {"spec": {"tasks": [task_body("worker", 3)]}})
    assert sorted(world.jobs.running_pods("elastic", 3)) == [f"elastic-worker-{i}" for i in range(3)]
    assert world.jobs.status("elastic").get("version", 0) == 0, "without a JobUpdated policy, a sync: no restart"
    wait_until(lambda: kube.get(hosts)["data"]["VC_WORKER_NUM"] == "3", "the host files list three workers")
    assert kube.get(PODS.path(world.namespace, "elastic-worker-2"))["spec"]["subdomain"] == "elastic"

    kube.patch(path, {"spec": {"tasks": [task_body("worker", 1)]}})
    assert sorted(world.jobs.running_pods("elastic", 1)) == ["elastic-worker-0"]
    wait_until(lambda: kube.get(hosts)["data"]["VC_WORKER_HOSTS"] == "elastic-worker-0.elastic", "one host left")
    group = world.jobs.podgroup(f"elastic-{uid}")
    assert group is not None and group["spec"]["minTaskMember"] == {"worker": 1}
