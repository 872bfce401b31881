"""Pod topology spread (DoNotSchedule) as exact constraints on the aggregated counts.

The rule, on the final state: per constraint group, every domain that receives a pod carrying the
constraint ends within ``maxSkew`` of the least count over the group's eligible domains (0 with
fewer domains than ``minDomains``). Why that is kube-scheduler's pod-by-pod rule: given such a final
state, place the new pods one at a time, always into the least-filled domain still due to receive
pods; when a pod goes into ``d``, either the minimum sits on a domain still due (at least as full as
``d``, so the skew is at most 1) or on a domain already at its final count (at least the final
minimum, while ``d`` is below its final count), so every step passes the filter. Conversely the
last pod placed into ``d`` saw ``final(d) − 1`` others and a minimum no larger than the final one,
so a final state beyond ``maxSkew`` has no valid order (details in :mod:`vcsat.solver.rules.spread`).

Every class that carries or matches a constraint has a bucket of its own
(:mod:`vcsat.solver.rules.isolation`), so ``slot[bucket, node]`` is that class's own count on
the node and a domain's count is a sum of slots: no per-pod variable.

Per group: ``final(d) = existing(d) + Σ matching slots in d``; one ``min`` variable below every
``final(d)`` (a constant where a domain's count is fixed, the usual case for a hostname key on a
large cluster); and for each domain a carrier may reach, ``receives(d) ⇒ final(d) − min ≤
maxSkew``. Where the carriers are the only matching new pods and the domain starts within reach
of the least possible minimum, the implication is linear and needs no boolean.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vcsat.solver.problem import Bucket, Problem
from vcsat.solver.rules.spread import Group
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


@dataclass
class SpreadVars:
    """The variables the constraints add beside the slots, with what their values follow from."""

    minimums: list[tuple[cp_model.IntVar, int, int, list[tuple[int, list[cp_model.IntVar]]]]] = field(
        default_factory=list
    )
    """(the least count, its lower and upper end, per domain: its bound pods and matching slots)."""
    receives: list[tuple[cp_model.IntVar, list[cp_model.IntVar]]] = field(default_factory=list)
    """(whether a domain receives carriers, the carriers' slots there)."""


def add_spread(cp: cp_model.CpModel, problem: Problem, v: Variables, buckets: list[Bucket]) -> SpreadVars:
    from ortools.sat.python import cp_model

    out = SpreadVars()
    if not problem.spread:
        return out
    bucket_of = {s: b.index for b in buckets for s in b.shapes}
    for group in problem.spread:
        # A class with no node to go to has no bucket: it adds nothing.
        member_buckets = {bucket_of[s] for c in group.members if (s := problem.classes[c].shape) in bucket_of}
        carrier_buckets = {bucket_of[s] for c in group.carriers if (s := problem.classes[c].shape) in bucket_of}
        added = slots_by_domain(group, member_buckets, v)
        received = added if carrier_buckets == member_buckets else slots_by_domain(group, carrier_buckets, v)
        if not received:
            continue

        low = min(group.static.values(), default=0)
        most = {d: group.static[d] + sum(v.upper[var.index] for var in vars_) for d, vars_ in added.items()}
        high = least_most(group, most)
        minimum: cp_model.IntVar | int
        if group.few_domains:
            minimum, low = 0, 0
        elif low == high:
            minimum = low
        else:
            minimum = cp.new_int_var(low, high, f"spread_min[{group.index}]")
            for domain, vars_ in added.items():
                if group.static[domain] < high:
                    cp.add(minimum <= group.static[domain] + cp_model.LinearExpr.sum(vars_))
            counts = [(k, added.get(domain, [])) for domain, k in group.static.items()]
            out.minimums.append((minimum, low, high, counts))
        for domain, into in received.items():
            final = group.static[domain] + cp_model.LinearExpr.sum(added.get(domain, []))
            only_carriers = {var.index for var in added.get(domain, [])} == {var.index for var in into}
            if only_carriers and group.static[domain] <= group.max_skew + low:
                # With nothing received the domain already keeps within maxSkew of any minimum.
                if isinstance(minimum, int) and most.get(domain, group.static[domain]) - minimum <= group.max_skew:
                    continue
                cp.add(final - minimum <= group.max_skew)
                continue
            receives = cp.new_bool_var(f"spread_in[{group.index},{domain}]")
            cp.add(cp_model.LinearExpr.sum(into) == 0).only_enforce_if(~receives)
            cp.add(final - minimum <= group.max_skew).only_enforce_if(receives)
            out.receives.append((receives, into))
    return out


def slots_by_domain(group: Group, buckets: set[int], v: Variables) -> dict[str, list[cp_model.IntVar]]:
    """Per domain of the group: the slots of these buckets on its eligible nodes. Walks the buckets'
    own slots (few, for isolated classes cut to candidates), never every node of the group."""
    domain_of = group.domain_of
    found: list[tuple[int, int, cp_model.IntVar]] = []
    for rank, b in enumerate(buckets):
        found += ((node, rank, var) for node, var in v.slots_of(b) if node in domain_of)
    # Node by node, as the constraints were first written: the same model, term for term.
    found.sort(key=lambda entry: entry[:2])
    out: dict[str, list[cp_model.IntVar]] = {}
    for node, _rank, var in found:
        out.setdefault(domain_of[node], []).append(var)
    return out


def least_most(group: Group, most: dict[str, int]) -> int:
    """The least of the domains' largest final counts: ``most`` where given (domains receiving
    slots), the bound count elsewhere."""
    found = [k for d, k in group.static.items() if d not in most] if len(most) < len(group.static) else []
    return min([*most.values(), *found], default=0)


def spread_hint_values(svars: SpreadVars, values: dict[int, int]) -> dict[int, int]:
    """Values of the spread variables implied by slot values (variable index -> value): the least
    final count (within its variable's range) and whether a domain receives carriers. A complete
    hint lets CP-SAT start from it at once instead of searching for the rest."""
    out: dict[int, int] = {}
    for minimum, low, high, counts in svars.minimums:
        least = min((k + sum(values.get(var.index, 0) for var in vars_) for k, vars_ in counts), default=high)
        out[minimum.index] = max(low, min(high, least))
    for receives, into in svars.receives:
        out[receives.index] = 1 if sum(values.get(var.index, 0) for var in into) > 0 else 0
    return out
