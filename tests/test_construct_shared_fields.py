"""Converted nodes, pods and PodGroups share one set of field names per model type.

:func:`vcsat.adapters.convert.reader.construct_from` gives every instance made with all its fields
the same ``__pydantic_fields_set__`` (one set per model type instead of one per object). That is
right only while nothing adds to an instance's set in place: these cases copy, update, assign,
pickle and compare converted values and check that no instance's set, and no other instance,
changes.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.test_objects import k8s_node, k8s_pod, k8s_podgroup, k8s_queue
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.model import Snapshot
from vcsat.model.cluster import Node, Pod, PodGroup


def _objects() -> list[dict[str, Any]]:
    return [
        k8s_queue("default"),
        k8s_node("n1", gpus=8),
        k8s_node("n2", gpus=8),
        k8s_podgroup("g", minMember=2),
        k8s_podgroup("h", minMember=1),
        *(k8s_pod(f"p{i}", gpus=1, group="g", node="n1" if i < 2 else None) for i in range(4)),
        k8s_pod("q", cpu="2", group="h"),
    ]


def _snapshot() -> Snapshot:
    return snapshot_from_objects(_objects())


def _values(snapshot: Snapshot) -> list[Node | Pod | PodGroup]:
    return [*snapshot.nodes, *snapshot.pods, *snapshot.podgroups]


def test_every_converted_value_lists_all_its_fields_in_one_set_per_type() -> None:
    values = _values(_snapshot())
    assert {type(value) for value in values} == {Node, Pod, PodGroup}
    for value in values:
        assert value.model_fields_set == set(type(value).__pydantic_fields__)
    # Bound GPU pods without indices are copies given their indices (a set of their own).
    made = [value for value in values if not (type(value) is Pod and value.node_name is not None)]
    for kind in (Node, Pod, PodGroup):
        sets = {id(value.__pydantic_fields_set__) for value in made if type(value) is kind}
        assert len(sets) == 1


UPDATES = [
    pytest.param(0, {"gpu_ids": (3,)}, id="gpu-ids"),
    pytest.param(2, {"node_name": "n2"}, id="node"),
    pytest.param(4, {"priority": 7, "labels": {"a": "b"}}, id="two-fields"),
]


@pytest.mark.parametrize(("index", "update"), UPDATES)
def test_a_copy_with_fields_changed_leaves_every_other_value_alone(index: int, update: dict[str, Any]) -> None:
    snapshot = _snapshot()
    before = _snapshot()
    pod = snapshot.pods[index]
    copied = pod.model_copy(update=update)
    assert copied.__pydantic_fields_set__ is not pod.__pydantic_fields_set__
    for name, value in update.items():
        assert getattr(copied, name) == value
    assert snapshot == before  # the pods, their field sets and everything else as converted
    for value in _values(snapshot):
        assert value.model_fields_set == set(type(value).__pydantic_fields__)


def test_assignment_is_refused_and_changes_no_set() -> None:
    snapshot = _snapshot()
    with pytest.raises(ValidationError):
        snapshot.pods[0].priority = 5  # type: ignore[misc]
    with pytest.raises(ValidationError):
        snapshot.nodes[0].not_a_field = 1  # type: ignore[attr-defined]
    for value in _values(snapshot):
        assert value.model_fields_set == set(type(value).__pydantic_fields__)


def test_a_converted_value_equals_a_validated_one_and_survives_pickling() -> None:
    snapshot = _snapshot()
    for value in _values(snapshot):
        fields = {name: getattr(value, name) for name in type(value).__pydantic_fields__}
        validated = type(value).model_validate(fields)
        assert validated == value
        assert validated.model_dump_json() == value.model_dump_json()
        assert validated.model_dump(exclude_unset=True) == value.model_dump(exclude_unset=True)
    again = pickle.loads(pickle.dumps(snapshot))
    assert again == snapshot
    assert again.pods[0].__pydantic_fields_set__ is not snapshot.pods[0].__pydantic_fields_set__


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=4), st.sampled_from(["priority", "node_name", "gpu_ids", "task"])),
        max_size=6,
    )
)
def test_any_copies_leave_the_converted_snapshot_as_a_fresh_conversion(changes: list[tuple[int, str]]) -> None:
    snapshot = _snapshot()
    replacement = {"priority": 9, "node_name": "n2", "gpu_ids": (5,), "task": "t"}
    copies = [snapshot.pods[index].model_copy(update={field: replacement[field]}) for index, field in changes]
    for (_, field), copied in zip(changes, copies, strict=True):
        assert getattr(copied, field) == replacement[field]
        assert copied.model_fields_set == set(Pod.__pydantic_fields__)
    fresh = _snapshot()
    assert snapshot == fresh
    assert snapshot.model_dump_json() == fresh.model_dump_json()
