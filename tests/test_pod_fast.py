"""The fast path of reading pods (``adapters/convert/pod_fast.py``) gives exactly what the reference
reading (``adapters/convert/pods.py``) gives: the same snapshot, or the same one-line error."""

from __future__ import annotations

import copy
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert import pods
from vcsat.adapters.convert import snapshot as snapshot_module
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError

_BASE: list[dict[str, Any]] = [
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "pods": "110", "nvidia.com/gpu": "4"}},
    },
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": 1}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100},
    *(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": namespace},
            "spec": {"minMember": 1, "queue": "q"},
        }
        for namespace in ("a", "b")
    ),
]

_SPECS: list[dict[str, Any]] = [
    {"schedulerName": "vcsat", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    {
        "schedulerName": "vcsat",
        "priorityClassName": "high",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}}}],
        "tolerations": [{"operator": "Exists"}],
    },
    {
        "containers": [{"name": "c"}],
        "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}],
    },
    {
        "schedulerName": "vcsat",
        "containers": [{"name": "c"}],
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "x"}},
                        "matchLabelKeys": ["job"],
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
    },
]

_TEXT = st.sampled_from(["", "a", "true", "0", "x/y"])


def _mostly(good: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` nine times in ten: pods that read well, and now and then one that does not."""
    return st.integers(0, 9).flatmap(lambda roll: odd if roll == 5 else good)


_ODD = st.one_of(st.none(), st.integers(-1, 2), st.booleans(), st.just([]), st.just({}), _TEXT)
_STRING_MAP = _mostly(
    st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {},
            optional={
                "job": st.sampled_from(["j1", "j2"]),
                "scheduling.k8s.io/group-name": st.just("g"),
                "volcano.sh/preemptable": st.sampled_from(["true", "0", "F"]),
                "volcano.sh/task-spec": st.just("worker"),
                "scheduling.volcano.sh/queue-name": st.just("q"),
                "vcsat.io/gpu-ids": st.sampled_from(["0", "0,1"]),
            },
        ),
    ),
    st.sampled_from(
        [
            {"k": 1},
            {"volcano.sh/preemptable": "maybe"},
            {"scheduling.k8s.io/group-name": "h"},
            {"vcsat.io/gpu-ids": "9"},
        ]
    ),
)


@st.composite
def _pod(draw: st.DrawFn, index: int) -> dict[str, Any]:
    spec = copy.deepcopy(draw(st.sampled_from(_SPECS)))
    node = draw(_mostly(st.sampled_from([None, "", "n1"]), st.sampled_from(["gone", 3])))
    if node is not None:
        spec["nodeName"] = node
    metadata: dict[str, Any] = {"name": f"p{index}", "namespace": draw(st.sampled_from(["a", "b"]))}
    for key, values in (
        ("labels", _STRING_MAP),
        ("annotations", _STRING_MAP),
        ("uid", _mostly(_TEXT, _ODD)),
        (
            "creationTimestamp",
            _mostly(
                st.sampled_from([None, "2025-06-01T08:00:00Z", "2025-06-01T09:00:00+01:00"]),
                st.sampled_from(["yesterday", 5]),
            ),
        ),
        ("deletionTimestamp", st.sampled_from([None, "2025-06-01T08:00:00Z"])),
    ):
        value = draw(values)
        if value is not None or draw(st.booleans()):
            metadata[key] = value
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    if draw(st.booleans()):
        pod["status"] = draw(
            _mostly(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "phase": _mostly(
                            st.sampled_from(["Pending", "Running", "Succeeded", "Failed", None]),
                            st.sampled_from(["Done", 1]),
                        ),
                        "nominatedNodeName": _mostly(st.sampled_from(["", "n1", None]), st.just(2)),
                    },
                ),
                st.just("Running"),
            )
        )
    return pod


def _convert(objects: list[dict[str, Any]], strict: bool, reference: bool) -> Any:
    objects = copy.deepcopy(objects)
    patch = (
        mock.patch.object(snapshot_module, "read_pod", pods.read_pod)
        if reference
        else mock.patch.object(snapshot_module, "read_pod", snapshot_module.read_pod)
    )
    with patch:
        try:
            return snapshot_from_objects(objects, source="f.json", strict=strict).model_dump()
        except InputError as error:
            return ("error", str(error))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(*(_pod(i) for i in range(n)))), st.booleans())
def test_fast_path_reads_pods_as_the_reference_does(pod_objects: tuple[dict[str, Any], ...], strict: bool) -> None:
    objects = _BASE + list(pod_objects)
    assert _convert(objects, strict, reference=False) == _convert(objects, strict, reference=True)


def _one(spec: dict[str, Any], name: str, namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": copy.deepcopy(spec)}


@pytest.mark.parametrize(
    ("spec", "first", "second", "field", "expected"),
    [
        # One spec in two namespaces is read once; each pod keeps its own namespace.
        (_SPECS[0], ("p1", "a", None), ("p2", "b", None), "namespace", ("a", "b")),
        # A generic ephemeral volume's claim is named after its own pod, in its own namespace.
        (_SPECS[2], ("p1", "a", None), ("p2", "b", None), "claims", (("p1-scratch",), ("p2-scratch",))),
        # matchLabelKeys read each pod's own labels: one spec, two selectors.
        (
            _SPECS[3],
            ("p1", "a", {"job": "j1"}),
            ("p2", "a", {"job": "j2"}),
            "pod_anti_affinity",
            ("j1", "j2"),
        ),
    ],
)
def test_pods_of_one_spec_keep_their_own_fields(
    spec: dict[str, Any], first: tuple[Any, ...], second: tuple[Any, ...], field: str, expected: tuple[Any, ...]
) -> None:
    snapshot = snapshot_from_objects([*_BASE, _one(spec, *first), _one(spec, *second)], strict=True)
    got = tuple(getattr(pod, field) for pod in snapshot.pods)
    if field == "pod_anti_affinity":
        got = tuple(
            next(r.values[0] for r in rules.required[0].label_selector.requirements if r.key == "job") for rules in got
        )
    assert got == expected
