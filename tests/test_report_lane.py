"""The applier's report lane: report writes go one at a time while bindings are queued, all at once after."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest

from vcsat.adapters.kube.report_lane import ReportLane

GUARD_S = 60.0
"""Only a guard against a hang (a broken lane would otherwise deadlock the test), never a measurement."""


def _until(condition: object, what: str) -> None:
    deadline = time.monotonic() + GUARD_S
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.005)


class _Writes:
    """Report writes that each hold until released, noting which are under way together."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: set[str] = set()
        self.together = 0
        self.release = {name: threading.Event() for name in "abcdef"}

    def write(self, name: str) -> str:
        with self.lock:
            self.running.add(name)
            self.together = max(self.together, len(self.running))
        assert self.release[name].wait(GUARD_S)
        with self.lock:
            self.running.discard(name)
        return name


@pytest.mark.parametrize("busy_workers", [1, 2])
def test_writes_yield_to_bindings_then_run_together(busy_workers: int) -> None:
    lane = ReportLane(4, busy_workers=busy_workers)
    writes = _Writes()
    binding: Future[object] = Future()
    lane.binding_queued(binding)
    try:
        futures = [lane.submit(writes.write, name) for name in "abc"]
        held = 3 - busy_workers
        _until(lambda: len(writes.running) == busy_workers and lane.waiting() == held, "writes held back")
        assert writes.together == busy_workers
        # An admission does not wait for the bindings.
        assert lane.submit_urgent(lambda: "urgent").result(GUARD_S) == "urgent"
        assert lane.bindings() == 1 and lane.waiting() == held
        binding.set_result(None)  # the binding is answered: the held writes go at once, together
        _until(lambda: len(writes.running) == 3, "all three writes under way")
        assert lane.bindings() == 0 and lane.waiting() == 0
        for event in writes.release.values():
            event.set()
        assert [future.result(GUARD_S) for future in futures] == ["a", "b", "c"]
        assert writes.together == 3
    finally:
        for event in writes.release.values():
            event.set()
        lane.shutdown()


def test_without_bindings_writes_run_on_every_thread() -> None:
    lane = ReportLane(3)
    writes = _Writes()
    try:
        futures = [lane.submit(writes.write, name) for name in "abc"]
        _until(lambda: len(writes.running) == 3, "three writes under way")
        assert lane.waiting() == 0
    finally:
        for event in writes.release.values():
            event.set()
        lane.shutdown()
    assert sorted(future.result() for future in futures) == ["a", "b", "c"]


@pytest.mark.parametrize("ending", ["result", "exception", "cancel"])
def test_a_binding_counts_until_it_ends_however_it_ends(ending: str) -> None:
    lane = ReportLane(2)
    first: Future[object] = Future()
    second: Future[object] = Future()
    lane.binding_queued(first)
    lane.binding_queued(second)
    try:
        assert lane.bindings() == 2
        first.set_result(None)
        assert lane.bindings() == 1
        if ending == "result":
            second.set_result(None)
        elif ending == "exception":
            second.set_exception(RuntimeError("no answer"))
        else:
            assert second.cancel()
        assert lane.bindings() == 0
    finally:
        lane.shutdown()
