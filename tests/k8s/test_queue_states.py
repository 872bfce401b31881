"""Queue states on the real API server, as Volcano moves them: a queue closed while it still holds
PodGroups is Closing, admits no new PodGroup (the scheduler leaves it waiting with QueueClosed),
and becomes Closed once its last PodGroup is gone; OpenQueue opens it from either state.

Commands are created as Volcano's vcctl makes them and handled by vcsat's controller (watching
``default``, where vcctl puts Queue commands); the scheduler is the real one, for one cycle.
"""

from __future__ import annotations

import uuid
from typing import Any

from controller_harness import running_controller
from scheduler_support import Bubble, wait_cached, wait_until

from vcsat.adapters.controller.commands import COMMANDS, QUEUE_COMMAND_NAMESPACE, QUEUES, command_body
from vcsat.adapters.kube.client import PODGROUPS, Kube
from vcsat.adapters.live.scheduler import Scheduler


def _command(kube: Kube, queue: dict[str, Any], action: str) -> None:
    queue = {**queue, "apiVersion": QUEUES.api_version, "kind": "Queue"}
    kube.post(COMMANDS.path(QUEUE_COMMAND_NAMESPACE), command_body(queue, action, namespace=QUEUE_COMMAND_NAMESPACE))


def _state(kube: Kube, name: str) -> str:
    return str((kube.get(QUEUES.path(None, name)).get("status") or {}).get("state") or "")


def test_close_goes_closing_then_closed_when_empty(bubble: Bubble, kube: Kube, k8s_client: Any) -> None:
    name = f"q-{uuid.uuid4().hex[:8]}"
    queue = kube.post(
        QUEUES.path(),
        {"apiVersion": QUEUES.api_version, "kind": "Queue", "metadata": {"name": name}, "spec": {"weight": 1}},
    )
    bubble.node("n", cpu="8")
    bubble.podgroup("early", 1, queue=name)
    with running_controller(k8s_client, "default", "vcsat"):
        _command(kube, queue, "CloseQueue")
        wait_until(lambda: _state(kube, name) == "Closing", "the queue is Closing (it holds a PodGroup)")

        # Closing admits nothing new: a PodGroup created now waits with QueueClosed.
        bubble.podgroup("late", 1, queue=name)
        bubble.pod("late-0", group="late")
        scheduler = Scheduler(bubble.kube, policy=bubble.policy())
        scheduler.start()
        try:
            wait_cached(scheduler, bubble.namespace, pods=["late-0"], podgroups=["early", "late"])
            result = scheduler.run_cycle()
        finally:
            scheduler.close()
        reasons = {o.podgroup: o.reason for o in result.decision.podgroups}
        assert reasons[f"{bubble.namespace}/late"] == "QueueClosed"
        assert not result.decision.bindings
        late = kube.get(PODGROUPS.path(bubble.namespace, "late"))
        assert (late.get("status") or {}).get("phase") != "Inqueue"

        # The last PodGroup gone: Closed.
        kube.delete(PODGROUPS.path(bubble.namespace, "late"))
        assert _state(kube, name) == "Closing"  # one left
        kube.delete(PODGROUPS.path(bubble.namespace, "early"))
        wait_until(lambda: _state(kube, name) == "Closed", "the queue is Closed once empty")

        _command(kube, queue, "OpenQueue")
        wait_until(lambda: _state(kube, name) == "Open", "the queue is Open again")
        # Empty, a close is immediate.
        _command(kube, queue, "CloseQueue")
        wait_until(lambda: _state(kube, name) == "Closed", "the empty queue closes at once")

        def pending() -> list[Any]:
            items = kube.get(COMMANDS.path(QUEUE_COMMAND_NAMESPACE))["items"]
            return [c for c in items if c["target"]["name"] == name]

        wait_until(lambda: not pending(), "the queue's Commands are consumed")
    kube.delete(QUEUES.path(None, name))
