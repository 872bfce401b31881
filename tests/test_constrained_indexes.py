"""The indexed forms of the constrained cycle's rule bookkeeping answer as the scans they replaced:
the candidate nodes' kinds (:func:`vcsat.solver.rules.candidates.node_kinds` against
``np.unique`` over the rows), the spread groups' eligible nodes (against
:func:`vcsat.solver.rules.spread.counts_domain` per node), the validator's eligible nodes and its
existing pods' anti-affinity (against a scan of every node and every bound owner), and the
preemption model's spread constraints (against one pass over the variables per group)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from tests.builders import gangs, node, pod, snapshot, spread
from tests.test_interpod import instances as interpod_instances
from vcsat.model import Node, Pod, Policy, Snapshot
from vcsat.model.spread import TopologySpreadConstraint
from vcsat.solver.preemption.spread import SpreadRules, _counted, _final
from vcsat.solver.problem import build_problem
from vcsat.solver.rules.candidates import _kinds_by_rows, node_kinds
from vcsat.solver.rules.predicates import affinity_matches, selector_matches, untolerated_taint
from vcsat.solver.rules.spread import counts_domain
from vcsat.solver.validator.interpod import _same_domain, _term_selects, check_interpod
from vcsat.solver.validator.spread import _eligible

HOST = "kubernetes.io/hostname"

# --- candidate kinds ----------------------------------------------------------------------------


def kinds_scan(columns: list[np.ndarray[Any, Any]], size: int) -> list[list[int]]:
    """One group per distinct row, rows in sorted order, positions ascending within a group."""
    rows: dict[tuple[int, ...], list[int]] = {}
    for position in range(size):
        rows.setdefault(tuple(int(column[position]) for column in columns), []).append(position)
    return [rows[row] for row in sorted(rows)]


@st.composite
def kind_columns(draw: st.DrawFn) -> tuple[list[np.ndarray[Any, Any]], int]:
    size = draw(st.integers(1, 30))
    top = draw(st.sampled_from([3, 1000, 1 << 40]))  # 1 << 40: rows too wide for one number
    columns = [
        np.array(draw(st.lists(st.integers(-1, top), min_size=size, max_size=size)), dtype=np.int64)
        for _ in range(draw(st.integers(0, 3)))
    ]
    return columns, size


@settings(max_examples=300, deadline=None)
@given(kind_columns())
def test_node_kinds_are_the_rows_of_a_scan(case: tuple[list[np.ndarray[Any, Any]], int]) -> None:
    columns, size = case
    found = [group.tolist() for group in node_kinds(columns, size)]
    assert found == kinds_scan(columns, size)
    if columns:
        assert [group.tolist() for group in _kinds_by_rows(columns)] == found


# --- spread: eligible nodes, solver and validator -------------------------------------------------


@st.composite
def spread_instances(draw: st.DrawFn) -> Snapshot:
    nodes = []
    for i in range(draw(st.integers(1, 7))):
        labels = {HOST: f"n{i}"}
        for key, values in (("zone", "ab"), ("rack", "xyz"), ("gpu", "pq")):
            if draw(st.integers(0, 3)):
                labels[key] = draw(st.sampled_from(values))
        taints = ["t=x:NoSchedule"] if draw(st.integers(0, 3)) == 0 else []
        nodes.append(node(f"n{i}", cpu="8", labels=labels, taints=taints))
    pods: list[Pod] = []
    for i in range(draw(st.integers(0, 4))):
        pods.append(
            pod(
                f"ns/old{i}",
                cpu="1",
                node=draw(st.sampled_from(nodes)).name,
                labels={"app": draw(st.sampled_from("xy"))},
            )
        )
    for g in range(draw(st.integers(1, 4))):
        rules = [
            spread(
                draw(st.sampled_from(["zone", "rack", HOST])),
                draw(st.integers(1, 2)),
                {"app": draw(st.sampled_from("xy"))},
                min_domains=draw(st.integers(1, 3)),
                affinity_policy=draw(st.sampled_from(["Honor", "Ignore"])),
                taints_policy=draw(st.sampled_from(["Honor", "Ignore"])),
                anyway=draw(st.integers(0, 3)) == 0,
            )
            for _ in range(draw(st.integers(1, 2)))
        ]
        selector = {"gpu": draw(st.sampled_from("pq"))} if draw(st.booleans()) else None
        affinity = f"rack in ({draw(st.sampled_from(['x', 'y', 'x,z']))})" if draw(st.booleans()) else ()
        tolerations = ["t"] if draw(st.booleans()) else []
        labels = {"app": draw(st.sampled_from("xy"))}
        for i in range(draw(st.integers(1, 3))):
            pods.append(
                pod(
                    f"ns/g{g}-{i}",
                    cpu="1",
                    labels=labels,
                    spread=rules,
                    selector=selector,
                    affinity=affinity,
                    tolerations=tolerations,
                    created=float(g),
                )
            )
    return snapshot(nodes=nodes, pods=pods)


def eligible_scan(nodes: Sequence[Node], pod: Pod, constraint: TopologySpreadConstraint, keys: list[str]) -> list[str]:
    """The validator's eligible nodes, one node at a time."""
    return [
        n.name
        for n in nodes
        if all(k in n.labels for k in keys)
        and not (
            constraint.node_affinity_policy != "Ignore"
            and not (selector_matches(pod.node_selector, n) and affinity_matches(pod.affinity, n))
        )
        and not (constraint.node_taints_policy == "Honor" and untolerated_taint(pod, n) is not None)
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spread_instances())
def test_validator_eligible_nodes_are_those_of_a_scan(snap: Snapshot) -> None:
    cache: dict[tuple[object, ...], list[Node]] = {}  # shared by every pod, as in one check
    for p in snap.pods:
        hard = [c for c in p.spread_constraints if c.when_unsatisfiable == "DoNotSchedule"]
        keys = sorted({c.topology_key for c in hard})
        for constraint in hard:
            found = [n.name for n in _eligible(snap.nodes, p, constraint, keys, cache)]
            assert found == eligible_scan(snap.nodes, p, constraint, keys)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spread_instances())
def test_spread_groups_eligible_nodes_are_those_of_counts_domain(snap: Snapshot) -> None:
    problem = build_problem(snap, Policy())
    for group in (*problem.spread, *problem.soft_spread):
        for c in group.carriers:
            carrier = problem.classes[c].pods[0]
            constraints = [
                x
                for x in carrier.spread_constraints
                if (x.topology_key, x.max_skew, x.min_domains) == (group.key, group.max_skew, group.min_domains)
            ]
            scans = [
                [n for n, each in enumerate(problem.nodes) if counts_domain(carrier, x, each)] for x in constraints
            ]
            assert sorted(group.domain_of) in scans


# --- validator: existing pods' anti-affinity ------------------------------------------------------


def existing_anti_scan(snap: Snapshot, new: Sequence[tuple[Pod, Node]], gone: set[str]) -> list[tuple[str, str]]:
    """(pod, owner) per new pod that a bound owner's required anti-affinity term selects in the
    term's domain, every bound owner tested, in the validator's order."""
    nodes = snap.node_by_name
    owners = [
        (p, nodes[p.node_name])
        for p in snap.pods
        if p.node_name is not None
        and not p.finished
        and p.node_name in nodes
        and p.key not in gone
        and p.pod_anti_affinity.required
    ]
    out = []
    for p, where in new:
        for owner, at in owners:
            if owner.key == p.key:
                continue
            if any(
                _same_domain(t.topology_key, where, at) and _term_selects(t, owner, p, snap.namespaces)
                for t in owner.pod_anti_affinity.required
            ):
                out.append((p.key, owner.key))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(interpod_instances(), st.randoms(use_true_random=False))
def test_existing_pods_anti_affinity_is_found_as_by_a_scan(snap: Snapshot, rng: Any) -> None:
    pending = [p for p in snap.pods if p.pending]
    new = [(p, rng.choice(snap.nodes)) for p in pending if rng.random() < 0.8]
    bound = [p.key for p in snap.pods if p.bound]
    gone = {key for key in bound if rng.random() < 0.3}
    found = check_interpod(snap, new, gone)
    got = [(f.subject, f.message.split("bound pod ")[1].split(" ")[0]) for f in found if f.rule.startswith("Existing")]
    expected = existing_anti_scan(snap, new, gone)
    assert got == expected


# --- preemption: the spread model ------------------------------------------------------------------


def constrain_scan(
    rules: SpreadRules,
    cp: cp_model.CpModel,
    x: Mapping[tuple[int, int], cp_model.IntVar],
    upper: Mapping[int, int],
    evict: Mapping[int, cp_model.IntVar],
    victims: Sequence[tuple[int, Pod, int]],
) -> None:
    """:meth:`SpreadRules.constrain` with one pass over every variable per group."""
    for g, group in enumerate(rules.groups):
        domain_of = group.domain_of
        added: dict[str, list[tuple[cp_model.IntVar, int]]] = {}
        received: dict[str, list[cp_model.IntVar]] = {}
        for (c, n), var in x.items():
            domain = domain_of.get(n)
            if domain is None:
                if g in rules.of_carrier.get(c, ()) and group.key not in rules.problem.nodes[n].labels:
                    cp.add(var == 0)
                continue
            if g in rules.of_member.get(c, ()):
                added.setdefault(domain, []).append((var, 1))
            if g in rules.of_carrier.get(c, ()):
                received.setdefault(domain, []).append(var)
        for index, victim, n in victims:
            domain = domain_of.get(n)
            if domain is not None and _counted(group, victim):
                added.setdefault(domain, []).append((evict[index], -1))
        if not added and not received:
            continue
        base = rules.base[g]
        least: list[cp_model.IntVar] = []
        if len(base) >= group.min_domains:
            high = max(base[d] + sum(upper[v.index] for v, k in added.get(d, []) if k > 0) for d in base)
            minimum = cp.new_int_var(0, max(0, high), f"preempt_spread_min[{g}]")
            least = [minimum]
            for domain in base:
                cp.add(_final(base[domain], [*added.get(domain, []), (minimum, -1)]) >= 0)
        for domain, into in sorted(received.items()):
            receives = cp.new_bool_var(f"preempt_spread_in[{g},{domain}]")
            cp.add(cp_model.LinearExpr.sum(into) == 0).only_enforce_if(~receives)
            skew = _final(base[domain], [*added.get(domain, []), *((m, -1) for m in least)])
            cp.add(skew <= group.max_skew).only_enforce_if(receives)
        for domain in sorted(rules.receivers[g] - set(received)):
            if domain in base:
                skew = _final(base[domain], [*added.get(domain, []), *((m, -1) for m in least)])
                cp.add(skew <= group.max_skew)


def preemption_model(snap: Snapshot, rng: Any, scan: bool) -> str:
    problem = build_problem(snap, Policy())
    placed = [(c, rng.randrange(len(problem.nodes)), 1) for c in range(len(problem.classes)) if rng.random() < 0.3]
    rules = SpreadRules(problem, placed)
    cp = cp_model.CpModel()
    x: dict[tuple[int, int], cp_model.IntVar] = {}
    upper: dict[int, int] = {}
    for c in range(len(problem.classes)):
        for n in range(len(problem.nodes)):
            if rng.random() < 0.6:
                var = x[(c, n)] = cp.new_int_var(0, 3, f"x[{c},{n}]")
                upper[var.index] = 3
    position = {each.name: n for n, each in enumerate(problem.nodes)}
    victims = [(i, p, position[p.node_name]) for i, p in enumerate(q for q in snap.pods if q.bound and q.node_name)]
    evict = {i: cp.new_bool_var(f"evict[{i}]") for i, _, _ in victims}
    chosen = [v for v in victims if rng.random() < 0.7]
    if scan:
        constrain_scan(rules, cp, x, upper, evict, chosen)
    else:
        rules.constrain(cp, x, upper, evict, chosen)
    return str(cp.Proto())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spread_instances(), st.integers(0, 1 << 30))
def test_preemption_spread_model_is_that_of_a_scan(snap: Snapshot, seed: int) -> None:
    assert preemption_model(snap, random.Random(seed), scan=False) == preemption_model(
        snap, random.Random(seed), scan=True
    )


def test_a_gang_spread_over_hosts_makes_the_same_preemption_model() -> None:
    """A table case: a gang spreading one pod per host beside bound pods it counts."""
    nodes = [node(f"n{i}", cpu="4", labels={HOST: f"n{i}", "zone": "ab"[i % 2]}) for i in range(4)]
    bound = [pod(f"ns/old{i}", cpu="1", node=f"n{i}", labels={"app": "x"}) for i in range(3)]
    members, groups = gangs("g", 1, size=3, cpu="1", min_member=3)
    members = [
        p.model_copy(update={"labels": {"app": "x"}, "spread_constraints": (spread(HOST, 1, {"app": "x"}),)})
        for p in members
    ]
    snap = snapshot(nodes, [*bound, *members], groups)
    for seed in range(5):
        assert preemption_model(snap, random.Random(seed), scan=False) == preemption_model(
            snap, random.Random(seed), scan=True
        )
