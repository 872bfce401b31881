"""The validator's node capacity rule (:mod:`vcsat.solver.validator.capacity`): its int64 totals
against its Python-integer ones, amounts too large for int64, and a valid decision with one pod
put where it does not fit."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import bind, decision, evict, node, pod, snapshot
from tests.test_check import clusters, greedy_decision, random_decisions
from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver.validator import capacity
from vcsat.solver.validator.capacity import demand
from vcsat.solver.validator.check import check


def _both(snap: Snapshot, dec: Decision) -> tuple[list[tuple[str, str, str]] | None, list[tuple[str, str, str]]]:
    """The two readings of capacity on the decision's accepted placements (first of each pod,
    managed, pending, known node), the victims being its evictions of bound pods."""
    by_node: dict[str, list[tuple[capacity.Kind, object]]] = {}
    nodes = {}
    seen: set[str] = set()
    entries = [("binding", b.pod, b.node) for b in dec.bindings] + [
        ("nomination", n.pod, n.node) for n in dec.nominations
    ]
    for kind, key, node_name in entries:
        p = snap.pod_by_key.get(key)
        if p is None or key in seen:
            continue
        seen.add(key)
        n = snap.node_by_name.get(node_name)
        if p.managed and p.pending and n is not None:
            by_node.setdefault(n.name, []).append((kind, p))  # type: ignore[arg-type]
            nodes[n.name] = n
    victims = {e.pod: v for e in dec.evictions if (v := snap.pod_by_key.get(e.pod)) is not None and v.bound}
    fast = capacity._in_numpy(snap, by_node, nodes, victims) if by_node else []  # type: ignore[arg-type]
    exact = capacity._in_python(snap, by_node, nodes, victims)  # type: ignore[arg-type]
    return fast, exact


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_int64_totals_are_the_python_ones(data: st.DataObject) -> None:
    snap = data.draw(clusters())
    dec = data.draw(random_decisions(snap))
    fast, exact = _both(snap, dec)
    assert fast is not None  # the clusters' amounts are small
    assert sorted(fast) == sorted(exact)


def test_amounts_beyond_int64_are_judged_in_python() -> None:
    huge = 1 << 62  # 4 EiB: two of them are past int64
    snap = snapshot(
        nodes=[node("n1", memory=str(6 * (1 << 60)))],
        pods=[pod("ns/b", memory=str(huge), node="n1"), pod("ns/p", memory=str(huge))],
    )
    dec = decision(snap, bindings=[bind("ns/p", "n1")])
    fast, exact = _both(snap, dec)
    assert fast is None
    assert [(rule, subject) for rule, subject, _ in sorted(exact)] == [
        ("CapacityAfterEvictions", "n1"),
        ("CapacityNow", "n1"),
    ]
    assert {v.rule for v in check(snap, dec)} >= {"CapacityNow", "CapacityAfterEvictions"}
    fits = snapshot(nodes=[node("n1", memory=str(6 * (1 << 60)))], pods=[pod("ns/p", memory=str(huge))])
    assert not [v for v in check(fits, decision(fits, bindings=[bind("ns/p", "n1")])) if "Capacity" in v.rule]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.data())
def test_a_pod_that_does_not_fit_is_reported(snap: Snapshot, data: st.DataObject) -> None:
    """A valid decision with one pending pod bound where one of its requests exceeds what the node
    has left beside its bound pods: the check reports that node's capacity now."""
    dec = greedy_decision(snap, Policy())
    options = []
    for p in snap.pods:
        if not (p.pending and p.managed):
            continue
        for n in snap.nodes:
            on_node = [q for q in snap.pods if q.bound and q.node_name == n.name]
            for r, amount in demand(p).items():
                held = sum(demand(q).get(r, 0) for q in on_node)
                if amount > 0 and held + amount > n.allocatable.get(r, 0):
                    options.append((p.key, n.name, r))
    if not options:
        return
    key, node_name, resource = data.draw(st.sampled_from(options))
    bindings = [b for b in dec.bindings if b.pod != key] + [bind(key, node_name, [])]
    found = check(snap, dec.model_copy(update={"bindings": bindings}))
    assert any(v.rule == "CapacityNow" and v.subject == node_name and v.message.startswith(resource) for v in found)


def _sharing(snap: Snapshot) -> Snapshot:
    """The same cluster with pods of equal requests sharing one requests mapping, as the
    converter's pods of one spec do (the int64 totals read each distinct mapping once)."""
    first: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
    pods = []
    for p in snap.pods:
        shared = first.setdefault(tuple(sorted(p.requests.items())), p.requests)
        pods.append(p.model_copy(update={"requests": shared}))
    return snap.model_copy(update={"pods": tuple(pods)})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_int64_totals_with_shared_requests_are_the_python_ones(data: st.DataObject) -> None:
    snap = _sharing(data.draw(clusters()))
    dec = data.draw(random_decisions(snap))
    fast, exact = _both(snap, dec)
    assert fast is not None
    assert sorted(fast) == sorted(exact)


def test_a_shared_requests_mapping_counts_once_per_pod() -> None:
    """Three pods of one spec (one requests mapping) on a node: held three times, and a fourth
    bound beside them is over its cpu, now and after evictions; evicting one of them makes room
    after evictions only."""
    template = pod("ns/a", cpu="2", node="n1")
    bound = [template.model_copy(update={"name": name}) for name in ("a", "b", "c")]
    assert bound[0].requests is bound[2].requests
    snap = snapshot(nodes=[node("n1", cpu="7")], pods=[*bound, pod("ns/p", cpu="2")])
    dec = decision(snap, bindings=[bind("ns/p", "n1")])
    fast, exact = _both(snap, dec)
    assert fast is not None and sorted(fast) == sorted(exact)
    assert sorted((rule, subject) for rule, subject, _ in fast) == [
        ("CapacityAfterEvictions", "n1"),
        ("CapacityNow", "n1"),
    ]
    assert "cpu now: 6000m cpu held + 2000m cpu new > 7000m cpu allocatable" in {message for _, _, message in fast}
    evicting = decision(snap, bindings=[bind("ns/p", "n1")], evictions=[evict("ns/a")])
    fast, exact = _both(snap, evicting)
    assert fast is not None and sorted(fast) == sorted(exact)
    assert [(rule, subject) for rule, subject, _ in fast] == [("CapacityNow", "n1")]
