"""Preemption by pods with shared CSI volumes: NodeVolumeLimits counted as in allocate.

Pods whose CSI volumes other pods share take a node's attach slot once per volume. Such gangs now
preempt like any other; the slots they need must be left by allocate or freed by victims (see
tests/test_preemption_attach_freed.py; the fillers here hold no volume). One node of 4
cores, full with a low-priority pod; the waiting gang's two pods use the same volumes.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_preemption import evicted, nominated, solved, waiting_job

from tests.builders import gangs, node, queue, snapshot
from tests.storage_builders import RWX, csinode_limits, pv, pvc
from vcsat.model import Policy, Snapshot

HOST = "kubernetes.io/hostname"
EBS = "ebs.csi.aws.com"
POLICY = Policy(time_limit_s=2)


def cluster(limit: int, claims: list[str], *, nodes: int = 1, filler_priority: int = 1) -> Snapshot:
    running, groups = [], []
    for i in range(nodes):
        pods, made = gangs(f"fill{i}", queue="qa", priority=filler_priority, node=f"n{i}", cpu="4", created=i)
        running += pods
        groups += made
    job, made = waiting_job("job", size=2, cpu="1", claims=claims)
    names = sorted({c for c in claims})
    return snapshot(
        nodes=[node(f"n{i}", cpu="4", labels={HOST: f"n{i}"}) for i in range(nodes)],
        pods=[*running, *job],
        groups=[*groups, *made],
        queues=[queue("qa")],
        claims=[pvc(f"ns/{c}", volume=f"v-{c}", modes=[RWX]) for c in names],
        volumes=[pv(f"v-{c}", claim=f"ns/{c}", modes=[RWX], csi=(EBS, f"h-{c}")) for c in names],
        csinodes=[csinode_limits(f"n{i}", {EBS: limit}) for i in range(nodes)],
    )


def test_a_gang_sharing_a_volume_preempts_and_takes_one_slot() -> None:
    dec = solved(cluster(1, ["c0"]), POLICY)
    assert evicted(dec) == {"ns/fill0-0-0": "preempt"}
    assert set(nominated(dec).values()) == {"n0"}
    assert len(nominated(dec)) == 2


@pytest.mark.parametrize("limit, preempts", [(1, False), (2, True)])
def test_two_shared_volumes_need_two_slots(limit: int, preempts: bool) -> None:
    dec = solved(cluster(limit, ["c0", "c1"]), POLICY)
    assert bool(evicted(dec)) is preempts
    assert len(nominated(dec)) == (2 if preempts else 0)


@st.composite
def contested(draw: st.DrawFn) -> Snapshot:
    claims = draw(st.lists(st.sampled_from(["c0", "c1", "c2"]), min_size=1, max_size=3, unique=True))
    return cluster(
        draw(st.integers(0, 3)),
        claims,
        nodes=draw(st.integers(1, 3)),
        filler_priority=draw(st.integers(0, 20)),
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contested())
def test_random_preemption_with_shared_volumes_passes_check(snap: Snapshot) -> None:
    """solve() (preempt included) finds no NodeVolumeLimits or other violation in check()."""
    solved(snap, POLICY)
