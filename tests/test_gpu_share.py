"""GPU shares (vcsat.io/gpu-milli): packed best-fit onto shared GPUs so whole GPUs stay free."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model.gpu_topology import gpu_topology
from vcsat.model.gpus import FULL_GPU_MILLI
from vcsat.solver.placement.gpu_choice import plan_node
from vcsat.solver.placement.gpu_share import fresh_gpus_needed, place_shares


@pytest.mark.parametrize(
    ("requests", "shared", "free", "expected"),
    [
        # Two half-GPU pods share one GPU; GPU 1 stays whole.
        ([500, 500], {}, [0, 1], [0, 0]),
        # Best fit: the GPU left with the least room that still fits.
        ([300], {0: 700, 1: 300}, [], [0]),
        ([200], {0: 700, 1: 300}, [], [0]),
        ([400], {0: 700, 1: 300}, [], [1]),
        # No shared GPU has room: open a fresh one, in the order offered.
        ([800], {0: 700, 1: 300}, [5, 2], [5]),
        # Biggest first: 700 opens GPU 0, the 500s open GPU 1 together, 300 tops up GPU 0.
        ([300, 700, 500, 500], {}, [0, 1], [0, 0, 1, 1]),
        # Full and nothing free: no room.
        ([1], {0: 1000}, [], [None]),
        ([600, 600], {}, [3], [3, None]),
        # A GPU listed at 0 thousandths holds no shares and is not offered.
        ([100], {4: 0}, [], [None]),
        ([], {}, [0], []),
        # Best fit would leave the last 230 out (470+320 and 320+230+230 leave 210 and 220); the
        # exact packing holds all: 470+230+230 and 320+320+230 (openb, full size, seed 3).
        (
            [810, 810, 810, 810, 810, 470, 320, 320, 230, 230, 230],
            {},
            [0, 1, 2, 3, 4, 5, 6],
            [0, 1, 2, 3, 4, 5, 6, 6, 5, 5, 6],
        ),
        # The same on GPUs already holding shares, no fresh GPU offered.
        ([470, 320, 320, 230, 230, 230], {7: 0, 3: 1, 5: 1}, [], [3, 5, 5, 3, 3, 5]),
    ],
)
def test_place_shares(
    requests: list[int], shared: Mapping[int, int], free: list[int], expected: list[int | None]
) -> None:
    assert place_shares(requests, shared=shared, free=free) == expected


@pytest.mark.parametrize(
    ("requests", "shared", "needed"),
    [
        ([500, 500], {}, 1),
        ([500, 600], {}, 2),
        ([300, 300, 300, 300], {0: 100}, 1),
        ([100], {0: 900}, 0),
        ([], {}, 0),
    ],
)
def test_fresh_gpus_needed(requests: list[int], shared: Mapping[int, int], needed: int) -> None:
    assert fresh_gpus_needed(requests, shared=shared) == needed


@pytest.mark.parametrize(
    ("requests", "limit", "needed"),
    [
        # Best fit opens three GPUs where an exact packing needs two: with two there, two.
        ([470, 320, 320, 230, 230, 230], 2, 2),
        ([470, 320, 320, 230, 230, 230], None, 3),  # no limit: best fit's count
        ([470, 320, 320, 230, 230, 230], 3, 3),  # best fit fits the limit: its count
        ([600, 600, 500, 300], 2, 3),  # no packing on two: best fit's count, over the limit
    ],
)
def test_fresh_gpus_needed_within_a_limit(requests: list[int], limit: int | None, needed: int) -> None:
    assert fresh_gpus_needed(requests, limit=limit) == needed


@pytest.mark.parametrize(
    ("requests", "shared", "free", "reason"),
    [
        ([0], {}, [0], "share request 0: must be 1 to 1000 thousandths, not 0"),
        ([500, 1001], {}, [0], "share request 1: must be 1 to 1000 thousandths, not 1001"),
        ([500], {0: 1200}, [], "GPU 0 holds 1200 thousandths in shares"),
        ([500], {0: -5}, [], "GPU 0 holds -5 thousandths"),
        ([500], {0: 300}, [0, 1], r"GPU\(s\) \[0\] are listed as free but hold shares"),
        ([500], {}, [1, 1], "free GPUs listed twice"),
    ],
)
def test_bad_share_input(requests: list[int], shared: Mapping[int, int], free: list[int], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        place_shares(requests, shared=shared, free=free)


def test_two_half_gpu_pods_share_one_gpu_so_a_whole_gpu_pod_still_fits() -> None:
    plan = plan_node(gpu_topology(None, 2), [0, 1], [1], shares=[500, 500])
    (whole,) = plan.whole
    assert len(whole) == 1
    assert plan.shares[0] == plan.shares[1]
    assert plan.shares[0] not in whole


# --- properties ---------------------------------------------------------------------------------


@st.composite
def share_cases(draw: st.DrawFn) -> tuple[list[int], dict[int, int], list[int]]:
    gpus = draw(st.integers(1, 8))
    shared: dict[int, int] = {}
    free: list[int] = []
    for gpu in range(gpus):
        state = draw(st.sampled_from(["free", "shared", "whole"]))
        if state == "free":
            free.append(gpu)
        elif state == "shared":
            shared[gpu] = draw(st.integers(1, FULL_GPU_MILLI))
    free = draw(st.permutations(free))
    requests = draw(st.lists(st.integers(1, FULL_GPU_MILLI), max_size=10))
    return requests, shared, list(free)


@settings(max_examples=150, deadline=None)
@given(share_cases())
def test_shares_never_overfill_a_gpu_and_stay_on_offered_gpus(
    case: tuple[list[int], dict[int, int], list[int]],
) -> None:
    requests, shared, free = case
    placed = place_shares(requests, shared=shared, free=free)
    assert len(placed) == len(requests)
    load = dict(shared)
    for milli, gpu in zip(requests, placed, strict=True):
        if gpu is not None:
            assert gpu in shared or gpu in free
            load[gpu] = load.get(gpu, 0) + milli
    assert all(total <= FULL_GPU_MILLI for total in load.values())  # shares ≤ 1000 per GPU
    # Fresh GPUs are opened in the order offered, and only as many as needed.
    opened = [g for g in free if g in load]
    assert opened == free[: len(opened)]
    if None in placed:
        assert len(opened) == len(free)  # nothing was left to open
    assert place_shares(requests, shared=shared, free=free) == placed  # deterministic


@settings(max_examples=100, deadline=None)
@given(share_cases())
def test_a_fresh_gpu_is_opened_only_when_no_shared_gpu_has_room(
    case: tuple[list[int], dict[int, int], list[int]],
) -> None:
    requests, shared, free = case
    placed = place_shares(requests, shared=shared, free=free)
    if None not in placed and _best_fit_leaves_one_out(requests, shared, free):
        return  # the exact packing's answer, checked by test_every_share_is_placed_when_some_packing_holds_them
    load = dict(shared)
    opened: set[int] = set()
    for position in sorted(range(len(requests)), key=lambda i: (-requests[i], i)):
        gpu, milli = placed[position], requests[position]
        room_elsewhere = any(held + milli <= FULL_GPU_MILLI for held in load.values())
        if gpu is None:
            assert not room_elsewhere
            continue
        if gpu not in load:
            assert not room_elsewhere  # opened a whole GPU only for want of room
            opened.add(gpu)
            load[gpu] = 0
        load[gpu] += milli
    assert len(opened) == fresh_gpus_needed(requests, shared=shared) or len(opened) == len(free)


@settings(max_examples=60, deadline=None)
@given(share_cases(), st.integers(0, 3))
def test_joint_plan_never_gives_a_gpu_twice(case: tuple[list[int], dict[int, int], list[int]], whole: int) -> None:
    requests, shared, free = case
    count = min(whole, len(free))
    topology = gpu_topology("preset:dgx1-v100", 8)
    plan = plan_node(topology, free, [count], shares=requests, shared=shared)
    whole_gpus = set(plan.whole[0])
    assert len(whole_gpus) == count and whole_gpus <= set(free)
    share_gpus = {gpu for gpu in plan.shares if gpu is not None}
    assert not whole_gpus & share_gpus  # a GPU holding shares takes no whole-GPU pod
    assert not whole_gpus & set(shared)
    load: dict[int, int] = dict(shared)
    for milli, gpu in zip(requests, plan.shares, strict=True):
        if gpu is not None:
            load[gpu] = load.get(gpu, 0) + milli
    assert all(total <= FULL_GPU_MILLI for total in load.values())


def _best_fit_leaves_one_out(requests: list[int], shared: Mapping[int, int], free: list[int]) -> bool:
    """Best fit decreasing, written here apart from the module: whether it leaves a request out."""
    load = {gpu: milli for gpu, milli in shared.items() if milli}
    fresh = list(free)
    for milli in sorted(requests, reverse=True):
        fitting = [FULL_GPU_MILLI - held - milli for held in load.values() if held + milli <= FULL_GPU_MILLI]
        if fitting:
            best = min(g for g, held in load.items() if FULL_GPU_MILLI - held - milli == min(fitting))
            load[best] += milli
        elif fresh:
            load[fresh.pop(0)] = milli
        else:
            return True
    return False


def _some_packing(requests: list[int], rooms: list[int]) -> bool:
    """Brute force over every assignment of requests to GPUs (small cases only)."""
    return any(
        all(sum(m for m, g in zip(requests, choice, strict=True) if g == gpu) <= room for gpu, room in enumerate(rooms))
        for choice in itertools.product(range(len(rooms)), repeat=len(requests))
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, FULL_GPU_MILLI), max_size=6),
    st.lists(st.integers(1, FULL_GPU_MILLI - 1), max_size=2),
    st.integers(0, 2),
)
def test_every_share_is_placed_when_some_packing_holds_them(requests: list[int], used: list[int], fresh: int) -> None:
    shared = {gpu: milli for gpu, milli in enumerate(used)}
    free = list(range(len(used), len(used) + fresh))
    placed = place_shares(requests, shared=shared, free=free)
    rooms = [FULL_GPU_MILLI - milli for milli in used] + [FULL_GPU_MILLI] * fresh
    if requests and rooms and _some_packing(requests, rooms):
        assert None not in placed
        load = dict(shared)
        for milli, gpu in zip(requests, placed, strict=True):
            assert gpu is not None
            load[gpu] = load.get(gpu, 0) + milli
        assert all(total <= FULL_GPU_MILLI for total in load.values())
    elif requests:
        assert None in placed  # no packing exists: a share is left without room, never overfilled
