"""Which GPU takes each GPU share (``vcsat.io/gpu-milli``), packed so whole GPUs stay free.

A pod asking ``vcsat.io/gpu-milli: N`` takes N thousandths of one GPU (contract §1): the shares on
one GPU sum to at most 1000, and a GPU holding shares takes no whole-GPU pod. The FGD paper
(Weng et al., "Beware of Fragmentation", USENIX ATC '23) shows on Alibaba's trace that where
shares land decides how many whole-GPU jobs still fit: spreading them over fresh GPUs strands
capacity that no whole-GPU pod can use. So shares go best-fit onto GPUs that already hold shares
(the tightest one that still fits, bigger shares first), and a fresh GPU is opened only when no
shared GPU has room; which fresh GPU is the caller's choice (``solver.gpu_choice.plan_node`` picks
the one whose loss hurts the node's remaining interconnect least).

Best fit is a heuristic: it can leave a share without room where another packing holds them all
(five 810s, a 470, two 320s and three 230s on seven GPUs). The greedy, which places pods one by one
on GPUs it tracks, and the search, which counts room, may both find such a node full but feasible;
the decode must then not call it infeasible. So where best fit leaves a share out, an exact
search (depth first, biggest share first, GPUs of equal room tried once) looks for a packing on as
few fresh GPUs as possible, within :data:`EXACT_STEPS` placements.

Pure and deterministic: the same inputs give the same indices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vcsat.model.gpus import FULL_GPU_MILLI

EXACT_STEPS = 50_000
"""Most placements the exact packing tries before it gives up (bin packing is NP-hard, but a node's
GPUs are few: a search that needs more is one best fit's answer stands for)."""


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
    placed = _pack(requests, dict(used), list(free))
    if None in placed:
        exact = _pack_exact(requests, used, list(free))
        if exact is not None:
            return exact
    return placed


def fresh_gpus_needed(
    requests: Sequence[int], *, shared: Mapping[int, int] | None = None, limit: int | None = None
) -> int:
    """How many fresh GPUs :func:`place_shares` opens for these requests when enough are free.

    Best fit only compares room left, never GPU indices, so the count does not depend on which
    fresh GPUs are offered. With ``limit`` (the fresh GPUs there are), a best fit needing more is
    checked by the exact packing, whose count is returned when it needs no more than ``limit``.
    """
    used = _checked_usage(requests, shared, ())
    placeholders = [-1 - i for i in range(len(requests))]  # never real indices
    needed = len({gpu for gpu in _pack(requests, dict(used), placeholders) if gpu is not None and gpu < 0})
    if limit is not None and needed > limit >= 0:
        exact = _pack_exact(requests, used, placeholders[:limit])
        if exact is not None:
            return len({gpu for gpu in exact if gpu is not None and gpu < 0})
    return needed


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


def _pack_exact(requests: Sequence[int], used: Mapping[int, int], fresh: list[int]) -> list[int | None] | None:
    """Every request on a GPU, on the GPUs holding shares and the fewest of ``fresh`` (opened in
    order), or None when no packing exists or none was found within :data:`EXACT_STEPS`."""
    order = sorted(range(len(requests)), key=lambda i: (-requests[i], i))
    steps = [EXACT_STEPS]
    for opened in range(len(fresh) + 1):
        gpus = [*used, *fresh[:opened]]
        rooms = [FULL_GPU_MILLI - used[gpu] for gpu in used] + [FULL_GPU_MILLI] * opened
        if sum(requests) > sum(rooms):
            continue
        where: list[int] = [0] * len(requests)
        if _fill(order, 0, requests, rooms, where, steps):
            return [gpus[where[position]] for position in range(len(requests))]
        if steps[0] <= 0:
            return None
    return None


def _fill(
    order: list[int], at: int, requests: Sequence[int], rooms: list[int], where: list[int], steps: list[int]
) -> bool:
    """Depth first: the request ``order[at]`` on each GPU with room for it, GPUs of equal room
    tried once (they lead to the same packings), the later requests after it."""
    if at == len(order):
        return True
    position = order[at]
    milli = requests[position]
    tried: set[int] = set()
    for gpu, room in enumerate(rooms):
        if room < milli or room in tried:
            continue
        steps[0] -= 1
        if steps[0] <= 0:
            return False
        tried.add(room)
        rooms[gpu] -= milli
        where[position] = gpu
        if _fill(order, at + 1, requests, rooms, where, steps):
            return True
        rooms[gpu] += milli
    return False
