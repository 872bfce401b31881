"""Preemption with required pod anti-affinity per node, as kube-scheduler's DefaultPreemption does it.

DefaultPreemption runs the filters again with lower-priority pods removed: evicting a pod that a
waiting pod's anti-affinity (or the running pod's own anti-affinity) refuses makes the node fit.
Two nodes of 4 cores in queue ``qa``, each running a 1-core ``web`` pod of priority 1; room is
plenty, only anti-affinity on ``kubernetes.io/hostname`` keeps the waiting job out.
"""

from __future__ import annotations

import pytest
from builders import bind, decision, evict, gangs, node, nominate, queue, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_interpod import HOST, ZONE, rules, term, with_rules
from test_preemption import evicted, nominated, solved, waiting_job

from vcsat.model import Node, Pod, Policy, Snapshot
from vcsat.solver import check

WEB = {"app": "web"}
POLICY = Policy(time_limit_s=2)


def nodes(count: int = 2) -> list[Node]:
    return [node(f"n{i}", cpu="4", memory="64Gi", labels={HOST: f"n{i}", ZONE: "z"}) for i in range(count)]


def cluster(
    *, size: int = 2, web_priority: int = 1, web_anti: bool = False, job_anti: bool = True, key: str = HOST
) -> Snapshot:
    """Web pods on n0 and n1 (their own anti-affinity to ``web`` if ``web_anti``); a waiting job
    of ``size`` web-labelled pods of priority 10 with anti-affinity to ``web`` on ``key`` if
    ``job_anti``."""
    running = []
    groups = []
    for i in range(2):
        pods, made = gangs(f"web{i}", queue="qa", priority=web_priority, node=f"n{i}", cpu="1", created=i, labels=WEB)
        if web_anti:
            pods = [with_rules(p, anti=rules(term(HOST, WEB))) for p in pods]
        running += pods
        groups += made
    job, job_groups = waiting_job("job", size=size, cpu="1", labels=WEB)
    if job_anti:
        job = [with_rules(p, anti=rules(term(key, WEB))) for p in job]
    return snapshot(nodes=nodes(), pods=[*running, *job], groups=[*groups, *job_groups], queues=[queue("qa")])


def test_anti_affinity_gang_evicts_the_pods_its_terms_select() -> None:
    """Each job pod needs a node without a web pod: both web pods go, one job pod per node."""
    snap = cluster()
    dec = solved(snap, POLICY)
    assert evicted(dec) == {"ns/web0-0-0": "preempt", "ns/web1-0-0": "preempt"}
    assert sorted(nominated(dec).values()) == ["n0", "n1"]


def test_a_single_pod_takes_one_victim() -> None:
    snap = cluster(size=1)
    dec = solved(snap, POLICY)
    assert len(evicted(dec)) == 1
    (victim,) = evicted(dec)
    assert list(nominated(dec).values()) == [snap.pod_by_key[victim].node_name]


def test_a_running_pods_own_anti_affinity_is_lifted_by_evicting_it() -> None:
    """The job has no terms; the web pods' anti-affinity refuses it (the symmetric rule)."""
    snap = cluster(size=1, web_anti=True, job_anti=False)
    dec = solved(snap, POLICY)
    assert len(evicted(dec)) == 1
    assert len(nominated(dec)) == 1


@pytest.mark.parametrize(
    "name, snap",
    [
        ("the blockers outrank the job", cluster(web_priority=20)),
        ("two pods that repel each other by zone, one zone: the job never fits", cluster(key=ZONE)),
    ],
)
def test_no_eviction(name: str, snap: Snapshot) -> None:
    dec = solved(snap, POLICY)
    assert evicted(dec) == {}
    assert nominated(dec) == {}


@pytest.mark.parametrize("key", [ZONE, HOST])
def test_a_pod_placed_this_cycle_keeps_its_anti_affinity_against_the_preempt_phase(key: str) -> None:
    """job0 (allocated this cycle) repels web pods in its zone/host; job1 (a web pod with no terms
    of its own) reaches the preempt phase and must not join job0's domain, room or not."""
    running, running_groups = gangs("run0", queue="qa", priority=0, node="n0", cpu="1", labels={"app": "db"})
    first, first_group = waiting_job("job0", size=1, priority=4, cpu="1", labels=WEB)
    first = [with_rules(p, anti=rules(term(key, WEB))) for p in first]
    second, second_group = waiting_job("job1", size=1, priority=4, cpu="1", labels=WEB)
    snap = snapshot(
        nodes=nodes(1),
        pods=[*running, *first, *second],
        groups=[*running_groups, *first_group, *second_group],
        queues=[queue("qa")],
    )
    placed = solved(snap, POLICY)  # solved() asserts check() finds nothing
    assert [b.pod for b in placed.bindings] + [n.pod for n in placed.nominations] == ["ns/job0-0-0"]


def test_check_judges_nominations_after_evictions() -> None:
    """A nomination beside its victim is sound; beside a pod that stays it is flagged."""
    snap = cluster(size=1)
    ok = decision(snap, nominations=[nominate("ns/job-0-0", "n0")], evictions=[evict("ns/web0-0-0")])
    assert not [v for v in check(snap, ok, POLICY) if "AntiAffinity" in v.rule]
    wrong = decision(snap, nominations=[nominate("ns/job-0-0", "n0")], evictions=[evict("ns/web1-0-0")])
    assert "PodAntiAffinityRulesNotMatch" in {v.rule for v in check(snap, wrong, POLICY)}


def test_check_still_judges_bindings_beside_victims() -> None:
    """A binding lands now, while the victim still runs: flagged."""
    snap = cluster(size=1)
    now = decision(snap, bindings=[bind("ns/job-0-0", "n0")], evictions=[evict("ns/web0-0-0")])
    assert "PodAntiAffinityRulesNotMatch" in {v.rule for v in check(snap, now, POLICY)}


# --- property: random clusters, random anti-affinity, random priorities ---------------------------


@st.composite
def contested(draw: st.DrawFn) -> Snapshot:
    count = draw(st.integers(1, 3))
    labels = [WEB, {"app": "db"}]
    running = []
    groups = []
    for i in range(draw(st.integers(1, 6))):
        pods, made = gangs(
            f"run{i}",
            queue="qa",
            priority=draw(st.integers(0, 8)),
            node=f"n{draw(st.integers(0, count - 1))}",
            cpu=draw(st.sampled_from(["1", "2"])),
            created=i,
            labels=draw(st.sampled_from(labels)),
        )
        if draw(st.booleans()):
            pods = [with_rules(p, anti=rules(term(HOST, draw(st.sampled_from(labels))))) for p in pods]
        running += pods
        groups += made
    waiting = []
    for j in range(draw(st.integers(1, 2))):
        size = draw(st.integers(1, 3))
        pods, made = waiting_job(
            f"job{j}",
            size=size,
            priority=draw(st.integers(4, 12)),
            cpu=draw(st.sampled_from(["1", "2"])),
            labels=draw(st.sampled_from(labels)),
        )
        if draw(st.integers(0, 3)):
            key = draw(st.sampled_from([HOST, HOST, ZONE]))
            pods = [with_rules(p, anti=rules(term(key, draw(st.sampled_from(labels))))) for p in pods]
        waiting += pods
        groups += made
    return snapshot(nodes=nodes(count), pods=[*running, *waiting], groups=groups, queues=[queue("qa")])


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contested())
def test_random_preemption_with_anti_affinity_passes_check(snap: Snapshot) -> None:
    """solve() asserts check() finds nothing (nominations judged after their victims go)."""
    solved(snap, POLICY)


@st.composite
def one_waiting(draw: st.DrawFn) -> Snapshot:
    """As :func:`contested`, with one waiting pod whose terms (if any) are by hostname."""
    count = draw(st.integers(1, 3))
    labels = [WEB, {"app": "db"}]
    running = []
    groups = []
    for i in range(draw(st.integers(1, 6))):
        pods, made = gangs(
            f"run{i}",
            queue="qa",
            priority=draw(st.integers(0, 8)),
            node=f"n{draw(st.integers(0, count - 1))}",
            cpu=draw(st.sampled_from(["1", "2"])),
            created=i,
            labels=draw(st.sampled_from(labels)),
        )
        if draw(st.booleans()):
            pods = [with_rules(p, anti=rules(term(HOST, draw(st.sampled_from(labels))))) for p in pods]
        running += pods
        groups += made
    pods, made = waiting_job(
        "job",
        priority=draw(st.integers(4, 12)),
        cpu=draw(st.sampled_from(["1", "2"])),
        labels=draw(st.sampled_from(labels)),
    )
    if draw(st.booleans()):
        pods = [with_rules(p, anti=rules(term(HOST, draw(st.sampled_from(labels))))) for p in pods]
    return snapshot(nodes=nodes(count), pods=[*running, *pods], groups=[*groups, *made], queues=[queue("qa")])


def _repels(a: Pod, b: Pod) -> bool:
    """The test's own reading: a required hostname term of one selects the other's labels."""
    return any(
        t.label_selector is not None and t.label_selector.matches(b.labels) for t in a.pod_anti_affinity.required
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(one_waiting())
def test_a_pod_goes_wherever_default_preemption_finds_a_node(snap: Snapshot) -> None:
    """DefaultPreemption's candidate test: on some node, once every lower-priority pod is gone,
    the pod fits (4 cores) and no pod left repels it either way. Then vcsat places it (bound or
    nominated); and it never nominates it where that test fails."""
    (job,) = [p for p in snap.pods if p.pending]
    cpu = job.requests["cpu"]

    def candidate(name: str) -> bool:
        staying = [p for p in snap.pods_on_node.get(name, ()) if p.priority >= job.priority]
        held = sum(p.requests["cpu"] for p in staying)
        return held + cpu <= 4000 and not any(_repels(job, p) or _repels(p, job) for p in staying)

    dec = solved(snap, POLICY)
    where = {b.pod: b.node for b in dec.bindings} | nominated(dec)
    if any(candidate(n.name) for n in snap.nodes):
        assert job.key in where
    if job.key in nominated(dec):
        assert candidate(where[job.key])
