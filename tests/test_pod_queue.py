"""The queue a pod counts against (``model/queue_rule.py``, the one rule that the model's
``Snapshot.queue_of`` and the solver's pod loops both call) for every kind of pod, and admission's
choice of the next queue by cross-multiplied served fractions (``enqueue._next_queue``) against the
choice of ``min`` over the Fraction tuples."""

from __future__ import annotations

from fractions import Fraction

import builders as b
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model import Pod
from vcsat.model.queue_rule import queue_in
from vcsat.solver.enqueue import _next_queue

_SNAPSHOT = b.snapshot(
    pods=[
        b.pod("ns/grouped", group="ns/g"),
        b.pod("ns/orphan", group="ns/missing"),
        b.pod("ns/lone"),
        b.pod("ns/lone-annotated").model_copy(update={"queue_name": "annotated"}),
        b.pod("ns/empty-annotation").model_copy(update={"queue_name": ""}),
        b.pod("ns/foreign", group="ns/g", managed=False),
        b.pod("ns/foreign-lone", managed=False),
    ],
    groups=[b.group("ns/g", queue="q")],
    queues=[b.queue("q"), b.queue("annotated")],
)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("ns/grouped", "q"),  # its PodGroup's queue
        ("ns/orphan", None),  # its PodGroup is not in the snapshot
        ("ns/lone", "default"),  # ours, no PodGroup, no annotation
        ("ns/lone-annotated", "annotated"),  # ours, no PodGroup: the annotation's queue
        ("ns/empty-annotation", "default"),
        ("ns/foreign", None),  # another scheduler's pods belong to no queue
        ("ns/foreign-lone", None),
    ],
)
def test_the_queue_of_each_kind_of_pod_is_the_models(key: str, expected: str | None) -> None:
    pod: Pod = _SNAPSHOT.pod_by_key[key]
    assert queue_in(pod, _SNAPSHOT.podgroup_by_key) == expected
    assert _SNAPSHOT.queue_of(pod) == expected


@pytest.mark.parametrize(
    ("priority", "served", "expected"),
    [
        ({}, {"a": (1, 2), "b": (1, 3)}, "b"),  # the least served first
        ({}, {"a": (2, 4), "b": (1, 2)}, "a"),  # equal fractions (unreduced): by name
        ({"a": 1}, {"a": (9, 1), "b": (0, 1)}, "a"),  # higher spec.priority before any share
        ({"a": -1}, {"a": (0, 1), "b": (5, 1)}, "b"),
        ({}, {"b": (0, 1), "a": (0, 7)}, "a"),  # not the first met: the least name
        ({}, {"only": (3, 2)}, "only"),
    ],
)
def test_the_next_queue(priority: dict[str, int], served: dict[str, tuple[int, int]], expected: str) -> None:
    assert _next_queue(served, priority, served) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "c", "d", "e"]),
        st.tuples(st.integers(-2, 2), st.integers(0, 6), st.integers(1, 6)),
        min_size=1,
    )
)
def test_the_next_queue_is_mins_over_the_fraction_tuples(queues: dict[str, tuple[int, int, int]]) -> None:
    priority = {name: p for name, (p, _, _) in queues.items()}
    served = {name: (held, deserved) for name, (_, held, deserved) in queues.items()}
    expected = min(queues, key=lambda q: (-priority[q], Fraction(*served[q]), q))
    assert _next_queue(served, priority, served) == expected
