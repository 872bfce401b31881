"""The order a topology gang with pods running tries domains in: nearest its running pods first.

The greedy tries a topology gang on one node, then on each domain of the finest tier, then of
coarser ones (:func:`vcsat.solver.greedy.fit_topology_first`). For a gang whose PodGroup has pods
running, the locality levels count the domains those pods are in as spanned already
(``Problem.running_domains``), so a trial there costs less than the same trial elsewhere. Each
trial is ranked by the new domains it would span at each tier, the coarsest first, as the levels
rank them: a rack of the running pods' spine before any rack of another spine, the running rack
first of all. At tiers finer than a trial's own it counts one new domain each: a trial on a
spine comes after the trials on its racks, so it is made only once the running rack alone has
failed, and then spans some other rack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from vcsat.solver.problem import Domains


def nearest_first(
    domains: Domains,
    near: Mapping[int, frozenset[str]],
    head: Sequence[list[int]],
    tiers: Sequence[tuple[int, NDArray[np.int64]]],
    tier_names: Mapping[int, list[str]],
    tier_nodes: Mapping[int, list[list[int]]],
) -> list[list[int]]:
    """``head`` (one-node trials) and the domains at ``tiers``' positions (of ``tier_names``), as
    node lists, cheapest first; ties keep the greedy's own order (head, then tier by tier)."""
    coarsest_first = tuple(reversed(domains.tiers))
    ranked: list[tuple[tuple[int, ...], int, int, list[int]]] = []
    for i, nodes in enumerate(head):
        of_node = domains.of_node[nodes[0]]
        cost = tuple(int(of_node[upper] not in near.get(upper, ())) for upper in coarsest_first)
        ranked.append((cost, -1, i, nodes))
    for order, (tier, positions) in enumerate(tiers):
        names = tier_names.get(tier, [])
        lists = tier_nodes.get(tier, [])
        for position in positions.tolist():
            name = names[position]
            cost = tuple(
                1 if upper < tier else int(domains.parent(tier, name, upper) not in near.get(upper, ()))
                for upper in coarsest_first
            )
            ranked.append((cost, order, position, lists[position]))
    ranked.sort(key=lambda item: item[:2])  # stable: within a (cost, tier), the greedy's order
    return [nodes for *_, nodes in ranked]
