"""What ``vcsat queue list|get`` shows of each queue's share: deserved against allocated, live.

The numbers come from the same places the scheduler's come from: the cluster's objects are read
into a snapshot (:func:`~vcsat.adapters.convert.snapshot.snapshot_from_objects`) and vcsat's fair-share
split (:func:`~vcsat.solver.shares.deserved.compute_fair_shares`) gives each queue its deserved
share and what its pods hold now (its whole subtree, as Volcano's proportion plugin counts a
parent). SHARE is the largest ratio of held to deserved over the resources, Volcano's share.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.kube.client import SCHEDULING_RESOURCES, ApiError, Kube
from vcsat.model import resources as res
from vcsat.solver.shares.deserved import compute_fair_shares

log = logging.getLogger("vcsat.cli")

_GI = 1 << 30
_MI = 1 << 20


@dataclass(frozen=True)
class QueueShareView:
    deserved: dict[str, int]
    allocated: dict[str, int]

    @property
    def share(self) -> Fraction | None:
        """max over resources of allocated / deserved; None when nothing is deserved or held."""
        ratios = [Fraction(self.allocated.get(r, 0), d) for r, d in self.deserved.items() if d > 0]
        if not ratios:
            return None
        return max(ratios)


def live_shares(kube: Kube, scheduler_name: str = "vcsat") -> dict[str, QueueShareView]:
    """Each queue's deserved share and allocation now; empty when the cluster cannot be read."""
    objects = []
    for resource in SCHEDULING_RESOURCES:
        try:
            items, _ = kube.list(resource)
        except ApiError as error:
            log.debug("not read for the shares", extra={"resource": resource.plural, "error": str(error)})
            continue
        for item in items:
            item.setdefault("kind", resource.kind)
            item.setdefault("apiVersion", resource.api_version)
        objects.extend(items)
    snapshot = snapshot_from_objects(objects, scheduler_name=scheduler_name, strict=False, source="the cluster")
    return {
        name: QueueShareView(
            deserved={r: v for r, v in share.deserved.items() if v},
            allocated={r: v for r, v in share.usage.items() if v},
        )
        for name, share in compute_fair_shares(snapshot).items()
    }


def format_amounts(amounts: Mapping[str, int]) -> str:
    """``cpu=8,memory=16Gi,nvidia.com/gpu=2`` from model amounts (millicores, bytes, units)."""
    return ",".join(f"{name}={format_amount(name, amounts[name])}" for name in sorted(amounts)) or "-"


def format_amount(name: str, amount: int) -> str:
    if name in res.MILLI_UNIT_RESOURCES:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if res.is_byte_resource(name):
        for unit, size in (("Gi", _GI), ("Mi", _MI)):
            if amount % size == 0 and amount >= size:
                return f"{amount // size}{unit}"
    return str(amount)


def format_share(share: Fraction | None) -> str:
    return "-" if share is None else f"{float(share):.2f}"
