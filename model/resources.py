"""Resource names and integer solver units, in one place.

Kubernetes quantities are decimals with suffixes; CP-SAT wants integers. Every resource gets one
canonical integer unit here, and every conversion rounds in the safe direction: a request rounds
up, an allocatable amount rounds down, so a decision that fits in solver units fits in the cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
GPU = "nvidia.com/gpu"
GPU_MILLI = "vcsat.io/gpu-milli"
"""Thousandths of one GPU (GPU sharing): not a node resource but a share of one device."""

MILLI_UNIT_RESOURCES = frozenset({CPU})
"""Resources counted in thousandths of the Kubernetes unit (cpu: millicores)."""

MIB = 1024 * 1024
MIB_UNIT_RESOURCES = frozenset({MEMORY, EPHEMERAL_STORAGE})
"""Byte resources counted in MiB; hugepages-* are treated the same way (see :func:`unit_of`)."""

Resources = Mapping[str, int]
"""A resource vector in solver units. Missing names mean zero."""


def is_byte_resource(name: str) -> bool:
    return name in MIB_UNIT_RESOURCES or name.startswith("hugepages-")


def unit_of(name: str) -> str:
    """Human name of the solver unit of a resource, for messages and tables."""
    if name in MILLI_UNIT_RESOURCES:
        return "m"
    if is_byte_resource(name):
        return "Mi"
    return ""


def add(a: Resources, b: Resources) -> dict[str, int]:
    out = dict(a)
    for name, amount in b.items():
        out[name] = out.get(name, 0) + amount
    return out


def sub(a: Resources, b: Resources) -> dict[str, int]:
    out = dict(a)
    for name, amount in b.items():
        out[name] = out.get(name, 0) - amount
    return out


def total(vectors: Iterable[Resources]) -> dict[str, int]:
    out: dict[str, int] = {}
    for vector in vectors:
        for name, amount in vector.items():
            out[name] = out.get(name, 0) + amount
    return out


def scale(a: Resources, factor: int) -> dict[str, int]:
    return {name: amount * factor for name, amount in a.items()}


def fits(request: Resources, free: Resources) -> bool:
    """True when every requested amount is within the free amount (absent means zero free)."""
    return all(amount <= free.get(name, 0) for name, amount in request.items() if amount > 0)


def shortfall(request: Resources, free: Resources) -> dict[str, int]:
    """The amounts by which a request exceeds what is free, per resource; empty when it fits."""
    return {
        name: amount - free.get(name, 0)
        for name, amount in sorted(request.items())
        if amount > free.get(name, 0)
    }


def format_amount(name: str, amount: int) -> str:
    """An amount in solver units as a person reads it (``4 nvidia.com/gpu``, ``1500m cpu``)."""
    return f"{amount}{unit_of(name)} {name}"


def format_vector(vector: Resources) -> str:
    return ", ".join(format_amount(name, amount) for name, amount in sorted(vector.items()) if amount)
