"""Sets of nodes as Python ints (bit ``i`` for node ``i``) and as numpy flag arrays, one from the other.

Why it exists: the pricing measures keep sets of nodes as bit masks (cheap to intersect with the
eligibility masks of :class:`vcsat.solver.rules.predicates.NodeIndex`) but compute them with numpy
over every node; these two conversions are the one way between the forms.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def mask_of(flags: NDArray[np.bool_]) -> int:
    """The bit mask of the nodes flagged (bit ``i`` for node ``i``)."""
    return int.from_bytes(np.packbits(flags, bitorder="little").tobytes(), "little")


def flags_of(mask: int, count: int) -> NDArray[np.bool_]:
    """Per node of ``count``, whether its bit is set in ``mask`` (which sets no higher bit)."""
    packed = np.frombuffer(mask.to_bytes((count + 7) // 8, "little"), dtype=np.uint8)
    flags: NDArray[np.bool_] = np.unpackbits(packed, bitorder="little", count=count).astype(np.bool_)
    return flags
