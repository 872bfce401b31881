"""Scheduling gates and DRA claims, live: a gated pod is not bound, says ``SchedulingGated`` (its
PodGroup's condition and its own ``PodScheduled``, as kube-scheduler marks it, so cluster-autoscaler
does not scale up for it) and binds once the gates are removed; a pod with ``spec.resourceClaims``
is never bound as if it claimed nothing."""

from __future__ import annotations

from typing import Any

from scheduler_support import BUBBLE_LABEL, Bubble, wait_cached, wait_until

from vcsat.adapters.kube.client import PODS
from vcsat.adapters.live.scheduler import Scheduler


def _pod(bubble: Bubble, name: str, group: str | None = None, **spec: Any) -> None:
    metadata: dict[str, Any] = {"name": name, "namespace": bubble.namespace}
    if group is not None:
        metadata["annotations"] = {"scheduling.k8s.io/group-name": group}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulerName": bubble.scheduler_name,
            "nodeSelector": {BUBBLE_LABEL: bubble.tag},
            "containers": [
                {"name": "main", "image": "registry.invalid/app:1", "resources": {"requests": {"cpu": "1"}}}
            ],
            **spec,
        },
    }
    bubble.kube.post(PODS.path(bubble.namespace), body)


def _pod_scheduled(bubble: Bubble, name: str) -> dict[str, Any] | None:
    pod = bubble.kube.get(PODS.path(bubble.namespace, name))
    return next((c for c in pod["status"].get("conditions") or () if c["type"] == "PodScheduled"), None)


def test_a_gated_gang_waits_says_so_and_binds_when_ungated(bubble: Bubble) -> None:
    bubble.node("n", cpu="8")
    bubble.podgroup("g", 2)
    _pod(bubble, "g-0", group="g")
    _pod(bubble, "g-1", group="g", schedulingGates=[{"name": "example.com/hold"}])
    scheduler = Scheduler(bubble.kube, policy=bubble.policy())
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=["g-0", "g-1"], podgroups=["g"])
        for _ in range(2):
            result = scheduler.run_cycle()
            assert result.decision.bindings == []
        outcome = next(o for o in result.decision.podgroups if o.podgroup == f"{bubble.namespace}/g")
        assert outcome.reason == "SchedulingGated" and "example.com/hold" in outcome.message
        gated = _pod_scheduled(bubble, "g-1")
        assert gated is not None and (gated["status"], gated["reason"]) == ("False", "SchedulingGated")
        conditions = bubble.get_podgroup("g")["status"]["conditions"]
        assert any(c["reason"] == "SchedulingGated" for c in conditions)

        # The gate goes (gates may only be removed): the gang binds.
        bubble.kube.patch(PODS.path(bubble.namespace, "g-1"), {"spec": {"schedulingGates": None}})
        wait_until(
            lambda: (
                not ((scheduler.store.get("Pod", f"{bubble.namespace}/g-1") or {}).get("spec") or {}).get(
                    "schedulingGates"
                )
            ),
            "the cache sees the gate removed",
        )
        scheduler.run_cycle()
        assert all(bubble.placement().values())
    finally:
        scheduler.close()


def test_a_pod_with_resource_claims_is_not_bound(bubble: Bubble) -> None:
    bubble.node("n", cpu="8")
    _pod(bubble, "dra", resourceClaims=[{"name": "gpu", "resourceClaimName": "some-claim"}])
    _pod(bubble, "plain")
    scheduler = Scheduler(bubble.kube, policy=bubble.policy())
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=["dra", "plain"])
        result = scheduler.run_cycle()
    finally:
        scheduler.close()
    assert [b.pod for b in result.decision.bindings] == [f"{bubble.namespace}/plain"]
    outcome = next(o for o in result.decision.podgroups if o.podgroup == f"{bubble.namespace}/dra")
    assert outcome.reason == "Unschedulable" and "resourceClaims" in outcome.message
    assert bubble.placement()["dra"] is None
