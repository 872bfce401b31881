"""Each queue's target at one fair-share level: the split of the free room that the level values most.

Why: a fair-share level sums each queue's concave, piecewise-linear utility of the fraction of its
deserved amount it holds (:mod:`vcsat.solver.objectives.fairness`): ``parts`` equal parts of the
share with slopes ``parts, parts - 1, ..., 1``. One more unit of the resource raises a queue in
part ``k`` by that part's slope divided by the queue's deserved amount, so when the free room is
short of what the queues lack, the level is highest not at equal shares but where the last unit
each queue gets gains alike: water-filling over the parts, the steepest gain per unit first. A
queue that deserves less then gets a larger fraction of its share than one that deserves more.

The greedy's fill (:mod:`vcsat.solver.greedy`) keeps its order, the least filled queue first (the
big gangs of the most starved queues go while the room is still whole), but stops each queue at its
target until every queue has reached its own: where the room holds what it is taken to hold, the
fill ends at this split instead of at equal shares. The free room is an estimate (packing leaves
some of it unusable), which is why the targets only order the fill and never stop it: past them the
fill goes on towards the deserved shares as before.

Exact integers throughout; gains compare as fractions. Parts of equal gain share what is left in
proportion to their lengths (rounded down), so no queue is favoured by its name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class LevelClaim:
    """One queue at one level: its deserved amount of the level's resource, what it holds now, and
    what its waiting work of the level asks in all."""

    deserved: int
    held: int
    asks: int


def level_targets(claims: Sequence[LevelClaim], free: int, parts: int) -> list[int]:
    """Per claim, the amount it would hold at the level's continuous optimum when ``free`` more
    units are shared among the claims: at least what it holds, at most its deserved amount and at
    most what it holds plus what it asks."""
    targets = [min(claim.held, claim.deserved) for claim in claims]
    # Per (gain, claim): the length of each part of the utility between what the claim holds
    # and what it could hold at most.
    pieces: dict[Fraction, list[tuple[int, int]]] = {}
    for index, claim in enumerate(claims):
        if claim.deserved <= 0:
            continue
        top = min(claim.deserved, targets[index] + max(0, claim.asks))
        for part in range(parts):
            low = claim.deserved * part // parts
            high = claim.deserved * (part + 1) // parts
            start, end = max(low, targets[index]), min(high, top)
            if end > start:
                pieces.setdefault(Fraction(parts - part, claim.deserved), []).append((index, end - start))
    left = max(0, free)
    for gain in sorted(pieces, reverse=True):
        group = pieces[gain]
        total = sum(length for _index, length in group)
        if total <= left:
            for index, length in group:
                targets[index] += length
            left -= total
            continue
        for index, length in group:
            targets[index] += left * length // total
        break
    return targets
