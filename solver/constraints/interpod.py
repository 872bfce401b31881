"""Inter-pod affinity, anti-affinity and host ports between the pods placed this cycle.

Bound pods' part is static and already in each isolated class's eligible nodes
(:class:`vcsat.solver.rules.interpod.InterPod`). What is left are the rules among pending pods, on the
counts of isolated classes: each has a bucket of its own (:mod:`vcsat.solver.rules.isolation`), so
``slot[bucket, node]`` is that class's count on the node, and a group's count in a topology domain
is a sum of slots. Booleans exist only per (group, domain) that a rule needs, never per pod.

- NodePorts: classes whose host ports pairwise conflict (a clique of
  :func:`vcsat.solver.rules.interpod.relations`) put at most one pod per node.
- Required anti-affinity within a group (its term selects its own pods): at most one pod of the
  group per domain of the term's key (a 4-pod gang with anti-affinity on ``kubernetes.io/hostname``
  takes 4 nodes).
- Required anti-affinity between groups (either side's term selects the other: kube-scheduler
  checks the incoming pod's terms and the existing pods' terms alike): not both present in a domain.
- Required affinity: a group may be present in a domain of each term's key only where bound pods
  matching all its terms are, or a justifier group (no required affinity of its own, matching all
  the terms) is present too, or, under the first-pod rule, in the one domain per key it picks
  (shared by first-pod groups that match each other's terms: :func:`vcsat.solver.rules.interpod.relations`).
  While a group relies on that domain, every other group matching its terms is present in it only:
  the decision is judged on its final state, as the binder does not order the bindings, and a
  matching pod elsewhere would take the first-pod rule away.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vcsat.solver.problem import Bucket, Problem
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


@dataclass
class InterpodVars:
    """Presence booleans the rules created, keyed (group, key, value), with the slots they sum."""

    presence: dict[tuple[int, str, str], tuple[cp_model.IntVar, list[cp_model.IntVar]]] = field(default_factory=dict)
    """Present iff the summed slots are positive."""
    derived: list[tuple[cp_model.IntVar, list[cp_model.IntVar]]] = field(default_factory=list)
    """Justifier presence: at most the sum of its slots (hinted as whether the sum is positive)."""
    firsts: list[tuple[cp_model.IntVar, cp_model.IntVar, cp_model.IntVar | None]] = field(default_factory=list)
    """(first-pod domain chosen, the group's presence there, justifier presence there or None)."""


def add_interpod(cp: cp_model.CpModel, problem: Problem, v: Variables, buckets: list[Bucket]) -> InterpodVars:
    from ortools.sat.python import cp_model

    out = InterpodVars()
    rel = problem.interpod
    if rel is None:
        return out
    bucket_of = {s: b.index for b in buckets for s in b.shapes}
    wanted = {bucket_of[problem.classes[c].shape]: c for c in rel.group_of if c in v.count}
    slots: dict[int, dict[int, cp_model.IntVar]] = {c: {} for c in wanted.values()}
    for (b, node), var in v.slot.items():
        c = wanted.get(b)
        if c is not None:
            slots[c][node] = var

    def upper(var: cp_model.IntVar) -> int:
        return v.upper[var.index]

    for clique in rel.port_cliques:
        by_node: dict[int, list[cp_model.IntVar]] = {}
        for c in clique:
            for node, var in slots.get(c, {}).items():
                by_node.setdefault(node, []).append(var)
        for terms in by_node.values():
            if sum(upper(t) for t in terms) > 1:
                cp.add(cp_model.LinearExpr.sum(terms) <= 1)

    domains: dict[str, dict[str, list[int]]] = {key: {} for key in rel.keys}
    for index, node_obj in enumerate(problem.nodes):
        for key in rel.keys:
            label = node_obj.labels.get(key)
            if label is not None:
                domains[key].setdefault(label, []).append(index)

    label_of = {key: {n: value for value, ns in by_value.items() for n in ns} for key, by_value in domains.items()}
    rank = {key: {value: i for i, value in enumerate(by_value)} for key, by_value in domains.items()}
    by_domain: dict[tuple[int, str], dict[str, list[cp_model.IntVar]]] = {}

    def reached(g: int, key: str) -> dict[str, list[cp_model.IntVar]]:
        """The group's slots per domain of ``key`` it can reach, in the domains' order."""
        found = by_domain.get((g, key))
        if found is None:
            unordered: dict[str, list[cp_model.IntVar]] = {}
            for c in rel.members.get(g, []):
                for node, var in slots.get(c, {}).items():
                    value = label_of[key].get(node)
                    if value is not None:
                        unordered.setdefault(value, []).append(var)
            found = {value: unordered[value] for value in sorted(unordered, key=lambda value: rank[key][value])}
            by_domain[(g, key)] = found
        return found

    def group_slots(g: int, key: str, value: str) -> list[cp_model.IntVar]:
        return reached(g, key).get(value, [])

    def presence(g: int, key: str, value: str) -> cp_model.IntVar | None:
        found = out.presence.get((g, key, value))
        if found is not None:
            return found[0]
        terms = group_slots(g, key, value)
        if not terms:
            return None
        flag = cp.new_bool_var(f"present[{g},{key}={value}]")
        v.upper[flag.index] = 1
        cp.add(cp_model.LinearExpr.sum(terms) <= sum(upper(t) for t in terms) * flag)
        cp.add(flag <= cp_model.LinearExpr.sum(terms))
        out.presence[(g, key, value)] = (flag, terms)
        return flag

    for g, keys in sorted(rel.self_anti.items()):
        for key in sorted(keys):
            for terms in reached(g, key).values():
                if sum(upper(t) for t in terms) > 1:
                    cp.add(cp_model.LinearExpr.sum(terms) <= 1)

    for key, pairs in sorted(rel.anti_pairs.items()):
        for g, h in sorted(pairs):
            theirs_reached = reached(h, key)
            for value in reached(g, key):
                if value not in theirs_reached:
                    continue
                mine, theirs = presence(g, key, value), presence(h, key, value)
                if mine is not None and theirs is not None:
                    cp.add(mine + theirs <= 1)

    firsts: dict[tuple[int, str, str], cp_model.IntVar] = {}
    for g, need in sorted(rel.affinity.items()):
        for term in need.terms:
            key = term.topology_key
            for value in reached(g, key) if key in domains else ():
                if need.static.get((key, value), 0) > 0:
                    continue
                here = presence(g, key, value)
                assert here is not None
                support: list[cp_model.IntVar] = []
                justifying = [t for h in sorted(need.justifiers) for t in group_slots(h, key, value)]
                if justifying:
                    y = cp.new_bool_var(f"justified[{g},{key}={value}]")
                    v.upper[y.index] = 1
                    cp.add(y <= cp_model.LinearExpr.sum(justifying))
                    out.derived.append((y, justifying))
                    support.append(y)
                if need.first_pod:
                    f = firsts.get((need.unit, key, value))
                    if f is None:
                        f = firsts[(need.unit, key, value)] = cp.new_bool_var(f"first[{need.unit},{key}={value}]")
                        v.upper[f.index] = 1
                    out.firsts.append((f, here, support[0] if support else None))
                    support.append(f)
                cp.add(here <= cp_model.LinearExpr.sum(support))
    by_unit_key: dict[tuple[int, str], list[cp_model.IntVar]] = {}
    for (unit, key, _value), f in sorted(firsts.items(), key=lambda item: item[0]):
        by_unit_key.setdefault((unit, key), []).append(f)
    for flags in by_unit_key.values():
        if len(flags) > 1:
            cp.add(cp_model.LinearExpr.sum(flags) <= 1)
    watched: dict[int, set[int]] = {}
    for need in rel.affinity.values():
        if need.first_pod:
            watched.setdefault(need.unit, set()).update(need.matching)
    for (unit, key), flags in sorted(by_unit_key.items()):
        # Relying on the first-pod rule in one domain of the key: every group matching the terms
        # may be present there only (else, bound before, it would take the rule away).
        relying = cp_model.LinearExpr.sum(flags)
        for h in sorted(watched.get(unit, ())):
            for value in reached(h, key):
                there = presence(h, key, value)
                assert there is not None
                f = firsts.get((unit, key, value))
                cp.add(there + relying - f <= 1 if f is not None else there + relying <= 1)
    return out


def hint_values(ivars: InterpodVars, values: dict[int, int]) -> dict[int, int]:
    """Values of the rule booleans implied by slot values (variable index -> value): presence is
    whether the slots sum above zero, a justifier's likewise, and a first-pod domain is chosen
    where the group is present without justification."""
    out: dict[int, int] = {}
    for flag, terms in ivars.presence.values():
        out[flag.index] = 1 if sum(values.get(t.index, 0) for t in terms) > 0 else 0
    for flag, terms in ivars.derived:
        out[flag.index] = 1 if sum(values.get(t.index, 0) for t in terms) > 0 else 0
    for first, _here, _justified in ivars.firsts:
        out[first.index] = 0
    for first, here, justified in ivars.firsts:
        unjustified = justified is None or not out.get(justified.index, 0)
        if out.get(here.index, 0) and unjustified:
            out[first.index] = 1
    return out
