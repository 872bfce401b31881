"""Resource names and the exact integer amounts the model holds, in one place.

Kubernetes quantities are decimals with suffixes; the model wants integers that compare exactly as
Kubernetes compares them. kube-scheduler's NodeResourcesFit turns every quantity into an integer
once: cpu by ``MilliValue()`` (millicores), every other resource by ``Value()`` (whole units: bytes
for memory, ephemeral-storage and hugepages-*, counts for the rest), both rounding a fraction up,
and then only adds and compares those integers. The model holds exactly those integers
(:func:`vcsat.model.quantity.nanos_to_amount`), so a set of pods fits a node here if and only if it
fits there: no unit rounding loses or invents room (contract §1).

Byte amounts are large (a node's memory is some 10¹¹ bytes); the solver keeps CP-SAT's numbers
small by dividing each resource by a common divisor of the amounts it compares
(:mod:`vcsat.solver.units`), which is exact. Messages print amounts as Kubernetes quantities
(:func:`format_amount`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

# Final: compiled code (the compiled build, docs/compiled-build.md) then uses each name's value where
# it is read, and no loop of it reads the name off this module per pod or per resource.
CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
PODS: Final = "pods"
GPU: Final = "nvidia.com/gpu"
GPU_MILLI: Final = "vcsat.io/gpu-milli"
"""Thousandths of one GPU (GPU sharing): not a node resource but a share of one device."""

MILLI_UNIT_RESOURCES: Final = frozenset({CPU})
"""Resources counted in thousandths of the Kubernetes unit (cpu: millicores)."""

KI: Final = 1024
MIB: Final = 1024 * 1024
BYTE_RESOURCES: Final = frozenset({MEMORY, EPHEMERAL_STORAGE})
"""Resources counted in bytes; hugepages-* are too (see :func:`is_byte_resource`)."""

Resources = Mapping[str, int]
"""A resource vector in exact model units (cpu millicores, bytes, counts). Missing names mean zero."""


def is_byte_resource(name: str) -> bool:
    return name in BYTE_RESOURCES or name.startswith("hugepages-")


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
    return {name: amount - free.get(name, 0) for name, amount in sorted(request.items()) if amount > free.get(name, 0)}


def format_quantity(name: str, amount: int) -> str:
    """An amount as the Kubernetes quantity a person would write (``1500m``, ``2048Mi``, ``4G``).

    cpu keeps millicores; bytes print in MiB when they are whole MiB, else in the shortest exact
    spelling (``1G``, ``1000Ki``, ``1000001``); counts print plain. The text is exact: parsing it
    back gives the same amount.
    """
    if name in MILLI_UNIT_RESOURCES:
        return f"{amount}m"
    if not is_byte_resource(name) or amount == 0:
        return str(amount)
    if amount % MIB == 0:
        return f"{amount // MIB}Mi"
    spellings = [str(amount)]
    for suffix, size in (("Ki", KI), ("k", 10**3), ("M", 10**6), ("G", 10**9), ("T", 10**12)):
        if amount % size == 0:
            spellings.append(f"{amount // size}{suffix}")
    return min(spellings, key=len)


def format_amount(name: str, amount: int) -> str:
    """An amount as a person reads it (``4 nvidia.com/gpu``, ``1500m cpu``, ``1G memory``)."""
    return f"{format_quantity(name, amount)} {name}"


def format_vector(vector: Resources) -> str:
    return ", ".join(format_amount(name, amount) for name, amount in sorted(vector.items()) if amount)
