"""Network topology: where a multi-node gang's pods land, priced by the HyperNode tiers it spans.

Design.md's rule holds here too: no pairwise pod terms. For each topology gang (several GPU pods,
or a ``networkTopology`` of its own) the model counts its pods per domain of the finest tier
(``domain_count[gang, bucket, rack]``, tied to the bucket's slots in that rack) and marks the
domains it uses at every tier (``uses[gang, tier, domain]``). A hard ``networkTopology`` allows
one domain at its highest tier; :mod:`vcsat.solver.objectives.locality` prices the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vcsat.solver.assignment import Assignment
from vcsat.solver.problem import Bucket, Domains, Problem
from vcsat.solver.search.variables import Variables

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

RACKS_PER_GANG = 8
"""Racks a soft topology gang is counted in one by one; beyond them, one shared count."""
ELSEWHERE = "~elsewhere"
"""The shared count's pseudo-domain; the locality levels price it as two domains."""


@dataclass
class TopologyVars:
    domain_count: dict[tuple[int, int, str], cp_model.IntVar] = field(default_factory=dict)
    uses: dict[tuple[int, int, str], cp_model.IntVar] = field(default_factory=dict)
    """Per (gang, tier, domain): whether any of the gang's pods is in that domain."""
    uses_of: dict[tuple[int, int], list[cp_model.IntVar]] = field(default_factory=dict)
    """Per (gang, tier): its ``uses`` variables (looked up per gang, never by a scan of all)."""


def add_topology(
    cp: cp_model.CpModel, problem: Problem, v: Variables, buckets: list[Bucket], hint: Assignment
) -> TopologyVars:
    from ortools.sat.python import cp_model

    out = TopologyVars()
    domains = problem.domains
    if domains is None or not problem.topology_gangs:
        return out
    finest = domains.tiers[0]
    bucket_of = {s: b.index for b in buckets for s in b.shapes}
    hinted_counts, hinted = _hinted_domains(problem, hint, bucket_of, finest)
    hinted_racks: dict[tuple[int, int], set[str]] = {}
    for gg, kk, name in hinted_counts:
        hinted_racks.setdefault((gg, kk), set()).add(name)
    demand: dict[tuple[int, str], list[tuple[cp_model.IntVar, int]]] = {}

    # Per bucket: its slots' nodes by rack, and the room there (computed once, not per gang).
    racks_of: dict[int, dict[str, list[int]]] = {}
    for k, node in v.slot:
        racks_of.setdefault(k, {}).setdefault(domains.of_node[node][finest], []).append(node)
    room_of = {
        k: {name: sum(v.upper[v.slot[(k, n)].index] for n in nodes) for name, nodes in racks.items()}
        for k, racks in racks_of.items()
    }

    for g in problem.topology_gangs:
        if g not in v.placed:
            continue
        gang = problem.gangs[g]
        hard = problem.highest_tier(gang)
        used_racks: set[str] = set()
        per_bucket: dict[int, list[int]] = {}
        for c in gang.classes:
            if c in v.count:
                per_bucket.setdefault(bucket_of[problem.classes[c].shape], []).append(c)
        for k, classes in sorted(per_bucket.items()):
            pods = sum(len(problem.classes[c].pods) for c in classes)
            room = room_of.get(k, {})
            # The roomiest racks (and the hint's) get a count of their own; a soft gang's other
            # racks share one count, priced as at least two racks. A hard gang sees every rack.
            ranked = sorted(room, key=lambda name: (-room[name], name))
            if hard is not None and len(per_bucket) == 1:
                ranked = _roomy_enough(domains, room, ranked, hard, max(1, gang.need))
            named = set(ranked if hard is not None else ranked[:RACKS_PER_GANG])
            named |= hinted_racks.get((g, k), set())
            # Racks its running pods are in cost it nothing more (locality): each its own count.
            named |= problem.running_domains.get(g, {}).get(finest, frozenset())
            rest = [name for name in ranked if name not in named]
            in_domain: list[cp_model.IntVar] = []
            for name in sorted(named & set(room)):
                top = min(pods, room[name])
                count = cp.new_int_var(0, top, f"domain_count[{g},{k},{name}]")
                v.upper[count.index] = top
                cp.add_hint(count, hinted_counts.get((g, k, name), 0))
                out.domain_count[(g, k, name)] = count
                in_domain.append(count)
                demand.setdefault((k, name), []).append((count, 1))
                use = _use(cp, out, v, g, finest, name, hinted)
                used_racks.add(name)
                cp.add(count <= top * use)
            if rest:
                top = min(pods, sum(room[name] for name in rest))
                count = cp.new_int_var(0, top, f"domain_count[{g},{k},{ELSEWHERE}]")
                v.upper[count.index] = top
                cp.add_hint(count, sum(hinted_counts.get((g, k, name), 0) for name in rest))
                in_domain.append(count)
                for tier in domains.tiers:
                    cp.add(count <= top * _use(cp, out, v, g, tier, ELSEWHERE, hinted))
            cp.add(cp_model.LinearExpr.sum(in_domain) == cp_model.LinearExpr.sum([v.count[c] for c in classes]))
        _coarser(cp, domains, out, v, g, hinted, used_racks)
        if hard is not None:
            cp.add(cp_model.LinearExpr.sum(out.uses_of.get((g, hard), [])) <= v.placed[g])

    # A rack's slots of a bucket hold at least the topology gangs' pods counted there; the rest
    # of its slots serve the bucket's other pods.
    for (k, name), terms in sorted(demand.items()):
        slots = [v.slot[(k, n)] for n in domains.nodes_in(finest, name) if (k, n) in v.slot]
        cp.add(cp_model.LinearExpr.sum(slots) >= cp_model.LinearExpr.sum([var for var, _ in terms]))
    return out


def _roomy_enough(domains: Domains, room: dict[str, int], ranked: list[str], hard: int, need: int) -> list[str]:
    """The racks a hard gang of one bucket may use: all its pods share one domain of its highest
    tier, so a rack in a domain without slots for its minimum can hold none of them (dropping
    them loses no solution, and at 5,000 nodes most racks go)."""
    finest = domains.tiers[0]
    above = {name: name if hard == finest else domains.parent(finest, name, hard) for name in ranked}
    total: dict[str, int] = {}
    for name in ranked:
        total[above[name]] = total.get(above[name], 0) + room[name]
    return [name for name in ranked if total[above[name]] >= need]


def _use(
    cp: cp_model.CpModel,
    out: TopologyVars,
    v: Variables,
    gang: int,
    tier: int,
    name: str,
    hinted: dict[tuple[int, int, str], int],
) -> cp_model.IntVar:
    key = (gang, tier, name)
    use = out.uses.get(key)
    if use is None:
        use = cp.new_bool_var(f"uses[{gang},{tier},{name}]")
        v.upper[use.index] = 1
        cp.add_hint(use, 1 if hinted.get(key, 0) else 0)
        out.uses[key] = use
        out.uses_of.setdefault((gang, tier), []).append(use)
    return use


def _coarser(
    cp: cp_model.CpModel,
    domains: Domains,
    out: TopologyVars,
    v: Variables,
    gang: int,
    hinted: dict[tuple[int, int, str], int],
    racks: set[str],
) -> None:
    """A gang uses a coarser domain when it uses any rack inside it."""
    finest = domains.tiers[0]
    for tier in domains.tiers[1:]:
        for name in sorted(racks):
            above = domains.parent(finest, name, tier)
            cp.add(_use(cp, out, v, gang, tier, above, hinted) >= out.uses[(gang, finest, name)])


def _hinted_domains(
    problem: Problem, hint: Assignment, bucket_of: dict[int, int], finest: int
) -> tuple[dict[tuple[int, int, str], int], dict[tuple[int, int, str], int]]:
    """What the hint puts where: pods per (gang, bucket, rack), and use per (gang, tier, domain)."""
    domains = problem.domains
    assert domains is not None
    counts: dict[tuple[int, int, str], int] = {}
    uses: dict[tuple[int, int, str], int] = {}
    for (g, s, node), k in hint.gang_slots.items():
        if k <= 0 or g not in problem.topology_gangs:
            continue
        key = (g, bucket_of[s], domains.of_node[node][finest])
        counts[key] = counts.get(key, 0) + k
        for tier in domains.tiers:
            uses[(g, tier, domains.of_node[node][tier])] = 1
    return counts, uses


def domain_counts(values: dict[int, int], topo: TopologyVars) -> dict[tuple[int, int, str], int]:
    return {key: values[var.index] for key, var in topo.domain_count.items() if values.get(var.index, 0) > 0}
