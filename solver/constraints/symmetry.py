"""Symmetry breaking between identical nodes.

Nodes with the same free room that admit the same slots are interchangeable: any solution can be
permuted among them. Without help CP-SAT may explore every permutation while proving optimality.
Ordering such nodes by load (non-increasing, in node order) keeps one representative of each
permutation class and loses no solution value.
"""

from __future__ import annotations

from collections.abc import Hashable
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from vcsat.solver.objectives.interpod import preference_scores
from vcsat.solver.pricing import scarcity
from vcsat.solver.problem import Bucket, Problem
from vcsat.solver.search.variables import NodeTerm, Variables
from vcsat.solver.units import Units

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


def _signature(
    problem: Problem, node: int, terms: list[NodeTerm], tags: list[Hashable] | None, spread: NDArray[np.int64] | None
) -> Hashable:
    # Nodes in different topology domains are not interchangeable for a gang priced by locality.
    domains = tuple(sorted(problem.domains.of_node[node].items())) if problem.domains is not None else ()
    return (
        domains,
        # Nor are nodes in different topology spread domains (or counted by different groups).
        int(spread[node]) if spread is not None else -1,
        tags[node] if tags is not None else (),
        tuple(problem.free[node]),
        problem.nodes[node].gpus,
        tuple(sorted((t.bucket.index, t.upper) for t in terms)),
        # Nodes a pod prefers differently are not interchangeable for the preference level.
        tuple(sorted((t.bucket.index, problem.preference(t.bucket, node)) for t in terms))
        if problem.preferring
        else (),
        # Nor are nodes of GPU pools priced differently (vcsat.solver.pricing.scarcity).
        _pool(problem, node),
        # Nor nodes that hold different shared CSI volumes or limit different drivers: a shared
        # volume already attached takes no slot there, a new one does (vcsat.solver.rules.attach).
        _attach(problem, node),
    )


def _attach(problem: Problem, node: int) -> Hashable:
    attach = problem.attach
    if attach is None:
        return ()
    limited = tuple(sorted(driver for driver in attach.resource if (node, driver) in attach.limited))
    return (tuple(sorted(attach.attached.get(node, frozenset()))), limited)


def _pool(problem: Problem, node: int) -> tuple[int, int, tuple[int, ...]]:
    """The node's pool, the rare type it is a wholly free node of, and the size classes it is free
    for (each priced apart)."""
    scarce = scarcity.for_problem(problem)
    if scarce is None:
        return (-1, -1, ())
    rare = scarce.rare.free_type[node] if scarce.rare is not None else -1
    return (scarce.pool_of[node], rare, scarce.sized.tag(node) if scarce.sized is not None else ())


def weight(bucket: Bucket, units: Units) -> int:
    """Any fixed positive weight per bucket orders identical nodes; this one follows size (in the
    solver's small units, :mod:`vcsat.solver.units`)."""
    return 1 + sum(units.request(r, amount) for r, amount in enumerate(bucket.request))


def node_classes(problem: Problem, v: Variables) -> list[list[int]]:
    """Groups of interchangeable nodes (two or more), each in node order."""
    groups: dict[Hashable, list[int]] = {}
    tags = _interpod_tags(problem)
    spread = _spread_kinds(problem)
    for node, terms in v.on_node.items():
        groups.setdefault(_signature(problem, node, terms, tags, spread), []).append(node)
    return sorted((sorted(nodes) for nodes in groups.values() if len(nodes) > 1), key=lambda n: n[0])


def _spread_kinds(problem: Problem) -> NDArray[np.int64] | None:
    """Per node, a number equal for two nodes exactly when every topology spread group sees them
    alike (:meth:`vcsat.solver.rules.spread.Group.symmetry_codes`): one row of codes per node, numbered
    by numpy rather than compared group by group."""
    groups = (*problem.spread, *problem.soft_spread)
    if not groups:
        return None
    # Groups on the same layout with no crowded node of their own see the nodes alike: once each.
    columns = {id(g.layout) if not g.crowded else ("g", g.index): g.symmetry_codes for g in groups}
    matrix = np.stack(list(columns.values()), axis=1)
    _, kinds = np.unique(matrix, axis=0, return_inverse=True)
    return np.asarray(kinds, dtype=np.int64).reshape(-1)


def _interpod_tags(problem: Problem) -> list[Hashable] | None:
    """Per node, what inter-pod rules see of it: its domain under each term's topology key (only
    where the domain holds other nodes too: permuting one-node domains maps domains to domains) and
    whether bound pods justify each affinity term there, and each class's preference score there.
    Nodes differing here are not interchangeable."""
    rel = problem.interpod
    if rel is None:
        return None
    sizes: dict[tuple[str, str], int] = {}
    for node in problem.nodes:
        for key in rel.keys:
            value = node.labels.get(key)
            if value is not None:
                sizes[(key, value)] = sizes.get((key, value), 0) + 1
    scores = sorted(preference_scores(problem).items())
    out: list[Hashable] = []
    for index, node in enumerate(problem.nodes):
        labels = node.labels
        shared = tuple(
            labels.get(key) if sizes.get((key, labels.get(key, "")), 0) > 1 else (key in labels) for key in rel.keys
        )
        justified = tuple(
            need.static.get((t.topology_key, labels.get(t.topology_key, "")), 0) > 0
            for _, need in sorted(rel.affinity.items())
            for t in need.terms
        )
        preferred = tuple(by_node.get(index, 0) for _, by_node in scores)
        out.append((shared, justified, preferred))
    return out


def add_symmetry_breaking(cp: cp_model.CpModel, problem: Problem, v: Variables) -> list[list[int]]:
    from ortools.sat.python import cp_model

    classes = node_classes(problem, v)
    for nodes in classes:
        loads = []
        for node in nodes:
            terms = sorted(v.on_node[node], key=lambda t: t.bucket.index)
            loads.append(
                cp_model.LinearExpr.weighted_sum(
                    [t.var for t in terms], [weight(t.bucket, problem.units) for t in terms]
                )
            )
        for before, after in pairwise(loads):
            cp.add(before >= after)
    return classes


def order_like_model(
    slots: dict[tuple[int, int], int], weights: dict[int, int], classes: list[list[int]]
) -> dict[tuple[int, int], int]:
    """Permute per-node counts among identical nodes so they obey the ordering above.

    ``slots`` maps (bucket, node) to a count and ``weights`` a bucket to its :func:`weight`. The
    greedy hint knows nothing of the ordering; permuted this way it stays a valid hint.
    """
    by_node: dict[int, dict[int, int]] = {}
    for (kind, node), k in slots.items():
        by_node.setdefault(node, {})[kind] = k
    out = dict(slots)
    for nodes in classes:
        vectors = [by_node.get(node, {}) for node in nodes]
        for node, vector in zip(nodes, vectors, strict=True):
            for kind in vector:
                del out[(kind, node)]
        vectors.sort(key=lambda vec: (-sum(weights[kind] * k for kind, k in vec.items()), sorted(vec.items())))
        for node, vector in zip(nodes, vectors, strict=True):
            for kind, k in vector.items():
                out[(kind, node)] = k
    return out
