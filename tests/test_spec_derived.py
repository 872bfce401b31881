"""Pods read alike start with their spec's derived values (adapters/convert/pods.py): every derived
value of every converted pod equals the one its own fields give, whatever its own fields (bound,
pending, finished, terminating) and whichever pod of the spec was read first."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.model import Pod
from vcsat.model.derived import derived

_BASE: list[dict[str, Any]] = [
    # GPUs enough for every pod a mix below may bind to the node (12 of 2 GPUs each): a strict read
    # refuses a node holding more GPUs than it has, which is not what these tests are about.
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "64", "pods": "110", "nvidia.com/gpu": "32"}},
    },
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": 1}},
]

_SPECS: list[dict[str, Any]] = [
    {"schedulerName": "vcsat", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    {"schedulerName": "vcsat", "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "2"}}}]},
    {"schedulerName": "vcsat", "containers": [{"name": "c", "resources": {"requests": {"vcsat.io/gpu-milli": "300"}}}]},
    {"schedulerName": "vcsat", "schedulingGates": [{"name": "wait"}], "containers": [{"name": "c"}]},
    {"schedulerName": "vcsat", "resourceClaims": [{"name": "gpu"}], "containers": [{"name": "c"}]},
    {"schedulerName": "other", "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]},
]

_STATES: list[dict[str, Any]] = [
    {},  # pending
    {"node": "n1", "phase": "Running"},
    {"node": "n1", "phase": "Succeeded"},
    {"node": "n1", "phase": "Failed"},
    {"phase": "Failed"},
    {"terminating": True},
]
"""A pod's own fields: where it runs, its phase, and whether it is being deleted."""

_DERIVED = sorted(name for name, value in vars(Pod).items() if isinstance(value, derived))


def _pod(spec: dict[str, Any], index: int, state: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": f"p{index}", "namespace": "ns", "uid": f"u{index}"}
    if state.get("terminating"):
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    body = copy.deepcopy(spec)
    if "node" in state:
        body["nodeName"] = state["node"]
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": body}
    if "phase" in state:
        obj["status"] = {"phase": state["phase"]}
    return obj


def _fresh(pod: Pod, name: str) -> Any:
    """The derived value computed from the pod's fields alone, on a copy that has none kept."""
    return getattr(Pod.model_validate(pod.model_dump()), name)


def _check(spec: dict[str, Any], states: list[dict[str, Any]]) -> None:
    objects = [*_BASE, *(_pod(spec, i, state) for i, state in enumerate(states))]
    snapshot = snapshot_from_objects(objects, strict=True)
    assert len(snapshot.pods) == len(states)
    for pod in snapshot.pods:
        for name in _DERIVED:
            assert getattr(pod, name) == _fresh(pod, name), (pod.name, name)


def test_every_derived_value_is_checked() -> None:
    # The spec's values are a subset of these; a new derived value joins the check by itself.
    assert {"gpus", "gpu_milli", "held", "pending", "bound", "finished", "gang_ready", "key"} <= set(_DERIVED)


@pytest.mark.parametrize("spec", _SPECS, ids=["cpu", "gpus", "share", "gated", "claims", "other-scheduler"])
@pytest.mark.parametrize("first", range(len(_STATES)))
def test_pods_of_one_spec_derive_from_their_own_fields(spec: dict[str, Any], first: int) -> None:
    # The pod read first (whose values the others start with) in each state in turn.
    _check(spec, [_STATES[first], *(s for i, s in enumerate(_STATES) if i != first)])


def test_pods_read_alike_start_with_the_spec_values() -> None:
    snapshot = snapshot_from_objects([*_BASE, *(_pod(_SPECS[1], i, {}) for i in range(3))], strict=True)
    # Kept from the first reading, not made by each pod: there before any read.
    for pod in snapshot.pods[1:]:
        assert pod.__dict__["gpus"] == 2 and pod.__dict__["held"] is False


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_SPECS) - 1), st.integers(0, len(_STATES) - 1)), min_size=1, max_size=12))
def test_any_mix_of_specs_and_states(picks: list[tuple[int, int]]) -> None:
    objects = [*_BASE, *(_pod(_SPECS[s], i, _STATES[t]) for i, (s, t) in enumerate(picks))]
    snapshot = snapshot_from_objects(objects, strict=True)
    for pod in snapshot.pods:
        for name in _DERIVED:
            assert getattr(pod, name) == _fresh(pod, name), (pod.name, name)


def test_a_changed_copy_derives_again() -> None:
    snapshot = snapshot_from_objects([*_BASE, *(_pod(_SPECS[1], i, {}) for i in range(2))], strict=True)
    pod = snapshot.pods[1]
    changed = pod.model_copy(update={"requests": {"nvidia.com/gpu": 4, "pods": 1}})
    assert changed.gpus == 4 and pod.gpus == 2
    for a, b in itertools.pairwise(snapshot.pods):
        assert a.gpus == b.gpus


def test_podgroups_read_alike_have_their_own_key() -> None:
    groups = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"minMember": 1, "queue": "q"},
        }
        for namespace, name in (("a", "g"), ("b", "g"), ("a", "h"))
    ]
    snapshot = snapshot_from_objects([*_BASE, *groups], strict=True)
    assert [group.key for group in snapshot.podgroups] == ["a/g", "a/h", "b/g"]
    for group in snapshot.podgroups:
        assert group.key == type(group).model_validate(group.model_dump()).key
