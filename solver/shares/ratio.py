"""An exact fraction that only compares: the order key of the greedy's fill by gain.

Why not :class:`fractions.Fraction`: the fill by gain (:func:`vcsat.solver.greedy.greedy_by_gain`)
makes a key per queue after every gang it tries and takes the least of them, and a ``Fraction``
spends most of that on what the keys never need (reducing by the greatest common divisor when made,
type checks against the numeric ABCs on every comparison): about a tenth of the second fill. Two
fractions with positive denominators order as their cross products do, which is all this does, so
it orders exactly as the fractions it stands for.
"""

from __future__ import annotations


class Ratio:
    """``num / den`` (``den`` positive, not reduced), ordered and compared for equality by value."""

    __slots__ = ("den", "num")

    def __init__(self, num: int, den: int) -> None:
        if den <= 0:
            raise ValueError("a ratio's denominator is positive")
        self.num = num
        self.den = den

    def __lt__(self, other: Ratio) -> bool:
        return self.num * other.den < other.num * self.den

    def __gt__(self, other: Ratio) -> bool:
        return self.num * other.den > other.num * self.den

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ratio):
            return NotImplemented
        return self.num * other.den == other.num * self.den

    __hash__ = None  # type: ignore[assignment]  # equal by value across denominators: not a dict key

    def __repr__(self) -> str:
        return f"Ratio({self.num}, {self.den})"
