"""Job order in admission (``_State.order``) by a queue's place as an int, against the tuples it replaced.

The order was ``(-queue priority, served share, queue, -group priority, created, key)``, the share a
Fraction compared in Python for every pair of groups from two queues of one priority. The queue's
part is now one int per queue (``_State.queue_place``), queues without a share (a queue the group
names that has none) fitted between those with one: every list of groups must sort as before.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import PodGroup
from vcsat.solver.admission_static import Placeable
from vcsat.solver.enqueue import _NOTHING_SERVED, _State

Rank = dict[str, tuple[int, Fraction, str]]


def _state(queue_rank: Rank) -> _State:
    fields: dict[str, Any] = {
        "snapshot": None,
        "policy": None,
        "tree": None,
        "need": {},
        "held": {},
        "committed": {},
        "reserved": {},
        "allocatable": {},
        "idle": {},
        "allowed": {},
        "queue_rank": queue_rank,
        "placeable": Placeable(()),  # a real one: compiled, the field's type is checked
    }
    return _State(**fields)


def _plain(queue_rank: Rank, group: PodGroup) -> tuple[int, Fraction, str, int, float, str]:
    """The key as it was: the queue's tuple, the default for a queue without a share."""
    found = queue_rank.get(group.queue)
    queue_priority, share, queue = found if found is not None else (0, _NOTHING_SERVED, group.queue)
    return (-queue_priority, share, queue, -group.priority, group.created, group.key)


def _group(name: str, queue: str, priority: int, created: float) -> PodGroup:
    return PodGroup(namespace="ns", name=name, queue=queue, priority=priority, created=created)


def _same_order(queue_rank: Rank, groups: list[PodGroup]) -> None:
    state = _state(queue_rank)
    got = [g.key for g in sorted(groups, key=state.order)]
    want = [g.key for g in sorted(groups, key=lambda g: _plain(queue_rank, g))]
    assert got == want


CASES: list[tuple[Rank, list[tuple[str, int, float]]]] = [
    # queue_rank; groups as (queue, priority, created)
    ({}, [("b", 0, 1.0), ("a", 0, 2.0), ("a", 1, 3.0)]),
    (
        {"a": (0, Fraction(1, 2), "a"), "b": (0, Fraction(1, 3), "b")},
        [("a", 0, 1.0), ("b", 0, 2.0), ("a", 5, 0.0), ("b", -1, 0.0)],
    ),
    # A higher spec.priority first, whatever the share.
    ({"a": (0, Fraction(0), "a"), "b": (3, Fraction(9), "b")}, [("a", 0, 0.0), ("b", 0, 1.0)]),
    # Queues without a share (0, 0, name) before, between and after those with one, two in one gap.
    (
        {"m": (0, Fraction(0), "m"), "p": (0, Fraction(1, 5), "p"), "z": (-1, Fraction(0), "z")},
        [("a", 0, 0.0), ("n", 0, 0.0), ("o", 2, 1.0), ("m", 0, 0.0), ("zz", 0, 0.0), ("p", 0, 0.0), ("z", 0, 0.0)],
    ),
    # Equal shares: the name decides.
    ({"x": (1, Fraction(2, 3), "x"), "w": (1, Fraction(2, 3), "w")}, [("x", 0, 0.0), ("w", 0, 0.0)]),
]


@pytest.mark.parametrize(("queue_rank", "groups"), CASES)
def test_groups_sort_as_by_the_tuples(queue_rank: Rank, groups: list[tuple[str, int, float]]) -> None:
    _same_order(queue_rank, [_group(f"g{i}", q, p, c) for i, (q, p, c) in enumerate(groups)])


def test_a_queue_with_a_share_gets_an_even_place_one_without_the_odd_place_before_its_successor() -> None:
    state = _state({"b": (0, Fraction(0), "b"), "d": (0, Fraction(0), "d"), "f": (0, Fraction(1), "f")})
    assert [state.queue_place(q) for q in ("a", "b", "c", "d", "e", "f", "g")] == [-1, 0, 1, 2, 3, 4, 3]


_names = st.sampled_from(["a", "b", "c", "d", "e", "f"])


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        _names,
        st.tuples(st.integers(-2, 2), st.fractions(min_value=0, max_value=3, max_denominator=7)),
        max_size=5,
    ),
    st.lists(st.tuples(_names, st.integers(-2, 2), st.sampled_from([0.0, 1.0, 2.5])), max_size=25),
)
def test_any_queues_and_groups_sort_as_by_the_tuples(
    ranks: dict[str, tuple[int, Fraction]], groups: list[tuple[str, int, float]]
) -> None:
    queue_rank = {name: (priority, share, name) for name, (priority, share) in ranks.items()}
    _same_order(queue_rank, [_group(f"g{i}", q, p, c) for i, (q, p, c) in enumerate(groups)])
