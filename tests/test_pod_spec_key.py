"""Pods that share one spec share one reading of it (adapters/convert/pods.py's spec key), yet
each keeps the fields that are its own: namespace, claims named after the pod, and the selectors
matchLabelKeys build from its own labels."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from vcsat.adapters.convert.snapshot import snapshot_from_objects

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
