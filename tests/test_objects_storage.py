"""The converter on storage objects, PodDisruptionBudgets and the pod fields they depend on."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_objects import Obj, convert, k8s_node, k8s_pod
from vcsat.adapters.errors import InputError
from vcsat.model import NodeSelectorRequirement, NodeSelectorTerm
from vcsat.model.disruption import PodDisruptionBudget
from vcsat.model.selectors import LabelRequirement, label_selector
from vcsat.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass


def k8s(kind: str, api: str, name: str, namespace: str | None = None, **fields: Any) -> Obj:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata.update(fields.pop("metadata", {}))
    return {"apiVersion": api, "kind": kind, "metadata": metadata, **fields}


def test_claim_fields() -> None:
    claim = k8s(
        "PersistentVolumeClaim",
        "v1",
        "data",
        "ns",
        metadata={
            "annotations": {
                "pv.kubernetes.io/bind-completed": "yes",
                "volume.kubernetes.io/selected-node": "n1",
            },
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        },
        spec={
            "storageClassName": "fast",
            "volumeName": "pv1",
            "accessModes": ["ReadWriteOncePod"],
            "resources": {"requests": {"storage": "1.5k"}},
            "volumeMode": "Block",
            "selector": {"matchLabels": {"tier": "gold"}, "matchExpressions": [{"key": "x", "operator": "Exists"}]},
        },
        status={"phase": "Lost"},
    )
    assert convert(claim).claims == (
        PersistentVolumeClaim(
            namespace="ns",
            name="data",
            storage_class="fast",
            volume_name="pv1",
            bind_completed=True,
            access_modes=("ReadWriteOncePod",),
            request_bytes=1500,
            volume_mode="Block",
            selector=label_selector({"tier": "gold"}, [LabelRequirement(key="x", operator="Exists")]),
            lost=True,
            deleting=True,
            selected_node="n1",
        ),
    )


def test_beta_class_annotation_comes_first() -> None:
    claim = k8s(
        "PersistentVolumeClaim",
        "v1",
        "data",
        "ns",
        metadata={"annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
        spec={"storageClassName": "new"},
    )
    assert convert(claim).claims[0].storage_class == "old"


def test_volume_fields() -> None:
    volume = k8s(
        "PersistentVolume",
        "v1",
        "pv1",
        metadata={"labels": {"topology.kubernetes.io/zone": "z1"}},
        spec={
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
            "storageClassName": "local",
            "claimRef": {"namespace": "ns", "name": "data", "uid": "u"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}
                    ]
                }
            },
            "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"},
        },
        status={"phase": "Bound"},
    )
    assert convert(volume).volumes == (
        PersistentVolume(
            name="pv1",
            labels={"topology.kubernetes.io/zone": "z1"},
            storage_class="local",
            capacity_bytes=10 * 2**30,
            access_modes=("ReadWriteOnce", "ReadOnlyMany"),
            node_affinity=(
                NodeSelectorTerm(
                    match_expressions=(
                        NodeSelectorRequirement(key="kubernetes.io/hostname", operator="In", values=("n1",)),
                    )
                ),
            ),
            claim="ns/data",
            phase="Bound",
            csi_driver="ebs.csi.aws.com",
            csi_handle="vol-1",
        ),
    )


def test_volume_without_node_affinity_or_status() -> None:
    (volume,) = convert(k8s("PersistentVolume", "v1", "pv1", spec={"capacity": {"storage": "1Gi"}})).volumes
    assert volume.node_affinity is None and volume.phase == "Available" and volume.claim is None


def test_storage_class_and_csinode() -> None:
    objects = [
        k8s(
            "StorageClass",
            "storage.k8s.io/v1",
            "zonal",
            provisioner="ebs.csi.aws.com",
            volumeBindingMode="WaitForFirstConsumer",
            allowedTopologies=[
                {"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["z1", "z2"]}]}
            ],
        ),
        k8s("StorageClass", "storage.k8s.io/v1", "plain", provisioner="x"),
        k8s(
            "CSINode",
            "storage.k8s.io/v1",
            "n1",
            spec={"drivers": [{"name": "ebs", "nodeID": "i", "allocatable": {"count": 25}}, {"name": "nfs"}]},
        ),
    ]
    snap = convert(*objects)
    assert snap.storage_classes == (
        StorageClass(name="plain", provisioner="x", binding_mode="Immediate"),
        StorageClass(
            name="zonal",
            provisioner="ebs.csi.aws.com",
            binding_mode="WaitForFirstConsumer",
            allowed_topologies=(
                NodeSelectorTerm(
                    match_expressions=(
                        NodeSelectorRequirement(key="topology.kubernetes.io/zone", operator="In", values=("z1", "z2")),
                    )
                ),
            ),
        ),
    )
    assert snap.csinodes == (CSINode(name="n1", limits={"ebs": 25}),)


def test_disruption_budget() -> None:
    budget = k8s(
        "PodDisruptionBudget",
        "policy/v1",
        "pdb",
        "ns",
        spec={"selector": {"matchLabels": {"app": "db"}}, "minAvailable": 2},
        status={"disruptionsAllowed": 1},
    )
    assert convert(budget).disruption_budgets == (
        PodDisruptionBudget(namespace="ns", name="pdb", selector=label_selector({"app": "db"}), disruptions_allowed=1),
    )


def test_pod_labels_and_claims() -> None:
    raw = k8s_pod(
        "p1",
        metadata__labels={"app": "db"},
        spec__volumes=[
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
            {"name": "config", "configMap": {"name": "c"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        ],
    )
    (pod,) = convert(k8s_node(), raw).pods
    assert pod.labels == {"app": "db"}
    assert pod.claims == ("data-0", "p1-scratch")


BAD: list[tuple[Obj, str]] = [
    (
        k8s("PersistentVolumeClaim", "v1", "c", "ns", spec={"accessModes": ["ReadWriteSometimes"]}),
        "PersistentVolumeClaim ns/c: spec.accessModes[0]",
    ),
    (
        k8s("PersistentVolumeClaim", "v1", "c", "ns", spec={"resources": {"requests": {"storage": "lots"}}}),
        "spec.resources.requests.storage",
    ),
    (k8s("PersistentVolume", "v1", "v", spec={"volumeMode": "Tape"}), "PersistentVolume v: spec.volumeMode"),
    (k8s("PersistentVolume", "v1", "v", spec={"claimRef": {"namespace": "ns"}}), "spec.claimRef.name"),
    (k8s("StorageClass", "storage.k8s.io/v1", "s", volumeBindingMode="Later"), "StorageClass s: volumeBindingMode"),
    (
        k8s("CSINode", "storage.k8s.io/v1", "n1", spec={"drivers": [{"name": "d", "allocatable": {"count": -1}}]}),
        "CSINode n1: spec.drivers[0].allocatable.count",
    ),
    (
        k8s("PodDisruptionBudget", "policy/v1", "b", "ns", spec={"selector": {"matchExpressions": [{"key": "a"}]}}),
        "PodDisruptionBudget ns/b: spec.selector.matchExpressions[0].operator",
    ),
    (k8s_pod("p1", spec__volumes=[{"name": "d", "persistentVolumeClaim": {}}]), "spec.volumes[0]"),
]


@pytest.mark.parametrize(("raw", "where"), BAD, ids=[where for _, where in BAD])
def test_bad_storage_input_names_object_and_field(raw: Obj, where: str) -> None:
    with pytest.raises(InputError) as caught:
        convert(k8s_node(), raw)
    text = str(caught.value)
    assert where in text and "\n" not in text


def test_storage_objects_are_converted_once_while_unchanged() -> None:
    """The live scheduler's memo: the same raw objects give the very same model objects."""
    from vcsat.adapters.convert.reuse import ConversionMemo
    from vcsat.adapters.convert.snapshot import snapshot_from_objects

    raw = [
        k8s_node(),
        k8s("PersistentVolumeClaim", "v1", "data", "ns", spec={"accessModes": ["ReadWriteOnce"]}),
        k8s("PersistentVolume", "v1", "pv1", spec={"capacity": {"storage": "1Gi"}}),
        k8s("PodDisruptionBudget", "policy/v1", "pdb", "ns", spec={"selector": {"matchLabels": {"a": "b"}}}),
    ]
    memo = ConversionMemo()
    first = snapshot_from_objects(raw, memo=memo, strict=False)
    second = snapshot_from_objects(raw, memo=memo, strict=False)
    assert first.claims[0] is second.claims[0]
    assert first.volumes[0] is second.volumes[0]
    assert first.disruption_budgets[0] is second.disruption_budgets[0]
    changed = [*raw[:1], {**raw[1], "spec": {"accessModes": ["ReadWriteOncePod"]}}, *raw[2:]]
    third = snapshot_from_objects(changed, memo=memo, strict=False)
    assert third.claims[0].access_modes == ("ReadWriteOncePod",)
