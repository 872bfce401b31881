"""One reconcile of one Job: read it fresh, let :func:`.state.decide` plan, apply the plan.

Every read is fresh from the API server (no cache that could be stale after a restart), and every
write is safe to repeat:

1. the new status is written first, through the status subresource (or the Job itself where the
   CRD serves none, :mod:`~vcsat.adapters.kube.status_subresource`) with the Job's
   ``resourceVersion``: the commit point (a conflict means someone else moved first, and the
   whole reconcile is redone on fresh data);
2. the plugins' objects, then the PodGroup, are created if missing (``AlreadyExists`` is success);
3. pods to remove are first marked out of sync (so their end is not taken for an eviction) and
   then deleted (``NotFound`` is success);
4. missing pods are created under their fixed names (``AlreadyExists`` is success).

A controller killed between any two of these finds, on its next pass, a status that says what
was decided and objects that are either there or not, and finishes the job; it can neither create
a second pod of a name nor lose the retry count. A Job that fails validation gets the reason in
its status (``state.reason: InvalidSpec``) and a Warning Event, and nothing else is touched.
"""

from __future__ import annotations

import json
import logging
import sys
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from vcsat.adapters.controller import naming
from vcsat.adapters.controller.commands import COMMANDS, CommandObject
from vcsat.adapters.controller.jobspec import JobSpec, parse_job
from vcsat.adapters.controller.observe import Command, Observation, ObservedPod, observe_pod
from vcsat.adapters.controller.plugins.base import ObjectRecipe, object_metadata
from vcsat.adapters.controller.plugins.registry import build_plugins
from vcsat.adapters.controller.podgroup import build_podgroup, spec_update
from vcsat.adapters.controller.pods import build_pod
from vcsat.adapters.controller.state import COMMAND_RESOURCE, INVALID_REASON, JobEvent, Plan, decide
from vcsat.adapters.controller.status import JobStatus, rfc3339
from vcsat.adapters.errors import InputError
from vcsat.adapters.kube.client import ApiError, Kube, Resource
from vcsat.adapters.kube.status_subresource import StatusWriter

log = logging.getLogger("vcsat.controller")

WriteHook = Callable[[str, str, str], None]
"""Called as ``hook(verb, kind, name)`` before each write (tests use it to kill a reconcile midway)."""

COMPONENT = "vcsat-controller"
JOBS = Resource("Job", naming.JOB_API_VERSION, naming.JOB_PLURAL, namespaced=True)

# Where each kind lives: the collection path of a namespace (objects are ``<collection>/<name>``).
_COLLECTIONS: dict[str, str] = {
    "Job": f"/apis/{naming.JOB_API_VERSION}/namespaces/{{ns}}/{naming.JOB_PLURAL}",
    "PodGroup": f"/apis/{naming.PODGROUP_API_VERSION}/namespaces/{{ns}}/{naming.PODGROUP_PLURAL}",
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Service": "/api/v1/namespaces/{ns}/services",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "NetworkPolicy": "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
    "Event": "/api/v1/namespaces/{ns}/events",
}


def collection(kind: str, namespace: str) -> str:
    return _COLLECTIONS[kind].format(ns=namespace)


def object_path(kind: str, namespace: str, name: str) -> str:
    return f"{collection(kind, namespace)}/{name}"


class Conflict(Exception):
    """The Job changed between the read and the status write; reconcile again on fresh data."""


class ReconcileError(Exception):
    """A write the API server refused for a reason other than a race; retried with backoff."""


class Reconciler:
    """Applies :func:`.state.decide` to one Job at a time against a live API server.

    It talks raw JSON through :class:`~vcsat.adapters.kube.client.Kube`: pod templates reach the API
    server exactly as the user wrote them (a typed client would re-validate them on its own terms,
    refusing for instance ``nvidia.com/gpu: 1`` written as a number, which the server accepts).
    """

    def __init__(
        self,
        kube: Kube,
        *,
        scheduler_name: str = "vcsat",
        claim_unset: bool = True,
        wait_for_admission: bool = True,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        on_write: WriteHook | None = None,
    ) -> None:
        self.kube = kube
        self.statuses = StatusWriter(kube)
        self.scheduler_name = scheduler_name
        self.claim_unset = claim_unset
        self.wait_for_admission = wait_for_admission
        self.clock = clock
        self.on_write = on_write
        # Per job uid, objects known to exist (with the data they were checked against) / known to
        # be removed: saves a GET or a DELETE on every pass. Lost on restart, which costs one extra
        # call per object, nothing more.
        self._ensured: dict[str, dict[tuple[str, str], str]] = {}
        self._removed: dict[str, set[tuple[str, str]]] = {}
        self._priorities: dict[str, int] = {}
        self._warned_unmarked = False
        # Uids of the Commands this process deleted: a watch cache may still list one for a moment,
        # and one consumed must never be applied again after a later command replaced its record.
        self._consumed: dict[str, None] = {}

    # --- entry point ---------------------------------------------------------------------

    def owns(self, job: Mapping[str, Any]) -> bool:
        """Whether the Job is this controller's: its schedulerName is ours (or unset, when claimed)."""
        scheduler = (job.get("spec") or {}).get("schedulerName") or ""
        return scheduler == self.scheduler_name or (not scheduler and self.claim_unset)

    def reconcile(
        self,
        namespace: str,
        name: str,
        tombstones: Iterable[Mapping[str, Any]] = (),
        commands: Sequence[CommandObject] = (),
    ) -> float | None:
        """Bring one Job a step closer to what it should be; seconds until it wants another look, or None.

        ``commands``: the Command objects that target this Job (from the controller's watch); the
        oldest is applied in this step (:mod:`.commands`), and it is deleted once its uid is in
        the Job's status.
        """
        job = self._get(object_path("Job", namespace, name))
        if job is None:
            self._collect_orphans(namespace, name)
            return None
        if not self.owns(job):
            return None
        metadata = job.get("metadata") or {}
        if metadata.get("deletionTimestamp"):
            return None  # the garbage collector takes the pods with it
        uid = str(metadata.get("uid") or "")
        status = JobStatus.from_dict(job.get("status"))
        try:
            spec = parse_job(job)
        except InputError as error:
            self._mark_invalid(job, status, error)
            return None

        pending = sorted(
            (c for c in commands if c.for_job and c.target_name == name and c.uid not in self._consumed),
            key=lambda c: c.order,
        )
        applied = status.controlled_resources.get(COMMAND_RESOURCE)
        for done in [c for c in pending if c.uid == applied]:
            self._delete_command(done)  # applied before, its deletion interrupted
            pending.remove(done)
        command = pending[0] if pending else None

        pods = self._observe_pods(namespace, name, uid, tombstones)
        podgroup = self._get(object_path("PodGroup", namespace, naming.podgroup_name(name, uid)))
        podgroup_phase = None if podgroup is None else str((podgroup.get("status") or {}).get("phase") or "")
        observation = Observation(
            pods=tuple(pods),
            podgroup_phase=podgroup_phase,
            command=None if command is None else Command(id=command.uid, action=command.action),
            now=self.clock(),
            job_updated=_synced_generation(podgroup) < spec.generation,
        )
        plan = decide(spec, status, observation, wait_for_admission=self.wait_for_admission)
        if plan.status != status:
            self._write_status(job, plan.status)
        if command is not None and plan.status.controlled_resources.get(COMMAND_RESOURCE) == command.uid:
            self._delete_command(command)  # recorded in the status just written: consumed
            if len(pending) > 1:
                plan = replace(plan, requeue_after_s=0.0)
        self._apply(spec, plan, podgroup)
        if observation.job_updated and plan.podgroup == "keep":
            # JobUpdated was seen; mark it acted on even in a step that leaves the group as it is,
            # or the event would come back on every pass.
            self._ensure_podgroup(spec, podgroup, spec_too=False)
        if plan.status.phase != status.phase:
            return 0.0  # a transition: look again at once rather than wait for our own watch event
        return plan.requeue_after_s

    # --- applying a plan -----------------------------------------------------------------

    def _apply(self, job: JobSpec, plan: Plan, podgroup: dict[str, Any] | None) -> None:
        plugins = build_plugins(job)
        recipes = [recipe for plugin in plugins for recipe in plugin.objects(job)]
        if plan.job_objects == "ensure":
            for recipe in [*self._volume_recipes(job), *recipes]:
                self._ensure_object(job, recipe)
        elif plan.job_objects == "delete":
            for recipe in recipes:
                self._remove_object(job, recipe.kind, recipe.name)

        if plan.podgroup == "ensure":
            self._ensure_podgroup(job, podgroup)
        elif plan.podgroup == "delete" and podgroup is not None:
            self._remove_object(job, "PodGroup", podgroup["metadata"]["name"])

        for pod_name in plan.delete_pods:
            self._delete_pod(job.namespace, pod_name)
        for task_name, index in plan.create_pods:
            task = job.task(task_name)
            assert task is not None
            pod = build_pod(
                job,
                task,
                index,
                version=plan.status.version,
                retry_count=plan.status.retry_count,
                scheduler_name=job.scheduler_name or self.scheduler_name,
                plugins=plugins,
            )
            self._create_pod(job, pod)

        if plan.delete_job:
            self._write("delete", "Job", job.name)
            self._delete(object_path("Job", job.namespace, job.name), propagationPolicy="Background")
        for event in plan.events:
            self.record_event(job.namespace, job.name, job.uid, event)

    def _write_status(self, job: dict[str, Any], status: JobStatus) -> None:
        metadata = job["metadata"]
        namespace = metadata.get("namespace") or "default"
        self._write("update-status", "Job", metadata["name"])
        body = {**job, "status": status.to_dict()}
        try:
            self.statuses.put_status(JOBS, body)
        except ApiError as error:
            if error.status in (404, 409):
                raise Conflict(f"Job {namespace}/{metadata['name']} changed: {error.reason}") from None
            log.warning("job status not written", extra={"job": f"{namespace}/{metadata['name']}", "error": str(error)})
            raise

    def _mark_invalid(self, job: dict[str, Any], status: JobStatus, error: InputError) -> None:
        message = error.detail if not error.field else f"{error.field}: {error.detail}"
        if status.reason == INVALID_REASON and status.message == message:
            return
        now = self.clock()
        invalid = status if status.phase else status.entering("Pending", now)
        invalid = replace(invalid, reason=INVALID_REASON, message=message, last_transition_time=rfc3339(now))
        self._write_status(job, invalid)
        metadata = job["metadata"]
        log.warning("invalid Job", extra={"job": f"{metadata.get('namespace')}/{metadata['name']}", "error": message})
        self.record_event(
            metadata.get("namespace") or "default",
            metadata["name"],
            str(metadata.get("uid") or ""),
            JobEvent("Warning", INVALID_REASON, message),
        )

    def _delete_command(self, command: CommandObject) -> None:
        self._write("delete", "Command", command.name)
        self._delete(COMMANDS.path(command.namespace, command.name))
        self._consumed[command.uid] = None
        if len(self._consumed) > 4096:
            del self._consumed[next(iter(self._consumed))]

    # --- pods ------------------------------------------------------------------------------

    def _observe_pods(
        self, namespace: str, name: str, uid: str, tombstones: Iterable[Mapping[str, Any]]
    ) -> list[ObservedPod]:
        listed = self.kube.get(collection("Pod", namespace), labelSelector=f"{naming.JOB_NAME_KEY}={name}")
        pods = [observe_pod(obj, job_uid=uid) for obj in listed.get("items") or ()]
        names = {pod.name for pod in pods}
        for tombstone in tombstones:
            observed = observe_pod(tombstone, job_uid=uid, gone=True)
            if observed.name not in names:
                pods.append(observed)
        return pods

    def _create_pod(self, job: JobSpec, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        self._write("create", "Pod", name)
        try:
            self.kube.post(collection("Pod", job.namespace), pod)
        except ApiError as error:
            if error.status == 409:
                return
            message = f"cannot create pod {name}: {error.message or error.reason}"
            self.record_event(job.namespace, job.name, job.uid, JobEvent("Warning", "FailedCreate", message))
            raise ReconcileError(message) from None

    def _delete_pod(self, namespace: str, name: str) -> None:
        self._write("mark", "Pod", name)
        try:
            self.kube.patch(
                object_path("Pod", namespace, name), {"metadata": {"annotations": {naming.OUT_OF_SYNC_KEY: "true"}}}
            )
        except ApiError as error:
            if error.status == 404:
                return
            if error.status != 403:
                raise
            # Without the right to patch pods the mark is lost, not the deletion: the job's status
            # (the restart record, the version) still tells this deletion from an eviction.
            if not self._warned_unmarked:
                self._warned_unmarked = True
                log.warning("may not patch pods; deleting without the out-of-sync mark", extra={"pod": name})
        self._write("delete", "Pod", name)
        self._delete(object_path("Pod", namespace, name))

    # --- the PodGroup ----------------------------------------------------------------------

    def _ensure_podgroup(self, job: JobSpec, existing: dict[str, Any] | None, *, spec_too: bool = True) -> None:
        desired = build_podgroup(job, priorities=self._task_priorities(job))
        name = desired["metadata"]["name"]
        if existing is None:
            self._write("create", "PodGroup", name)
            try:
                self.kube.post(collection("PodGroup", job.namespace), desired)
            except ApiError as error:
                if error.status != 409:
                    raise ReconcileError(f"cannot create PodGroup {name}: {error.message or error.reason}") from None
            self._removed.get(job.uid, set()).discard(("PodGroup", name))
            return
        patch = spec_update(existing.get("spec") or {}, desired["spec"]) if spec_too else {}
        metadata = existing.get("metadata") or {}
        annotations = dict(metadata.get("annotations") or {})
        generation = desired["metadata"]["annotations"].get(naming.SYNCED_GENERATION_KEY)
        synced = generation is None or annotations.get(naming.SYNCED_GENERATION_KEY) == generation
        if patch or not synced:
            # An update (not a patch), guarded by the group's resourceVersion: the scheduler writes
            # its status meanwhile, and RBAC grants the controller update on PodGroups, not patch.
            self._write("update", "PodGroup", name)
            if generation is not None:
                annotations[naming.SYNCED_GENERATION_KEY] = generation
            body = {
                **existing,
                "metadata": {**metadata, "annotations": annotations},
                "spec": {**(existing.get("spec") or {}), **patch},
            }
            try:
                self.kube.request("PUT", object_path("PodGroup", job.namespace, name), body=body)
            except ApiError as error:
                if error.status == 409:
                    raise Conflict(f"PodGroup {job.namespace}/{name} changed meanwhile") from None
                raise

    def _task_priorities(self, job: JobSpec) -> dict[str, int]:
        names = {str(task.pod_spec.get("priorityClassName") or "") for task in job.tasks} - {""}
        for name in names - set(self._priorities):
            found = self._get(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}", forbidden_ok=True)
            self._priorities[name] = int((found or {}).get("value") or 0)
        return {name: self._priorities[name] for name in names}

    # --- plugin objects and volumes --------------------------------------------------------

    def _volume_recipes(self, job: JobSpec) -> list[ObjectRecipe]:
        recipes = []
        for volume in job.volumes:
            if volume.claim_spec is None:
                continue

            def claim(volume_name: str = volume.claim_name, spec: Any = volume.claim_spec) -> dict[str, Any]:
                return {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": object_metadata(job, volume_name),
                    "spec": dict(spec),
                }

            recipes.append(ObjectRecipe("v1", "PersistentVolumeClaim", volume.claim_name, claim))
        return recipes

    def _ensure_object(self, job: JobSpec, recipe: ObjectRecipe) -> None:
        key = (recipe.kind, recipe.name)
        ensured = self._ensured.setdefault(job.uid, {})
        # Objects whose data follows the Job (the host files) are looked at again when it changes.
        fingerprint = json.dumps(recipe.build().get("data"), sort_keys=True) if recipe.refresh_data else ""
        if ensured.get(key) == fingerprint:
            return
        existing = self._get(object_path(recipe.kind, job.namespace, recipe.name))
        if existing is None:
            self._write("create", recipe.kind, recipe.name)
            try:
                self.kube.post(collection(recipe.kind, job.namespace), recipe.build())
            except ApiError as error:
                if error.status != 409:
                    raise ReconcileError(
                        f"cannot create {recipe.kind} {recipe.name}: {error.message or error.reason}"
                    ) from None
        elif recipe.refresh_data:
            desired = recipe.build()
            if (existing.get("data") or {}) != desired.get("data"):
                self._write("update", recipe.kind, recipe.name)
                body = {**existing, "data": desired.get("data")}
                try:
                    self.kube.request("PUT", object_path(recipe.kind, job.namespace, recipe.name), body=body)
                except ApiError as error:
                    if error.status == 409:
                        raise Conflict(f"{recipe.kind} {job.namespace}/{recipe.name} changed meanwhile") from None
                    raise
        ensured[key] = fingerprint
        self._removed.get(job.uid, set()).discard(key)

    def _remove_object(self, job: JobSpec, kind: str, name: str) -> None:
        removed = self._removed.setdefault(job.uid, set())
        if (kind, name) in removed:
            return
        self._write("delete", kind, name)
        self._delete(object_path(kind, job.namespace, name))
        removed.add((kind, name))
        self._ensured.get(job.uid, {}).pop((kind, name), None)

    # --- a Job that is gone ----------------------------------------------------------------

    def _collect_orphans(self, namespace: str, name: str) -> None:
        """Remove what a deleted Job left behind, as the garbage collector would.

        Only objects whose controller is a Job of this name go (and the Job of that name is gone,
        or this would not run); an object orphaned on purpose (``--cascade=orphan``) has lost that
        reference already. Clusters run the garbage collector anyway; this keeps clusters without
        one (and tests) clean.
        """
        selector = f"{naming.JOB_NAME_KEY}={name}"
        for kind in ("Pod", "PodGroup", "Service", "ConfigMap", "Secret", "NetworkPolicy"):
            listed = self._get(collection(kind, namespace), labelSelector=selector, forbidden_ok=True)
            for obj in (listed or {}).get("items") or ():
                refs = (obj.get("metadata") or {}).get("ownerReferences") or []
                if not any(
                    ref.get("controller") and ref.get("kind") == naming.JOB_KIND and ref.get("name") == name
                    for ref in refs
                ):
                    continue
                object_name = obj["metadata"]["name"]
                self._write("delete", kind, object_name)
                self._delete(object_path(kind, namespace, object_name))

    # --- API helpers, events and the write hook -----------------------------------------------

    def _get(self, path: str, *, forbidden_ok: bool = False, **params: Any) -> dict[str, Any] | None:
        """The object (or list) at ``path``; None when it does not exist (or, with ``forbidden_ok``,
        when we may not read it: a missing permission degrades a nicety, it does not stop a Job)."""
        try:
            found: dict[str, Any] = self.kube.get(path, **params)
        except ApiError as error:
            if error.status == 404 or (forbidden_ok and error.status == 403):
                return None
            raise
        return found

    def _delete(self, path: str, **params: Any) -> None:
        try:
            self.kube.delete(path, **params)
        except ApiError as error:
            if error.status != 404:
                raise

    def record_event(self, namespace: str, job_name: str, job_uid: str, event: JobEvent) -> None:
        """A Kubernetes Event on the Job (``kubectl describe`` shows it); failures are only logged."""
        stamp = rfc3339(self.clock())
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{job_name}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": naming.JOB_API_VERSION,
                "kind": naming.JOB_KIND,
                "name": job_name,
                "namespace": namespace,
                "uid": job_uid,
            },
            "reason": event.reason,
            "message": event.message[:1024],
            "type": event.type,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        log.info(
            event.message,
            extra={"job": f"{namespace}/{job_name}", "type": event.type, "reason": event.reason},
        )
        try:
            self.kube.post(collection("Event", namespace), body)
        except ApiError as error:
            log.warning("cannot record an event", extra={"job": f"{namespace}/{job_name}", "error": str(error)})

    def _write(self, verb: str, kind: str, name: str) -> None:
        if self.on_write is not None:
            self.on_write(verb, kind, name)


def _synced_generation(podgroup: Mapping[str, Any] | None) -> int:
    """The Job generation the controller last acted on, from its PodGroup; a group without the
    mark (no group yet, or one made before the mark existed) reads as up to date."""
    if podgroup is None:
        return sys.maxsize
    text = ((podgroup.get("metadata") or {}).get("annotations") or {}).get(naming.SYNCED_GENERATION_KEY)
    try:
        return int(str(text))
    except (TypeError, ValueError):
        return sys.maxsize
