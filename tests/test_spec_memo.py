"""Per-spec memo of the pricing tallies (``solver/pricing/spec_memo.py``): a pod is answered with
what its spec made when its requests, node selector, affinity and tolerations are the very objects
of a pod already seen with the same extra value, and made afresh otherwise; the memo stays bounded."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import pod
from vcsat.model import Pod
from vcsat.solver.pricing import spec_memo
from vcsat.solver.pricing.spec_memo import SpecMemo


class _Maker:
    """A make function that counts its calls and returns a fresh object per call."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, pod: Pod) -> tuple[int, int]:
        self.calls += 1
        return (self.calls, len(pod.requests))


BASE = pod("ns/a", cpu="1", memory="1Gi", selector={"zone": "a"}, tolerations=["gpu"])
"""A pod whose spec objects the cases share or replace one by one (``model_copy`` keeps them)."""


def _variant(which: str) -> Pod:
    """A pod sharing BASE's spec objects, but for the one named (an equal copy: another object)."""
    update: dict[str, object] = {"name": f"v-{which}"}
    if which == "requests":
        update["requests"] = dict(BASE.requests)
    elif which == "selector":
        update["node_selector"] = dict(BASE.node_selector)
    elif which == "affinity":
        update["affinity"] = tuple(list(BASE.affinity))  # the empty tuple is one object: see below
    elif which == "tolerations":
        update["tolerations"] = tuple(list(BASE.tolerations))
    return BASE.model_copy(update=update)


@pytest.mark.parametrize(
    ("which", "extra", "made_again"),
    [
        ("none", None, False),  # every spec object shared: the first answer
        ("none", True, True),  # the same spec, another extra value
        ("requests", None, True),  # an equal requests dict, another object
        ("selector", None, True),
        ("tolerations", None, True),
        ("affinity", None, False),  # () is one object in CPython: still the same spec
    ],
)
def test_answer_by_the_spec_objects(which: str, extra: bool | None, made_again: bool) -> None:
    make = _Maker()
    memo: SpecMemo[tuple[int, int]] = SpecMemo(make)
    first = memo.made(BASE)
    other = _variant(which)
    again = memo.made(other, extra)
    assert make.calls == (2 if made_again else 1)
    assert (again is first) is not made_again
    # asked again, each is answered from the memo
    assert memo.made(BASE) is first
    assert memo.made(other, extra) is again
    assert make.calls == (2 if made_again else 1)


def test_memo_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spec_memo, "KEPT", 3)
    make = _Maker()
    memo: SpecMemo[tuple[int, int]] = SpecMemo(make)
    pods = [_variant("requests") for _ in range(7)]  # seven specs, each its own requests object
    for p in pods:
        memo.made(p)
    assert make.calls == 7
    held = sum(len(entries) for entries in memo._found.values())
    assert held <= 3
    assert held == memo._kept
    # pods of one requests object with other extras share one list, counted entry by entry
    for extra in range(5):
        memo.made(BASE, extra)
    assert sum(len(entries) for entries in memo._found.values()) == memo._kept <= 3


SPEC_PARTS = st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 1), st.sampled_from([None, False, True]))
"""Which requests, selector and tolerations objects a pod holds (of a few), and the extra value."""


@settings(max_examples=60, deadline=None)
@given(st.lists(SPEC_PARTS, min_size=1, max_size=30))
def test_made_once_per_spec_and_extra(parts: list[tuple[int, int, int, bool | None]]) -> None:
    """Over any sequence of pods drawn from a few spec objects, each (objects, extra) is made once
    and every pod of it gets that one answer."""
    requests = [{"cpu": 1000 * (i + 1)} for i in range(3)]
    selectors = [{"zone": str(i)} for i in range(3)]
    tolerations = [BASE.tolerations, tuple(list(BASE.tolerations))]
    make = _Maker()
    memo: SpecMemo[tuple[int, int]] = SpecMemo(make)
    answers: dict[tuple[int, int, int, bool | None], tuple[int, int]] = {}
    for r, s, t, extra in parts:
        update = {"requests": requests[r], "node_selector": selectors[s], "tolerations": tolerations[t]}
        p = BASE.model_copy(update=update)
        got = memo.made(p, extra)
        key = (r, s, t, extra)
        if key in answers:
            assert got is answers[key]
        else:
            answers[key] = got
        assert make.calls == len(answers)
