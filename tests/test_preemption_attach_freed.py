"""Preemption frees CSI attach slots: a victim's volumes stop counting against NodeVolumeLimits.

kube-scheduler's DefaultPreemption judges a node with its victims removed, and NodeVolumeLimits
counts the unique CSI volumes of the pods on it: a preemptor that needs an attach slot on a node
at its driver's limit may evict a lower-priority pod whose volume of that driver no other pod
uses. One node of 4 cores whose CSINode allows ``limit`` volumes of one driver, running
low-priority pods of 1 core with one volume each; a waiting higher-priority job whose pod needs one
more volume. The validator judges a nomination's attach slots after the evictions.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_preemption import evicted, nominated, solved, waiting_job

from tests.builders import gangs, group, node, pod, queue, snapshot
from tests.storage_builders import RWX, csinode_limits, pv, pvc
from vcsat.model import Decision, Policy, Snapshot
from vcsat.model.decision import Eviction, Nomination, SolverStats
from vcsat.solver import check

EBS = "ebs.csi.aws.com"
EFS = "efs.csi.aws.com"
POLICY = Policy(time_limit_s=2)


def cluster(
    limit: int,
    fillers: list[tuple[int, str, str]],
    *,
    job_priority: int = 10,
    job_driver: str = EBS,
) -> Snapshot:
    """``fillers``: per running pod on n0, (priority, driver of its volume, its claim name); two
    pods naming one claim share its volume."""
    running, groups = [], []
    for i, (priority, _, claim) in enumerate(fillers):
        pods, made = gangs(f"fill{i}", queue="qa", priority=priority, node="n0", cpu="1", created=i, claims=[claim])
        running += pods
        groups += made
    job, made = waiting_job("job", size=1, cpu="1", priority=job_priority, claims=["mine"])
    volumes = {claim: driver for _, driver, claim in fillers}
    volumes["mine"] = job_driver
    return snapshot(
        nodes=[node("n0", cpu="4")],
        pods=[*running, *job],
        groups=[*groups, *made],
        queues=[queue("qa")],
        claims=[pvc(f"ns/{c}", volume=f"v-{c}", modes=[RWX]) for c in sorted(volumes)],
        volumes=[
            pv(f"v-{c}", claim=f"ns/{c}", modes=[RWX], csi=(driver, f"h-{c}")) for c, driver in sorted(volumes.items())
        ],
        csinodes=[csinode_limits("n0", {EBS: limit, EFS: limit})],
    )


def test_a_victims_volume_frees_the_slot_the_preemptor_needs() -> None:
    dec = solved(cluster(2, [(1, EBS, "a"), (1, EBS, "b")]), POLICY)
    assert len(evicted(dec)) == 1  # one slot is enough: the fewest victims
    assert nominated(dec) == {"ns/job-0-0": "n0"}


@pytest.mark.parametrize(
    "case, fillers, job_priority",
    [
        ("the only pods with volumes outrank the job", [(20, EBS, "a"), (20, EBS, "b")], 10),
        ("the low-priority pods hold another driver's volumes", [(20, EBS, "a"), (20, EBS, "b"), (1, EFS, "c")], 10),
        ("the job's own priority: no preemption", [(10, EBS, "a"), (10, EBS, "b")], 10),
    ],
)
def test_no_victim_frees_a_slot_of_the_driver(
    case: str, fillers: list[tuple[int, str, str]], job_priority: int
) -> None:
    dec = solved(cluster(2, fillers, job_priority=job_priority), POLICY)
    assert not evicted(dec), case
    assert not nominated(dec), case


def test_the_victim_that_frees_a_slot_is_taken_over_a_larger_one() -> None:
    # fill0 (EFS) frees no EBS slot; fill1 (EBS) does: only fill1 goes, though both are low.
    dec = solved(cluster(1, [(1, EFS, "a"), (1, EBS, "b")]), POLICY)
    assert set(evicted(dec)) == {"ns/fill1-0-0"}
    assert nominated(dec) == {"ns/job-0-0": "n0"}


def test_a_volume_two_running_pods_share_is_not_credited_to_one() -> None:
    # Both running pods use claim a (one volume, one slot): evicting the low one frees nothing,
    # and the other outranks the job.
    dec = solved(cluster(1, [(1, EBS, "a"), (20, EBS, "a")]), POLICY)
    assert not evicted(dec)


@pytest.mark.parametrize(
    "case, limit, fillers, victims",
    [
        # kube-scheduler removes every lower-priority pod, then reprieves what it can: neither
        # sharer can come back (its volume would take the slot again), so both go.
        ("two low pods share the only volume", 1, [(1, EBS, "a"), (1, EBS, "a")], {"ns/fill0-0-0", "ns/fill1-0-0"}),
        (
            "three low pods share it",
            1,
            [(1, EBS, "a"), (5, EBS, "a"), (1, EBS, "a")],
            {"ns/fill0-0-0", "ns/fill1-0-0", "ns/fill2-0-0"},
        ),
        # A volume one pod holds alone frees its slot with one eviction: fewer victims than the pair.
        ("a lone volume beats a shared one", 2, [(1, EBS, "a"), (1, EBS, "a"), (1, EBS, "b")], {"ns/fill2-0-0"}),
    ],
)
def test_a_volume_only_victims_share_is_freed_when_all_of_them_go(
    case: str, limit: int, fillers: list[tuple[int, str, str]], victims: set[str]
) -> None:
    dec = solved(cluster(limit, fillers), POLICY)
    assert set(evicted(dec)) == victims, case
    assert nominated(dec) == {"ns/job-0-0": "n0"}, case
    assert not check(cluster(limit, fillers), dec, POLICY), case


def _decision(victims: list[str]) -> Decision:
    return Decision(
        nominations=[Nomination(pod="ns/job-0-0", node="n0")],
        evictions=[Eviction(pod=v, reason="preempt") for v in victims],
        solver=SolverStats(status="FEASIBLE"),
    )


@pytest.mark.parametrize(
    "victims, flagged",
    [
        (["ns/fill1-0-0"], False),  # frees fill1's EBS volume: 1 of 1 after the eviction
        (["ns/fill0-0-0"], True),  # frees an EFS volume only: 2 EBS volumes where 1 attaches
        ([], True),
    ],
)
def test_check_judges_a_nominations_attach_slots_after_the_evictions(victims: list[str], flagged: bool) -> None:
    snap = cluster(1, [(1, EFS, "a"), (1, EBS, "b")])
    found = [v for v in check(snap, _decision(victims), POLICY) if v.rule == "NodeVolumeLimits"]
    assert bool(found) is flagged, found


@st.composite
def contested(draw: st.DrawFn) -> Snapshot:
    count = draw(st.integers(1, 3))
    fillers = [
        (draw(st.sampled_from([1, 5, 10, 20])), draw(st.sampled_from([EBS, EBS, EFS])), draw(st.sampled_from("abcd")))
        for _ in range(count)
    ]
    return cluster(draw(st.integers(0, 3)), fillers, job_priority=draw(st.sampled_from([5, 10, 15])))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contested())
def test_random_preemption_for_attach_slots_passes_check(snap: Snapshot) -> None:
    """solve() (preempt included) finds no NodeVolumeLimits or other violation in check(); each
    nomination's node, with the victims gone, has the slot: the test's own count of distinct
    volumes of the driver (staying pods and the preemptor) within the limit."""
    dec = solved(snap, POLICY)
    gone = set(evicted(dec))
    if not nominated(dec):
        return
    claims = {c.key: c for c in snap.claims}
    drivers = {v.name: v.csi_driver for v in snap.volumes}
    volumes: set[tuple[str, str]] = set()
    for p in snap.pods:
        if (p.bound and p.key not in gone) or p.key in nominated(dec):
            for name in p.claims:
                claim = claims[f"{p.namespace}/{name}"]
                volumes.add((drivers[claim.volume_name], claim.volume_name))
    ebs = {name for driver, name in volumes if driver == EBS}
    assert len(ebs) <= snap.csinodes[0].limits[EBS], (ebs, gone)


def test_a_gangs_low_priority_pod_evicts_nothing_of_its_own_priority() -> None:
    """Found by the sharing property: a gang (PodGroup without a priority class) whose pods differ
    in priority took its highest pod priority as its right to evict, and the pod it placed had
    only the victims' priority. A victim must be below the pod placed (DefaultPreemption compares
    the pods); here the priority-1 pod fits nowhere (its volume finds no attach slot), so nothing
    is evicted."""
    snap = snapshot(
        nodes=[node("n0", cpu="4")],
        pods=[
            pod("ns/old0", cpu="2", node="n0"),
            pod("ns/old1", cpu="2", node="n0"),
            pod("ns/low", cpu="1", group="ns/g0"),
            pod("ns/high", cpu="1", group="ns/g0", priority=1, claims=["c1"]),
        ],
        groups=[group("ns/g0", min_member=1, phase="Inqueue")],
        claims=[pvc("ns/c1", volume="v1", modes=[RWX])],
        volumes=[pv("v1", claim="ns/c1", modes=[RWX], csi=(EBS, "h1"))],
        csinodes=[csinode_limits("n0", {EBS: 0})],
    )
    dec = solved(snap, POLICY)
    assert not evicted(dec)
    assert not nominated(dec)


def test_the_holder_of_a_volume_the_preemptor_shares_stays() -> None:
    """Found by the sharing property: the preemptor's volume is attached already (old2 holds it),
    so it needs no slot where the limit is 0, unless old2 goes; the model evicted old2 all the
    same and the volume would have needed a slot after the eviction."""
    snap = snapshot(
        nodes=[node("n0", cpu="6")],
        pods=[
            pod("ns/old0", cpu="2", node="n0", claims=["c0"]),
            pod("ns/old1", cpu="2", node="n0", claims=["c0"]),
            pod("ns/old2", cpu="2", node="n0", claims=["c0", "c1"]),
            pod("ns/p0", cpu="1", priority=1, claims=["c1"]),
        ],
        claims=[pvc(f"ns/{c}", volume=f"v-{c}", modes=[RWX]) for c in ("c0", "c1")],
        volumes=[pv(f"v-{c}", claim=f"ns/{c}", modes=[RWX], csi=(EBS, f"h-{c}")) for c in ("c0", "c1")],
        csinodes=[csinode_limits("n0", {EBS: 0})],
    )
    dec = solved(snap, POLICY)
    assert "ns/old2" not in evicted(dec)
    assert nominated(dec) == {"ns/p0": "n0"}
