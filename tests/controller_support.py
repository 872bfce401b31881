"""Builders for Volcano Job objects and observed pods, shared by the Job controller's tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from vcsat.adapters.controller.jobspec import JobSpec, parse_job
from vcsat.adapters.controller.observe import ObservedPod

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
UID = "11111111-2222-3333-4444-555555555555"


def template(
    *, cpu: str = "1", memory: str | None = None, gpu: int | None = None, image: str = "registry.invalid/app:1"
) -> dict[str, Any]:
    requests: dict[str, Any] = {"cpu": cpu}
    if memory is not None:
        requests["memory"] = memory
    limits: dict[str, Any] = {}
    if gpu is not None:
        limits["nvidia.com/gpu"] = gpu
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = limits
    return {
        "metadata": {"labels": {"app": "demo"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": image, "resources": resources}],
        },
    }


def task(name: str, replicas: int, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "replicas": replicas, "template": extra.pop("template", template())}
    body.update(extra)
    return body


def job_object(
    name: str = "train", tasks: list[dict[str, Any]] | None = None, namespace: str = "ns", **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "uid": UID, "creationTimestamp": "2025-01-01T11:00:00Z"},
        "spec": {"schedulerName": "vcsat", "tasks": tasks if tasks is not None else [task("worker", 2)], **spec},
    }


def job(name: str = "train", tasks: list[dict[str, Any]] | None = None, **spec: Any) -> JobSpec:
    return parse_job(job_object(name, tasks, **spec))


def pod(
    task_name: str,
    index: int,
    phase: str = "Running",
    *,
    job_name: str = "train",
    version: int | None = 0,
    **extra: Any,
) -> ObservedPod:
    values: dict[str, Any] = {
        "name": f"{job_name}-{task_name}-{index}",
        "task": task_name,
        "index": index,
        "phase": phase,
        "version": version,
        "ready": phase == "Running",
        "since": T0,
    }
    values.update(extra)
    return ObservedPod(**values)
