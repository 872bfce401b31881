"""Builders for storage objects and disruption budgets, in the style of ``tests/builders.py``.

Sizes are Kubernetes quantities (``"10Gi"``); node affinity and allowed topologies are the
``builders.term`` strings (``"zone in (a)"``)::

    snap = snapshot(
        nodes=[node("a"), node("b")],
        pods=[pod("ns/p", claims=["data"])],
        claims=[pvc("ns/data", volume="pv-b")],
        volumes=[pv("pv-b", node_affinity=["kubernetes.io/hostname in (b)"], claim="ns/data")],
    )
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from tests.builders import split, term
from vcsat.model.disruption import PodDisruptionBudget
from vcsat.model.quantity import parse_quantity
from vcsat.model.selectors import LabelRequirement, label_selector
from vcsat.model.storage import BindingMode, CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass

RWO = "ReadWriteOnce"
RWOP = "ReadWriteOncePod"
RWX = "ReadWriteMany"


def size(text: str | int) -> int:
    value = parse_quantity(text)
    return int(value) if value == int(value) else int(value) + 1


def pvc(
    key: str,
    request: str | int = "1Gi",
    *,
    storage_class: str = "",
    volume: str = "",
    bound: bool | None = None,
    modes: Sequence[str] = (RWO,),
    selector: Mapping[str, str] | None = None,
    lost: bool = False,
    deleting: bool = False,
    selected_node: str | None = None,
) -> PersistentVolumeClaim:
    """A claim; ``volume`` names its PV and makes it fully bound unless ``bound=False``."""
    namespace, name = split(key)
    return PersistentVolumeClaim(
        namespace=namespace,
        name=name,
        storage_class=storage_class,
        volume_name=volume,
        bind_completed=bool(volume) if bound is None else bound,
        access_modes=tuple(modes),
        request_bytes=size(request),
        selector=None if selector is None else label_selector(selector),
        lost=lost,
        deleting=deleting,
        selected_node=selected_node,
    )


def pv(
    name: str,
    capacity: str | int = "1Gi",
    *,
    storage_class: str = "",
    node_affinity: Iterable[str] | None = None,
    claim: str | None = None,
    modes: Sequence[str] = (RWO,),
    labels: Mapping[str, str] | None = None,
    phase: str | None = None,
    csi: tuple[str, str] | None = None,
) -> PersistentVolume:
    """A volume; ``node_affinity`` is one term per string; ``csi`` is (driver, handle)."""
    return PersistentVolume(
        name=name,
        labels=dict(labels or {}),
        storage_class=storage_class,
        capacity_bytes=size(capacity),
        access_modes=tuple(modes),
        node_affinity=None if node_affinity is None else tuple(term(t) for t in node_affinity),
        claim=claim,
        phase=phase or ("Bound" if claim else "Available"),
        csi_driver=csi[0] if csi else "",
        csi_handle=csi[1] if csi else "",
    )


def storage_class(
    name: str,
    *,
    provisioner: str = "csi.example.com",
    mode: BindingMode = "WaitForFirstConsumer",
    topologies: Iterable[str] = (),
) -> StorageClass:
    return StorageClass(
        name=name,
        provisioner=provisioner,
        binding_mode=mode,
        allowed_topologies=tuple(term(t) for t in topologies),
    )


def csinode(name: str, **limits: int) -> CSINode:
    """``csinode("a", ebs=2)``: driver names with dots are passed as ``limits={...}`` instead."""
    return CSINode(name=name, limits=dict(limits))


def csinode_limits(name: str, limits: Mapping[str, int]) -> CSINode:
    return CSINode(name=name, limits=dict(limits))


def pdb(
    key: str,
    allowed: int,
    labels: Mapping[str, str] | None = None,
    *,
    expressions: Iterable[LabelRequirement] = (),
) -> PodDisruptionBudget:
    namespace, name = split(key)
    selector = label_selector(labels, list(expressions))
    return PodDisruptionBudget(namespace=namespace, name=name, selector=selector, disruptions_allowed=allowed)
