"""Preemption with rules between pods beyond hostname anti-affinity, as DefaultPreemption reads them.

kube-scheduler's DefaultPreemption removes the lower-priority pods of a node and runs the filters
again: a zone (or rack) anti-affinity term is lifted only when that node's victims clear every pod
it refuses in the whole domain; a host port held by a lower-priority pod is freed by evicting it; a required affinity
counts only the matching pods that stay. And evictions never take the pod a placed pod's required
affinity relies on. Each case below is one such rule; the property draws random mixes and asks
the validator, which judges nominations after their victims go.
"""

from __future__ import annotations

from builders import decision, evict, gangs, node, nominate, queue, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_interpod import HOST, ZONE, rules, term, with_rules
from test_preemption import evicted, nominated, solved, waiting_job

from vcsat.model import Node, Pod, PodGroup, Policy, Snapshot
from vcsat.solver import check

WEB = {"app": "web"}
DB = {"app": "db"}
RACK = "example.com/rack"
POLICY = Policy(time_limit_s=2)
PORT = ("TCP", "", 8080)


def nodes(zones: tuple[str, ...] = ("a", "a", "b"), cpu: str = "4") -> list[Node]:
    return [
        node(f"n{i}", cpu=cpu, memory="64Gi", labels={HOST: f"n{i}", ZONE: z, RACK: f"r{i // 2}"})
        for i, z in enumerate(zones)
    ]


def running(
    name: str, where: str, *, priority: int = 1, cpu: str = "1", created: int = 0, **kw: object
) -> tuple[list[Pod], list[PodGroup]]:
    pods, groups = gangs(
        name, queue="qa", priority=priority, node=where, cpu=cpu, created=created, labels=kw.pop("labels", WEB)
    )
    if kw:
        pods = [with_rules(p, **kw) for p in pods]  # type: ignore[arg-type]
    return pods, groups


def build(
    *parts: tuple[list[Pod], list[PodGroup]], zones: tuple[str, ...] = ("a", "a", "b"), cpu: str = "4"
) -> Snapshot:
    pods = [p for ps, _ in parts for p in ps]
    groups = [g for _, gs in parts for g in gs]
    return snapshot(nodes=nodes(zones, cpu), pods=pods, groups=groups, queues=[queue("qa")])


def job(
    *, priority: int = 10, cpu: str = "1", labels: dict[str, str] | None = None, **kw: object
) -> tuple[list[Pod], list[PodGroup]]:
    pods, groups = waiting_job("job", priority=priority, cpu=cpu, labels=labels or {"app": "job"})
    return [with_rules(p, **kw) for p in pods], groups  # type: ignore[arg-type]


# --- anti-affinity on zone and rack keys: the whole domain is cleared ------------------------------


def test_zone_anti_affinity_is_lifted_when_the_nodes_victims_clear_the_zone() -> None:
    """Zone a holds two low-priority web pods, both on n0; zone b one that outranks the job. n1
    (zone a) is refused while n0's pods run elsewhere in its zone; on n0 both go and the zone is clear."""
    snap = build(
        running("web0", "n0"),
        running("web1", "n0", created=1),
        running("web2", "n2", priority=20),
        job(anti=rules(term(ZONE, WEB))),
    )
    dec = solved(snap, POLICY)
    assert evicted(dec) == {"ns/web0-0-0": "preempt", "ns/web1-0-0": "preempt"}
    assert nominated(dec) == {"ns/job-0-0": "n0"}


def test_a_refusing_pod_on_another_node_of_the_zone_is_no_victim() -> None:
    """DefaultPreemption takes victims on the chosen node only: with a web pod on each node of
    zone a, no node's victims clear the zone, and zone b's web pod outranks the job."""
    snap = build(
        running("web0", "n0"),
        running("web1", "n1"),
        running("web2", "n2", priority=20),
        job(anti=rules(term(ZONE, WEB))),
    )
    dec = solved(snap, POLICY)
    assert evicted(dec) == {}
    assert nominated(dec) == {}


def test_a_running_pods_zone_anti_affinity_is_lifted_by_evicting_it() -> None:
    """The job has no terms; a web pod's own zone term refuses the job's zone-mates. Zone b's web
    pod outranks the job; n1 (zone a) is refused while the web pod runs on n0; on n0 it goes."""
    snap = build(
        running("web0", "n0", anti=rules(term(ZONE, {"app": "job"}))),
        running("web2", "n2", priority=20, anti=rules(term(ZONE, {"app": "job"}))),
        job(),
        cpu="1",
    )
    dec = solved(snap, POLICY)
    assert evicted(dec) == {"ns/web0-0-0": "preempt"}
    assert nominated(dec) == {"ns/job-0-0": "n0"}


def test_rack_anti_affinity_keeps_an_outranking_rack_closed() -> None:
    """Racks r0 = {n0, n1}, r1 = {n2}: the web pod in r1 outranks the job, the one on n1 does
    not: the job goes to n1 in its place (n0 is refused while it runs)."""
    snap = build(
        running("web0", "n1"),
        running("web2", "n2", priority=20),
        job(anti=rules(term(RACK, WEB))),
        cpu="1",
    )
    dec = solved(snap, POLICY)
    assert evicted(dec) == {"ns/web0-0-0": "preempt"}
    assert nominated(dec) == {"ns/job-0-0": "n1"}


# --- host ports ---------------------------------------------------------------------------------


def test_a_lower_priority_pod_holding_the_port_is_the_victim() -> None:
    snap = build(
        running("web0", "n0", ports=[PORT]),
        running("web1", "n1", ports=[PORT]),
        running("web2", "n2", ports=[PORT], priority=20),
        job(ports=[PORT]),
    )
    dec = solved(snap, POLICY)
    (victim,) = evicted(dec)
    assert victim in {"ns/web0-0-0", "ns/web1-0-0"}
    assert nominated(dec)["ns/job-0-0"] == snap.pod_by_key[victim].node_name


def test_a_port_held_by_an_outranking_pod_is_no_reason_to_evict() -> None:
    snap = build(running("web0", "n0", ports=[PORT], priority=20), job(ports=[PORT]), zones=("a",))
    dec = solved(snap, POLICY)
    assert evicted(dec) == {}
    assert nominated(dec) == {}


# --- the preemptor's required affinity --------------------------------------------------------


def test_an_affinity_a_lower_priority_pod_on_the_node_meets_does_not_preempt() -> None:
    """n0 is full: a db pod and a filler, both below the job, which needs a db pod on its node.
    Evicting the filler alone would do, but DefaultPreemption judges a node with all its
    lower-priority pods gone (affinity to would-be victims is not supported), so n0 is no
    candidate; n1's filler could go, but no db pod is there. Nothing happens."""
    snap = build(
        running("db", "n0", cpu="2", created=5, labels=DB),
        running("fill0", "n0", cpu="2", created=0),
        running("fill1", "n1", cpu="4", created=0),
        job(cpu="2", affinity=rules(term(HOST, DB))),
        zones=("a", "a"),
    )
    dec = solved(snap, POLICY)
    assert evicted(dec) == {}
    assert nominated(dec) == {}


def test_an_affinity_met_by_a_pod_of_equal_priority_preempts_beside_it() -> None:
    """As above, with the db pod at the job's priority: it stays through preemption, so the filler
    goes and the job is nominated to n0."""
    snap = build(
        running("db", "n0", cpu="2", created=5, labels=DB, priority=10),
        running("fill0", "n0", cpu="2", created=0),
        running("fill1", "n1", cpu="4", created=0),
        job(cpu="2", affinity=rules(term(HOST, DB))),
        zones=("a", "a"),
    )
    dec = solved(snap, POLICY)
    assert evicted(dec) == {"ns/fill0-0-0": "preempt"}
    assert nominated(dec) == {"ns/job-0-0": "n0"}


def test_an_affinity_only_victims_satisfy_is_not_met_by_evicting_them() -> None:
    """The only db pod must go for room: the job's affinity would then fail, so nothing happens."""
    snap = build(running("db", "n0", cpu="4", labels=DB), job(cpu="2", affinity=rules(term(HOST, DB))), zones=("a",))
    dec = solved(snap, POLICY)
    assert evicted(dec) == {}
    assert nominated(dec) == {}


def test_eviction_never_breaks_the_affinity_of_a_pod_bound_this_cycle() -> None:
    """A pod bound this cycle on n1 relies on the db pod in its zone (on n0); another job needs
    room on n0, where the db pod is the younger victim. The filler goes instead."""
    follower, follower_groups = gangs(
        "follower", queue="qa", priority=10, cpu="1", created=50, phase="Inqueue", labels={"app": "f"}
    )
    follower = [with_rules(p, affinity=rules(term(ZONE, DB))) for p in follower]
    snap = build(
        running("db", "n0", cpu="2", created=5, labels=DB),
        running("fill0", "n0", cpu="2", created=0),
        running("fill1", "n1", cpu="3", created=0, priority=20),
        (follower, follower_groups),
        job(cpu="2"),
        zones=("a", "a"),
    )
    dec = solved(snap, POLICY)
    assert {b.pod: b.node for b in dec.bindings}.get("ns/follower-0-0") == "n1"
    assert evicted(dec) == {"ns/fill0-0-0": "preempt"}


def test_check_catches_a_nomination_beside_a_zone_mate_that_stays() -> None:
    snap = build(running("web0", "n0"), running("web1", "n1"), job(anti=rules(term(ZONE, WEB))))
    wrong = decision(snap, nominations=[nominate("ns/job-0-0", "n0")], evictions=[evict("ns/web0-0-0")])
    assert "PodAntiAffinityRulesNotMatch" in {v.rule for v in check(snap, wrong, POLICY)}
    ok = decision(
        snap, nominations=[nominate("ns/job-0-0", "n0")], evictions=[evict("ns/web0-0-0"), evict("ns/web1-0-0")]
    )
    assert not [v for v in check(snap, ok, POLICY) if "AntiAffinity" in v.rule]


def test_check_catches_a_nomination_whose_affinity_only_a_victim_met() -> None:
    snap = build(running("db", "n0", cpu="4", labels=DB), job(cpu="2", affinity=rules(term(HOST, DB))), zones=("a",))
    wrong = decision(snap, nominations=[nominate("ns/job-0-0", "n0")], evictions=[evict("ns/db-0-0")])
    assert {v.rule for v in check(snap, wrong, POLICY)} & {"PodAffinityRulesNotMatch", "AffinityBrokenByEviction"}


def test_check_catches_a_nomination_beside_a_port_that_stays() -> None:
    snap = build(running("web0", "n0", ports=[PORT]), running("fill", "n0", cpu="3"), job(ports=[PORT]), zones=("a",))
    wrong = decision(snap, nominations=[nominate("ns/job-0-0", "n0")], evictions=[evict("ns/fill-0-0")])
    assert check(snap, wrong, POLICY)


# --- property: random mixes of these rules, random priorities -------------------------------------


@st.composite
def contested(draw: st.DrawFn) -> Snapshot:
    zones = tuple(draw(st.lists(st.sampled_from("ab"), min_size=1, max_size=4)))
    labels = [WEB, DB]
    keys = [HOST, ZONE, RACK]
    parts = []
    for i in range(draw(st.integers(1, 6))):
        kw: dict[str, object] = {}
        if draw(st.integers(0, 3)) == 0:
            kw["anti"] = rules(term(draw(st.sampled_from(keys)), draw(st.sampled_from([*labels, {"app": "job"}]))))
        if draw(st.integers(0, 3)) == 0:
            kw["ports"] = [PORT]
        parts.append(
            running(
                f"run{i}",
                f"n{draw(st.integers(0, len(zones) - 1))}",
                priority=draw(st.integers(0, 8)),
                cpu=draw(st.sampled_from(["1", "2"])),
                created=i,
                labels=draw(st.sampled_from(labels)),
                **kw,
            )
        )
    kw = {}
    rule = draw(st.sampled_from(["anti", "affinity", "ports", "none"]))
    if rule == "anti":
        kw["anti"] = rules(term(draw(st.sampled_from(keys)), draw(st.sampled_from(labels))))
    elif rule == "affinity":
        kw["affinity"] = rules(term(draw(st.sampled_from(keys)), draw(st.sampled_from(labels))))
    elif rule == "ports":
        kw["ports"] = [PORT]
    parts.append(job(priority=draw(st.integers(4, 12)), cpu=draw(st.sampled_from(["1", "2"])), **kw))
    return build(*parts, zones=zones)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contested())
def test_random_preemption_with_rules_between_pods_passes_check(snap: Snapshot) -> None:
    """solve() with preemption finds no violation in check() (nominations judged after their victims go)."""
    solved(snap, POLICY)


def _selects(owner: Pod, target: Pod, key: str, terms: str) -> list[str]:
    """The test's own reading: keys of ``owner``'s required terms (affinity or anti) that select ``target``."""
    rules_ = owner.pod_affinity if terms == "affinity" else owner.pod_anti_affinity
    return [
        t.topology_key
        for t in rules_.required
        if t.topology_key == key and t.label_selector is not None and t.label_selector.matches(target.labels)
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contested())
def test_the_pod_goes_wherever_default_preemption_finds_a_node(snap: Snapshot) -> None:
    """DefaultPreemption's candidate test, read apart from the solver: on some node, once its
    lower-priority pods are gone (pods elsewhere all stay), the job fits (4 cores), no staying pod
    in a domain of a term's key repels it either way, no staying pod on the node holds its port,
    and each required affinity term finds a staying pod in the node's domain. Then vcsat places
    it (bound or nominated); and it never nominates it where that test fails."""
    (job_pod,) = [p for p in snap.pods if p.pending]
    node_of = {n.name: n for n in snap.nodes}
    keys = [HOST, ZONE, RACK]

    def candidate(name: str) -> bool:
        here = node_of[name]
        staying = [p for p in snap.pods if p.bound and (p.node_name != name or p.priority >= job_pod.priority)]
        on_node = [p for p in staying if p.node_name == name]
        if sum(p.requests["cpu"] for p in on_node) + job_pod.requests["cpu"] > 4000:
            return False
        if job_pod.host_ports and any(p.host_ports for p in on_node):
            return False
        for key in keys:
            mates = [p for p in staying if node_of[p.node_name].labels.get(key) == here.labels.get(key)]
            if any(_selects(job_pod, p, key, "anti") or _selects(p, job_pod, key, "anti") for p in mates):
                return False
            if [t for t in job_pod.pod_affinity.required if t.topology_key == key] and not any(
                _selects(job_pod, p, key, "affinity") for p in mates
            ):
                return False
        return True

    dec = solved(snap, POLICY)
    where = {b.pod: b.node for b in dec.bindings} | nominated(dec)
    if any(candidate(n.name) for n in snap.nodes):
        assert job_pod.key in where
    if job_pod.key in nominated(dec):
        assert candidate(where[job_pod.key])
