"""A ``batch.volcano.sh/v1alpha1`` Job, read once into typed, frozen data and checked whole.

The CRD's schema and CEL rules refuse most broken Jobs at admission, but not all: a dependsOn
cycle, a policy naming an internal event, an unknown plugin or plugin flag, a pod name too long
to be a hostname. Those reach the controller, which must neither crash on them nor half-create
them. Everything downstream (the state machine, the PodGroup, the plugins) therefore works on a
:class:`JobSpec` that has passed every check here, and a Job that fails one gets a single
:class:`~vcsat.adapters.errors.InputError` line naming the job and the field, which the controller
writes into the Job's status and the CLI prints.

Defaults are Volcano's admission webhook's: ``queue`` ``default``, ``maxRetry`` 3 (job and task),
a task's ``minAvailable`` its ``replicas``, the job's ``minAvailable`` the sum of its tasks', a
missing task name ``default<i>``, and the plugins a framework plugin needs (``svc`` for
tensorflow, pytorch and mpi; ``ssh`` for mpi).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from vcsat.adapters.controller import naming
from vcsat.adapters.convert.fields import EMPTY, FieldReader, type_name
from vcsat.model.quantity import parse_nanos

EXTERNAL_EVENTS = (
    "*",
    "PodFailed",
    "PodEvicted",
    "PodPending",
    "Unknown",
    "TaskCompleted",
    "TaskFailed",
    "JobUpdated",
)
"""Events a policy may react to."""

INTERNAL_EVENTS = ("OutOfSync", "CommandIssued", "PodRunning")
"""Events the controller raises for itself; a policy cannot take them over (as in Volcano)."""

ACTIONS = (
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "RestartPartition",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
)

DEFAULT_MAX_RETRY = 3
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_EMPTY = EMPTY


@dataclass(frozen=True)
class LifecyclePolicy:
    """One ``policies`` entry: on these events (or this exit code), take this action."""

    action: str
    events: tuple[str, ...] = ()
    exit_code: int | None = None
    timeout_s: float | None = None

    def reacts_to(self, event: str) -> bool:
        return event in self.events or "*" in self.events


@dataclass(frozen=True)
class DependsOn:
    names: tuple[str, ...]
    iteration: str = "all"
    """``all``: every listed task must be ready; ``any``: one is enough (only with several names)."""


@dataclass(frozen=True)
class TaskSpec:
    name: str
    replicas: int
    min_available: int
    max_retry: int
    template: Mapping[str, Any] = field(compare=False, repr=False)
    """The PodTemplateSpec as written; never mutated (pods are built from deep copies)."""
    policies: tuple[LifecyclePolicy, ...] = ()
    depends_on: DependsOn | None = None
    topology_policy: str | None = None
    partition_size: int | None = None
    """``partitionPolicy.partitionSize``: pods ``[k*size, (k+1)*size)`` form partition k (RestartPartition)."""

    @property
    def pod_spec(self) -> Mapping[str, Any]:
        spec = self.template.get("spec")
        return spec if isinstance(spec, Mapping) else _EMPTY

    @property
    def hostname(self) -> str:
        """The template's fixed ``hostname``, or ``""`` (each pod is then named after itself)."""
        return str(self.pod_spec.get("hostname") or "")

    @property
    def subdomain(self) -> str:
        return str(self.pod_spec.get("subdomain") or "")


@dataclass(frozen=True)
class NetworkTopology:
    mode: str = "hard"
    highest_tier_allowed: int | None = None
    highest_tier_name: str | None = None


@dataclass(frozen=True)
class VolumeSpec:
    mount_path: str
    claim_name: str
    """The PVC mounted; for a ``volumeClaim`` the controller creates it under this name."""
    claim_spec: Mapping[str, Any] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class PluginSpec:
    name: str
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobSpec:
    """A Job that passed every check: what the controller acts on."""

    name: str
    namespace: str
    uid: str
    scheduler_name: str
    queue: str
    min_available: int
    max_retry: int
    tasks: tuple[TaskSpec, ...]
    min_success: int | None = None
    ttl_seconds_after_finished: int | None = None
    priority_class_name: str = ""
    plugins: tuple[PluginSpec, ...] = ()
    policies: tuple[LifecyclePolicy, ...] = ()
    network_topology: NetworkTopology | None = None
    volumes: tuple[VolumeSpec, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)
    annotations: Mapping[str, str] = field(default_factory=dict, compare=False)
    created: datetime | None = None
    generation: int = field(default=0, compare=False)
    """``metadata.generation``: moves on every change of the spec (JobUpdated)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def total_replicas(self) -> int:
        return sum(task.replicas for task in self.tasks)

    def task(self, name: str) -> TaskSpec | None:
        for task in self.tasks:
            if task.name == name:
                return task
        return None

    def plugin(self, name: str) -> PluginSpec | None:
        for plugin in self.plugins:
            if plugin.name == name:
                return plugin
        return None


def parse_job(obj: Mapping[str, Any], *, source: str | None = None) -> JobSpec:
    """The checked :class:`JobSpec` of a Job object; :class:`InputError` naming the field when broken."""
    return _JobReader(obj, source).read()


def job_label(obj: Mapping[str, Any]) -> str:
    """``Job namespace/name`` for messages about a Job object, however broken it is."""
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else _EMPTY
    name = metadata.get("name") or "?"
    namespace = metadata.get("namespace") or "default"
    return f"Job {namespace}/{name}"


def parse_duration(text: str) -> float:
    """Seconds in a Go duration (``90s``, ``1h30m``, ``1.5m``); ValueError when it is none."""
    if text in ("0", "+0", "-0"):
        return 0.0
    body = text[1:] if text[:1] in "+-" else text
    position = 0
    total = 0.0
    while position < len(body):
        match = _DURATION_PART.match(body, position)
        if match is None:
            raise ValueError(f"not a duration: {text!r} (use a number and a unit, like 30s, 5m or 1h30m)")
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    if not body:
        raise ValueError("empty duration")
    return -total if text.startswith("-") else total


class _JobReader(FieldReader):
    """Reads one Job; every failure names the Job and the field path."""

    def __init__(self, obj: Mapping[str, Any], source: str | None) -> None:
        self.obj = obj
        self.source = source
        self._label = job_label(obj)

    @property
    def label(self) -> str:
        return self._label

    # --- the Job -----------------------------------------------------------------------------

    def read(self) -> JobSpec:
        obj = self.obj
        metadata = self.mapping(obj, "metadata", "metadata")
        name = self.string(metadata, "name", "metadata.name")
        if not name:
            self.fail("metadata.name", "missing")
        namespace = self.string(metadata, "namespace", "metadata.namespace") or "default"
        if "spec" not in obj:
            self.fail("spec", "missing")
        spec = self.mapping(obj, "spec", "spec")

        raw_tasks = self.sequence(spec, "tasks", "spec.tasks")
        if not raw_tasks:
            self.fail("spec.tasks", "a job needs at least one task")
        tasks = tuple(self.task(raw, index) for index, raw in enumerate(raw_tasks))
        self.check_task_names(name, tasks)
        self.check_depends_on(tasks)

        total = sum(task.replicas for task in tasks)
        min_available = self.integer(spec, "minAvailable", "spec.minAvailable", minimum=0)
        if min_available is None or min_available == 0:
            # Volcano's webhook: an unset (or zero) minAvailable becomes the tasks' sum.
            min_available = sum(task.min_available for task in tasks)
        if min_available > total:
            self.fail(
                "spec.minAvailable",
                f"{min_available} is more than the {total} replicas of all tasks together",
            )
        min_success = self.integer(spec, "minSuccess", "spec.minSuccess", minimum=1)
        if min_success is not None and min_success > total:
            self.fail("spec.minSuccess", f"{min_success} is more than the {total} replicas of all tasks")
        max_retry = self.integer(spec, "maxRetry", "spec.maxRetry", minimum=0)
        ttl = self.integer(spec, "ttlSecondsAfterFinished", "spec.ttlSecondsAfterFinished", minimum=0)

        queue = self.string(spec, "queue", "spec.queue") or naming.DEFAULT_QUEUE
        if not _DNS_SUBDOMAIN.fullmatch(queue):
            self.fail("spec.queue", f"{queue!r} is not a valid queue name (lowercase DNS name)")
        priority_class = self.string(spec, "priorityClassName", "spec.priorityClassName")

        return JobSpec(
            name=name,
            namespace=namespace,
            uid=self.string(metadata, "uid", "metadata.uid"),
            scheduler_name=self.string(spec, "schedulerName", "spec.schedulerName"),
            queue=queue,
            min_available=min_available,
            min_success=min_success,
            max_retry=DEFAULT_MAX_RETRY if max_retry is None else max_retry,
            ttl_seconds_after_finished=ttl,
            priority_class_name=priority_class,
            tasks=tasks,
            plugins=self.plugins(spec, tasks),
            policies=self.policies(spec, "spec.policies"),
            network_topology=self.network_topology(spec),
            volumes=self.volumes(spec, name),
            labels=self.string_map(metadata, "labels", "metadata.labels"),
            annotations=self.string_map(metadata, "annotations", "metadata.annotations"),
            generation=self.integer(metadata, "generation", "metadata.generation", 0, minimum=0),
            created=_timestamp(metadata.get("creationTimestamp")),
        )

    def string_map(self, parent: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
        value = self.mapping(parent, key, path)
        return {str(k): str(v) for k, v in value.items()}

    # --- tasks -------------------------------------------------------------------------------

    def task(self, raw: Any, index: int) -> TaskSpec:
        path = f"spec.tasks[{index}]"
        if not isinstance(raw, Mapping):
            self.fail(path, f"must be a mapping, not {type_name(raw)}")
        name = self.string(raw, "name", f"{path}.name") or f"default{index}"
        if len(name) > naming.DNS_LABEL_MAX or not _DNS_LABEL.fullmatch(name):
            self.fail(
                f"{path}.name",
                f"{name!r} is not a valid task name (a DNS label: lowercase letters, digits and '-', "
                f"at most {naming.DNS_LABEL_MAX} characters, starting and ending with a letter or digit)",
            )
        replicas = self.integer(raw, "replicas", f"{path}.replicas", minimum=0) or 0
        min_available = self.integer(raw, "minAvailable", f"{path}.minAvailable", minimum=0)
        partition = self.mapping(raw, "partitionPolicy", f"{path}.partitionPolicy")
        partition_size = self.integer(partition, "partitionSize", f"{path}.partitionPolicy.partitionSize", minimum=1)
        min_partitions = self.integer(partition, "minPartitions", f"{path}.partitionPolicy.minPartitions", minimum=0)
        if min_available is None and partition_size and min_partitions:
            # As Volcano's controller: an unset minimum is that many whole partitions.
            if min_partitions * partition_size > replicas:
                self.fail(
                    f"{path}.partitionPolicy.minPartitions",
                    f"{min_partitions} partitions of {partition_size} are more than the task's {replicas} replicas",
                )
            min_available = min_partitions * partition_size
        if min_available is None:
            min_available = replicas
        if min_available > replicas:
            self.fail(f"{path}.minAvailable", f"{min_available} is more than the task's {replicas} replicas")
        max_retry = self.integer(raw, "maxRetry", f"{path}.maxRetry", minimum=0)
        template = self.template(raw, path)
        depends_on = self.depends_on(raw, path)
        topology_policy = self.string(raw, "topologyPolicy", f"{path}.topologyPolicy") or None
        return TaskSpec(
            name=name,
            replicas=replicas,
            min_available=min_available,
            max_retry=max_retry or DEFAULT_MAX_RETRY,
            template=template,
            policies=self.policies(raw, f"{path}.policies"),
            depends_on=depends_on,
            topology_policy=topology_policy,
            partition_size=partition_size,
        )

    def template(self, raw: Mapping[str, Any], path: str) -> Mapping[str, Any]:
        template = raw.get("template")
        if template is None:
            self.fail(f"{path}.template", "missing (each task needs a pod template)")
        if not isinstance(template, Mapping):
            self.fail(f"{path}.template", f"must be a mapping, not {type_name(template)}")
        spec = template.get("spec")
        if not isinstance(spec, Mapping):
            self.fail(f"{path}.template.spec", "missing (the pod template needs a spec)")
        containers = spec.get("containers")
        if not isinstance(containers, list) or not containers:
            self.fail(f"{path}.template.spec.containers", "missing (a pod needs at least one container)")
        for list_name in ("containers", "initContainers"):
            for number, container in enumerate(self.sequence(spec, list_name, f"{path}.template.spec.{list_name}")):
                where = f"{path}.template.spec.{list_name}[{number}]"
                if not isinstance(container, Mapping):
                    self.fail(where, f"must be a mapping, not {type_name(container)}")
                if not isinstance(container.get("name"), str) or not container["name"]:
                    self.fail(f"{where}.name", "missing")
                if list_name == "containers" and not container.get("image"):
                    self.fail(f"{where}.image", "missing")
                resources = self.mapping(container, "resources", f"{where}.resources")
                for kind in ("requests", "limits"):
                    for resource, amount in self.mapping(resources, kind, f"{where}.resources.{kind}").items():
                        try:
                            nanos = parse_nanos(amount)
                        except ValueError as error:
                            self.fail(f"{where}.resources.{kind}.{resource}", str(error))
                        if nanos < 0:
                            self.fail(f"{where}.resources.{kind}.{resource}", f"must not be negative ({amount})")
        return template

    def depends_on(self, raw: Mapping[str, Any], path: str) -> DependsOn | None:
        value = self.mapping(raw, "dependsOn", f"{path}.dependsOn")
        if not value:
            return None
        names = tuple(str(name) for name in self.sequence(value, "name", f"{path}.dependsOn.name"))
        iteration = self.string(value, "iteration", f"{path}.dependsOn.iteration") or "all"
        if iteration not in ("all", "any"):
            self.fail(f"{path}.dependsOn.iteration", f"must be all or any, not {iteration!r}")
        return DependsOn(names=names, iteration=iteration) if names else None

    def check_task_names(self, job_name: str, tasks: Sequence[TaskSpec]) -> None:
        seen: dict[str, int] = {}
        for index, task in enumerate(tasks):
            if task.name in seen:
                self.fail(
                    f"spec.tasks[{index}].name",
                    f"duplicate task name {task.name!r} (also spec.tasks[{seen[task.name]}])",
                )
            seen[task.name] = index
            if task.replicas:
                # The pod name is also its hostname under the svc plugin: a DNS label.
                longest = naming.pod_name(job_name, task.name, task.replicas - 1)
                if len(longest) > naming.DNS_LABEL_MAX or not _DNS_LABEL.fullmatch(longest):
                    self.fail(
                        f"spec.tasks[{index}].name",
                        f"pod name {longest!r} would not be a valid DNS label (at most "
                        f"{naming.DNS_LABEL_MAX} characters); shorten the job or task name",
                    )

    def check_depends_on(self, tasks: Sequence[TaskSpec]) -> None:
        names = {task.name: index for index, task in enumerate(tasks)}
        graph: dict[str, tuple[str, ...]] = {}
        for index, task in enumerate(tasks):
            if task.depends_on is None:
                continue
            for name in task.depends_on.names:
                if name == task.name:
                    self.fail(f"spec.tasks[{index}].dependsOn.name", f"task {task.name!r} depends on itself")
                if name not in names:
                    self.fail(f"spec.tasks[{index}].dependsOn.name", f"no task named {name!r} in this job")
            graph[task.name] = task.depends_on.names
        cycle = _find_cycle(graph)
        if cycle:
            first = names[cycle[0]]
            self.fail(
                f"spec.tasks[{first}].dependsOn",
                "dependsOn forms a cycle: " + " → ".join(cycle) + " (tasks would wait for each other forever)",
            )

    # --- policies, plugins, topology, volumes --------------------------------------------

    def policies(self, parent: Mapping[str, Any], path: str) -> tuple[LifecyclePolicy, ...]:
        out: list[LifecyclePolicy] = []
        seen_events: dict[str, int] = {}
        seen_codes: dict[int, int] = {}
        for index, raw in enumerate(self.sequence(parent, "policies", path)):
            where = f"{path}[{index}]"
            if not isinstance(raw, Mapping):
                self.fail(where, f"must be a mapping, not {type_name(raw)}")
            events = [str(e) for e in self.sequence(raw, "events", f"{where}.events")]
            event = self.string(raw, "event", f"{where}.event")
            if event and events:
                self.fail(f"{where}.events", "set either event or events, not both")
            if event:
                events = [event]
            exit_code = self.integer(raw, "exitCode", f"{where}.exitCode")
            if events and exit_code is not None:
                self.fail(f"{where}.exitCode", "a policy reacts to an event or to an exit code, not both")
            if not events and exit_code is None:
                self.fail(where, "a policy needs event, events or exitCode")
            if exit_code == 0:
                self.fail(f"{where}.exitCode", "0 means success and cannot trigger a policy")
            for number, name in enumerate(events):
                field_path = f"{where}.event" if event else f"{where}.events[{number}]"
                if name in INTERNAL_EVENTS:
                    self.fail(
                        field_path,
                        f"{name} is raised by the controller itself and cannot be used in a policy "
                        f"(use one of {', '.join(EXTERNAL_EVENTS)})",
                    )
                if name not in EXTERNAL_EVENTS:
                    self.fail(field_path, f"unknown event {name!r} (use one of {', '.join(EXTERNAL_EVENTS)})")
                if name in seen_events:
                    self.fail(field_path, f"event {name} already has a policy ({path}[{seen_events[name]}])")
                seen_events[name] = index
            if exit_code is not None:
                if exit_code in seen_codes:
                    self.fail(
                        f"{where}.exitCode",
                        f"exit code {exit_code} already has a policy ({path}[{seen_codes[exit_code]}])",
                    )
                seen_codes[exit_code] = index
            action = self.string(raw, "action", f"{where}.action")
            if not action:
                self.fail(f"{where}.action", "missing")
            if action not in ACTIONS:
                self.fail(f"{where}.action", f"unknown action {action!r} (use one of {', '.join(ACTIONS)})")
            timeout_text = self.string(raw, "timeout", f"{where}.timeout")
            timeout_s: float | None = None
            if timeout_text:
                try:
                    timeout_s = parse_duration(timeout_text)
                except ValueError as error:
                    self.fail(f"{where}.timeout", str(error))
                if timeout_s < 0:
                    self.fail(f"{where}.timeout", "must not be negative")
            out.append(LifecyclePolicy(action=action, events=tuple(events), exit_code=exit_code, timeout_s=timeout_s))
        if "*" in seen_events and len(seen_events) > 1:
            self.fail(f"{path}[{seen_events['*']}]", "a policy for every event (*) leaves no room for others")
        return tuple(out)

    def plugins(self, spec: Mapping[str, Any], tasks: Sequence[TaskSpec]) -> tuple[PluginSpec, ...]:
        from vcsat.adapters.controller.plugins.registry import check_plugin, implied_plugins

        raw = self.mapping(spec, "plugins", "spec.plugins")
        plugins: list[PluginSpec] = []
        for name, args in raw.items():
            path = f"spec.plugins.{name}"
            if args is None:
                args = []
            if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
                self.fail(path, "must be a list of argument strings")
            plugins.append(PluginSpec(name=str(name), args=tuple(args)))
        for name in implied_plugins([plugin.name for plugin in plugins]):
            plugins.append(PluginSpec(name=name))
        for plugin in plugins:
            problem = check_plugin(plugin, tasks)
            if problem:
                self.fail(f"spec.plugins.{plugin.name}", problem)
        return tuple(plugins)

    def network_topology(self, spec: Mapping[str, Any]) -> NetworkTopology | None:
        raw = self.mapping(spec, "networkTopology", "spec.networkTopology")
        if not raw:
            return None
        mode = self.string(raw, "mode", "spec.networkTopology.mode") or "hard"
        if mode not in ("hard", "soft"):
            self.fail("spec.networkTopology.mode", f"must be hard or soft, not {mode!r}")
        tier = self.integer(raw, "highestTierAllowed", "spec.networkTopology.highestTierAllowed", minimum=0)
        tier_name = self.string(raw, "highestTierName", "spec.networkTopology.highestTierName") or None
        if tier is not None and tier_name is not None:
            self.fail("spec.networkTopology", "set highestTierAllowed or highestTierName, not both")
        return NetworkTopology(mode=mode, highest_tier_allowed=tier, highest_tier_name=tier_name)

    def volumes(self, spec: Mapping[str, Any], job_name: str) -> tuple[VolumeSpec, ...]:
        out: list[VolumeSpec] = []
        paths: set[str] = set()
        for index, raw in enumerate(self.sequence(spec, "volumes", "spec.volumes")):
            where = f"spec.volumes[{index}]"
            if not isinstance(raw, Mapping):
                self.fail(where, f"must be a mapping, not {type_name(raw)}")
            mount_path = self.string(raw, "mountPath", f"{where}.mountPath")
            if not mount_path:
                self.fail(f"{where}.mountPath", "missing")
            if mount_path in paths:
                self.fail(f"{where}.mountPath", f"{mount_path} is mounted twice")
            paths.add(mount_path)
            claim_name = self.string(raw, "volumeClaimName", f"{where}.volumeClaimName")
            claim = self.mapping(raw, "volumeClaim", f"{where}.volumeClaim")
            if claim_name and claim:
                self.fail(where, "set volumeClaimName (an existing claim) or volumeClaim (a new one), not both")
            if not claim_name and not claim:
                self.fail(where, "needs volumeClaimName or volumeClaim")
            out.append(
                VolumeSpec(
                    mount_path=mount_path,
                    claim_name=claim_name or f"{job_name}-pvc-{index}",
                    claim_spec=claim or None,
                )
            )
        return tuple(out)


def _find_cycle(graph: Mapping[str, Sequence[str]]) -> list[str]:
    """One dependency cycle as ``[a, b, a]``, or ``[]`` when the graph is acyclic."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for successor in graph.get(node, ()):
            if state.get(successor) == 1:
                return [*stack[stack.index(successor) :], successor]
            if successor not in state:
                found = visit(successor)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return []

    for node in graph:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
