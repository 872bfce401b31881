"""Which GPU takes each GPU share (``vcsat.io/gpu-milli``), packed so whole GPUs stay free.

A pod asking ``vcsat.io/gpu-milli: N`` takes N thousandths of one GPU (contract §1): the shares on
one GPU sum to at most 1000, and a GPU holding shares takes no whole-GPU pod. The FGD paper
(Weng et al., "Beware of Fragmentation", USENIX ATC '23) shows on Alibaba's trace that where
shares land decides how many whole-GPU jobs still fit: spreading them over fresh GPUs strands
capacity that no whole-GPU pod can use. So shares go best-fit onto GPUs that already hold shares
(the tightest one that still fits, bigger shares first), and a fresh GPU is opened only when no
shared GPU has room; which fresh GPU is the caller's choice (``solver.gpu_choice.plan_node`` picks
the one whose loss hurts the node's remaining interconnect least).

Pure and deterministic: the same inputs give the same indices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vcsat.model.gpus import FULL_GPU_MILLI


def place_shares(
    requests: Sequence[int],
    *,
    shared: Mapping[int, int] | None = None,
    free: Sequence[int] = (),
) -> list[int | None]:
    """Per share request (thousandths, 1..1000), the GPU index that takes it, or None.

    ``shared``: per GPU that already holds shares, the thousandths in use (GPUs at 0 are
    ignored): ``vcsat.model.gpus.gpu_holdings(...).share_milli`` for a node's bound pods.
    ``free``: whole GPUs free of any holder, opened for shares in this order, and only when no
    GPU holding shares has room. Requests are placed biggest first (best-fit decreasing); the
    answer is in the order of ``requests``. None means no GPU had room for it.
    """
    used = _checked_usage(requests, shared, free)
    return _pack(requests, used, list(free))


def fresh_gpus_needed(requests: Sequence[int], *, shared: Mapping[int, int] | None = None) -> int:
    """How many fresh GPUs :func:`place_shares` opens for these requests when enough are free.

    Best fit only compares room left, never GPU indices, so the count does not depend on which
    fresh GPUs are offered.
    """
    used = _checked_usage(requests, shared, ())
    placeholders = [-1 - i for i in range(len(requests))]  # never real indices
    return len({gpu for gpu in _pack(requests, used, placeholders) if gpu is not None and gpu < 0})


def _checked_usage(requests: Sequence[int], shared: Mapping[int, int] | None, free: Sequence[int]) -> dict[int, int]:
    for position, milli in enumerate(requests):
        if not 1 <= milli <= FULL_GPU_MILLI:
            raise ValueError(f"share request {position}: must be 1 to {FULL_GPU_MILLI} thousandths, not {milli}")
    used = {gpu: milli for gpu, milli in sorted((shared or {}).items()) if milli != 0}
    for gpu, milli in used.items():
        if not 0 < milli <= FULL_GPU_MILLI:
            raise ValueError(f"GPU {gpu} holds {milli} thousandths in shares; must be 1 to {FULL_GPU_MILLI}")
    if len(set(free)) != len(free):
        raise ValueError(f"free GPUs listed twice: {sorted(free)}")
    both = sorted(set(free) & set(used))
    if both:
        raise ValueError(f"GPU(s) {both} are listed as free but hold shares")
    return used


def _pack(requests: Sequence[int], used: dict[int, int], fresh: list[int]) -> list[int | None]:
    out: list[int | None] = [None] * len(requests)
    opened = 0
    for position in sorted(range(len(requests)), key=lambda i: (-requests[i], i)):
        milli = requests[position]
        # Best fit: the GPU left with the least room, so bigger holes stay open elsewhere.
        fitting = [(FULL_GPU_MILLI - held - milli, gpu) for gpu, held in used.items() if held + milli <= FULL_GPU_MILLI]
        if fitting:
            gpu = min(fitting)[1]
        elif opened < len(fresh):
            gpu = fresh[opened]
            opened += 1
            used[gpu] = 0
        else:
            continue
        used[gpu] += milli
        out[position] = gpu
    return out
