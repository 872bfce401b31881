"""Which GPU indices the bound pods of a node hold: one rule for the loader, solver and validator.

Contract §1: a bound pod's ``vcsat.io/gpu-ids`` names the indices it holds; a bound GPU pod without
the annotation holds the lowest indices no annotated pod holds (oldest pods first, then by key, so
the answer never changes between readers). A GPU share (``vcsat.io/gpu-milli``) holds part of one
GPU; a GPU holding shares takes no whole-GPU pod.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import filterfalse
from typing import Final

from vcsat.model.cluster import Pod

FULL_GPU_MILLI: Final = 1000


@dataclass
class GpuHoldings:
    whole: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Per pod key: the whole GPUs it holds."""
    share: dict[str, int] = field(default_factory=dict)
    """Per pod key of a GPU share: the GPU it shares."""
    share_milli: dict[int, int] = field(default_factory=dict)
    """Per GPU index: the thousandths its shares hold."""
    unplaceable: list[str] = field(default_factory=list)
    """Unannotated pods for which no index was left (an inconsistent node)."""

    @property
    def whole_held(self) -> set[int]:
        return {index for ids in self.whole.values() for index in ids}

    def free_whole(self, gpus: int) -> tuple[int, ...]:
        """Indices that hold neither a whole-GPU pod nor a share."""
        taken = self.whole_held
        if self.share_milli:
            taken |= {index for index, milli in self.share_milli.items() if milli}
        # In index order, filtered in C: every node's room asks for this each build.
        return tuple(filterfalse(taken.__contains__, range(gpus)))


def gpu_holdings(gpus: int, bound: Iterable[Pod]) -> GpuHoldings:
    """What the pods bound to one node (with ``gpus`` GPUs) hold, annotated or not."""
    out = GpuHoldings()
    unannotated: list[Pod] = []
    for pod in bound:
        # Each model field read once: callers pass every bound pod of a node, and compiled code
        # pays a generic lookup per read (docs/compiled-build.md).
        whole = pod.gpus
        milli = 0
        if whole == 0:
            milli = pod.gpu_milli
            if milli == 0:
                continue
        ids = pod.gpu_ids
        if ids is None:
            unannotated.append(pod)
        elif whole == 0:
            index = ids[0]
            out.share[pod.key] = index
            out.share_milli[index] = out.share_milli.get(index, 0) + milli
        else:
            out.whole[pod.key] = tuple(ids)
    for pod in sorted(unannotated, key=lambda p: (p.created, p.key)):
        held = out.whole_held
        if pod.gpus > 0:
            free = [i for i in range(gpus) if i not in held and not out.share_milli.get(i)]
            if len(free) < pod.gpus:
                out.unplaceable.append(pod.key)
                continue
            out.whole[pod.key] = tuple(free[: pod.gpus])
            continue
        room = [i for i in range(gpus) if i not in held and out.share_milli.get(i, 0) + pod.gpu_milli <= FULL_GPU_MILLI]
        if not room:
            out.unplaceable.append(pod.key)
            continue
        out.share[pod.key] = room[0]
        out.share_milli[room[0]] = out.share_milli.get(room[0], 0) + pod.gpu_milli
    return out
