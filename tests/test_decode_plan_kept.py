"""The decode keeps whole-GPU plans by their arguments: a kept plan is the plan computed afresh.

:func:`vcsat.solver.placement.decode._plan` answers :func:`plan_node` for nodes that get whole-GPU
pods alone; many nodes of a cycle ask it the same question, so the answers are kept. Kept or not,
the GPU indices must be those :func:`plan_node` chooses, on uniform and preset interconnects, with
and without GPUs already holding shares.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model.gpu_topology import GpuTopology, preset, preset_names, uniform_topology
from vcsat.solver.placement.decode import _plan
from vcsat.solver.placement.gpu_choice import plan_node


def _topologies() -> list[GpuTopology]:
    return [uniform_topology(4), uniform_topology(8), *(preset(name) for name in preset_names())]


@pytest.mark.parametrize(
    ("free", "counts", "shared"),
    [
        ((0, 1, 2, 3, 4, 5, 6, 7), (4, 2), ()),
        ((1, 2, 5, 6), (2, 1), ()),
        ((0, 3), (1,), ((1, 500),)),
        ((), (), ()),
    ],
)
def test_table(free: tuple[int, ...], counts: tuple[int, ...], shared: tuple[tuple[int, int], ...]) -> None:
    for topology in _topologies():
        fits = tuple(i for i in free if i < topology.gpu_count)
        wanted = counts if sum(counts) <= len(fits) else ()
        expected = plan_node(topology, fits, wanted, shared=dict(shared))
        assert _plan(topology, fits, wanted, shared) == expected
        assert _plan(topology, fits, wanted, shared) == expected  # kept: the same answer again


@settings(max_examples=200, deadline=None)
@given(data=st.data(), which=st.integers(0, 100))
def test_a_kept_plan_is_the_fresh_plan(data: st.DataObject, which: int) -> None:
    topologies = _topologies()
    topology = topologies[which % len(topologies)]
    free = data.draw(st.sets(st.integers(0, topology.gpu_count - 1)))
    counts = data.draw(st.lists(st.integers(1, 4), max_size=4))
    while sum(counts) > len(free):
        counts.pop()
    held = data.draw(st.dictionaries(st.integers(0, topology.gpu_count - 1), st.integers(1, 1000), max_size=2))
    shared = tuple((gpu, milli) for gpu, milli in held.items() if gpu not in free)
    order = data.draw(st.permutations(sorted(free)))
    expected = plan_node(topology, order, counts, shared=dict(shared))
    assert _plan(topology, tuple(order), tuple(counts), shared) == expected
    assert _plan(topology, tuple(sorted(free)), tuple(counts), shared).whole == expected.whole
