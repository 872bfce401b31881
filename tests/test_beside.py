"""Work run beside the cycle in a forked child: the same result as run here, an error raised as
run here, serial when asked or when it cannot fork safely."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.solver import beside
from vcsat.solver.beside import Beside, may_fork

WORKS: list[tuple[str, Callable[[], object]]] = [
    ("nothing", lambda: None),
    ("an int", lambda: 7),
    ("a list", lambda: [("a", 1), ("b", 2)]),
    ("a big result", lambda: list(range(300_000))),
    ("a frozenset", lambda: frozenset({"ns/a", "ns/b"})),
]


@pytest.mark.parametrize("work", [w for _, w in WORKS], ids=[n for n, _ in WORKS])
def test_forked_and_serial_results_are_equal(work: Callable[[], object]) -> None:
    forked, serial = Beside(work, fork=True), Beside(work, fork=False)
    assert forked.forked and not serial.forked
    assert forked.result() == serial.result() == work()
    assert forked.result() == work()  # asked again: the same, the child long gone
    assert forked.cost is not None and forked.cost.cpu >= 0 and serial.cost is None


@settings(max_examples=25)
@given(st.lists(st.tuples(st.text(max_size=5), st.integers())))
def test_any_picklable_result_comes_back_whole(items: list[tuple[str, int]]) -> None:
    assert Beside(lambda: dict(items), fork=True).result() == dict(items)


@pytest.mark.parametrize("fork", [True, False])
def test_an_error_surfaces_as_in_serial(fork: bool) -> None:
    def failing() -> int:
        raise ValueError("bad input: pod ns/a")

    work = Beside(failing, fork=fork)
    with pytest.raises(ValueError, match="bad input: pod ns/a"):
        work.result()


def test_a_child_that_dies_leaves_the_work_to_this_process() -> None:
    parent = os.getpid()

    def dies_in_the_child() -> str:
        if os.getpid() != parent:
            os._exit(3)
        return "done here"

    work = Beside(dies_in_the_child, fork=True)
    assert work.result() == "done here"
    assert work.cost is not None


def test_a_result_that_cannot_be_pickled_is_made_here() -> None:
    work = Beside(lambda: lambda: 5, fork=True)
    assert work.result()() == 5


def test_the_work_runs_here_only_when_asked_for() -> None:
    ran: list[int] = []
    work = Beside(lambda: ran.append(1), fork=False)
    assert ran == []
    work.result()
    work.result()
    assert ran == [1]


def test_a_child_no_longer_wanted_is_stopped_and_reaped() -> None:
    work = Beside(lambda: threading.Event().wait(60), fork=True)
    pid = work._pid
    assert pid > 0
    work.close()
    with pytest.raises(ChildProcessError):  # reaped: no longer this process's child
        os.waitpid(pid, os.WNOHANG)


def test_serial_when_asked_on_one_core_or_beside_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(beside, "cores", lambda: 2)
    monkeypatch.delenv(beside.SERIAL_ENV, raising=False)
    assert may_fork() is (threading.active_count() == 1)
    monkeypatch.setenv(beside.SERIAL_ENV, "1")
    assert not may_fork()
    monkeypatch.setenv(beside.SERIAL_ENV, "0")
    assert may_fork() is (threading.active_count() == 1)
    monkeypatch.setattr(beside, "cores", lambda: 1)
    assert not may_fork()
    monkeypatch.setattr(beside, "cores", lambda: 4)
    stop = threading.Event()
    watcher = threading.Thread(target=stop.wait)
    watcher.start()
    try:
        assert not may_fork()
        assert not Beside(lambda: 1).forked
    finally:
        stop.set()
        watcher.join()
