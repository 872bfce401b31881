"""Weighted water-filling (solver/shares/water.py): the exact levels and their integer rounding."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vcsat.solver.shares import water_fill, water_levels

F = Fraction


@pytest.mark.parametrize(
    ("amount", "weights", "floors", "caps", "expected"),
    [
        (10, [1, 1, 1], [0, 0, 0], [100, 100, 100], [F(10, 3)] * 3),
        (10, [1, 2], [0, 0], [100, 100], [F(10, 3), F(20, 3)]),
        (100, [1, 1, 1], [40, 0, 0], [1000, 10, 1000], [45, 10, 45]),
        (50, [1, 1], [0, 0], [10, 20], [10, 20]),  # everything fits: the caps, not the amount
        (7, [1, 1], [3, 4], [3, 4], [3, 4]),
        (F(1, 2), [1, 3], [0, 0], [1, 1], [F(1, 8), F(3, 8)]),
        (12, [2, 1], [0, 0], [2, 100], [2, 10]),
    ],
)
def test_water_levels(
    amount: int | Fraction, weights: list[int], floors: list[int], caps: list[int], expected: list[Fraction]
) -> None:
    assert water_levels(amount, weights, floors, caps) == expected


@pytest.mark.parametrize(
    ("weights", "floors", "caps", "message"),
    [
        ([1, 0], [0, 0], [1, 1], "weights must be positive"),
        ([1, 1], [0], [1, 1], "same length"),
        ([1, 1], [6, 6], [9, 9], "floors add up to 12"),
    ],
)
def test_water_levels_refuses(weights: list[int], floors: list[int], caps: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        water_levels(10, weights, floors, caps)


@st.composite
def claims(draw: st.DrawFn) -> tuple[int, list[int], list[int], list[int]]:
    count = draw(st.integers(1, 6))
    weights = draw(st.lists(st.integers(1, 9), min_size=count, max_size=count))
    floors = draw(st.lists(st.integers(0, 30), min_size=count, max_size=count))
    caps = draw(st.lists(st.integers(0, 60), min_size=count, max_size=count))
    amount = draw(st.integers(sum(floors), sum(floors) + 200))
    return amount, weights, floors, caps


def _progressive(amount: int, weights: list[int], caps: list[int]) -> list[Fraction]:
    """Reference without floors: hand every unfilled claim its weight's part of what is left,
    none above its cap, until nothing is left or every claim is full."""
    given = [Fraction(0)] * len(weights)
    left = Fraction(amount)
    active = [i for i, cap in enumerate(caps) if cap > 0]
    while active and left > 0:
        total = sum(weights[i] for i in active)
        handed = Fraction(0)
        for i in active:
            take = min(left * weights[i] / total, caps[i] - given[i])
            given[i] += take
            handed += take
        left -= handed
        active = [i for i in active if given[i] < caps[i]]
    return given


@given(claims())
def test_levels_share_one_level_within_floors_and_caps(case: tuple[int, list[int], list[int], list[int]]) -> None:
    amount, weights, floors, caps = case
    levels = water_levels(amount, weights, floors, caps)
    tops = [max(floor, cap) for floor, cap in zip(floors, caps, strict=True)]
    assert sum(levels) == min(amount, sum(tops))
    assert all(floor <= level <= top for floor, level, top in zip(floors, levels, tops, strict=True))
    # Every claim strictly between its floor and its top is at the same level per unit of weight,
    # and no claim held at its floor or top could take more without going past that level.
    free = {
        level / weight
        for level, weight, floor, top in zip(levels, weights, floors, tops, strict=True)
        if floor < level < top
    }
    assert len(free) <= 1
    for lam in free:
        for level, weight, floor, top in zip(levels, weights, floors, tops, strict=True):
            if level == floor and level < top:
                assert level / weight >= lam
            if level == top and level > floor:
                assert level / weight <= lam


@given(claims())
def test_levels_without_floors_are_progressive_filling(case: tuple[int, list[int], list[int], list[int]]) -> None:
    amount, weights, _, caps = case
    assert water_levels(amount, weights, [0] * len(caps), caps) == _progressive(amount, weights, caps)


@given(claims())
def test_fill_rounds_the_levels_keeping_the_total(case: tuple[int, list[int], list[int], list[int]]) -> None:
    amount, weights, floors, caps = case
    levels = water_levels(amount, weights, floors, caps)
    filled = water_fill(amount, weights, floors, caps)
    assert sum(filled) == sum(levels)
    assert all(abs(share - level) < 1 for share, level in zip(filled, levels, strict=True))
