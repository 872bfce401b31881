"""gang_timeline on hand-written pod histories: what counts as a stall and as partial GPU-time.

No cluster: the Figure 6 scenario's conclusions rest on these readings, so they are pinned here.
"""

from __future__ import annotations

import pytest
from e2e_support import PodChange
from gang_timeline import node_overcommits, timelines

SIZES = {"a": 2, "b": 2}


def change(at: float, job: str, pod: str, node: str = "", phase: str = "Pending", kind: str = "MODIFIED") -> PodChange:
    return PodChange(kind, pod, f"uid-{pod}", job, node, phase, False, gpus=2, at=at)


def whole_then_other(order: str) -> list[PodChange]:
    """a bound whole at t=0 and runs to t=2; b bound at t=1 (before a finishes) or t=3 (after)."""
    a = [change(0, "a", "a0", "n0"), change(0, "a", "a1", "n0"), change(2, "a", "a0", "n0", "Succeeded")]
    a.append(change(2, "a", "a1", "n0", "Succeeded"))
    b_at = 1.0 if order == "before" else 3.0
    b = [change(b_at, "b", "b0", "n1")]
    if order == "after":
        b.append(change(b_at + 0.1, "b", "b1", "n1"))
    return sorted(a + b, key=lambda c: c.at)


@pytest.mark.parametrize(
    ("order", "stalled", "gpu_seconds"),
    [
        # b's first pod waits from t=1 while a runs: it held 2 GPUs through a's end, and the window.
        ("before", {"b"}, 2 * (5 - 1)),
        # b placed whole after a finished: 0.1 s between its two bindings, no stall.
        ("after", set(), 2 * 0.1),
    ],
)
def test_stalls_and_partial_gpu_seconds(order: str, stalled: set[str], gpu_seconds: float) -> None:
    found = timelines(whole_then_other(order), SIZES, end=5.0)
    assert {job for job, t in found.items() if t.stalled} == stalled
    assert sum(t.partial_gpu_seconds for t in found.values()) == pytest.approx(gpu_seconds)


def test_a_gang_bound_while_the_previous_one_finishes_is_no_stall() -> None:
    # a's pods finish one at a time; b is bound into the room of the first, before the second ends.
    changes = [
        change(0, "a", "a0", "n0"),
        change(0, "a", "a1", "n0"),
        change(2.0, "a", "a0", "n0", "Succeeded"),
        change(2.1, "b", "b0", "n0"),
        change(2.2, "a", "a1", "n0", "Succeeded"),
        change(2.3, "b", "b1", "n0"),
    ]
    assert not any(t.stalled for t in timelines(changes, SIZES, end=5.0).values())


def test_overcommit_counts_pods_until_they_finish_or_go() -> None:
    changes = [change(0, "a", "a0", "n0"), change(1, "a", "a1", "n0"), change(2, "a", "a0", "n0", "Succeeded")]
    assert node_overcommits(changes, {"n0": 4}) == []
    assert len(node_overcommits(changes, {"n0": 3})) == 1
