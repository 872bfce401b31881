"""Nothing silent, live: a PodGroup naming a queue that does not exist, a pod naming a PodGroup that
does not exist, and a node whose ``vcsat.io/gpu-topology`` is invalid each get a Warning Event on
the object and one log line (when first seen, not every cycle); the PodGroup's status and the pods'
``PodScheduled`` condition say why they wait."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from scheduler_support import Bubble, wait_cached

from vcsat.adapters.kube.client import NODES, PODS
from vcsat.adapters.live.scheduler import Scheduler

BAD_TOPOLOGY = json.dumps({"nodes": [{"id": "g0", "kind": "gpu"}], "edges": []})


def _events(bubble: Bubble, namespace: str, name: str) -> list[dict[str, Any]]:
    items = bubble.kube.get(f"/api/v1/namespaces/{namespace}/events")["items"]
    return [e for e in items if e["involvedObject"]["name"] == name]


def _pod_scheduled(bubble: Bubble, name: str) -> dict[str, Any] | None:
    pod = bubble.kube.get(PODS.path(bubble.namespace, name))
    return next((c for c in pod["status"].get("conditions") or () if c["type"] == "PodScheduled"), None)


def test_missing_queue_missing_podgroup_and_bad_topology_are_said(
    bubble: Bubble, caplog: pytest.LogCaptureFixture
) -> None:
    node = bubble.node("n", cpu="8", gpus=2)
    bubble.kube.patch(NODES.path(name=node), {"metadata": {"annotations": {"vcsat.io/gpu-topology": BAD_TOPOLOGY}}})
    queue = f"nope-{bubble.tag}"
    bubble.podgroup("pg", 1, queue=queue)
    bubble.pod("member", group="pg")
    bubble.pod("orphan", group="missing")
    bubble.pod("fine")
    scheduler = Scheduler(bubble.kube, policy=bubble.policy())
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=["member", "orphan", "fine"], podgroups=["pg"])
        with caplog.at_level(logging.WARNING):
            results = [scheduler.run_cycle() for _ in range(3)]
    finally:
        scheduler.close()

    first = results[0]
    assert [b.pod for b in first.decision.bindings] == [f"{bubble.namespace}/fine"]
    reasons = {o.podgroup: o.reason for o in first.decision.podgroups}
    assert reasons[f"{bubble.namespace}/pg"] == "QueueNotFound"
    assert reasons[f"{bubble.namespace}/missing"] == "PodGroupNotFound"

    # One log line each, when first seen: three cycles, three lines.
    lines = [r for r in caplog.records if r.getMessage().startswith("input problem")]
    reasons_logged = sorted(getattr(r, "reason", "") for r in lines)
    assert reasons_logged == ["InvalidGpuTopology", "PodGroupNotFound", "QueueNotFound"]

    # A Warning Event on each object, written once (later cycles only count it, within the refresh window).
    for namespace, name, reason in (
        (bubble.namespace, "pg", "QueueNotFound"),
        (bubble.namespace, "orphan", "PodGroupNotFound"),
        ("default", node, "InvalidGpuTopology"),
    ):
        events = [e for e in _events(bubble, namespace, name) if e["reason"] == reason]
        assert len(events) == 1, (name, reason, events)
        assert events[0]["type"] == "Warning"
    assert "uniformly connected" in next(
        e["message"] for e in _events(bubble, "default", node) if e["reason"] == "InvalidGpuTopology"
    )

    # The PodGroup's status and the waiting pods' condition say why.
    conditions = bubble.get_podgroup("pg")["status"]["conditions"]
    assert any(c["reason"] == "QueueNotFound" and queue in c["message"] for c in conditions)
    orphan = _pod_scheduled(bubble, "orphan")
    assert orphan is not None and "PodGroupNotFound" in orphan["message"]


def test_a_sub_group_policy_is_said_not_enforced(bubble: Bubble) -> None:
    """Volcano's ``spec.subGroupPolicy`` is kept but not enforced: the gang is placed whole, and a
    Warning Event on the PodGroup names the field, once."""
    bubble.node("n", cpu="8")
    policy = [{"name": "ring", "subGroupSize": 2, "minSubGroups": 1, "matchLabelKeys": ["volcano.sh/partition-id"]}]
    bubble.podgroup("sub", 2, subGroupPolicy=policy)
    bubble.pod("sub-0", group="sub")
    bubble.pod("sub-1", group="sub")
    bubble.podgroup("plain", 1)
    bubble.pod("plain-0", group="plain")
    scheduler = Scheduler(bubble.kube, policy=bubble.policy())
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=["sub-0", "sub-1", "plain-0"], podgroups=["sub", "plain"])
        first = scheduler.run_cycle()
        scheduler.run_cycle()
    finally:
        scheduler.close()
    assert sorted(b.pod for b in first.decision.bindings) == [
        f"{bubble.namespace}/{name}" for name in ("plain-0", "sub-0", "sub-1")
    ]
    said = [e for e in _events(bubble, bubble.namespace, "sub") if e["reason"] == "SubGroupPolicyIgnored"]
    assert len(said) == 1 and said[0]["type"] == "Warning"
    assert "spec.subGroupPolicy (ring)" in said[0]["message"] and "not enforced" in said[0]["message"]
    assert not [e for e in _events(bubble, bubble.namespace, "plain") if e["reason"] == "SubGroupPolicyIgnored"]
    assert bubble.get_podgroup("sub")["spec"]["subGroupPolicy"] == policy
