"""Topology spread preferences (``whenUnsatisfiable: ScheduleAnyway``) as one objective level.

kube-scheduler scores a node lower the more matching pods its domain already holds, so that a
ScheduleAnyway constraint spreads when it can and never refuses a node. Here the same wish is a
level below placed work, fairness and locality: for each ScheduleAnyway group (see
:mod:`vcsat.solver.rules.spread`), over the domains its carriers may reach, the matching pods beyond
``min + maxSkew`` in the final state, summed and minimised. The minimum is a variable below every
domain's count (0 with fewer domains than ``minDomains``), which the maximisation lifts to the
true minimum.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from vcsat.solver.assignment import Assignment
from vcsat.solver.constraints.spread import least_most, slots_by_domain
from vcsat.solver.problem import Bucket, Problem
from vcsat.solver.rules.spread import Group
from vcsat.solver.search.levels import Level, make_level
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

LEVEL_NAME = "matching pods beyond a ScheduleAnyway topology spread's maxSkew"


def spread_levels(cp: cp_model.CpModel, problem: Problem, v: Variables, buckets: list[Bucket]) -> list[Level]:
    from ortools.sat.python import cp_model

    if not problem.soft_spread:
        return []
    bucket_of = {s: b.index for b in buckets for s in b.shapes}
    terms: list[tuple[cp_model.IntVar, int]] = []
    for group in problem.soft_spread:
        reach = _reachable(problem, group)
        if not reach:
            continue
        member_buckets = {bucket_of[s] for c in group.members if (s := problem.classes[c].shape) in bucket_of}
        added = slots_by_domain(group, member_buckets, v)
        most = {d: group.static[d] + sum(v.upper[var.index] for var in vars_) for d, vars_ in added.items()}
        low = 0 if group.few_domains else min(group.static.values(), default=0)
        high = 0 if group.few_domains else least_most(group, most)
        minimum = cp.new_int_var(low, high, f"soft_min[{group.index}]")
        if not group.few_domains:
            for domain, vars_ in added.items():
                if group.static[domain] < high:
                    cp.add(minimum <= group.static[domain] + cp_model.LinearExpr.sum(vars_))
        for domain in sorted(reach):
            top = max(0, most.get(domain, group.static[domain]) - low - group.max_skew)
            if top == 0:
                continue
            over = cp.new_int_var(0, top, f"soft_over[{group.index},{domain}]")
            v.upper[over.index] = top
            final = group.static[domain] + cp_model.LinearExpr.sum(added.get(domain, []))
            cp.add(over >= final - minimum - group.max_skew)
            terms.append((over, -1))
    if not terms:
        return []
    return [make_level(LEVEL_NAME, terms, upper_of=v.upper, measure=partial(soft_excess))]


def _reachable(problem: Problem, group: Group) -> set[str]:
    """Domains a carrier of the group may land in (its gang not blocked)."""
    out: set[str] = set()
    for c in group.carriers:
        if problem.classes[c].gang in problem.blocked:
            continue
        for node in problem.shapes[problem.classes[c].shape].nodes:
            domain = group.domain_of.get(node)
            if domain is not None:
                out.add(domain)
    return out


def soft_excess(problem: Problem, assignment: Assignment) -> int:
    """Minus the matching pods beyond min + maxSkew over the reachable domains, as the level counts."""
    total = 0
    for group in problem.soft_spread:
        reach = _reachable(problem, group)
        if not reach:
            continue
        counts = dict(group.static)
        members = set(group.members)
        for (s, node), k in assignment.shape_slots.items():
            if problem.shapes[s].isolated in members and node in group.domain_of:
                counts[group.domain_of[node]] += k
        least = 0 if group.few_domains else min(counts.values(), default=0)
        total += sum(max(0, counts[d] - least - group.max_skew) for d in reach)
    return -total
