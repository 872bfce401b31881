"""Each queue's target at a fair-share level (:mod:`vcsat.solver.shares.level_targets`).

- A table of small cases worked by hand: room enough for every share, room short with equal and
  with unequal deserved amounts, a queue already past its share, a queue asking less than it lacks.
- A Hypothesis property against brute force: the targets hand out as much of the free room as the
  claims can take (less at most one unit per claim, the rounding of a tie), and no other split of
  that much gives the level's utility more.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.solver.shares.level_targets import LevelClaim, level_targets

PARTS = 4

CASES = {
    # (deserved, held, asks) per claim, free room, expected targets.
    "room for every share": ([(8, 2, 10), (4, 1, 10)], 20, [8, 4]),
    # Equal deserved amounts: the less filled queue first, then both alike.
    "equal shares": ([(8, 0, 10), (8, 4, 10)], 6, [5, 5]),
    # Both at 0: a unit of the first part of the queue deserving 4 gains 4/4, of the one deserving
    # 8 only 4/8. The second takes its first part (1 unit, gain 1) and its second (1 unit, 3/4);
    # its third part (1 unit, 2/4) ties with the first queue's first part (2 units, 4/8): the 2
    # units left go 2:1, rounded down to 1 and 0.
    "unequal shares": ([(8, 0, 10), (4, 0, 10)], 4, [1, 2]),
    # A queue at its share takes nothing; the other takes what it asks.
    "one past its share": ([(4, 6, 10), (8, 0, 3)], 10, [4, 3]),
    # Tied parts share the room in proportion to their lengths, rounded down.
    "a tie rounded down": ([(4, 0, 4), (4, 0, 4)], 3, [1, 1]),
    "nothing free": ([(8, 2, 10)], 0, [2]),
    "no deserved amount": ([(0, 0, 5), (4, 0, 5)], 5, [0, 4]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_small_cases(name: str) -> None:
    claims, free, expected = CASES[name]
    assert level_targets([LevelClaim(*claim) for claim in claims], free, PARTS) == expected


def _utility(amount: int, deserved: int) -> Fraction:
    """The level's utility of holding ``amount`` of a share of ``deserved``, part by part."""
    total = Fraction(0)
    if deserved <= 0:
        return total
    for part in range(PARTS):
        low, high = deserved * part // PARTS, deserved * (part + 1) // PARTS
        total += Fraction((PARTS - part) * max(0, min(amount, high) - low), deserved)
    return total


def _best(claims: list[LevelClaim], amount: int) -> Fraction:
    """The most utility any split of ``amount`` more units among the claims gives (brute force)."""
    ranges = [range(0, max(0, min(c.deserved, c.held + c.asks) - min(c.held, c.deserved)) + 1) for c in claims]
    best = Fraction(-1)
    for extra in product(*ranges):
        if sum(extra) == amount:
            value = sum(
                (_utility(min(c.held, c.deserved) + e, c.deserved) for c, e in zip(claims, extra, strict=True)),
                Fraction(0),
            )
            best = max(best, value)
    return best


CLAIMS = st.lists(
    st.builds(LevelClaim, deserved=st.integers(0, 12), held=st.integers(0, 14), asks=st.integers(0, 14)),
    min_size=1,
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(claims=CLAIMS, free=st.integers(0, 30))
def test_the_targets_are_the_best_split_of_what_they_hand_out(claims: list[LevelClaim], free: int) -> None:
    targets = level_targets(claims, free, PARTS)
    start = [min(c.held, c.deserved) for c in claims]
    top = [max(s, min(c.deserved, c.held + c.asks)) for s, c in zip(start, claims, strict=True)]
    assert all(s <= t <= m for s, t, m in zip(start, targets, top, strict=True))
    handed = sum(targets) - sum(start)
    room = min(free, sum(top) - sum(start))
    assert room - (len(claims) - 1) <= handed <= room
    value = sum((_utility(t, c.deserved) for t, c in zip(targets, claims, strict=True)), Fraction(0))
    assert value == _best(claims, handed)
