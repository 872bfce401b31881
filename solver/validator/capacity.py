"""The validator's node capacity rule: do a decision's placements fit each node's allocatable?

A binding must fit beside every pod bound to its node ("now", victims included); every placement
(bindings and nominations) must fit once the victims are gone ("after evictions"). Only the
resources the new pods of a node ask for (a positive total) are watched there, as kube-scheduler's
NodeResourcesFit does; every pod takes at least one ``pods`` slot; GPU shares come from a device,
not from allocatable, so they are not counted here.

The totals are per node and resource, over every touched node at once: numpy sums of the requests
(int64, exact) where every amount is non-negative and no sum can come near the int64 limit, else
the same sums in Python integers. Either way the violations are the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal

import numpy as np
from numpy.typing import NDArray

from vcsat.model import Node, Pod, Snapshot
from vcsat.model import resources as res

_SAFE: Final = 1 << 62
"""Sums below this fit int64 with room for the comparisons (held + new > allocatable)."""

Kind = Literal["binding", "nomination"]


def demand(pod: Pod) -> dict[str, int]:
    """What the pod takes from its node: its requests, at least one ``pods`` slot, no GPU shares
    (those come from a device, not from allocatable)."""
    out = {name: amount for name, amount in pod.requests.items() if name != res.GPU_MILLI}
    out[res.PODS] = max(out.get(res.PODS, 0), 1)
    return out


def capacity_violations(
    snapshot: Snapshot, placed: Sequence[tuple[Kind, Pod, Node]], victims: Mapping[str, Pod]
) -> list[tuple[str, str, str]]:
    """(rule, node, message) for each node and watched resource the placements overfill, now
    (``CapacityNow``) or after evictions (``CapacityAfterEvictions``); in no particular order."""
    by_node: dict[str, list[tuple[Kind, Pod]]] = {}
    nodes: dict[str, Node] = {}
    for kind, pod, node in placed:
        if node.name not in by_node:
            by_node[node.name] = []
            nodes[node.name] = node
        by_node[node.name].append((kind, pod))
    if not by_node:
        return []
    found = _in_numpy(snapshot, by_node, nodes, victims)
    return found if found is not None else _in_python(snapshot, by_node, nodes, victims)


def _in_numpy(
    snapshot: Snapshot,
    by_node: Mapping[str, list[tuple[Kind, Pod]]],
    nodes: Mapping[str, Node],
    victims: Mapping[str, Pod],
) -> list[tuple[str, str, str]] | None:
    """The totals as int64 arrays (nodes × resources); None where an amount is negative or a sum
    could leave int64 (then Python's integers judge).

    Each distinct requests mapping is read once: pods of one spec share theirs, so the pods on the
    touched nodes (tens of thousands at 10,000 nodes) are each looked up once, by identity, and
    the amounts come from a small table of the distinct mappings, resource by resource."""
    names = list(by_node)
    on_nodes = [snapshot.pods_on_node.get(name, ()) for name in names]
    # The victims' requests per node: only the nodes they are on are read again.
    victim_nodes = {victim.node_name for victim in victims.values()}
    gone = [
        (i, pod.requests)
        for i, name in enumerate(names)
        if name in victim_nodes
        for pod in on_nodes[i]
        if pod.key in victims
    ]
    distinct: dict[int, int] = {}
    """Position in ``table`` by the identity of a requests mapping (every one stays alive meanwhile)."""
    table_of: list[Mapping[str, int]] = []

    def positions(mappings: Sequence[Mapping[str, int]]) -> NDArray[np.intp]:
        out: list[int] = []
        for requests in mappings:
            at = distinct.get(id(requests))
            if at is None:
                at = distinct[id(requests)] = len(table_of)
                table_of.append(requests)
            out.append(at)
        return np.array(out, dtype=np.intp)

    new = [pod.requests for name in names for _, pod in by_node[name]]
    new_ix = positions(new)
    bound_ix = positions([pod.requests for pods in on_nodes for pod in pods])
    gone_ix = positions([requests for _, requests in gone])
    new_binding = np.array([kind == "binding" for name in names for kind, _ in by_node[name]], dtype=bool)
    new_at = np.repeat(np.arange(len(names)), [len(by_node[name]) for name in names])
    bound_at = np.repeat(np.arange(len(names)), [len(pods) for pods in on_nodes])
    gone_at = np.array([i for i, _ in gone], dtype=np.int64)
    allocatable = [nodes[name].allocatable for name in names]
    resources = sorted({r for requests in new for r in requests if r != res.GPU_MILLI} | {res.PODS})
    count = len(new) + len(bound_ix) + 1
    # The amounts of every distinct mapping, per resource (Python integers until judged safe).
    amounts = [[requests.get(r, 0) for requests in table_of] for r in resources]
    pods_at = resources.index(res.PODS)
    amounts[pods_at] = [max(amount, 1) for amount in amounts[pods_at]]
    caps_of = [[limits.get(r, 0) for limits in allocatable] for r in resources]
    used = np.zeros(len(table_of), dtype=np.bool_)
    used[new_ix] = True
    used[bound_ix] = True
    for values, caps in zip(amounts, caps_of, strict=True):
        listed = [value for value, read in zip(values, used.tolist(), strict=True) if read]
        if min(min(listed, default=0), min(caps, default=0)) < 0:
            return None
        if max(listed, default=0) * count >= _SAFE or max(caps) >= _SAFE:
            return None
    out: list[tuple[str, str, str]] = []
    for r, values, caps in zip(resources, amounts, caps_of, strict=True):
        column = np.array(values, dtype=np.int64)
        asked_a = column[new_ix]
        added = np.zeros(len(names), dtype=np.int64)
        bindings = np.zeros(len(names), dtype=np.int64)
        held = np.zeros(len(names), dtype=np.int64)
        freed = np.zeros(len(names), dtype=np.int64)
        np.add.at(added, new_at, asked_a)
        np.add.at(bindings, new_at[new_binding], asked_a[new_binding])
        np.add.at(held, bound_at, column[bound_ix])
        np.add.at(freed, gone_at, column[gone_ix])
        cap = np.array(caps, dtype=np.int64)
        watched = added > 0  # a zero request fits anywhere, as in Kubernetes
        now = watched & (bindings > 0) & (held + bindings > cap)
        after = watched & (held - freed + added > cap)
        for i in np.flatnonzero(now):
            out.append(_over(nodes[names[i]], "CapacityNow", r, int(held[i]), int(bindings[i]), "now"))
        for i in np.flatnonzero(after):
            staying, more = int(held[i] - freed[i]), int(added[i])
            out.append(_over(nodes[names[i]], "CapacityAfterEvictions", r, staying, more, "after evictions"))
    return out


def _in_python(
    snapshot: Snapshot,
    by_node: Mapping[str, list[tuple[Kind, Pod]]],
    nodes: Mapping[str, Node],
    victims: Mapping[str, Pod],
) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for name, placed in by_node.items():
        node = nodes[name]
        bindings: dict[str, int] = {}
        added: dict[str, int] = {}
        for kind, pod in placed:
            asked = demand(pod)
            for r, amount in asked.items():
                added[r] = added.get(r, 0) + amount
            if kind == "binding":
                for r, amount in asked.items():
                    bindings[r] = bindings.get(r, 0) + amount
        # Only what the new pods ask is watched (a zero request fits anywhere, as in Kubernetes).
        watched = sorted(r for r, amount in added.items() if amount > 0)
        held = dict.fromkeys(watched, 0)
        freed = dict.fromkeys(watched, 0)
        for pod in snapshot.pods_on_node.get(name, ()):
            requests = pod.requests  # as demand(pod) on the watched resources (never GPU shares)
            evicted = pod.key in victims
            for r in watched:
                amount = max(requests.get(r, 0), 1) if r == res.PODS else requests.get(r, 0)
                held[r] += amount
                if evicted:
                    freed[r] += amount
        for r in watched:
            cap = node.allocatable.get(r, 0)
            if bindings.get(r, 0) > 0 and held[r] + bindings[r] > cap:
                out.append(_over(node, "CapacityNow", r, held[r], bindings[r], "now"))
            staying = held[r] - freed[r]
            if staying + added[r] > cap:
                out.append(_over(node, "CapacityAfterEvictions", r, staying, added[r], "after evictions"))
    return out


def _over(node: Node, rule: str, name: str, have: int, new: int, when: str) -> tuple[str, str, str]:
    return (
        rule,
        node.name,
        f"{name} {when}: {res.format_amount(name, have)} held + {res.format_amount(name, new)} "
        f"new > {res.format_amount(name, node.allocatable.get(name, 0))} allocatable",
    )
