"""The live scheduler's tenure: survivors of a cycle frozen out of the collector's walks, the
cycle's cyclic garbage freed, and frozen garbage collected once it outgrows the margin (no leak)."""

from __future__ import annotations

import gc
import math
import weakref
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.live.gc_tenure import GROWTH, Tenure
from vcsat.solver import pauses


class _Node:
    """A tracked object that can be part of a reference cycle, with a weight of tracked objects."""

    def __init__(self, weight: int) -> None:
        self.other: _Node | None = None
        self.load = [[i] for i in range(weight)]


def _cycle(weight: int) -> _Node:
    a, b = _Node(weight), _Node(0)
    a.other, b.other = b, a
    return a


@pytest.fixture
def tenure() -> Iterator[Tenure]:
    assert gc.get_freeze_count() == 0, "nothing else in the test process keeps objects frozen"
    made = Tenure()
    try:
        yield made
    finally:
        made.release()
        gc.collect()


def _tracked_anywhere(obj: object) -> bool:
    return any(o is obj for generation in range(3) for o in gc.get_objects(generation))


def test_survivors_are_frozen_and_given_back_on_release(tenure: Tenure) -> None:
    kept = [[1], [2]]
    tenure.after_cycle()
    assert tenure.full_collections == 1, "the first time collects in full"
    assert gc.get_freeze_count() == tenure.frozen > 0
    assert not _tracked_anywhere(kept), "frozen: in no generation a collection walks"
    assert pauses._held, "the solver's pauses told: they leave the frozen objects uncounted"
    made_after = [[3]]
    tenure.after_cycle()
    assert not _tracked_anywhere(made_after)
    assert tenure.full_collections == 1, "no growth beyond the margin: no second full collection"
    tenure.release()
    assert gc.get_freeze_count() == 0
    assert not pauses._held
    assert _tracked_anywhere(kept) and _tracked_anywhere(made_after)


def test_the_cycles_own_cyclic_garbage_is_freed_before_freezing(tenure: Tenure) -> None:
    tenure.after_cycle()
    garbage = weakref.ref(_cycle(10))  # made during a cycle, unreachable by its end
    assert garbage() is not None, "a reference cycle: reference counting alone does not free it"
    tenure.after_cycle()
    assert garbage() is None


def _run(tenure: Tenure, cycles: int, weight: int) -> tuple[list[weakref.ref[_Node]], list[int]]:
    """Cycles each of which leaves a reference cycle alive at its end (frozen with it) that the
    next cycle drops, as a cycle result and its apply's callback did: garbage made of frozen objects."""
    held: _Node | None = None
    refs: list[weakref.ref[_Node]] = []
    frozen: list[int] = []
    for _ in range(cycles):
        held = _cycle(weight)
        refs.append(weakref.ref(held))
        tenure.after_cycle()
        frozen.append(tenure.frozen)
    del held
    return refs, frozen


@pytest.mark.parametrize(("growth", "cycles", "weight"), [(0.01, 12, 3_000), (0.05, 10, 20_000), (GROWTH, 6, 100_000)])
def test_frozen_garbage_is_collected_once_it_outgrows_the_margin(
    tenure: Tenure, growth: float, cycles: int, weight: int
) -> None:
    tenure.growth = growth
    tenure.after_cycle()
    floor = tenure.frozen
    refs, frozen = _run(tenure, cycles, weight)
    leaked = sum(1 for ref in refs[:-1] if ref() is not None)  # dropped, not freed yet
    assert tenure.full_collections >= 2, "the frozen garbage made a full collection due"
    # What is frozen stays within the margin over the live set (plus one cycle's worth).
    assert max(frozen) <= (1 + growth) * floor + 2 * (weight + 8)
    assert leaked <= math.ceil(growth * floor / weight) + 1


def test_a_freeze_without_a_full_collection_would_leak(tenure: Tenure) -> None:
    """The check above can fail: with no full collection (no margin), every dropped cycle stays."""
    tenure.growth = math.inf
    tenure.after_cycle()
    refs, frozen = _run(tenure, 20, 2_000)
    assert sum(1 for ref in refs[:-1] if ref() is not None) == 19
    assert frozen[-1] - frozen[0] >= 19 * 2_000
    tenure.release()
    gc.collect()
    assert all(ref() is None for ref in refs), "unfrozen, a full collection frees them all"


@settings(max_examples=5, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5_000)), min_size=1, max_size=10))
def test_frozen_garbage_stays_within_the_margin(schedule: list[tuple[int, int]]) -> None:
    """Any schedule of cycles, each leaving some reference cycles of some weight alive at its end that
    the next drops: after every cycle, the dropped cycles not freed yet weigh at most the margin over
    the frozen objects at the last full collection, plus one cycle's worth."""
    assert gc.get_freeze_count() == 0
    tenure = Tenure(growth=0.01)
    dropped: list[tuple[weakref.ref[_Node], int]] = []
    try:
        tenure.after_cycle()
        at_full, fulls = tenure.frozen, tenure.full_collections
        held: list[_Node] = []
        held_weight = 0
        for cycles, weight in schedule:
            # Dropped with the weight they were made with (the cycle before's, not this one's).
            dropped += [(weakref.ref(node), held_weight) for node in held]
            held, held_weight = [_cycle(weight) for _ in range(cycles)], weight
            tenure.after_cycle()
            if tenure.full_collections > fulls:
                at_full, fulls = tenure.frozen, tenure.full_collections
            leaked = sum(weight + 8 for ref, weight in dropped if ref() is not None)
            assert leaked <= tenure.growth * at_full + 3 * (5_000 + 8)
        del held
    finally:
        tenure.release()
        gc.collect()


def test_what_a_pause_froze_counts_toward_the_margin(tenure: Tenure) -> None:
    """While the tenure holds objects frozen, a solver's pause freezes what it left at its end: a
    reference cycle made then and dropped by the next cycle is frozen garbage, and the tenure's
    bound must count it, or no full collection would ever free it."""
    tenure.growth = 0.01
    tenure.after_cycle()
    floor = tenure.frozen
    weight = 20_000
    refs: list[weakref.ref[_Node]] = []
    held: _Node | None = None
    for _ in range(10):
        with pauses.no_gc_pauses():
            held = _cycle(weight)
        assert not _tracked_anywhere(held), "frozen at the pause's end"
        refs.append(weakref.ref(held))
        tenure.after_cycle()
    del held
    assert tenure.full_collections >= 2, "what the pauses froze made a full collection due"
    leaked = sum(1 for ref in refs[:-1] if ref() is not None)
    assert leaked <= math.ceil(tenure.growth * floor / weight) + 1
