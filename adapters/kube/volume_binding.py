"""VolumeBinding's PreBind in the live scheduler: a pod's waiting claims are bound before the pod.

A pod whose PersistentVolumeClaim is unbound, of a WaitForFirstConsumer StorageClass, may be placed
by the solver (:mod:`vcsat.solver.rules.volumes` decides where its claims can bind); before its Binding is
sent, the claims must be given their volumes on the chosen node, as kube-scheduler does in its
PreBind phase:

1. **Plan** (in queue order, one pod after the other): the claims, smallest request first, each get
   the volume kube-scheduler's ``FindMatchingVolume`` picks on the node (the one pre-bound to the
   claim, else the smallest available volume that suits it), never one already promised to another
   pod of this or an earlier apply that the watch does not show claimed yet; the others are
   provisioned on the node (:meth:`vcsat.solver.rules.volumes.VolumeRules.bind_plan`).
2. **Write**, static volumes first: each chosen PersistentVolume gets ``spec.claimRef`` (kind,
   namespace, name, uid, apiVersion and resourceVersion of the claim) and, unless it was pre-bound
   to the claim already, the annotation ``pv.kubernetes.io/bound-by-controller: "yes"``; then each
   claim to provision gets the annotation ``volume.kubernetes.io/selected-node: <node>``. Every
   write carries the resourceVersion the informer last saw, so a concurrent change refuses it
   (409). Nothing is rolled back when a later write fails, as in kube-scheduler.
3. **Wait** until the PV controller (kube-controller-manager) and the provisioner complete it: each
   claim fully bound (``spec.volumeName`` and ``pv.kubernetes.io/bind-completed``). It fails when
   the pod is deleted, a volume's ``claimRef`` is reset, the ``selected-node`` annotation is
   removed or changed (the provisioner's "provisioning failed, choose again"), or ``timeout_s``
   passes (kube-scheduler's ``bindTimeoutSeconds``, 600 s by default).

Each such pod's binding runs on a thread of this module's own pool, so its wait never holds up
the bindings of other pods. Only then is the pod bound. On any failure the pod is not bound: it waits, the reason is the
binding's failure in the apply report, and the next cycle decides again on what the writes left
(a claim with ``selected-node`` may then only go to that node; a volume with a ``claimRef`` only to
its claim).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from vcsat.adapters.kube.apply_state import log
from vcsat.adapters.kube.client import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, ApiError, Kube
from vcsat.adapters.kube.informer import Store
from vcsat.model import Pod, Snapshot
from vcsat.solver.rules.volumes import VolumePlan, VolumeRules

SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
DEFAULT_TIMEOUT_S: Final = 600.0
"""kube-scheduler's default ``bindTimeoutSeconds`` of the VolumeBinding plugin."""
POLL_S: Final = 0.2
WORKERS: Final = 64
"""Pods whose PreBind may be under way at once (each waits on a thread of its own, mostly asleep)."""

Stopped = Callable[[], bool]


class VolumeBinder:
    """Plans, writes and waits for the volume bindings of the pods an applier binds."""

    def __init__(
        self,
        kube: Kube,
        store: Store,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        on_failure: Callable[[Pod, str], None] | None = None,
    ) -> None:
        self.kube = kube
        self.on_failure = on_failure
        """Told (pod, why) when a PreBind fails: the applier records it as an Event on the pod."""
        self.store = store
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._promised: dict[str, str] = {}
        """Per PersistentVolume name: the claim key a plan gave it, until the watch shows it claimed."""
        self._rules: tuple[Snapshot, VolumeRules] | None = None
        self.pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="vcsat-prebind")
        """Where the bindings of pods with a PreBind run: their waits never hold up other bindings."""

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    # --- 1. plan ------------------------------------------------------------------------------

    def plan(self, pod: Pod, node_name: str, snapshot: Snapshot) -> VolumePlan | str | None:
        """The pod's PreBind on the node: None when its claims are all bound (nothing to do), the
        plan, or why its claims cannot be bound there. Call in queue order, one pod at a time."""
        if not pod.claims:
            return None
        claims = [snapshot.claim_by_key.get(f"{pod.namespace}/{name}") for name in pod.claims]
        if all(claim is not None and claim.fully_bound for claim in claims):
            return None
        node = snapshot.node_by_name.get(node_name)
        if node is None:
            return f"node {node_name} is not in the snapshot"
        with self._lock:
            if self._rules is None or self._rules[0] is not snapshot:
                self._rules = (snapshot, VolumeRules(snapshot, ()))
            rules = self._rules[1]
            self._forget_claimed()
            found = rules.bind_plan(pod, node, frozenset(self._promised))
            if isinstance(found, VolumePlan):
                for claim, volume in found.bindings:
                    self._promised[volume.name] = claim.key
            return found or None

    def plan_all(self, placements: Sequence[tuple[Pod, str]], snapshot: Snapshot) -> dict[str, VolumePlan | str]:
        """:meth:`plan` for each (pod, node), in queue order (higher priority, then older, then by
        key: the order in which the solver let pods count on volumes); per pod key, what is to do."""
        out: dict[str, VolumePlan | str] = {}
        for pod, node in sorted(placements, key=lambda entry: (-entry[0].priority, entry[0].created, entry[0].key)):
            found = self.plan(pod, node, snapshot)
            if found is not None:
                out[pod.key] = found
        return out

    def release_all(self, plans: Iterable[VolumePlan | str | None]) -> None:
        """:meth:`release` each plan (the others are nothing to free)."""
        for plan in plans:
            if isinstance(plan, VolumePlan):
                self.release(plan)

    def _forget_claimed(self) -> None:
        """Drops the promises the watch now shows (a volume with a claimRef, or gone)."""
        for name in list(self._promised):
            current = self.store.get("PersistentVolume", name)
            if current is None or (current.get("spec") or {}).get("claimRef"):
                del self._promised[name]

    def release(self, plan: VolumePlan) -> None:
        """Frees the plan's volumes that were not written (the pod is not bound after all)."""
        with self._lock:
            for claim, volume in plan.bindings:
                if self._promised.get(volume.name) == claim.key:
                    current = self.store.get("PersistentVolume", volume.name) or {}
                    ref = (current.get("spec") or {}).get("claimRef") or {}
                    if f"{ref.get('namespace')}/{ref.get('name')}" != claim.key:
                        del self._promised[volume.name]

    # --- 2. write and 3. wait -----------------------------------------------------------------

    def prebind(self, pod: Pod, node_name: str, plan: VolumePlan | str, stopped: Stopped) -> str | None:
        """Writes the plan and waits until its claims are bound; None then, else why not (a plan
        that is a message fails at once). Each failure is logged and told ``on_failure``."""
        if isinstance(plan, str):
            problem: str | None = f"VolumeBinding: {plan}"
        else:
            try:
                written = self._write(node_name, plan)
            except _Failed as failure:
                self.release(plan)
                problem = f"VolumeBinding: {failure}"
            else:
                waited = self._wait(pod, node_name, written, stopped)
                problem = None if waited is None else f"VolumeBinding: binding volumes: {waited}"
        if problem is not None:
            log.info("volumes not bound; the pod waits", extra={"pod": pod.key, "node": node_name, "why": problem})
            if self.on_failure is not None:
                self.on_failure(pod, problem)
        return problem

    def _write(self, node_name: str, plan: VolumePlan) -> list[tuple[str, str, int]]:
        """The API updates, static bindings first; per object written: (kind, key, resourceVersion)."""
        written: list[tuple[str, str, int]] = []
        for claim, volume in plan.bindings:
            raw_claim = self._current("PersistentVolumeClaim", claim.key)
            raw_volume = self._current("PersistentVolume", volume.name)
            claim_meta = raw_claim.get("metadata") or {}
            ref = (raw_volume.get("spec") or {}).get("claimRef") or {}
            uid = claim_meta.get("uid", "")
            bound_to_claim = (
                ref.get("name") == claim.name
                and ref.get("namespace") == claim.namespace
                and (not ref.get("uid") or ref.get("uid") == uid)
            )
            patch: dict[str, Any] = {}
            if not bound_to_claim or ref.get("uid") != uid:
                patch["spec"] = {
                    "claimRef": {
                        "kind": "PersistentVolumeClaim",
                        "namespace": claim.namespace,
                        "name": claim.name,
                        "uid": uid,
                        "apiVersion": "v1",
                        "resourceVersion": claim_meta.get("resourceVersion", ""),
                    }
                }
            annotations = (raw_volume.get("metadata") or {}).get("annotations") or {}
            if not bound_to_claim and BOUND_BY_CONTROLLER not in annotations:
                patch["metadata"] = {"annotations": {BOUND_BY_CONTROLLER: "yes"}}
            version = self._patch(PERSISTENT_VOLUMES.path(name=volume.name), raw_volume, patch)
            written.append(("PersistentVolume", volume.name, version))
        for claim in plan.provisions:
            raw_claim = self._current("PersistentVolumeClaim", claim.key)
            annotations = (raw_claim.get("metadata") or {}).get("annotations") or {}
            patch = {}
            if annotations.get(SELECTED_NODE) != node_name:
                patch = {"metadata": {"annotations": {SELECTED_NODE: node_name}}}
            version = self._patch(PERSISTENT_VOLUME_CLAIMS.path(claim.namespace, claim.name), raw_claim, patch)
            written.append(("PersistentVolumeClaim", claim.key, version))
        return written

    def _current(self, kind: str, key: str) -> dict[str, Any]:
        current = self.store.get(kind, key)
        if current is None:
            raise _Failed(f"{kind} {key} not found")
        return current

    def _patch(self, path: str, current: dict[str, Any], patch: dict[str, Any]) -> int:
        """A merge patch preconditioned on the informer's resourceVersion; the version written."""
        version = str((current.get("metadata") or {}).get("resourceVersion", ""))
        if not patch:
            return _version_number(version)
        patch.setdefault("metadata", {})["resourceVersion"] = version
        try:
            answer = self.kube.patch(path, patch)
        except ApiError as error:
            raise _Failed(f"updating {path.rsplit('/', 1)[-1]}: {error.status}: {error.message}") from None
        return _version_number(str(((answer or {}).get("metadata") or {}).get("resourceVersion", "")))

    def _wait(self, pod: Pod, node_name: str, written: list[tuple[str, str, int]], stopped: Stopped) -> str | None:
        deadline = time.monotonic() + self.timeout_s
        while True:
            problem, done = self._check(pod, node_name, written)
            if problem is not None or done:
                return problem
            if stopped():
                return "stopped before the claims were bound (no longer leading)"
            if time.monotonic() >= deadline:
                return f"timed out after {self.timeout_s:g}s waiting for the claims to be bound"
            # Still assumed bound meanwhile, however long the wait: no cycle places the pod again.
            self.store.keep_expecting(pod.key)
            time.sleep(POLL_S)

    def _check(self, pod: Pod, node_name: str, written: list[tuple[str, str, int]]) -> tuple[str | None, bool]:
        """kube-scheduler's checkBindings on the informer's objects: (why it failed, all bound)."""
        if self.store.get("Pod", pod.key) is None:
            return "pod does not exist any more", False
        done = True
        for kind, key, version in written:
            current = self.store.get(kind, key)
            if current is None:
                return f"{kind} {key} is gone", False
            if _version_number(str((current.get("metadata") or {}).get("resourceVersion", ""))) < version:
                done = False  # the watch has not shown our write yet
                continue
            if kind == "PersistentVolume":
                ref = (current.get("spec") or {}).get("claimRef") or {}
                if not ref.get("uid"):
                    return f'ClaimRef got reset for pv "{key}"', False
                claim = self.store.get("PersistentVolumeClaim", f"{ref.get('namespace')}/{ref.get('name')}")
            else:
                claim = current
                selected = ((current.get("metadata") or {}).get("annotations") or {}).get(SELECTED_NODE)
                if selected != node_name:
                    return f'provisioning failed for PVC "{key.split("/", 1)[1]}"', False
            if claim is None or not _fully_bound(claim):
                done = False
        return None, done


class _Failed(Exception):
    pass


def _fully_bound(claim: dict[str, Any]) -> bool:
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    return bool((claim.get("spec") or {}).get("volumeName")) and BIND_COMPLETED in annotations


def _version_number(version: str) -> int:
    return int(version) if version.isdigit() else 0
