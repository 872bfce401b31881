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


def _queue(kube: Kube, name: str, parent: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": 1}
    if parent:
        spec["parent"] = parent
    made: dict[str, Any] = kube.post(
        QUEUES.path(), {"apiVersion": QUEUES.api_version, "kind": "Queue", "metadata": {"name": name}, "spec": spec}
    )
    return made


def _closed_by_parent(kube: Kube, name: str) -> str | None:
    annotations = kube.get(QUEUES.path(None, name))["metadata"].get("annotations") or {}
    return annotations.get("volcano.sh/closed-by-parent")


def test_sub_queues_follow_their_parent(kube: Kube, k8s_client: Any) -> None:
    tag = uuid.uuid4().hex[:6]
    parent = _queue(kube, f"p-{tag}")
    child = _queue(kube, f"c-{tag}", parent=f"p-{tag}")
    own = _queue(kube, f"o-{tag}", parent=f"p-{tag}")
    names = [f"p-{tag}", f"c-{tag}", f"o-{tag}"]
    with running_controller(k8s_client, "default", "vcsat"):
        # A child closed on its own stays closed when the parent reopens.
        _command(kube, own, "CloseQueue")
        wait_until(lambda: _state(kube, f"o-{tag}") == "Closed", "the child closed by hand")

        _command(kube, parent, "CloseQueue")
        wait_until(lambda: _state(kube, f"c-{tag}") == "Closed", "the open child closed with its parent")
        assert _state(kube, f"p-{tag}") == "Closed" and _closed_by_parent(kube, f"c-{tag}") == "true"
        assert _closed_by_parent(kube, f"o-{tag}") is None

        # A child cannot open under a closed parent; the command is consumed, nothing changes.
        _command(kube, child, "OpenQueue")

        def consumed() -> bool:
            items = kube.get(COMMANDS.path(QUEUE_COMMAND_NAMESPACE))["items"]
            return not [c for c in items if c["target"]["name"] in names]

        wait_until(consumed, "the refused command is consumed")
        assert _state(kube, f"c-{tag}") == "Closed"

        # A child made under the closed parent is closed on the next resync.
        _queue(kube, f"n-{tag}", parent=f"p-{tag}")
        names.append(f"n-{tag}")
        wait_until(lambda: _state(kube, f"n-{tag}") == "Closed", "a new child of a closed parent is closed")

        _command(kube, parent, "OpenQueue")
        wait_until(lambda: _state(kube, f"c-{tag}") == "Open", "the child reopened with its parent")
        assert _state(kube, f"p-{tag}") == "Open" and _closed_by_parent(kube, f"c-{tag}") == "false"
        wait_until(lambda: _state(kube, f"n-{tag}") == "Open", "the new child reopened too")
        assert _state(kube, f"o-{tag}") == "Closed"
    for name in names:
        kube.delete(QUEUES.path(None, name))
