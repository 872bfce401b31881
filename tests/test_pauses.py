"""The solver's collector pause: off while a call runs, put back as it was, and what the call left
moved to the oldest generation at once (no young pass walks it), or frozen and counted while the
process keeps objects frozen; nothing moved when the collector was off already."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

import pytest

from vcsat.adapters.convert.instance_file import read_snapshot
from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver import check, solve
from vcsat.solver.pauses import hold_frozen, no_gc_pauses, take_frozen

INSTANCES = Path(__file__).resolve().parent.parent / "instances"
POLICY = Policy(time_limit_s=5.0, num_workers=1)


def _young_ids() -> set[int]:
    return {id(obj) for generation in (0, 1) for obj in gc.get_objects(generation=generation)}


def _oldest_ids() -> set[int]:
    return {id(obj) for obj in gc.get_objects(generation=2)}


def _decision_objects(decision: Decision) -> list[object]:
    return [decision, decision.solver, *decision.bindings, *decision.podgroups]


def _solved(snapshot: Snapshot) -> list[object]:
    return _decision_objects(solve(snapshot, POLICY, wall=False))


def _checked(snapshot: Snapshot) -> list[object]:
    decision = solve(snapshot, POLICY, wall=False)
    gc.collect()  # the decision to the oldest generation anyway: what counts is the check's list
    violations = check(snapshot, decision, POLICY)
    return [violations]


def _paused_list(snapshot: Snapshot) -> list[object]:
    with no_gc_pauses():
        made = [[pod.name] for pod in snapshot.pods]
    return [made, *made]


CALLS: list[tuple[str, str, Callable[[Snapshot], list[object]]]] = [
    ("gang.yaml", "solve", _solved),
    ("priority.yaml", "solve", _solved),
    ("queues.yaml", "solve", _solved),
    ("gpus.yaml", "check", _checked),
    ("volumes.yaml", "a pause of its own", _paused_list),
]


@pytest.mark.parametrize(("instance", "what", "call"), CALLS, ids=[f"{i}-{w}" for i, w, _ in CALLS])
def test_what_a_paused_call_leaves_waits_in_the_oldest_generation(
    instance: str, what: str, call: Callable[[Snapshot], list[object]]
) -> None:
    snapshot = read_snapshot(INSTANCES / instance)
    assert gc.isenabled()
    made = [obj for obj in call(snapshot) if gc.is_tracked(obj)]
    assert gc.isenabled(), "the collector put back on"
    assert made, f"{what}: something tracked to look at"
    young, oldest = _young_ids(), _oldest_ids()
    assert not [obj for obj in made if id(obj) in young]
    assert all(id(obj) in oldest for obj in made)


def test_a_pause_keeps_what_the_process_froze_frozen() -> None:
    snapshot = read_snapshot(INSTANCES / "gang.yaml")
    kept = [[1], [2]]
    gc.freeze()
    try:
        decision = solve(snapshot, POLICY, wall=False)
        assert gc.get_freeze_count() > 0
        assert id(kept) not in _young_ids() | _oldest_ids(), "what the process froze is frozen still"
        assert id(decision) in _young_ids() | _oldest_ids(), "the decision itself not frozen"
    finally:
        gc.unfreeze()


def test_a_pause_with_the_collector_off_leaves_everything_where_it_is() -> None:
    snapshot = read_snapshot(INSTANCES / "gang.yaml")
    gc.disable()
    try:
        decision = solve(snapshot, POLICY, wall=False)
        assert not gc.isenabled(), "off before, off after"
        assert id(decision) in _young_ids(), "no move: nothing to keep out of passes that do not run"
    finally:
        gc.enable()


def test_nested_pauses_move_once_at_the_outer_end() -> None:
    with no_gc_pauses():
        with no_gc_pauses():
            inner = [[1], [2]]
        assert not gc.isenabled(), "still paused inside the outer pause"
        assert id(inner) in _young_ids(), "the inner end moves nothing"
    assert gc.isenabled()
    assert id(inner) in _oldest_ids()


def test_a_pause_freezes_what_it_left_and_counts_it_while_the_process_holds_frozen_objects() -> None:
    """The live scheduler's tenure says it holds frozen objects: a pause then freezes what it left
    (no young pass walks it) without unfreezing anything, and counts what it froze for the tenure."""
    assert gc.get_freeze_count() == 0
    kept = [[0]]
    gc.freeze()
    hold_frozen(True)
    try:
        with no_gc_pauses():
            made = [[1], [2]]
        assert gc.isenabled()
        assert id(made) not in _young_ids() | _oldest_ids(), "frozen at the pause's end"
        assert id(kept) not in _young_ids() | _oldest_ids(), "what was frozen stays frozen"
        frozen = take_frozen()
        assert frozen >= 3, "made and its two lists counted"
        assert frozen <= gc.get_freeze_count()
        assert take_frozen() == 0, "taken once"
    finally:
        hold_frozen(False)
        gc.unfreeze()
    with no_gc_pauses():
        again = [[3]]
    assert id(again) in _oldest_ids(), "no longer held: moved to the oldest generation again"
    assert take_frozen() == 0, "not held: nothing frozen, nothing counted"
