"""A Queue's state as Volcano's queue controller moves it (adapters/controller/queue_states.py), and
what the scheduler's converter makes of each state."""

from __future__ import annotations

import pytest

from vcsat.adapters.controller.queue_states import next_state

CASES = [
    # (current, action, PodGroups it holds, next)
    ("Open", "CloseQueue", 0, "Closed"),
    ("Open", "CloseQueue", 2, "Closing"),
    ("", "CloseQueue", 1, "Closing"),
    ("Closing", "CloseQueue", 1, "Closing"),
    ("Closing", "CloseQueue", 0, "Closed"),
    ("Closed", "CloseQueue", 3, "Closed"),
    ("Closing", "OpenQueue", 1, "Open"),
    ("Closed", "OpenQueue", 0, "Open"),
    ("Open", "OpenQueue", 0, "Open"),
    ("Closing", None, 1, "Closing"),
    ("Closing", None, 0, "Closed"),
    ("Closed", None, 2, "Closed"),
    ("Open", None, 0, "Open"),
    ("", None, 0, "Open"),
    ("Unknown", None, 0, "Unknown"),
]


@pytest.mark.parametrize(("current", "action", "held", "expected"), CASES)
def test_next_state(current: str, action: str | None, held: int, expected: str) -> None:
    assert next_state(current, action, held) == expected


@pytest.mark.parametrize(("state", "admits"), [("Open", True), ("", True), ("Closing", False), ("Closed", False)])
def test_only_an_open_queue_admits_work(state: str, admits: bool) -> None:
    from vcsat.adapters.convert.snapshot import snapshot_from_objects

    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": {"weight": 1},
        "status": {"state": state} if state else {},
    }
    snapshot = snapshot_from_objects([queue], scheduler_name="vcsat", strict=False, source="test")
    assert snapshot.queue_by_name["q"].open is admits
