"""The live scheduler's clock of the cyclic garbage collector counts collections while started, by
generation, and nothing once stopped."""

from __future__ import annotations

import gc

import pytest

from vcsat.adapters.live.gc_clock import GcClock


@pytest.mark.parametrize("generation", [0, 1, 2])
def test_a_collection_is_counted_in_its_generation_only_while_started(generation: int) -> None:
    clock = GcClock()
    gc.collect(generation)
    assert clock.totals() == {"collections": [0, 0, 0], "cpu_seconds": 0.0}, "not started: nothing counted"
    clock.start()
    try:
        before = clock.totals()["collections"]
        gc.collect(generation)
        after = clock.totals()
    finally:
        clock.stop()
    assert after["collections"][generation] >= before[generation] + 1
    assert after["cpu_seconds"] >= 0.0
    gc.collect(generation)
    assert clock.totals() == after, "stopped: nothing counted"
    assert clock._callback not in gc.callbacks
