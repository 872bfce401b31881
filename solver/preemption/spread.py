"""Preemption with topology spread (DoNotSchedule), as kube-scheduler's DefaultPreemption reads it.

DefaultPreemption runs the filters again with the candidate victims removed, so a victim's
removal changes a spread constraint's counts: it lowers its domain's count (which can let a
preemptor carrying the constraint in) and possibly the least count (which can push another pod
of the constraint out of reach). Here, per constraint group of the cycle
(:class:`vcsat.solver.rules.spread.Group`), over the eviction model's variables:

``final(d) = bound(d) + placed(d) + Σ preemptor pods matching in d − Σ evicted victims matching in d``

where ``placed`` counts the pods this cycle bound or nominated already (allocate's bindings, earlier
runs' preemptors) and ``bound`` less the pods earlier runs evict; one ``min`` below every eligible
domain's ``final`` (0 with fewer domains than ``minDomains``); and ``final(d) − min ≤ maxSkew`` in
every domain that receives a preemptor carrying the constraint, and in every domain where a pod
carrying it was placed this cycle (such placements are judged after the evictions too, see
:mod:`vcsat.solver.validator.check`). The argument that the final state has an order kube-scheduler
accepts is the allocate model's (:mod:`vcsat.solver.constraints.spread`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from vcsat.model import Pod
from vcsat.solver.problem import Problem
from vcsat.solver.rules.spread import Group, matches

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


def _counted(group: Group, pod: Pod) -> bool:
    return pod.namespace == group.namespace and not pod.terminating and matches(group.selector, pod.labels)


class SpreadRules:
    """The spread counts of one preempt and reclaim phase, kept up to date over its runs."""

    def __init__(self, problem: Problem, placed: Iterable[tuple[int, int, int]]) -> None:
        """``placed``: (pod class, node, pods) bound this cycle before the phase."""
        self.problem = problem
        self.groups = problem.spread
        self.base: list[dict[str, int]] = [dict(group.static) for group in self.groups]
        """Per group, per eligible domain: its count before this run's decisions."""
        self.receivers: list[set[str]] = [set() for _ in self.groups]
        """Per group: domains where a pod carrying it was placed this cycle."""
        self.of_member: dict[int, list[int]] = {}
        self.of_carrier: dict[int, list[int]] = {}
        for g, group in enumerate(self.groups):
            for c in group.members:
                self.of_member.setdefault(c, []).append(g)
            for c in group.carriers:
                self.of_carrier.setdefault(c, []).append(g)
        self.note(placed, ())

    def note(self, placed: Iterable[tuple[int, int, int]], gone: Iterable[tuple[Pod, int]]) -> None:
        """Count pods placed (class, node, pods) and victims evicted (pod, node) by a run."""
        for c, node, k in placed:
            for g in self.of_member.get(c, ()):
                domain = self.groups[g].domain_of.get(node)
                if domain is not None:
                    self.base[g][domain] += k
            for g in self.of_carrier.get(c, ()):
                domain = self.groups[g].domain_of.get(node)
                if domain is not None:
                    self.receivers[g].add(domain)
        for pod, node in gone:
            for g, group in enumerate(self.groups):
                domain = group.domain_of.get(node)
                if domain is not None and _counted(group, pod):
                    self.base[g][domain] -= 1

    def constrain(
        self,
        cp: cp_model.CpModel,
        x: Mapping[tuple[int, int], cp_model.IntVar],
        upper: Mapping[int, int],
        evict: Mapping[int, cp_model.IntVar],
        victims: Sequence[tuple[int, Pod, int]],
    ) -> None:
        """Add the rules of the module docstring; ``victims``: (index, pod, node) of the run's."""
        from ortools.sat.python import cp_model

        # Per group, the variables of the classes taking part in it, in ``x``'s order (one pass
        # over ``x``, not one per group).
        taking_part: dict[int, list[tuple[int, int, cp_model.IntVar, bool, bool]]] = {}
        for (c, node), var in x.items():
            members, carriers = self.of_member.get(c, ()), self.of_carrier.get(c, ())
            for g in sorted({*members, *carriers}):
                taking_part.setdefault(g, []).append((c, node, var, g in members, g in carriers))
        for g, group in enumerate(self.groups):
            domain_of = group.domain_of
            added: dict[str, list[tuple[cp_model.IntVar, int]]] = {}
            received: dict[str, list[cp_model.IntVar]] = {}
            for _c, node, var, member, carrier in taking_part.get(g, ()):
                domain = domain_of.get(node)
                if domain is None:
                    if carrier and group.key not in self.problem.nodes[node].labels:
                        cp.add(var == 0)  # a carrier needs the key on its node (missing required label)
                    continue
                if member:
                    added.setdefault(domain, []).append((var, 1))
                if carrier:
                    received.setdefault(domain, []).append(var)
            for index, pod, node in victims:
                domain = domain_of.get(node)
                if domain is not None and _counted(group, pod):
                    added.setdefault(domain, []).append((evict[index], -1))
            if not added and not received:
                continue  # nothing of this run changes the group's counts or joins it
            base = self.base[g]
            # The least count as a variable (0 with fewer domains than minDomains), as a coefficient
            # of -1 in each skew bound.
            least: list[cp_model.IntVar] = []
            if len(base) >= group.min_domains:
                high = max(base[d] + sum(upper[v.index] for v, k in added.get(d, []) if k > 0) for d in base)
                minimum = cp.new_int_var(0, max(0, high), f"preempt_spread_min[{g}]")
                least = [minimum]
                for domain in base:
                    terms = added.get(domain, [])
                    cp.add(_final(base[domain], [*terms, (minimum, -1)]) >= 0)
            for domain, into in sorted(received.items()):
                receives = cp.new_bool_var(f"preempt_spread_in[{g},{domain}]")
                cp.add(cp_model.LinearExpr.sum(into) == 0).only_enforce_if(~receives)
                skew = _final(base[domain], [*added.get(domain, []), *((m, -1) for m in least)])
                cp.add(skew <= group.max_skew).only_enforce_if(receives)
            for domain in sorted(self.receivers[g] - set(received)):
                if domain in base:
                    skew = _final(base[domain], [*added.get(domain, []), *((m, -1) for m in least)])
                    cp.add(skew <= group.max_skew)


def _final(constant: int, terms: Sequence[tuple[cp_model.IntVar, int]]) -> cp_model.LinearExprT:
    """``constant + Σ coefficient × variable``."""
    from ortools.sat.python import cp_model

    return constant + cp_model.LinearExpr.weighted_sum([var for var, _ in terms], [k for _, k in terms])
