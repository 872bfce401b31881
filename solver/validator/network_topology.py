"""The validator's reading of Volcano's hard ``networkTopology``: a PodGroup with ``mode: hard``
places its pods of one cycle within one HyperNode of its highest allowed tier.

Read from the PodGroup's spec and the HyperNodes alone: the tier is the highest tier that has
HyperNodes and is not above ``highestTierAllowed`` (the lowest tier when none is, or when it is
unset), and the pods this decision binds or nominates for the group, with the group's pods that
run now and stay, must all lie in one HyperNode of that tier, nodes outside every HyperNode of the
tier counting as one place. Nominated pods count too: room freed in two racks for a rack-bound
gang is room it never runs in. Running pods count because the group's pods run as one job: a
replacement pod or an elastic job's extra pods join the HyperNode the others are in (Volcano's
allocated HyperNode), never another.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from typing import Final

from vcsat.model import PodGroup, Snapshot
from vcsat.model.hypernodes import resolve_hypernodes

RULE: Final = "NetworkTopologyHard"


def hard_tier(group: PodGroup, tiers: tuple[int, ...]) -> int | None:
    """The tier a hard ``networkTopology`` keeps ``group`` within (None: not hard, or no tiers)."""
    topology = group.network_topology
    if topology is None or topology.mode != "hard" or not tiers:
        return None
    allowed = topology.highest_tier_allowed
    inside = [tier for tier in tiers if allowed is not None and tier <= allowed]
    return inside[-1] if inside else tiers[0]


def topology_violations(
    snapshot: Snapshot, placed: Iterable[tuple[str, str]], leaving: AbstractSet[str] = frozenset()
) -> list[tuple[str, str]]:
    """Per PodGroup whose placed pods (``(group key, node name)`` pairs) and running pods (bound,
    not finished or terminating, not in ``leaving``: evicted by the decision) span more than one
    HyperNode of its hard tier: the group and why."""
    if not snapshot.hypernodes:
        return []
    by_group: dict[str, set[str]] = {}
    for key, node in placed:
        by_group.setdefault(key, set()).add(node)
    tree = None
    out: list[tuple[str, str]] = []
    for key, nodes in sorted(by_group.items()):
        podgroup = snapshot.podgroup_by_key.get(key)
        if podgroup is None or podgroup.network_topology is None:
            continue
        running = {
            pod.node_name
            for pod in snapshot.pods_of_group.get(key, ())
            if pod.node_name is not None
            and pod.phase not in ("Succeeded", "Failed")
            and not pod.terminating
            and pod.key not in leaving
            and pod.node_name in snapshot.node_by_name
        }
        nodes = nodes | running
        if len(nodes) < 2:
            continue
        if tree is None:
            tree = resolve_hypernodes(snapshot.hypernodes, snapshot.nodes)
        tier = hard_tier(podgroup, tree.tiers)
        if tier is None:
            continue
        places = {tree.domain_of(node, tier) for node in nodes}
        if len(places) > 1:
            named = ", ".join(sorted(place or "(no HyperNode)" for place in places))
            what = "its pods placed this cycle and its running pods" if running else "its pods placed this cycle"
            out.append((key, f"hard networkTopology: {what} span tier-{tier} domains {named}"))
    return out
