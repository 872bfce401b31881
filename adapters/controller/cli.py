"""``vcsat job ...`` and ``vcsat queue ...``: a user's view of Jobs and Queues, like Volcano's vcctl.

Tables print like ``kubectl get`` (upper-case headers, ages as ``5m``), ``-o yaml|json`` prints the
objects themselves (a ``v1`` List for several). Refusals by the API server (a CEL rule, a missing
object) are bad input: one line naming the object, exit 2.

Job actions (suspend, resume, restart, terminate, complete) create a ``bus.volcano.sh`` Command
owned by the Job, exactly as Volcano's vcctl does, so either tool works against either controller
(:mod:`.commands`): the controller applies it once and deletes it. Suspend is AbortJob (pods are
deleted, finished ones kept, the job waits as Aborted); resume is ResumeJob (the job restarts from
Pending, without using up a retry).

Queues: ``open`` and ``close`` create an OpenQueue / CloseQueue Command in ``default``, as vcctl
does (vcsat's controller or Volcano's sets ``status.state``: Closing while the queue still holds
PodGroups, Closed once it holds none); where the Command CRD is not installed they set
``status.state`` directly by the same rule. A queue is deleted only when closed, as Volcano's
admission insists, and ``default`` never. ``list`` and ``get`` show each queue's weight,
capability, deserved share and what it holds: the deserved share is ``spec.deserved`` where given,
else the share vcsat's fair-share computes from the live cluster, and SHARE is the largest ratio
of allocated to deserved over the resources.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import click
import yaml

from vcsat.adapters.cli.columns import print_columns
from vcsat.adapters.controller import naming
from vcsat.adapters.controller.commands import COMMAND_API_VERSION, QUEUE_COMMAND_NAMESPACE, command_body
from vcsat.adapters.controller.queue_states import next_state
from vcsat.adapters.errors import InputError
from vcsat.model.quantity import parse_nanos

_BATCH = (naming.BATCH_GROUP, naming.BATCH_VERSION)
_SCHEDULING = (naming.SCHEDULING_GROUP, naming.SCHEDULING_VERSION)
OUTPUTS = ("table", "yaml", "json")
QUEUE_STATES = ("Open", "Closed")


class Session:
    """API access and the default namespace, as kubectl would find them."""

    def __init__(self, kubeconfig: str | None, context: str | None) -> None:
        from kubernetes.client import ApiClient

        from vcsat.adapters.kube.client import load_configuration

        self.kubeconfig = kubeconfig
        self.context = context
        self.api = ApiClient(load_configuration(kubeconfig, context))

    @property
    def custom(self) -> Any:
        from kubernetes import client

        return client.CustomObjectsApi(self.api)

    @property
    def core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self.api)

    def default_namespace(self) -> str:
        from kubernetes import config

        with contextlib.suppress(Exception):
            _, active = config.list_kube_config_contexts(config_file=self.kubeconfig)  # type: ignore[no-untyped-call]
            if self.context:
                contexts, _ = config.list_kube_config_contexts(config_file=self.kubeconfig)  # type: ignore[no-untyped-call]
                active = next((c for c in contexts if c.get("name") == self.context), active)
            namespace = (active or {}).get("context", {}).get("namespace")
            if namespace:
                return str(namespace)
        return "default"


def kube_options(function: Any) -> Any:
    function = click.option("--context", metavar="NAME", help="kubeconfig context to use.")(function)
    function = click.option(
        "--kubeconfig", metavar="FILE", help="Default: in-cluster credentials, else ~/.kube/config."
    )(function)
    return function


def output_option(function: Any) -> Any:
    return click.option(
        "--output", "-o", type=click.Choice(OUTPUTS), default="table", show_default=True, help="How to print."
    )(function)


@contextlib.contextmanager
def api_errors(label: str) -> Iterator[None]:
    """API refusals as one line: bad input (exit 2) for what the user can fix, exit 1 otherwise."""
    from kubernetes.client import ApiException
    from urllib3.exceptions import HTTPError

    try:
        yield
    except ApiException as error:
        message = _server_message(error)
        if error.status == 404:
            raise InputError("not found", obj=label) from None
        if error.status == 409:
            raise InputError(f"already exists or changed meanwhile ({message})", obj=label) from None
        if error.status in (400, 422):
            raise InputError(message, obj=label) from None
        raise click.ClickException(f"{label}: the API server refused: {error.status} {message}") from None
    except HTTPError as error:
        raise click.ClickException(f"cannot reach the API server: {error}") from None


# --- vcsat job ----------------------------------------------------------------------------------


@click.group("job")
def job_group() -> None:
    """Volcano Jobs: run, list, view, suspend, resume and delete them."""


@job_group.command("run")
@kube_options
@click.option("--namespace", "-n", metavar="NS", help="Namespace (default: the kubeconfig context's).")
@click.option("--filename", "-f", metavar="FILE", help="Create the Job(s) in this YAML or JSON file.")
@click.option("--name", "job_name", metavar="NAME", help="Create a one-task Job of this name (without -f).")
@click.option("--image", default="busybox", show_default=True, metavar="IMAGE")
@click.option("--replicas", type=click.IntRange(min=1), default=1, show_default=True, metavar="N")
@click.option(
    "--min", "min_available", type=click.IntRange(min=1), metavar="N", help="minAvailable (default: replicas)."
)
@click.option("--requests", default="cpu=1,memory=100Mi", show_default=True, metavar="LIST", help="name=quantity,...")
@click.option("--limits", default="", metavar="LIST", help="name=quantity,... (default: none)")
@click.option("--queue", default="default", show_default=True, metavar="QUEUE")
@click.option("--scheduler", default="vcsat", show_default=True, metavar="NAME", help="spec.schedulerName.")
@click.option("--task", "task_name", default="default", show_default=True, metavar="NAME", help="Task name.")
def job_run(
    kubeconfig: str | None,
    context: str | None,
    namespace: str | None,
    filename: str | None,
    job_name: str | None,
    image: str,
    replicas: int,
    min_available: int | None,
    requests: str,
    limits: str,
    queue: str,
    scheduler: str,
    task_name: str,
) -> None:
    """Create a Job from a file (-f), or a simple one from flags (--name)."""
    if bool(filename) == bool(job_name):
        raise click.UsageError("give either -f FILE or --name NAME")
    if filename:
        from vcsat.adapters.convert.instance_file import read_objects

        jobs = []
        for number, obj in enumerate(read_objects(filename)):
            if obj.get("kind") != naming.JOB_KIND or obj.get("apiVersion") != naming.JOB_API_VERSION:
                raise InputError(
                    f"is a {obj.get('apiVersion')} {obj.get('kind')}, not a {naming.JOB_API_VERSION} Job",
                    source=filename,
                    field=f"objects[{number}]",
                )
            jobs.append(obj)
    else:
        assert job_name is not None
        if min_available is not None and min_available > replicas:
            raise InputError(f"{min_available} is more than --replicas {replicas}", field="--min")
        resources: dict[str, Any] = {"requests": _resource_list(requests, "--requests")}
        if limits:
            resources["limits"] = _resource_list(limits, "--limits")
        jobs = [
            {
                "apiVersion": naming.JOB_API_VERSION,
                "kind": naming.JOB_KIND,
                "metadata": {"name": job_name},
                "spec": {
                    "schedulerName": scheduler,
                    "queue": queue,
                    "minAvailable": min_available or replicas,
                    "tasks": [
                        {
                            "name": task_name,
                            "replicas": replicas,
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [{"name": task_name, "image": image, "resources": resources}],
                                }
                            },
                        }
                    ],
                },
            }
        ]
    session = Session(kubeconfig, context)
    namespace = namespace or session.default_namespace()
    for job in jobs:
        metadata = job.setdefault("metadata", {})
        target = metadata.get("namespace") or namespace
        metadata["namespace"] = target
        label = f"Job {target}/{metadata.get('name') or metadata.get('generateName', '?')}"
        with api_errors(label):
            created = session.custom.create_namespaced_custom_object(*_BATCH, target, naming.JOB_PLURAL, job)
        click.echo(f"job.batch.volcano.sh/{created['metadata']['name']} created")


@job_group.command("list")
@kube_options
@click.option("--namespace", "-n", metavar="NS", help="Namespace (default: the kubeconfig context's).")
@click.option("--all-namespaces", "-A", is_flag=True, help="Jobs of every namespace.")
@click.option("--queue", metavar="QUEUE", help="Only Jobs of this queue.")
@output_option
def job_list(
    kubeconfig: str | None,
    context: str | None,
    namespace: str | None,
    all_namespaces: bool,
    queue: str | None,
    output: str,
) -> None:
    """List Jobs: phase, replicas and pod counts."""
    session = Session(kubeconfig, context)
    namespace = None if all_namespaces else (namespace or session.default_namespace())
    with api_errors(f"Jobs in {namespace or 'all namespaces'}"):
        if namespace is None:
            items = session.custom.list_cluster_custom_object(*_BATCH, naming.JOB_PLURAL)["items"]
        else:
            items = session.custom.list_namespaced_custom_object(*_BATCH, namespace, naming.JOB_PLURAL)["items"]
    if queue:
        items = [job for job in items if ((job.get("spec") or {}).get("queue") or "default") == queue]
    items.sort(key=lambda job: ((job["metadata"].get("namespace") or ""), job["metadata"]["name"]))
    if output != "table":
        _emit_objects(items, output, single=False)
        return
    columns = [
        "NAME",
        "CREATED",
        "PHASE",
        "QUEUE",
        "REPLICAS",
        "MIN",
        "PENDING",
        "RUNNING",
        "SUCCEEDED",
        "FAILED",
        "UNKNOWN",
        "RETRIES",
    ]
    if namespace is None:
        columns.insert(0, "NAMESPACE")
    rows = []
    for job in items:
        spec = job.get("spec") or {}
        status = job.get("status") or {}
        row = [
            job["metadata"]["name"],
            _age(job["metadata"].get("creationTimestamp")),
            (status.get("state") or {}).get("phase") or "",
            spec.get("queue") or "default",
            str(sum(int(task.get("replicas") or 0) for task in spec.get("tasks") or [])),
            str(spec.get("minAvailable") or status.get("minAvailable") or ""),
            str(status.get("pending") or 0),
            str(status.get("running") or 0),
            str(status.get("succeeded") or 0),
            str(status.get("failed") or 0),
            str(status.get("unknown") or 0),
            str(status.get("retryCount") or 0),
        ]
        if namespace is None:
            row.insert(0, job["metadata"].get("namespace") or "")
        rows.append(row)
    _print_table(columns, rows, empty=f"No Jobs in {namespace or 'any namespace'}.")


@job_group.command("view")
@kube_options
@click.option("--namespace", "-n", metavar="NS", help="Namespace (default: the kubeconfig context's).")
@click.argument("name")
@output_option
def job_view(kubeconfig: str | None, context: str | None, namespace: str | None, name: str, output: str) -> None:
    """Show one Job: its phase and history, tasks, and recent events."""
    session = Session(kubeconfig, context)
    namespace = namespace or session.default_namespace()
    label = f"Job {namespace}/{name}"
    with api_errors(label):
        job = session.custom.get_namespaced_custom_object(*_BATCH, namespace, naming.JOB_PLURAL, name)
    if output != "table":
        _emit_objects([job], output, single=True)
        return
    with api_errors(label):
        events = session.core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.kind=Job,involvedObject.name={name}"
        ).items
    _describe_job(job, events)


JOB_ACTIONS = (
    (
        "suspend",
        "AbortJob",
        "Suspend a Job (AbortJob): its pods are deleted, finished ones kept; resume brings it back.",
    ),
    ("resume", "ResumeJob", "Resume a suspended Job (ResumeJob): it starts again from Pending, no retry used."),
    ("restart", "RestartJob", "Restart a Job (RestartJob): every pod goes, the job runs again under a new version."),
    (
        "terminate",
        "TerminateJob",
        "Terminate a Job (TerminateJob): its running pods are deleted and it ends as Terminated.",
    ),
    ("complete", "CompleteJob", "Complete a Job (CompleteJob): its running pods are deleted and it ends as Completed."),
)
"""The Job commands that create a Volcano Command object: (subcommand, Volcano action, help)."""


def _add_job_action(verb: str, action: str, summary: str) -> None:
    """Register ``vcsat job VERB NAME``, which asks the controller for ``action`` as vcctl does."""

    @job_group.command(verb, help=summary)
    @kube_options
    @click.option("--namespace", "-n", metavar="NS", help="Namespace (default: the kubeconfig context's).")
    @click.argument("name")
    def command(kubeconfig: str | None, context: str | None, namespace: str | None, name: str) -> None:
        _issue(kubeconfig, context, namespace, name, action, verb)


for _verb, _action, _summary in JOB_ACTIONS:
    _add_job_action(_verb, _action, _summary)


@job_group.command("delete")
@kube_options
@click.option("--namespace", "-n", metavar="NS", help="Namespace (default: the kubeconfig context's).")
@click.argument("names", nargs=-1, required=True)
def job_delete(kubeconfig: str | None, context: str | None, namespace: str | None, names: tuple[str, ...]) -> None:
    """Delete Jobs (their pods, PodGroup and plugin objects go with them)."""
    session = Session(kubeconfig, context)
    namespace = namespace or session.default_namespace()
    for name in names:
        with api_errors(f"Job {namespace}/{name}"):
            session.custom.delete_namespaced_custom_object(
                *_BATCH, namespace, naming.JOB_PLURAL, name, propagation_policy="Background"
            )
        click.echo(f"job.batch.volcano.sh/{name} deleted")


def _issue(
    kubeconfig: str | None, context: str | None, namespace: str | None, name: str, action: str, verb: str
) -> None:
    session = Session(kubeconfig, context)
    namespace = namespace or session.default_namespace()
    label = f"Job {namespace}/{name}"
    with api_errors(label):
        job = session.custom.get_namespaced_custom_object(*_BATCH, namespace, naming.JOB_PLURAL, name)
    job.setdefault("apiVersion", naming.JOB_API_VERSION)
    job.setdefault("kind", naming.JOB_KIND)
    created = _create_command(session, label, command_body(job, action, namespace=namespace))
    if created is None:
        raise click.ClickException(_NO_COMMAND_CRD)
    click.echo(f"job.batch.volcano.sh/{name} {verb} requested ({action}, command {created['metadata']['name']})")


def _create_command(session: Session, label: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """Create the Command; None when the Command CRD is not installed."""
    from kubernetes.client import ApiException

    group, version = COMMAND_API_VERSION.split("/")
    try:
        created: dict[str, Any] = session.custom.create_namespaced_custom_object(
            group, version, body["metadata"]["namespace"], "commands", body
        )
    except ApiException as error:
        if error.status == 404 and _server_message(error).startswith("the server could not find"):
            return None
        with api_errors(label):
            raise
    return created


_NO_COMMAND_CRD = "the Command CRD (commands.bus.volcano.sh) is not installed: kubectl apply -f deploy/crds/"


def _describe_job(job: Mapping[str, Any], events: Sequence[Any]) -> None:
    from vcsat.adapters.cli.app import make_console

    console = make_console()
    metadata = job.get("metadata") or {}
    spec = job.get("spec") or {}
    status = job.get("status") or {}
    state = status.get("state") or {}
    plugins = ", ".join(f"{k}{' ' + ' '.join(v) if v else ''}" for k, v in (spec.get("plugins") or {}).items())
    fields = [
        ("Name", metadata.get("name")),
        ("Namespace", metadata.get("namespace")),
        ("Created", f"{metadata.get('creationTimestamp', '')} ({_age(metadata.get('creationTimestamp'))} ago)"),
        ("Queue", spec.get("queue") or "default"),
        ("Scheduler", spec.get("schedulerName") or "(unset)"),
        ("Phase", state.get("phase") or "(not yet reconciled)"),
        ("Reason", " ".join(x for x in (state.get("reason"), state.get("message")) if x) or "-"),
        ("Min available", spec.get("minAvailable") or status.get("minAvailable") or "-"),
        ("Retries", f"{status.get('retryCount') or 0} of {spec.get('maxRetry', 3)}"),
        ("Version", status.get("version") or 0),
        ("Ran for", status.get("runningDuration") or "-"),
        ("Plugins", plugins or "-"),
    ]
    width = max(len(key) for key, _ in fields) + 2
    for key, value in fields:
        console.print(f"{key + ':':<{width}}{value}", highlight=False)
    counts = status.get("taskStatusCount") or {}
    rows = []
    for task in spec.get("tasks") or []:
        phases = (counts.get(task.get("name")) or {}).get("phase") or {}
        rows.append(
            [
                str(task.get("name") or ""),
                str(task.get("replicas") or 0),
                str(task.get("minAvailable", task.get("replicas") or 0)),
                *(str(phases.get(p, 0)) for p in ("Pending", "Running", "Succeeded", "Failed")),
            ]
        )
    console.print("\nTasks:")
    _print_table(["NAME", "REPLICAS", "MIN", "PENDING", "RUNNING", "SUCCEEDED", "FAILED"], rows, empty="  none")
    history = [[str(c.get("status")), str(c.get("lastTransitionTime") or "")] for c in status.get("conditions") or []]
    if history:
        console.print("\nHistory:")
        _print_table(["PHASE", "SINCE"], history, empty="")
    if events:
        console.print("\nEvents:")
        ordered = sorted(events, key=lambda e: str(e.last_timestamp or e.event_time or ""))[-10:]
        _print_table(
            ["TYPE", "REASON", "AGE", "MESSAGE"],
            [[str(e.type), str(e.reason), _age(e.last_timestamp or e.event_time), str(e.message)] for e in ordered],
            empty="",
        )


# --- vcsat queue --------------------------------------------------------------------------------


@click.group("queue")
def queue_group() -> None:
    """Volcano Queues: create, list, get, open, close and delete them."""


@queue_group.command("create")
@kube_options
@click.argument("name")
@click.option("--weight", type=click.IntRange(min=1), default=1, show_default=True, metavar="N")
@click.option("--capability", default="", metavar="LIST", help="Upper bound, name=quantity,...")
@click.option("--deserved", default="", metavar="LIST", help="Share it may reclaim, name=quantity,...")
@click.option("--guarantee", default="", metavar="LIST", help="Kept for it alone, name=quantity,...")
@click.option("--reclaimable/--no-reclaimable", default=True, show_default=True)
@click.option("--parent", metavar="QUEUE", help="Parent queue (hierarchy).")
@click.option("--state", type=click.Choice(QUEUE_STATES), default="Open", show_default=True)
def queue_create(
    kubeconfig: str | None,
    context: str | None,
    name: str,
    weight: int,
    capability: str,
    deserved: str,
    guarantee: str,
    reclaimable: bool,
    parent: str | None,
    state: str,
) -> None:
    """Create a Queue."""
    session = Session(kubeconfig, context)
    spec: dict[str, Any] = {"weight": weight, "reclaimable": reclaimable}
    if capability:
        spec["capability"] = _resource_list(capability, "--capability")
    if deserved:
        spec["deserved"] = _resource_list(deserved, "--deserved")
    if guarantee:
        spec["guarantee"] = {"resource": _resource_list(guarantee, "--guarantee")}
    if parent:
        spec["parent"] = parent
    body = {
        "apiVersion": naming.PODGROUP_API_VERSION,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }
    label = f"Queue {name}"
    with api_errors(label):
        session.custom.create_cluster_custom_object(*_SCHEDULING, naming.QUEUE_PLURAL, body)
        session.custom.patch_cluster_custom_object_status(
            *_SCHEDULING, naming.QUEUE_PLURAL, name, {"status": {"state": state}}
        )
    click.echo(f"queue.scheduling.volcano.sh/{name} created")


@queue_group.command("update")
@kube_options
@click.argument("name")
@click.option("--weight", type=click.IntRange(min=1, max=65535), metavar="N")
@click.option("--capability", metavar="LIST", help="Upper bound, name=quantity,... ('' removes it)")
@click.option("--deserved", metavar="LIST", help="Share it may reclaim, name=quantity,... ('' removes it)")
@click.option("--guarantee", metavar="LIST", help="Kept for it alone, name=quantity,... ('' removes it)")
@click.option("--reclaimable/--no-reclaimable", default=None)
def queue_update(
    kubeconfig: str | None,
    context: str | None,
    name: str,
    weight: int | None,
    capability: str | None,
    deserved: str | None,
    guarantee: str | None,
    reclaimable: bool | None,
) -> None:
    """Change a Queue's weight, capability, deserved share, guarantee or reclaimability."""
    spec: dict[str, Any] = {}
    if weight is not None:
        spec["weight"] = weight
    for key, text in (("capability", capability), ("deserved", deserved)):
        if text is not None:
            spec[key] = _resource_list(text, f"--{key}") or None
    if guarantee is not None:
        spec["guarantee"] = {"resource": _resource_list(guarantee, "--guarantee")} if guarantee else None
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    if not spec:
        raise InputError("nothing to change (give --weight, --capability, --deserved, --guarantee or --reclaimable)")
    session = Session(kubeconfig, context)
    label = f"Queue {name}"
    with api_errors(label):
        # Read, change, replace (guarded by the resourceVersion): a new list replaces the old one
        # whole, which a merge patch (it merges maps) would not do.
        queue = session.custom.get_cluster_custom_object(*_SCHEDULING, naming.QUEUE_PLURAL, name)
        current = queue.setdefault("spec", {})
        for key, value in spec.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value
        session.custom.replace_cluster_custom_object(*_SCHEDULING, naming.QUEUE_PLURAL, name, queue)
    click.echo(f"queue.scheduling.volcano.sh/{name} updated")


@queue_group.command("list")
@kube_options
@output_option
def queue_list(kubeconfig: str | None, context: str | None, output: str) -> None:
    """List Queues with their PodGroups by phase."""
    session = Session(kubeconfig, context)
    with api_errors("Queues"):
        queues = session.custom.list_cluster_custom_object(*_SCHEDULING, naming.QUEUE_PLURAL)["items"]
    _show_queues(session, sorted(queues, key=lambda q: q["metadata"]["name"]), output, single=False)


@queue_group.command("get")
@kube_options
@click.argument("name")
@output_option
def queue_get(kubeconfig: str | None, context: str | None, name: str, output: str) -> None:
    """Show one Queue."""
    session = Session(kubeconfig, context)
    with api_errors(f"Queue {name}"):
        queue = session.custom.get_cluster_custom_object(*_SCHEDULING, naming.QUEUE_PLURAL, name)
    _show_queues(session, [queue], output, single=True)


@queue_group.command("open")
@kube_options
@click.argument("name")
def queue_open(kubeconfig: str | None, context: str | None, name: str) -> None:
    """Open a Queue: its PodGroups may be placed again."""
    _set_queue_state(kubeconfig, context, name, "Open")


@queue_group.command("close")
@kube_options
@click.argument("name")
def queue_close(kubeconfig: str | None, context: str | None, name: str) -> None:
    """Close a Queue: nothing new is placed from it (running pods stay)."""
    _set_queue_state(kubeconfig, context, name, "Closed")


@queue_group.command("delete")
@kube_options
@click.argument("name")
def queue_delete(kubeconfig: str | None, context: str | None, name: str) -> None:
    """Delete a closed Queue."""
    label = f"Queue {name}"
    if name == naming.DEFAULT_QUEUE:
        raise InputError("the default queue cannot be deleted", obj=label)
    session = Session(kubeconfig, context)
    with api_errors(label):
        queue = session.custom.get_cluster_custom_object(*_SCHEDULING, naming.QUEUE_PLURAL, name)
    state = (queue.get("status") or {}).get("state") or "Open"
    if state != "Closed":
        raise InputError(f"is {state}; close it first (vcsat queue close {name})", obj=label)
    with api_errors(label):
        session.custom.delete_cluster_custom_object(*_SCHEDULING, naming.QUEUE_PLURAL, name)
    click.echo(f"queue.scheduling.volcano.sh/{name} deleted")


def _set_queue_state(kubeconfig: str | None, context: str | None, name: str, state: str) -> None:
    session = Session(kubeconfig, context)
    label = f"Queue {name}"
    with api_errors(label):
        queue = session.custom.get_cluster_custom_object(*_SCHEDULING, naming.QUEUE_PLURAL, name)
    queue.setdefault("apiVersion", naming.PODGROUP_API_VERSION)
    queue.setdefault("kind", "Queue")
    action = "OpenQueue" if state == "Open" else "CloseQueue"
    verb = "opened" if state == "Open" else "closed"
    created = _create_command(session, label, command_body(queue, action, namespace=QUEUE_COMMAND_NAMESPACE))
    if created is not None:
        command = created["metadata"]["name"]
        click.echo(f"queue.scheduling.volcano.sh/{name} {verb} requested ({action}, command {command})")
        return
    # No Command CRD, so no controller to hand it to: set the state here, by the same rule (a queue
    # that still holds PodGroups goes Closing, and a controller closes it once they are gone).
    with api_errors(label):
        groups = session.custom.list_cluster_custom_object(*_SCHEDULING, naming.PODGROUP_PLURAL)["items"]
    held = sum(1 for group in groups if ((group.get("spec") or {}).get("queue") or "default") == name)
    new_state = next_state(str((queue.get("status") or {}).get("state") or ""), action, held)
    with api_errors(label):
        session.custom.patch_cluster_custom_object_status(
            *_SCHEDULING, naming.QUEUE_PLURAL, name, {"status": {"state": new_state}}
        )
    if new_state == "Closing":
        click.echo(f"queue.scheduling.volcano.sh/{name} closing ({held} PodGroups left)")
    else:
        click.echo(f"queue.scheduling.volcano.sh/{name} {verb}")


def _show_queues(session: Session, queues: list[dict[str, Any]], output: str, *, single: bool) -> None:
    from vcsat.adapters.controller.queue_view import format_amounts, format_share, live_shares
    from vcsat.adapters.kube.client import Kube

    if output != "table":
        _emit_objects(queues, output, single=single)
        return
    with api_errors("PodGroups"):
        groups = session.custom.list_cluster_custom_object(*_SCHEDULING, naming.PODGROUP_PLURAL)["items"]
    with Kube.from_api_client(session.api, pool_size=4) as kube:
        shares = live_shares(kube)
    by_queue: dict[str, dict[str, int]] = {}
    for group in groups:
        queue = (group.get("spec") or {}).get("queue") or naming.DEFAULT_QUEUE
        phase = (group.get("status") or {}).get("phase") or "Pending"
        counts = by_queue.setdefault(queue, {})
        counts[phase] = counts.get(phase, 0) + 1
    rows = []
    for queue in queues:
        name = queue["metadata"]["name"]
        spec = queue.get("spec") or {}
        counts = by_queue.get(name, {})
        share = shares.get(name)
        capability = spec.get("capability") or {}
        rows.append(
            [
                name,
                str(spec.get("weight", 1)),
                (queue.get("status") or {}).get("state") or "Open",
                spec.get("parent") or "-",
                ",".join(f"{k}={capability[k]}" for k in sorted(capability)) or "-",
                format_amounts(share.deserved) if share else "-",
                format_amounts(share.allocated) if share else "-",
                format_share(share.share) if share else "-",
                *(str(counts.get(p, 0)) for p in ("Inqueue", "Pending", "Running")),
                _age(queue["metadata"].get("creationTimestamp")),
            ]
        )
    _print_table(
        [
            "NAME",
            "WEIGHT",
            "STATE",
            "PARENT",
            "CAPABILITY",
            "DESERVED",
            "ALLOCATED",
            "SHARE",
            "INQUEUE",
            "PENDING",
            "RUNNING",
            "AGE",
        ],
        rows,
        empty="No Queues.",
    )


# --- shared helpers -----------------------------------------------------------------------------


def _resource_list(text: str, option: str) -> dict[str, str]:
    """``cpu=1,memory=2Gi`` → ``{"cpu": "1", "memory": "2Gi"}``, every quantity checked."""
    out: dict[str, str] = {}
    for part in (piece.strip() for piece in text.split(",")):
        if not part:
            continue
        name, sign, quantity = part.partition("=")
        if not sign or not name.strip() or not quantity.strip():
            raise InputError(f"{part!r} is not name=quantity (like cpu=1,memory=2Gi)", field=option)
        try:
            if parse_nanos(quantity.strip()) < 0:
                raise ValueError("must not be negative")
        except ValueError as error:
            raise InputError(f"{name.strip()}={quantity.strip()}: {error}", field=option) from None
        out[name.strip()] = quantity.strip()
    return out


def _emit_objects(items: list[dict[str, Any]], output: str, *, single: bool) -> None:
    for item in items:
        (item.get("metadata") or {}).pop("managedFields", None)
    document: Any = items[0] if single else {"apiVersion": "v1", "kind": "List", "items": items}
    if output == "json":
        click.echo(json.dumps(document, indent=2))
    else:
        click.echo(yaml.safe_dump(document, sort_keys=False), nl=False)


def _print_table(columns: list[str], rows: list[list[str]], *, empty: str) -> None:
    from vcsat.adapters.cli.app import make_console

    console = make_console()
    if not rows:
        if empty:
            console.print(empty, highlight=False)
        return
    # Plain columns laid out in one pass: a list of thousands of Jobs prints in a blink, where a
    # rich Table renders every cell as an object.
    print_columns(console, columns, rows, fit=False, pad_edge=False)


def _age(stamp: Any) -> str:
    """kubectl's age: ``42s``, ``5m``, ``3h``, ``2d``."""
    if isinstance(stamp, datetime):
        moment = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    else:
        try:
            moment = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
        except ValueError:
            return "<unknown>"
    seconds = max(0, int((datetime.now(UTC) - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _server_message(error: Any) -> str:
    try:
        body = json.loads(error.body or "{}")
    except (TypeError, ValueError):
        body = {}
    message = body.get("message") if isinstance(body, dict) else None
    return " ".join(str(message or error.reason or "").split())
