"""Inter-pod rules pod by pod, for the greedy, the explanations and the preemption phase.

The greedy places pods one at a time; :class:`Tracker` remembers how many pods of each isolated
class it has put on each node and answers whether one more may go to a node under the same rules
the CP-SAT model encodes (:mod:`vcsat.solver.constraints.interpod`): host-port cliques, anti-affinity
between groups and within a group, and required affinity justified by bound pods, by justifier
groups already placed, or (first-pod rule) by the group's own first domain per key, which every
other group matching its terms then joins (the decision is judged on its final state). Bound pods'
part is already in each class's eligible nodes. Every place has an undo, as the greedy backtracks
whole gangs.
"""

from __future__ import annotations

from collections import Counter

from vcsat.solver.problem import Problem
from vcsat.solver.rules.interpod import (
    AFFINITY_REASON,
    ANTI_AFFINITY_REASON,
    EXISTING_ANTI_AFFINITY_REASON,
    PORTS_REASON,
    Relations,
)


class Tracker:
    def __init__(self, problem: Problem, relations: Relations) -> None:
        self.problem = problem
        self.rel = relations
        self.labels = [node.labels for node in problem.nodes]
        self.on_node: dict[int, Counter[int]] = {}
        """Node -> placed pods per isolated class."""
        self.in_domain: Counter[tuple[int, str, str]] = Counter()
        """(group, key, value) -> placed pods of the group in that domain."""
        self.cliques_of: dict[int, list[frozenset[int]]] = {}
        for clique in relations.port_cliques:
            for c in clique:
                self.cliques_of.setdefault(c, []).append(clique)
        self.unit_groups: dict[int, list[int]] = {}
        """First-pod unit -> its groups."""
        self.unit_matching: dict[int, set[int]] = {}
        """First-pod unit -> the other groups matching its groups' terms."""
        self.watchers: dict[int, list[int]] = {}
        """Group -> the first-pod units whose terms it matches."""
        for g, need in sorted(relations.affinity.items()):
            if need.first_pod:
                self.unit_groups.setdefault(need.unit, []).append(g)
                self.unit_matching.setdefault(need.unit, set()).update(need.matching)
        for unit, matching in sorted(self.unit_matching.items()):
            for h in sorted(matching):
                self.watchers.setdefault(h, []).append(unit)
        self.watched: dict[int, list[tuple[int, list[str]]]] = {}
        """Group -> (first-pod unit whose terms it matches, the keys of the unit's terms)."""
        for h, units in self.watchers.items():
            self.watched[h] = [
                (unit, sorted({t.topology_key for u in self.unit_groups[unit] for t in relations.affinity[u].terms}))
                for unit in units
            ]
        self.conflicts: dict[int, list[tuple[str, list[int]]]] = {}
        """Group -> (key, the groups that may not share a domain of it), in key order."""
        pairs: dict[int, dict[str, set[int]]] = {}
        for key, both in relations.anti_pairs.items():
            for a, b in both:
                pairs.setdefault(a, {}).setdefault(key, set()).add(b)
                pairs.setdefault(b, {}).setdefault(key, set()).add(a)
        for g, by_key in pairs.items():
            self.conflicts[g] = [(key, sorted(by_key[key])) for key in relations.keys if by_key.get(key)]
        self.last: Counter[str] = Counter()
        """Nodes refused by reason since :meth:`begin` (one pod's search), for explanations."""
        self.stuck = False
        """The last pod searched found no node (its refusals are in :attr:`last`)."""

    def begin(self) -> None:
        """A new pod's search for a node starts: forget the last one's refusals."""
        self.last.clear()
        self.stuck = False

    def why(self, c: int, node: int) -> str | None:
        """kube-scheduler's words for why one more pod of class ``c`` may not go to ``node``, or None."""
        rel = self.rel
        g = rel.group_of.get(c)
        if g is None:
            return None
        cliques = self.cliques_of.get(c)
        if cliques:
            here = self.on_node.get(node)
            if here is not None and any(here[d] > 0 for clique in cliques for d in clique):
                return PORTS_REASON
        labels = self.labels[node]
        in_domain = self.in_domain
        need = rel.affinity.get(g)
        if need is not None:
            for term in need.terms:
                key = term.topology_key
                value = labels.get(key)
                if value is None:
                    return AFFINITY_REASON
                if need.static.get((key, value), 0) > 0:
                    continue
                if any(in_domain[(h, key, value)] > 0 for h in need.justifiers):
                    continue
                if need.first_pod and self.first_pod_allows(need.unit, key, value):
                    continue
                return AFFINITY_REASON
        for unit, keys in self.watched.get(g, ()):
            # A group matching a first-pod unit's terms joins the domain the unit relies on.
            for key in keys:
                value = labels.get(key)
                if value is not None and self.relying(unit, key) - {value}:
                    return AFFINITY_REASON
        for key in rel.self_anti.get(g, ()):
            value = labels.get(key)
            if value is not None and in_domain[(g, key, value)] > 0:
                return ANTI_AFFINITY_REASON
        for key, others in self.conflicts.get(g, ()):
            value = labels.get(key)
            if value is None:
                continue
            for h in others:
                if in_domain[(h, key, value)] > 0:
                    # Either side's term: the placed pod's reads as the existing pods' rule.
                    return ANTI_AFFINITY_REASON if h > g else EXISTING_ANTI_AFFINITY_REASON
        return None

    def first_domains(self, unit: int, key: str) -> set[str]:
        """Domains of ``key`` where a first-pod unit's groups have pods."""
        groups = set(self.unit_groups.get(unit, ()))
        return {v for (h, k, v), n in self.in_domain.items() if h in groups and k == key and n > 0}

    def present(self, groups: set[int], key: str) -> set[str]:
        """Domains of ``key`` where any of these groups have pods."""
        return {v for (h, k, v), n in self.in_domain.items() if h in groups and k == key and n > 0}

    def relying(self, unit: int, key: str) -> set[str]:
        """Domains of ``key`` where a unit's group has pods that no justifier group justifies."""
        out = set()
        for g in self.unit_groups.get(unit, ()):
            justifiers = self.rel.affinity[g].justifiers
            for value in self.present({g}, key):
                if not any(self.in_domain[(h, key, value)] > 0 for h in justifiers):
                    out.add(value)
        return out

    def first_pod_allows(self, unit: int, key: str, value: str) -> bool:
        """Whether the unit may rely on the first-pod rule in this domain: the unit's pods, and every
        other group matching its terms, are in this domain only (judged on the final state)."""
        return self.first_domains(unit, key) <= {value} and self.present(self.unit_matching[unit], key) <= {value}

    def allows(self, c: int, node: int) -> bool:
        why = self.why(c, node)
        if why is not None:
            self.last[why] += 1
        return why is None

    def place(self, c: int, node: int, change: int = 1) -> None:
        if c not in self.rel.group_of:
            return
        counter = self.on_node.setdefault(node, Counter())
        counter[c] += change
        g = self.rel.group_of[c]
        labels = self.labels[node]
        for key in self.rel.keys:
            value = labels.get(key)
            if value is not None:
                self.in_domain[(g, key, value)] += change

    def remove(self, c: int, node: int) -> None:
        self.place(c, node, -1)


def broken(problem: Problem, shape_slots: dict[tuple[int, int], int]) -> bool:
    """Whether resolved placements break a rule the model keeps (a safety net after repairs that
    drop pods: a dropped justifier would leave another class's affinity unmet)."""
    rel = problem.interpod
    if rel is None:
        return False
    tracker = Tracker(problem, rel)
    on_node: dict[int, Counter[int]] = {}
    for (s, node), k in shape_slots.items():
        c = problem.shapes[s].isolated
        if c is not None and k > 0 and c in rel.group_of:
            on_node.setdefault(node, Counter())[c] += k
            tracker.place(c, node, k)
    for clique in rel.port_cliques:
        if any(sum(here[c] for c in clique) > 1 for here in on_node.values()):
            return True
    for (g, key, _value), count in tracker.in_domain.items():
        if count > 1 and key in rel.self_anti.get(g, ()):
            return True
    for key, pairs in rel.anti_pairs.items():
        for g, h in pairs:
            mine = {v for (gg, k, v), n in tracker.in_domain.items() if gg == g and k == key and n > 0}
            if any(tracker.in_domain[(h, key, v)] > 0 for v in mine):
                return True
    first_domains: dict[tuple[int, str], set[str]] = {}
    for g, need in rel.affinity.items():
        present = {n for n, here in on_node.items() if any(here[c] for c in rel.members.get(g, []))}
        if any(t.topology_key not in problem.nodes[n].labels for n in present for t in need.terms):
            return True
        for term in need.terms:
            key = term.topology_key
            used = {v for (gg, k, v), n in tracker.in_domain.items() if gg == g and k == key and n > 0}
            domain = tracker.in_domain
            unjustified = {
                v
                for v in used
                if not need.static.get((key, v), 0) and not any(domain[(h, key, v)] > 0 for h in need.justifiers)
            }
            if unjustified and not need.first_pod:
                return True
            if need.first_pod:
                first_domains.setdefault((need.unit, key), set()).update(unjustified)
    if any(len(values) > 1 for values in first_domains.values()):
        return True
    for (unit, key), values in first_domains.items():
        if values and tracker.present(tracker.unit_matching[unit], key) - values:
            return True  # a matching group elsewhere takes the first-pod rule away
    return False
