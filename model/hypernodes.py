"""The network between nodes: Volcano HyperNodes resolved into a tree of domains per tier.

A gang spread over nodes talks over the data-centre network, and the higher the switch tier its
traffic must climb, the slower it runs. Volcano describes that network with HyperNodes
(``topology.volcano.sh/v1alpha1``): each has a ``tier`` (1 is the lowest, e.g. a rack's leaf
switch; 2 the spine above; and so on) and members, which are nodes or lower HyperNodes. This
module resolves them once per snapshot into a :class:`DomainTree`: for each node and tier the one
HyperNode containing it, each HyperNode's nodes, and a bandwidth per tier to price a span with.
Tier 0 stands for "within one node" (as Volcano's topology discovery numbers the node level); its
bandwidth is the node's own GPU interconnect (:mod:`vcsat.model.gpu_topology`), not a tier here.

Membership follows Volcano's scheduler (``pkg/scheduler/api/hyper_node_info.go``, ``GetMembers``):

- ``exactMatch``: the node of that name (a name no node has matches nothing, as a node may join
  later);
- ``regexMatch``: every node whose name the pattern matches *anywhere*: Volcano calls Go's
  ``regexp.MatchString``, an unanchored search, so ``rack1-`` matches ``rack1-node3`` and write
  ``^...$`` for a full match. Here Python's ``re.search``, which agrees for the RE2 syntax such
  patterns use;
- ``labelMatch``: every node carrying all the given labels; an empty selector matches nothing;
- a HyperNode member is named by ``exactMatch`` only (Volcano ignores other selectors there).

Volcano logs and skips what it cannot build; a scheduler that prices by the tree must not guess,
so a bad graph is a ``ValueError`` with the reason (the converter names the object): an unknown
member HyperNode, a HyperNode that is a member of two, a cycle, a member whose tier is not below
its parent's, a node in two HyperNodes of one tier, or a node whose domains do not nest.

Tier bandwidths (GB/s per direction per node, overridable): tier 1 (leaf/rack) 50 GB/s, one
400 Gb/s NIC per node at line rate; tier 2 (spine) 25 GB/s, the same behind 2:1 oversubscription;
every further tier halves again. They are defaults for pricing, not measurements of any cluster.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from types import MappingProxyType

from vcsat.model.cluster import HyperNode, HyperNodeMember, Node

NODE_TIER = 0
"""A span within one node."""

DEFAULT_TIER_BANDWIDTH: Mapping[int, float] = MappingProxyType({1: 50.0, 2: 25.0})
"""GB/s per tier; tiers above the highest listed halve per tier (:func:`default_tier_bandwidth`)."""


def default_tier_bandwidth(tier: int) -> float:
    if tier < 1:
        raise ValueError(f"tier {tier}: HyperNode tiers start at 1 (tier 0 is one node)")
    if tier in DEFAULT_TIER_BANDWIDTH:
        return DEFAULT_TIER_BANDWIDTH[tier]
    top = max(DEFAULT_TIER_BANDWIDTH)
    return DEFAULT_TIER_BANDWIDTH[top] / 2.0 ** (tier - top)


@dataclass(frozen=True)
class DomainTree:
    """HyperNodes resolved against the snapshot's nodes. Build it with :func:`resolve_hypernodes`."""

    tiers: tuple[int, ...]
    """The tiers that have HyperNodes, ascending."""
    tier_of: Mapping[str, int]
    """Per HyperNode, its tier."""
    parent: Mapping[str, str | None]
    """Per HyperNode, the HyperNode it is a member of (None at the top)."""
    nodes_of: Mapping[str, frozenset[str]]
    """Per HyperNode, the nodes inside it, through member HyperNodes too."""
    domains: Mapping[str, Mapping[int, str]]
    """Per node, per tier, the HyperNode containing it (nodes in no HyperNode are absent)."""
    bandwidth: Mapping[int, float]
    """GB/s per tier in :attr:`tiers`, defaults overridden by the caller's."""

    def domain_of(self, node: str, tier: int) -> str | None:
        """The HyperNode of this tier containing the node, or None (no HyperNode of that tier
        holds it: the tier is skipped on its path, or the node is outside every HyperNode)."""
        return self.domains.get(node, {}).get(tier)

    def hypernodes_of_tier(self, tier: int) -> tuple[str, ...]:
        return tuple(sorted(name for name, t in self.tier_of.items() if t == tier))

    def span_tier(self, nodes: Iterable[str]) -> int | None:
        """The lowest tier whose one HyperNode holds all these nodes: :data:`NODE_TIER` for a
        single node, None when no HyperNode holds them all."""
        names = set(nodes)
        if len(names) <= 1:
            return NODE_TIER
        for tier in self.tiers:
            found = {self.domain_of(name, tier) for name in names}
            if len(found) == 1 and None not in found:
                return tier
        return None

    def tier_bandwidth(self, tier: int) -> float:
        """GB/s for traffic that must climb to this tier (1 and up)."""
        known = self.bandwidth.get(tier)
        return known if known is not None else default_tier_bandwidth(tier)


_Inputs = tuple[tuple[HyperNode, ...], tuple[Node, ...], tuple[tuple[int, float], ...]]
_last: tuple[_Inputs, DomainTree] | None = None
"""The last tree resolved, with its inputs (see :func:`resolve_hypernodes`)."""


def resolve_hypernodes(
    hypernodes: Sequence[HyperNode],
    nodes: Sequence[Node],
    *,
    tier_bandwidth: Mapping[int, float] | None = None,
) -> DomainTree:
    """Resolve the snapshot's HyperNodes; ``ValueError`` with the reason when the graph is bad.

    ``tier_bandwidth`` overrides the defaults per tier (GB/s); the result must not grow with the
    tier, so that a wider span is never priced as faster.

    One cycle asks twice for the same tree (the converter checks the graph, the build reads its
    domains): the last tree is kept with its inputs and given again for the very same HyperNode
    and node objects (the models are frozen and the tree is read-only). Identity, not equality:
    a snapshot read afresh holds new objects, and comparing each node's fields with the last
    snapshot's cost more than resolving the tree again.
    """
    global _last
    inputs: _Inputs = (tuple(hypernodes), tuple(nodes), tuple(sorted((tier_bandwidth or {}).items())))
    last = _last
    if last is not None and _same(last[0][0], inputs[0]) and _same(last[0][1], inputs[1]) and last[0][2] == inputs[2]:
        return last[1]
    tree = _resolve(hypernodes, nodes, tier_bandwidth)
    _last = (inputs, tree)
    return tree


def _same(before: tuple[object, ...], now: tuple[object, ...]) -> bool:
    return len(before) == len(now) and all(map(operator.is_, before, now))


def _resolve(
    hypernodes: Sequence[HyperNode], nodes: Sequence[Node], tier_bandwidth: Mapping[int, float] | None
) -> DomainTree:
    by_name: dict[str, HyperNode] = {}
    for hypernode in hypernodes:
        if hypernode.name in by_name:
            raise ValueError(f"HyperNode {hypernode.name}: defined twice")
        if hypernode.tier < 1:
            raise ValueError(
                f"HyperNode {hypernode.name}: tier must be at least 1 (tier 0 is one node), not {hypernode.tier}"
            )
        by_name[hypernode.name] = hypernode

    children: dict[str, list[str]] = {name: [] for name in by_name}
    parent: dict[str, str | None] = dict.fromkeys(by_name)
    direct: dict[str, set[str]] = {name: set() for name in by_name}
    names = frozenset(node.name for node in nodes)
    for name in sorted(by_name):
        hypernode = by_name[name]
        for position, member in enumerate(hypernode.members):
            # The common member, a node named exactly: what the checks below would find, without
            # spelling where the member is for an error none of them raises.
            exact = member.exact_name
            if member.type == "Node" and exact is not None and member.regex is None and member.labels is None:
                if exact in names:
                    direct[name].add(exact)
                continue
            where = f"HyperNode {name}: members[{position}]"
            _check_selector(member, where)
            if member.type == "Node":
                direct[name] |= _matching_nodes(member, nodes, where, names)
                continue
            child = member.exact_name
            if child is None:
                raise ValueError(f"{where}: a HyperNode member is named by exactMatch only, as in Volcano")
            if child not in by_name:
                raise ValueError(f"{where}: HyperNode {child} does not exist")
            if child not in children[name]:
                children[name].append(child)

    _check_cycles(children)
    for name in sorted(by_name):
        for child in children[name]:
            if parent[child] not in (None, name):
                raise ValueError(f"HyperNode {child}: member of both {parent[child]} and {name}")
            parent[child] = name
            if by_name[child].tier >= by_name[name].tier:
                raise ValueError(
                    f"HyperNode {name}: member HyperNode {child} has tier {by_name[child].tier}, "
                    f"not below its own tier {by_name[name].tier}"
                )

    nodes_of: dict[str, frozenset[str]] = {}
    for name in sorted(by_name, key=lambda n: (by_name[n].tier, n)):  # children have lower tiers
        inside = set(direct[name])
        for child in children[name]:
            inside |= nodes_of[child]
        nodes_of[name] = frozenset(inside)

    domains: dict[str, dict[int, str]] = {}
    for name in sorted(by_name):
        tier = by_name[name].tier
        for node in sorted(nodes_of[name]):
            other = domains.setdefault(node, {}).get(tier)
            if other is not None and other != name:
                first, second = sorted((other, name))
                raise ValueError(f"node {node}: in two HyperNodes of tier {tier}: {first} and {second}")
            domains[node][tier] = name
    for node, chain in sorted(domains.items()):
        _check_nesting(node, chain, parent)

    tiers = tuple(sorted({h.tier for h in by_name.values()}))
    bandwidth = _tier_bandwidths(tiers, tier_bandwidth or {})
    return DomainTree(
        tiers=tiers,
        tier_of=MappingProxyType({name: h.tier for name, h in sorted(by_name.items())}),
        parent=MappingProxyType(dict(sorted(parent.items()))),
        nodes_of=MappingProxyType(dict(sorted(nodes_of.items()))),
        domains=MappingProxyType(
            {node: MappingProxyType(dict(sorted(chain.items()))) for node, chain in sorted(domains.items())}
        ),
        bandwidth=MappingProxyType(bandwidth),
    )


def _check_selector(member: HyperNodeMember, where: str) -> None:
    selectors = (
        ("exactMatch", member.exact_name),
        ("regexMatch", member.regex),
        ("labelMatch", member.labels),
    )
    chosen = [name for name, value in selectors if value is not None]
    if len(chosen) != 1:
        raise ValueError(f"{where}: needs exactly one of exactMatch, regexMatch, labelMatch, not {chosen or 'none'}")


def _matching_nodes(
    member: HyperNodeMember, nodes: Sequence[Node], where: str, names: frozenset[str] | None = None
) -> set[str]:
    if member.exact_name is not None:
        known = names if names is not None else frozenset(node.name for node in nodes)
        return {member.exact_name} if member.exact_name in known else set()
    if member.regex is not None:
        try:
            pattern = re.compile(member.regex)
        except re.error as error:
            raise ValueError(
                f"{where}: regexMatch.pattern {member.regex!r} is not a regular expression: {error}"
            ) from None
        return {node.name for node in nodes if pattern.search(node.name)}
    labels = member.labels or {}
    if not labels:
        return set()  # as Volcano: an empty labelMatch selects nothing
    return {node.name for node in nodes if all(node.labels.get(k) == v for k, v in labels.items())}


def _check_cycles(children: Mapping[str, list[str]]) -> None:
    """Depth-first search; a member chain that comes back to itself is named in full."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        path.append(name)
        for child in children[name]:
            if state.get(child) == 1:
                cycle = [*path[path.index(child) :], child]
                raise ValueError(f"HyperNode members form a cycle: {' → '.join(cycle)}")
            if child not in state:
                visit(child)
        path.pop()
        state[name] = 2

    for name in sorted(children):
        if name not in state:
            visit(name)


def _check_nesting(node: str, chain: Mapping[int, str], parent: Mapping[str, str | None]) -> None:
    """A node's HyperNode at a higher tier must enclose its HyperNode at the next lower tier."""
    tiers = sorted(chain)
    for lower, upper in pairwise(tiers):
        ancestor = parent[chain[lower]]
        while ancestor is not None and ancestor != chain[upper]:
            ancestor = parent[ancestor]
        if ancestor is None:
            raise ValueError(
                f"node {node}: in {chain[upper]} (tier {upper}) and in {chain[lower]} (tier {lower}), "
                f"but {chain[lower]} is not inside {chain[upper]}"
            )


def _tier_bandwidths(tiers: Sequence[int], overrides: Mapping[int, float]) -> dict[int, float]:
    for tier, value in sorted(overrides.items()):
        if tier < 1:
            raise ValueError(f"tier bandwidth for tier {tier}: tiers start at 1 (tier 0 is one node)")
        if isinstance(value, bool) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"tier bandwidth for tier {tier}: must be a positive number of GB/s, not {value!r}")
    every = sorted(set(tiers) | set(overrides))
    values = {tier: float(overrides[tier]) if tier in overrides else default_tier_bandwidth(tier) for tier in every}
    for lower, upper in pairwise(every):
        if values[upper] > values[lower]:
            raise ValueError(
                f"tier bandwidths must not grow with the tier: tier {upper} has {values[upper]:g} GB/s, "
                f"more than tier {lower}'s {values[lower]:g} GB/s"
            )
    return {tier: values[tier] for tier in every}
