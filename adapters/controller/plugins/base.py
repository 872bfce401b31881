"""What every Job plugin is, and the pod edits and host names they share.

A plugin has two moments, as in Volcano: before the pods exist it names objects it needs (a Secret
with keys, a headless Service, a ConfigMap of host files), and then it edits each pod as it is
built (environment, mounts, ports, hostname). Both are plain functions of the Job, so a plugin's
output can be checked in a unit test without a cluster; only :class:`ObjectRecipe` defers the
building of an object until the reconciler knows it is missing (an ssh key is generated once, not
on every pass).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from vcsat.adapters.controller import naming
from vcsat.adapters.controller.plugins.flags import Flag, parse_flags

if TYPE_CHECKING:
    from vcsat.adapters.controller.jobspec import JobSpec, TaskSpec


@dataclass(frozen=True)
class ObjectRecipe:
    """An object a plugin needs: its identity now, its body only when it must be created."""

    api_version: str
    kind: str
    name: str
    build: Callable[[], dict[str, Any]]
    refresh_data: bool = False
    """Rebuild and update ``data`` when it differs (a host list after a scale); else create only."""


class JobPlugin:
    """Base of the plugins: parsed flags in, pod edits and needed objects out."""

    name: ClassVar[str] = ""
    flags: ClassVar[Mapping[str, Flag]] = {}

    def __init__(self, args: tuple[str, ...] | list[str] = ()) -> None:
        self.args = tuple(args)
        self.values = parse_flags(self.args, self.flags)

    def problem(self, tasks: tuple[TaskSpec, ...]) -> str | None:
        """Why this plugin cannot work with these tasks, or None."""
        return None

    def objects(self, job: JobSpec) -> list[ObjectRecipe]:
        """Objects to create (if missing) before any pod of the job."""
        return []

    def mutate_pod(self, pod: dict[str, Any], job: JobSpec, task: TaskSpec, index: int) -> None:
        """Edit one pod of ``task`` (its ``index``) before it is created."""

    def flag_str(self, name: str) -> str:
        return str(self.values[name])

    def flag_int(self, name: str) -> int:
        value = self.values[name]
        return int(value)

    def flag_bool(self, name: str) -> bool:
        return bool(self.values[name])


# --- host names -----------------------------------------------------------------------------


def domain_name(job: JobSpec, task: TaskSpec, index: int) -> str:
    """``<hostname>.<subdomain>`` of one pod, resolvable inside the namespace via the job's Service."""
    hostname = task.hostname or naming.pod_name(job.name, task.name, index)
    return f"{hostname}.{task.subdomain or job.name}"


def task_hosts(job: JobSpec, task: TaskSpec) -> list[str]:
    """The host names of a task's pods; one only when the template fixes the hostname (all share it)."""
    if task.hostname:
        return [domain_name(job, task, 0)] if task.replicas else []
    return [domain_name(job, task, index) for index in range(task.replicas)]


# --- pod edits ------------------------------------------------------------------------------


def containers(pod: dict[str, Any], *, init: bool = True) -> list[dict[str, Any]]:
    """The pod's containers, then (with ``init``) its init containers: where plugins add things."""
    spec = pod.setdefault("spec", {})
    found: list[dict[str, Any]] = list(spec.get("containers") or [])
    if init:
        found += list(spec.get("initContainers") or [])
    return found


def add_env(container: dict[str, Any], *variables: dict[str, Any]) -> None:
    container.setdefault("env", []).extend(variables)


def add_volume(pod: dict[str, Any], volume: dict[str, Any]) -> None:
    volumes = pod.setdefault("spec", {}).setdefault("volumes", [])
    if all(existing.get("name") != volume["name"] for existing in volumes):
        volumes.append(volume)


def add_mount(container: dict[str, Any], mount: dict[str, Any]) -> None:
    container.setdefault("volumeMounts", []).append(mount)


def open_port(container: dict[str, Any], port: int, name: str) -> None:
    """Declare ``port`` on the container unless it already is."""
    ports = container.setdefault("ports", [])
    if all(existing.get("containerPort") != port for existing in ports):
        ports.append({"name": name, "containerPort": port})


def object_metadata(job: JobSpec, name: str) -> dict[str, Any]:
    """Metadata of an object a plugin creates: owned by the Job, labelled with it."""
    return {
        "name": name,
        "namespace": job.namespace,
        "labels": naming.job_labels(job.name, job.namespace),
        "ownerReferences": [naming.owner_reference(job.name, job.uid)],
    }
