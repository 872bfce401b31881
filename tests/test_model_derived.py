"""Values derived from a frozen model's fields (``model/derived.py``): computed once, kept, and
computed again on a copy whose fields changed; equality and serialisation see fields only."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vcsat.model import Node, Pod, PodGroup

PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown"]


@pytest.mark.parametrize(
    ("update", "bound", "pending", "finished"),
    [
        ({}, False, True, False),
        ({"node_name": "n1"}, True, False, False),
        ({"node_name": "n1", "phase": "Succeeded"}, False, False, True),
        ({"phase": "Failed"}, False, False, True),
        ({"managed": False}, False, False, False),
    ],
)
def test_a_copy_with_changed_fields_derives_again(
    update: dict[str, object], bound: bool, pending: bool, finished: bool
) -> None:
    pod = Pod(namespace="ns", name="p", requests={"nvidia.com/gpu": 2})
    assert (pod.bound, pod.pending, pod.finished, pod.key, pod.gpus) == (False, True, False, "ns/p", 2)
    copied = pod.model_copy(update=update)
    assert (copied.bound, copied.pending, copied.finished) == (bound, pending, finished)
    assert (pod.bound, pod.pending, pod.finished) == (False, True, False)
    renamed = pod.model_copy(update={"name": "q", "requests": {}})
    assert (renamed.key, renamed.gpus) == ("ns/q", 0)


def test_derived_values_are_no_fields() -> None:
    pod = Pod(namespace="ns", name="p", node_name="n")
    fresh = Pod(namespace="ns", name="p", node_name="n")
    assert pod.key == "ns/p" and pod.bound
    assert pod == fresh
    assert pod.model_dump() == fresh.model_dump()
    assert "key" not in pod.model_dump_json()
    assert pickle.loads(pickle.dumps(pod)) == fresh
    with pytest.raises(ValueError, match="frozen"):
        pod.key = "other"  # type: ignore[misc]
    group = PodGroup(namespace="ns", name="g")
    assert group.key == "ns/g" and group.model_copy(update={"name": "h"}).key == "ns/h"
    node = Node(name="n", allocatable={"nvidia.com/gpu": 8})
    assert node.gpus == 8 and node.model_copy(update={"allocatable": {}}).gpus == 0


@given(
    st.sampled_from(PHASES),
    st.sampled_from([None, "n1"]),
    st.booleans(),
    st.booleans(),
    st.sampled_from(PHASES),
    st.sampled_from([None, "n2"]),
)
def test_derived_values_match_their_definition_after_any_copy(
    phase: str, node: str | None, managed: bool, terminating: bool, new_phase: str, new_node: str | None
) -> None:
    pod = Pod(namespace="ns", name="p", phase=phase, node_name=node, managed=managed, terminating=terminating)
    for value in (pod, pod.model_copy(update={"phase": new_phase, "node_name": new_node})):
        _ = (value.bound, value.pending, value.finished, value.gang_ready)  # computed and kept
        finished = value.phase in ("Succeeded", "Failed")
        assert value.finished == finished
        assert value.bound == (value.node_name is not None and not finished)
        assert value.gang_ready == (value.node_name is not None and value.phase != "Failed")
        assert value.pending == (value.managed and value.node_name is None and not finished and not value.terminating)
