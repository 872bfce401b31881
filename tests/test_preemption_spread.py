"""Preemption with topology spread (DoNotSchedule), as kube-scheduler's DefaultPreemption does it.

DefaultPreemption runs the filters again with the lower-priority pods removed: evicting pods that
a waiting pod's spread constraint counts can bring its domain back within maxSkew. Zones ``a`` and
``b``, one 4-core node each; node ``b`` is full with a pod of priority 50 that nothing counts.
"""

from __future__ import annotations

from builders import gangs, node, queue, snapshot, spread
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_preemption import evicted, nominated, solved, waiting_job

from vcsat.model import Node, Policy, Snapshot

WEB = {"app": "web"}
POLICY = Policy(time_limit_s=2)


def two_zones() -> list[Node]:
    return [node(f"n{z}", cpu="4", memory="64Gi", labels={"zone": z, "kubernetes.io/hostname": f"n{z}"}) for z in "ab"]


def cluster(web_priority: int = 1, key: str = "zone") -> Snapshot:
    """Two web pods (priority ``web_priority``) in zone a; a waiting web pod spreading by ``key``."""
    running, groups = gangs("web", 2, queue="qa", priority=web_priority, node="na", cpu="1", labels=WEB)
    big, big_groups = gangs("big", queue="qa", priority=50, node="nb", cpu="4")
    job, job_groups = waiting_job("job", cpu="1", labels=WEB, spread=[spread(key, 1, WEB)])
    return snapshot(
        nodes=two_zones(),
        pods=[*running, *big, *job],
        groups=[*groups, *big_groups, *job_groups],
        queues=[queue("qa")],
    )


def test_evicting_counted_pods_brings_the_zone_within_skew() -> None:
    """In a, the pod would make 3 against 0: both web pods go, then 1 against 0."""
    dec = solved(cluster(), POLICY)
    assert evicted(dec) == {"ns/web-0-0": "preempt", "ns/web-1-0": "preempt"}
    assert nominated(dec) == {"ns/job-0-0": "na"}


def test_no_eviction_when_the_counted_pods_outrank_the_job() -> None:
    dec = solved(cluster(web_priority=20), POLICY)
    assert evicted(dec) == {}
    assert nominated(dec) == {}


# --- property: random spread, random priorities; check() judges counts after evictions -----------


@st.composite
def contested(draw: st.DrawFn) -> Snapshot:
    names = [f"n{i}" for i in range(draw(st.integers(2, 4)))]
    zones = [draw(st.sampled_from(["a", "b", "a", "b", ""])) for _ in names]  # "": no zone label
    nodes = [
        node(n, cpu="3", memory="64Gi", labels={"kubernetes.io/hostname": n} | ({"zone": z} if z else {}))
        for n, z in zip(names, zones, strict=True)
    ]
    labels = [WEB, {"app": "db"}]
    pods = []
    groups = []
    for i in range(draw(st.integers(1, 6))):
        made, made_groups = gangs(
            f"run{i}",
            queue="qa",
            priority=draw(st.integers(0, 8)),
            node=draw(st.sampled_from(names)),
            cpu=draw(st.sampled_from(["1", "2"])),
            created=i,
            labels=draw(st.sampled_from(labels)),
        )
        pods += made
        groups += made_groups
    for j in range(draw(st.integers(1, 2))):
        key = draw(st.sampled_from(["zone", "kubernetes.io/hostname"]))
        constraints = (
            [spread(key, draw(st.integers(1, 2)), draw(st.sampled_from(labels)))] if draw(st.integers(0, 3)) else []
        )
        made, made_groups = waiting_job(
            f"job{j}",
            size=draw(st.integers(1, 3)),
            priority=draw(st.integers(4, 12)),
            cpu=draw(st.sampled_from(["1", "2"])),
            labels=draw(st.sampled_from(labels)),
            spread=constraints,
        )
        pods += made
        groups += made_groups
    return snapshot(nodes=nodes, pods=pods, groups=groups, queues=[queue("qa")])


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contested())
def test_random_preemption_with_spread_passes_check(snap: Snapshot) -> None:
    """solve() asserts check() finds nothing: every placement with a spread constraint within its
    skew before and after the evictions."""
    solved(snap, POLICY)


def test_a_node_without_the_key_is_no_place_for_a_carrier() -> None:
    """Evicting the priority-0 pod on the unlabelled node would be cheaper, but a pod spreading by
    zone cannot go to a node without a zone (missing required label): a web pod in zone a goes."""
    nodes = [
        node("na", cpu="2", memory="64Gi", labels={"zone": "a"}),
        node("bare", cpu="2", memory="64Gi"),
    ]
    web, web_groups = gangs("web", 2, queue="qa", priority=5, node="na", cpu="1", labels=WEB)
    other, other_groups = gangs("other", queue="qa", priority=0, node="bare", cpu="2")
    job, job_groups = waiting_job("job", cpu="1", labels=WEB, spread=[spread("zone", 1, WEB)])
    snap = snapshot(
        nodes=nodes, pods=[*web, *other, *job], groups=[*web_groups, *other_groups, *job_groups], queues=[queue("qa")]
    )
    dec = solved(snap, POLICY)
    assert nominated(dec) == {"ns/job-0-0": "na"}
    assert len(evicted(dec)) == 1
