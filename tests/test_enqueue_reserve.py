"""Admission's bookkeeping of an admitted group (``_State.reserve``) added in place, against the plain sums.

``reserve`` adds the part of a group's need its pods do not hold to what each queue of its lineage
commits and to what the cluster reserves, in place. The plain way (what it replaced) made the
difference ``need - min(need, held)`` with ``res.sub`` and added it into copies with ``res.add``:
the values and the keys' order must be those, whatever the vectors hold.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import PodGroup
from vcsat.model import resources as res
from vcsat.solver.admission_static import Placeable
from vcsat.solver.enqueue import _State


def _plain(
    committed: dict[str, dict[str, int]],
    reserved: dict[str, int],
    lineage: tuple[str, ...],
    need: dict[str, int],
    held: dict[str, int],
) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """The sums as made before: the difference with ``res.sub``, added into copies with ``res.add``."""
    committed = {queue: dict(vector) for queue, vector in committed.items()}
    before = {name: min(amount, held.get(name, 0)) for name, amount in need.items()}
    delta = res.sub(need, before)
    for queue in lineage:
        committed[queue] = res.add(committed.get(queue, {}), delta)
    reserved = res.add(reserved, {name: max(0, amount - held.get(name, 0)) for name, amount in need.items()})
    return committed, reserved


def _state(
    committed: dict[str, dict[str, int]],
    reserved: dict[str, int],
    lineage: tuple[str, ...],
    need: dict[str, int],
    held: dict[str, int],
) -> tuple[_State, PodGroup]:
    group = PodGroup(namespace="ns", name="g", queue=lineage[0])
    fields: dict[str, Any] = {
        "snapshot": None,
        "policy": None,
        "tree": None,
        "need": {group.key: need},
        "held": {group.key: held},
        "committed": {queue: dict(vector) for queue, vector in committed.items()},
        "reserved": dict(reserved),
        "allocatable": {},
        "idle": {},
        "allowed": {},
        "queue_rank": {},
        "placeable": Placeable(()),  # a real one: compiled, the field's type is checked
        "lineages": {lineage[0]: lineage},
    }
    return _State(**fields), group


def _same(state: _State, plain: tuple[dict[str, dict[str, int]], dict[str, int]]) -> None:
    committed, reserved = plain
    # Equal, and the keys met in the same order (what later sums and messages walk).
    assert [(q, list(v.items())) for q, v in state.committed.items()] == [
        (q, list(v.items())) for q, v in committed.items()
    ]
    assert list(state.reserved.items()) == list(reserved.items())


CASES = [
    # committed, reserved, lineage, need, held
    ({}, {}, ("q",), {"cpu": 4, "nvidia.com/gpu": 2}, {}),
    ({"q": {"cpu": 1}}, {"cpu": 3}, ("q",), {"cpu": 4, "nvidia.com/gpu": 2}, {"cpu": 1}),
    ({"q": {"memory": 5}, "root": {"cpu": 2}}, {}, ("q", "root"), {"cpu": 4, "memory": 2}, {"cpu": 9}),
    ({}, {"pods": 1}, ("child", "parent", "root"), {"pods": 3}, {"pods": 3}),
    ({"q": {}}, {}, ("q",), {}, {"cpu": 2}),
    ({}, {}, ("q",), {"cpu": 0, "memory": -1}, {"cpu": -2}),
]


@pytest.mark.parametrize(("committed", "reserved", "lineage", "need", "held"), CASES)
def test_reserve_equals_the_plain_sums(
    committed: dict[str, dict[str, int]],
    reserved: dict[str, int],
    lineage: tuple[str, ...],
    need: dict[str, int],
    held: dict[str, int],
) -> None:
    state, group = _state(committed, reserved, lineage, need, held)
    state.reserve(group)
    _same(state, _plain(committed, reserved, lineage, need, held))


_names = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "pods", "ephemeral-storage"])
_vector = st.dictionaries(_names, st.integers(-5, 20), max_size=5)


@settings(max_examples=200, deadline=None)
@given(
    committed=st.dictionaries(st.sampled_from(["a", "b", "c"]), _vector, max_size=3),
    reserved=_vector,
    lineage=st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=3, unique=True),
    need=_vector,
    held=_vector,
    times=st.integers(1, 3),
)
def test_reserve_equals_the_plain_sums_on_any_vectors(
    committed: dict[str, dict[str, int]],
    reserved: dict[str, int],
    lineage: list[str],
    need: dict[str, int],
    held: dict[str, int],
    times: int,
) -> None:
    state, group = _state(committed, reserved, tuple(lineage), need, held)
    plain = (committed, reserved)
    for _ in range(times):  # groups admitted one after another add up alike
        state.reserve(group)
        plain = _plain(*plain, tuple(lineage), need, held)
    _same(state, plain)
