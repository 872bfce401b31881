"""Binding pods, gang by gang, without ever binding a pod twice.

The pods of a gang are bound concurrently on a bounded pool of threads and keep-alive connections.
Before a gang is sent it is checked against the informer store: a gang whose pods, PodGroup or
target nodes changed after the snapshot is *stale* and skipped whole (decided again next cycle).
Each binding carries the pod's UID and resourceVersion as preconditions and its
``vcsat.io/gpu-ids`` as a Binding annotation, which the API server writes onto the pod in the same
update that sets ``spec.nodeName``. Each queued pod is registered with the store at once, so the
next snapshot already shows it bound (kube-scheduler's "assume, then bind asynchronously").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

from vcsat.adapters.convert.gpu_ids import GPU_IDS_ANNOTATION
from vcsat.adapters.kube.apply_state import ApplierState, ApplyReport, GangOutcome, log
from vcsat.adapters.kube.client import (
    PODS,
    ApiError,
)
from vcsat.adapters.kube.volume_binding import VolumeBinder
from vcsat.model import Binding, Pod, Snapshot
from vcsat.model.cluster import DEFAULT_QUEUE
from vcsat.solver.rules.volumes import VolumePlan

_ALREADY_ASSIGNED = 'is already assigned to node "'


class Bindings(ApplierState):
    """Bindings gang by gang, checked against the store first and never sent twice."""

    volumes: VolumeBinder
    """The PreBind of pods whose claims wait for a node (:mod:`.volume_binding`)."""

    def _send(
        self, bindings: Iterable[Binding], snapshot: Snapshot, report: ApplyReport, stopped: Callable[[], bool]
    ) -> list[tuple[str, list[tuple[Binding, Future[str | None]]]]]:
        by_gang: dict[str, list[Binding]] = {}
        for binding in bindings:
            pod = snapshot.pod_by_key.get(binding.pod)
            if pod is None:
                report.failed[binding.pod] = "not in the snapshot the decision was made on"
                continue
            by_gang.setdefault(pod.group or pod.key, []).append(binding)

        # The volumes of pods whose claims wait for a node, planned for all at once in queue order
        # (as the solver counted them), so that two pods are never promised one volume.
        plans = self.volumes.plan_all(
            [(snapshot.pod_by_key[b.pod], b.node) for members in by_gang.values() for b in members], snapshot
        )

        # Gangs are checked and sent oldest first (by their oldest pod's creation): a large decision
        # waits for the API server's write rate, and the pods that have waited longest should not
        # wait behind the newest. Their pods run concurrently, and the next gang is sent without
        # waiting for the previous one to finish (the pool bounds it).
        def waited_since(item: tuple[str, list[Binding]]) -> tuple[float, str]:
            return (min(snapshot.pod_by_key[b.pod].created for b in item[1]), item[0])

        sent: list[tuple[str, list[tuple[Binding, Future[str | None]]]]] = []
        for gang, members in sorted(by_gang.items(), key=waited_since):
            halted = stopped()
            why = "stopped before it was sent (no longer leading)" if halted else self._stale(gang, members, snapshot)
            if why is not None:
                self.volumes.release_all(plans.get(binding.pod) for binding in members)
                report.stale[gang] = why
                if not halted:
                    log.info("stale gang skipped; decided again next cycle", extra={"gang": gang, "why": why})
                continue
            queued = []
            for binding in members:
                annotations = _annotations(binding)
                # Registered now, not when sent: a cycle solved while this one is still queued
                # must already see the pod as bound.
                self.store.expect_binding(binding.pod, binding.node, annotations)
                pod = snapshot.pod_by_key[binding.pod]
                volumes = plans.get(binding.pod)
                # A pod with a PreBind may wait minutes for its volumes: on threads of their own.
                pool = self._pool if volumes is None else self.volumes.pool
                future = pool.submit(self._bind_one, pod, binding, annotations, stopped, volumes)
                self._reports.binding_queued(future)  # report writes yield to it until it is answered
                queued.append((binding, future))
            sent.append((gang, queued))
        return sent

    def _collect(
        self, sent: list[tuple[str, list[tuple[Binding, Future[str | None]]]]], report: ApplyReport
    ) -> dict[str, GangOutcome]:
        outcomes: dict[str, GangOutcome] = {}
        for gang, futures in sent:
            outcome = outcomes[gang] = GangOutcome()
            for binding, future in futures:
                problem = future.result()
                if problem is None:
                    outcome.bound.append(binding)
                    report.bound.append(binding.pod)
                else:
                    outcome.failed[binding.pod] = problem
                    report.failed[binding.pod] = problem
            if outcome.bound and outcome.failed:
                report.partial.append(gang)
                log.warning(
                    "gang cut off mid-bind; the rest is placed next cycle",
                    extra={"gang": gang, "bound": len(outcome.bound), "failed": outcome.failed},
                )
            elif outcome.failed:
                log.info("gang not bound", extra={"gang": gang, "failed": outcome.failed})
        return outcomes

    def _stale(self, gang: str, members: list[Binding], snapshot: Snapshot) -> str | None:
        group = snapshot.podgroup_by_key.get(gang)
        pods = [pod.key for pod in snapshot.pods_of_group.get(gang, ())] if group else []
        pods.extend(binding.pod for binding in members)
        return self.store.changed_since(
            snapshot.generation,
            pods=pods,
            podgroup=gang if group else None,
            queue=group.queue if group else DEFAULT_QUEUE,
            nodes=sorted({binding.node for binding in members}),
        )

    def _bind_one(
        self,
        pod: Pod,
        binding: Binding,
        annotations: dict[str, str],
        stopped: Callable[[], bool],
        volumes: VolumePlan | str | None = None,
    ) -> str | None:
        """Bind one pod; None when it is bound to ``binding.node`` now, else why not. ``volumes``:
        its claims' PreBind, done first (a message: they cannot be bound there, so neither is it)."""
        problem = self._check_bindable(pod, binding, stopped)
        if problem is None and volumes is not None:
            problem = self.volumes.prebind(pod, binding.node, volumes, stopped)
        elif volumes is not None:
            self.volumes.release_all([volumes])
        if problem is not None:
            self.store.binding_done(pod.key, "bound" if problem == "" else "failed")
            return problem or None
        current = self.store.get("Pod", pod.key) or {}
        metadata = current.get("metadata") or {}
        body_metadata: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
        if pod.uid:
            body_metadata["uid"] = pod.uid
        version = metadata.get("resourceVersion")
        with self._events_lock:
            written = self._conditions_written.pop(pod.key, None)
        if written is not None and written.before == version:
            version = written.after  # our own PodScheduled write, not yet seen by the watch
        if version:
            # The server refuses (409) if the pod changed since we last saw it.
            body_metadata["resourceVersion"] = version
        if annotations:
            body_metadata["annotations"] = annotations
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": body_metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": binding.node},
        }
        try:
            self.kube.post(PODS.path(pod.namespace, pod.name, "binding"), body)
        except ApiError as error:
            if error.status == 0:
                self.store.binding_done(pod.key, "uncertain")
                return f"no answer from the API server: {error.message}"
            if error.status == 409 and _ALREADY_ASSIGNED in error.message:
                node = error.message.split(_ALREADY_ASSIGNED, 1)[1].split('"', 1)[0]
                if node == binding.node:
                    self.store.binding_done(pod.key, "bound")
                    return None  # an earlier attempt of ours landed
                self.store.binding_done(pod.key, "failed")
                return f"already bound to {node}"
            self.store.binding_done(pod.key, "failed")
            if error.status == 404:
                return "the pod is gone"
            if error.status == 409:
                return f"the pod changed since the snapshot: {error.message}"
            return f"{error.status}: {error.message}"
        self.store.binding_done(pod.key, "bound")
        return None

    def _check_bindable(self, pod: Pod, binding: Binding, stopped: Callable[[], bool]) -> str | None:
        """Why not to send this binding at all ("" when it is already done); None to send it."""
        if stopped():
            return "not sent: no longer leading"
        current = self.store.get("Pod", pod.key)
        if current is None:
            return "the pod is gone"
        bound_to = (current.get("spec") or {}).get("nodeName")
        if bound_to:
            return "" if bound_to == binding.node else f"already bound to {bound_to}"
        return None


def _annotations(binding: Binding) -> dict[str, str]:
    """What the Binding writes onto the pod with its node: the GPU indices it holds."""
    return {GPU_IDS_ANNOTATION: ",".join(str(i) for i in binding.gpus)} if binding.gpus else {}
