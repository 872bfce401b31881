"""Candidate nodes for isolated classes: a bounded set of slots where every eligible node is too many.

An isolated class (:mod:`vcsat.solver.rules.isolation`) has a bucket of its own, so it gets a slot on
every node it may use: a few hundred such classes on a thousand nodes make a model far larger
than the rest of the cycle's. Most of those nodes are interchangeable for the class: what tells
two nodes apart for it is the domains its rules read (topology spread, inter-pod terms, the
topology tiers of its gang) and how well its pods fit there. So each such class keeps slots only
on its candidates:

- the nodes the warm start put it on (the hint stays a solution of the restricted model);
- per *kind* of node (the multi-node domains its rules read, and the coarsest topology tier of a
  gang priced by locality), enough of the best-fitting nodes, enough of the roomiest, and enough
  of the most preferred to hold all of its pods, and then some.

Domains of one node (a hostname key) do not make kinds; their bound pods' counts only rank the
nodes (the fewest first). Any solution of the restricted model is one of the full model (a missing
slot is a slot held at 0), so decisions stay exact; but its optimum, and CP-SAT's bound on it, say
nothing of the full problem: the search must not report that bound (:mod:`vcsat.solver.search.exact`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from vcsat.solver.assignment import Assignment
from vcsat.solver.node_fits import NodeFits
from vcsat.solver.objectives.interpod import preference_scores
from vcsat.solver.problem import Bucket, Problem
from vcsat.solver.rules.spread import Group

SPARE_NODES = 2
"""Candidates per kind and ordering beyond the class's pod count."""


def restrict_isolated(problem: Problem, buckets: list[Bucket], hint: Assignment) -> tuple[list[Bucket], bool]:
    """The buckets with each isolated bucket's nodes cut to its candidates, and whether any was cut."""
    context = _Context(problem, hint)
    out: list[Bucket] = []
    cut = False
    for bucket in buckets:
        c = problem.shapes[bucket.shapes[0]].isolated if bucket.exact else None
        if c is None:
            out.append(bucket)
            continue
        keep = context.candidates(bucket, c)
        if len(keep) == len(bucket.nodes):
            out.append(bucket)
            continue
        cut = True
        nodes = tuple(filter(keep.__contains__, bucket.nodes))
        upper = bucket.upper
        out.append(replace(bucket, nodes=nodes, fits=NodeFits.of({node: upper[node] for node in nodes})))
    return out, cut


class _Context:
    """What every isolated class's choice reads, computed once per search."""

    def __init__(self, problem: Problem, hint: Assignment) -> None:
        self.problem = problem
        self.scores = preference_scores(problem)
        self.rooms = np.array(
            [sum(problem.units.request(r, amount) for r, amount in enumerate(row)) for row in problem.free],
            dtype=np.int64,
        )
        self.crowds: dict[int, NDArray[np.int64]] = {}
        self.hinted: dict[int, set[int]] = {}
        for (s, node), k in hint.shape_slots.items():
            if k > 0:
                self.hinted.setdefault(s, set()).add(node)
        self.groups: dict[int, list[Group]] = {}
        for group in (*problem.spread, *problem.soft_spread):
            for c in {*group.members, *group.carriers}:
                self.groups.setdefault(c, []).append(group)
        # Per label key the inter-pod rules read: each node's domain as a number, -1 where it is its own.
        self.shared: list[NDArray[np.int64]] = []
        rel = problem.interpod
        for key in rel.keys if rel is not None else ():
            values = [node.labels.get(key) for node in problem.nodes]
            counts: dict[str | None, int] = {}
            for value in values:
                counts[value] = counts.get(value, 0) + 1
            if any(n > 1 for value, n in counts.items() if value is not None):
                number = {value: i for i, value in enumerate(sorted(v for v in counts if v is not None))}
                self.shared.append(
                    np.array(
                        [number[value] if value is not None and counts[value] > 1 else -1 for value in values],
                        dtype=np.int64,
                    )
                )
        self.tiers: NDArray[np.int64] | None = None
        domains = problem.domains
        if domains is not None and problem.topology_gangs:
            coarsest = max(domains.tiers)
            names = [tiers.get(coarsest) for tiers in domains.of_node]
            number = {name: i for i, name in enumerate(sorted({n for n in names if n is not None}))}
            self.tiers = np.array([number[n] if n is not None else -1 for n in names], dtype=np.int64)

    def crowd(self, group: Group) -> NDArray[np.int64]:
        """Per node: the bound pods its domain of ``group`` counts, where that domain is the node
        alone (0 elsewhere)."""
        found = self.crowds.get(group.index)
        if found is None:
            layout = group.layout
            value = np.zeros(len(layout.index) + 1, dtype=np.int64)  # the last one: not eligible
            for domain, k in group.crowded.items():
                if layout.sizes[domain] == 1:
                    value[layout.index[domain]] = k
            found = self.crowds[group.index] = value[layout.codes]
        return found

    def candidates(self, bucket: Bucket, c: int) -> set[int]:
        problem = self.problem
        pod_class = problem.classes[c]
        per = len(pod_class.pods) + SPARE_NODES
        if len(bucket.nodes) <= 3 * per:
            return set(bucket.nodes)
        rel = problem.interpod
        columns: list[NDArray[np.int64]] = []
        if rel is not None and c in rel.group_of:
            columns += self.shared
        groups = self.groups.get(c, [])
        crowd = np.zeros(len(problem.nodes), dtype=np.int64)
        for group in groups:
            if len(group.sizes) < len(group.domain_of):
                columns.append(group.layout.codes)
            crowd += self.crowd(group)
        if self.tiers is not None and pod_class.gang in problem.topology_gangs:
            columns.append(self.tiers)

        nodes = np.array(bucket.nodes, dtype=np.int64)
        upper_all = np.fromiter(map(bucket.upper.__getitem__, bucket.nodes), dtype=np.int64, count=len(nodes))
        kinds = node_kinds([column[nodes] for column in columns], len(nodes))
        keep = set(self.hinted.get(bucket.shapes[0], set()))
        scores = self.scores.get(c, {})
        preference = problem.shapes[bucket.shapes[0]].preference
        for positions in kinds:
            members = nodes[positions]
            if len(members) <= 3 * per:
                keep.update(members.tolist())
                continue
            upper = upper_all[positions]
            rooms, crowds = self.rooms[members], crowd[members]
            tight = np.lexsort((members, rooms, upper, crowds))
            roomy = np.lexsort((members, -rooms, -upper, crowds))
            keep.update(members[tight[:per]].tolist())
            keep.update(members[roomy[:per]].tolist())
            if scores or preference:
                liked = np.array(
                    [-scores.get(node, 0) - preference.get(node, 0) for node in members.tolist()], dtype=np.int64
                )
                keep.update(members[np.lexsort((members, crowds, liked))[:per]].tolist())
        return keep


def node_kinds(columns: list[NDArray[np.int64]], size: int) -> list[NDArray[np.intp]]:
    """Positions 0..size-1 grouped by their row of domain numbers (each column's value, -1 up),
    one group per distinct row in the rows' sorted order, positions ascending within a group. The
    rows are read as one number each (the first column most significant), which sorts them as
    ``np.unique(..., axis=0)`` would, without its row-wise sort."""
    if not columns:
        return [np.arange(size)]
    key = np.zeros(size, dtype=np.int64)
    span = 1
    for column in columns:
        radix = int(column.max(initial=-1)) + 2  # values -1 .. max, shifted to 0 .. max + 1
        span *= radix
        if span >= 1 << 62:
            return _kinds_by_rows(columns)
        key = key * radix + (column + 1)
    order = np.argsort(key, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(key[order])) + 1)


def _kinds_by_rows(columns: list[NDArray[np.int64]]) -> list[NDArray[np.intp]]:
    """:func:`node_kinds` where the rows are too wide to read as one number."""
    _, inverse = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    order = np.argsort(inverse, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(inverse[order])) + 1)
