"""A Job is checked whole before the controller acts on it, with one line naming the job and the field."""

from __future__ import annotations

from typing import Any

import pytest
from controller_support import job, job_object, task, template

from vcsat.adapters.controller.jobspec import parse_duration, parse_job
from vcsat.adapters.errors import InputError


def _policy(**fields: Any) -> dict[str, Any]:
    return {"action": "RestartJob", **fields}


@pytest.mark.parametrize(
    ("obj", "field", "words"),
    [
        pytest.param(
            job_object(tasks=[task("a", 1), task("b", 2)], minAvailable=4),
            "spec.minAvailable",
            "4 is more than the 3 replicas",
            id="minAvailable-above-total-replicas",
        ),
        pytest.param(
            job_object(tasks=[task("worker", 1), task("worker", 2)]),
            "spec.tasks[1].name",
            "duplicate task name 'worker' (also spec.tasks[0])",
            id="duplicate-task-names",
        ),
        pytest.param(
            job_object(tasks=[task("Worker_1", 1)]),
            "spec.tasks[0].name",
            "'Worker_1' is not a valid task name",
            id="task-name-not-a-dns-label",
        ),
        pytest.param(
            job_object(tasks=[{"name": "a", "replicas": 1}]),
            "spec.tasks[0].template",
            "missing (each task needs a pod template)",
            id="missing-template",
        ),
        pytest.param(
            job_object(tasks=[task("a", 1, template={"spec": {"containers": []}})]),
            "spec.tasks[0].template.spec.containers",
            "at least one container",
            id="template-without-containers",
        ),
        pytest.param(
            job_object(tasks=[task("a", 1, template={"spec": {"containers": [{"name": "c"}]}})]),
            "spec.tasks[0].template.spec.containers[0].image",
            "missing",
            id="container-without-image",
        ),
        pytest.param(
            job_object(policies=[_policy(event="PodExploded")]),
            "spec.policies[0].event",
            "unknown event 'PodExploded'",
            id="unknown-policy-event",
        ),
        pytest.param(
            job_object(policies=[_policy(events=["PodFailed", "OutOfSync"])]),
            "spec.policies[0].events[1]",
            "OutOfSync is raised by the controller itself",
            id="internal-policy-event",
        ),
        pytest.param(
            job_object(policies=[{"event": "PodFailed", "action": "Explode"}]),
            "spec.policies[0].action",
            "unknown action 'Explode'",
            id="unknown-policy-action",
        ),
        pytest.param(
            job_object(tasks=[task("a", 1, policies=[{"event": "PodFailed"}])]),
            "spec.tasks[0].policies[0].action",
            "missing",
            id="task-policy-without-action",
        ),
        pytest.param(
            job_object(policies=[_policy(event="PodFailed", exitCode=3)]),
            "spec.policies[0].exitCode",
            "an event or to an exit code, not both",
            id="policy-event-and-exit-code",
        ),
        pytest.param(
            job_object(policies=[_policy(exitCode=0)]),
            "spec.policies[0].exitCode",
            "0 means success",
            id="policy-exit-code-zero",
        ),
        pytest.param(
            job_object(policies=[_policy(event="PodFailed"), _policy(events=["PodEvicted", "PodFailed"])]),
            "spec.policies[1].events[1]",
            "event PodFailed already has a policy (spec.policies[0])",
            id="policy-event-twice",
        ),
        pytest.param(
            job_object(policies=[_policy(event="*"), _policy(event="PodFailed")]),
            "spec.policies[0]",
            "every event (*)",
            id="policy-star-and-more",
        ),
        pytest.param(
            job_object(policies=[_policy(event="PodPending", timeout="soon")]),
            "spec.policies[0].timeout",
            "not a duration",
            id="policy-timeout-not-a-duration",
        ),
        pytest.param(
            job_object(
                tasks=[
                    task("a", 1, dependsOn={"name": ["b"]}),
                    task("b", 1, dependsOn={"name": ["c"]}),
                    task("c", 1, dependsOn={"name": ["a"]}),
                ]
            ),
            "spec.tasks[0].dependsOn",
            "dependsOn forms a cycle: a → b → c → a",
            id="dependsOn-cycle",
        ),
        pytest.param(
            job_object(tasks=[task("a", 1, dependsOn={"name": ["a"]})]),
            "spec.tasks[0].dependsOn.name",
            "task 'a' depends on itself",
            id="dependsOn-itself",
        ),
        pytest.param(
            job_object(tasks=[task("a", 1, dependsOn={"name": ["ghost"]})]),
            "spec.tasks[0].dependsOn.name",
            "no task named 'ghost'",
            id="dependsOn-unknown-task",
        ),
        pytest.param(
            job_object(plugins={"horovod": []}),
            "spec.plugins.horovod",
            "unknown plugin 'horovod' (known: env, mpi, pytorch, ssh, svc, tensorflow)",
            id="unknown-plugin",
        ),
        pytest.param(
            job_object(plugins={"svc": ["--publish-everything"]}),
            "spec.plugins.svc",
            "flag provided but not defined: -publish-everything",
            id="unknown-plugin-flag",
        ),
        pytest.param(
            job_object(plugins={"tensorflow": ["--port=http"]}),
            "spec.plugins.tensorflow",
            "invalid value 'http' for -port",
            id="plugin-flag-not-an-integer",
        ),
        pytest.param(
            job_object(plugins={"mpi": []}, tasks=[task("launcher", 1), task("worker", 2)]),
            "spec.plugins.mpi",
            "no task named 'master' to be the MPI master",
            id="mpi-without-master",
        ),
        pytest.param(
            job_object(plugins={"pytorch": ["--master=chief"]}),
            "spec.plugins.pytorch",
            "no task named 'chief'",
            id="pytorch-without-master",
        ),
        pytest.param(
            job_object(plugins={"ssh": ["--ssh-port=70000"]}),
            "spec.plugins.ssh",
            "--ssh-port=70000 is not a port",
            id="ssh-port-out-of-range",
        ),
        pytest.param(
            job_object(
                name="a-very-long-job-name-that-goes-on-and-on-and-on", tasks=[task("and-a-long-task-name", 10)]
            ),
            "spec.tasks[0].name",
            "would not be a valid DNS label",
            id="pod-name-too-long",
        ),
        pytest.param(
            job_object(tasks=[task("a", 2)], minSuccess=3),
            "spec.minSuccess",
            "3 is more than the 2 replicas",
            id="minSuccess-above-replicas",
        ),
        pytest.param(
            job_object(tasks=[task("a", 2, minAvailable=3)]),
            "spec.tasks[0].minAvailable",
            "3 is more than the task's 2 replicas",
            id="task-minAvailable-above-replicas",
        ),
        pytest.param(
            job_object(tasks=[task("a", -1)]),
            "spec.tasks[0].replicas",
            "must be at least 0, not -1",
            id="negative-replicas",
        ),
        pytest.param(job_object(tasks=[]), "spec.tasks", "at least one task", id="no-tasks"),
        pytest.param(
            job_object(networkTopology={"highestTierAllowed": 2, "highestTierName": "rack"}),
            "spec.networkTopology",
            "not both",
            id="topology-tier-and-name",
        ),
        pytest.param(
            job_object(volumes=[{"mountPath": "/data"}]),
            "spec.volumes[0]",
            "needs volumeClaimName or volumeClaim",
            id="volume-without-claim",
        ),
        pytest.param(
            job_object(tasks=[task("a", 1, template=template(cpu="lots"))]),
            "spec.tasks[0].template.spec.containers[0].resources.requests.cpu",
            "not a quantity",
            id="request-not-a-quantity",
        ),
    ],
)
def test_invalid_job_is_refused_naming_job_and_field(obj: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_job(obj)
    name = obj["metadata"]["name"]
    assert caught.value.field == field
    assert str(caught.value).startswith(f"Job ns/{name}: {field}: ")
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)


def test_source_file_leads_the_message() -> None:
    with pytest.raises(InputError) as caught:
        parse_job(job_object(tasks=[]), source="jobs/train.yaml")
    assert str(caught.value) == "jobs/train.yaml: Job ns/train: spec.tasks: a job needs at least one task"


def test_defaults_are_volcano_admissions() -> None:
    spec = job(
        tasks=[
            task("ps", 1),
            task("", 4, minAvailable=2),
        ],
        plugins={"mpi": ["--master=ps", "--worker=default1"]},
    )
    assert [t.name for t in spec.tasks] == ["ps", "default1"]
    assert [t.min_available for t in spec.tasks] == [1, 2]
    assert spec.min_available == 3  # the tasks' minimums summed
    assert spec.max_retry == 3
    assert spec.tasks[0].max_retry == 3
    assert spec.queue == "default"
    # mpi brings what it needs: svc (names) and ssh (keys), after the plugins written.
    assert [p.name for p in spec.plugins] == ["mpi", "svc", "ssh"]


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        ({"tensorflow": []}, ["tensorflow", "svc"]),
        ({"pytorch": [], "svc": ["--disable-network-policy"]}, ["pytorch", "svc"]),
        ({"env": []}, ["env"]),
        ({"ssh": [], "mpi": []}, ["ssh", "mpi", "svc"]),
    ],
)
def test_framework_plugins_imply_svc_and_ssh(plugins: dict[str, list[str]], expected: list[str]) -> None:
    tasks = [task("master", 1), task("worker", 2)]
    assert [p.name for p in job(tasks=tasks, plugins=plugins).plugins] == expected


def test_partitions_set_an_unset_task_minimum_as_volcano_does() -> None:
    partitions = {"totalPartitions": 4, "partitionSize": 2, "minPartitions": 3}
    spec = job(tasks=[task("worker", 8, partitionPolicy=partitions), task("ps", 1)])
    assert [t.min_available for t in spec.tasks] == [6, 1] and spec.min_available == 7
    assert spec.tasks[0].partition_size == 2
    given = job(tasks=[task("worker", 8, minAvailable=2, partitionPolicy=partitions)])
    assert given.tasks[0].min_available == 2  # a minimum written wins
    with pytest.raises(InputError) as refused:
        job(tasks=[task("worker", 4, partitionPolicy=partitions)])
    assert refused.value.field == "spec.tasks[0].partitionPolicy.minPartitions"


def test_policies_are_typed() -> None:
    spec = job(
        policies=[
            {"events": ["PodEvicted", "PodFailed"], "action": "RestartJob", "timeout": "1m30s"},
            {"exitCode": 137, "action": "AbortJob"},
        ],
        tasks=[task("worker", 2, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}])],
    )
    first, second = spec.policies
    assert first.events == ("PodEvicted", "PodFailed") and first.timeout_s == 90.0
    assert second.exit_code == 137 and second.action == "AbortJob"
    assert spec.tasks[0].policies[0].reacts_to("TaskCompleted")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30.0), ("5m", 300.0), ("1h30m", 5400.0), ("1.5m", 90.0), ("250ms", 0.25), ("0", 0.0)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "m", "5 m", "1x", "1h-3m"])
def test_not_go_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)
