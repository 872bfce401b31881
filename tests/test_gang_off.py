"""Gang scheduling off (``Policy.gang``): every pod is placed on its own, yet a pod of a PodGroup
stays in its group's queue, and the decision keeps one entry per PodGroup, as the validator (and
the live scheduler, which writes PodGroup statuses from them) expects."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from tests.builders import group, node, pod, queue, snapshot
from tests.test_volumes import instances
from vcsat.model import Policy, Snapshot
from vcsat.solver import check, solve

OFF = Policy(gang=False, time_limit_s=5)


def test_a_pod_of_a_podgroup_keeps_its_queues_capability() -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="8")],
        pods=[pod(f"ns/g-{i}", cpu="1", group="ns/g", created=i) for i in range(3)],
        groups=[group("ns/g", min_member=3, queue="small", phase="Inqueue")],
        queues=[queue("small", capability={"cpu": "2"})],
    )
    dec = solve(snap, OFF)
    assert check(snap, dec, OFF) == []
    assert len(dec.bindings) == 2
    assert [(o.podgroup, o.phase) for o in dec.podgroups] == [("ns/g", "Running")]


def test_a_pod_of_a_podgroup_in_a_missing_queue_waits() -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="8")],
        pods=[pod("ns/g-0", group="ns/g")],
        groups=[group("ns/g", queue="nope", phase="Inqueue")],
    )
    dec = solve(snap, OFF)
    assert check(snap, dec, OFF) == []
    assert not dec.bindings
    (entry,) = dec.podgroups
    assert (entry.podgroup, entry.reason) == ("ns/g", "QueueNotFound")
    assert "PodGroup's spec.queue 'nope'" in entry.message


def test_a_podgroup_none_of_whose_pods_fits_says_why_and_a_lone_pod_keeps_its_entry() -> None:
    snap = snapshot(
        nodes=[node("n1", cpu="2")],
        pods=[pod(f"ns/g-{i}", cpu="4", group="ns/g", created=i) for i in range(2)] + [pod("ns/lone", cpu="1")],
        groups=[group("ns/g", min_member=2, phase="Inqueue")],
    )
    dec = solve(snap, OFF)
    assert check(snap, dec, OFF) == []
    assert [(o.podgroup, o.phase) for o in dec.podgroups] == [("ns/g", "Inqueue"), ("ns/lone", "Running")]
    assert dec.podgroups[0].reason


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_random_instances_with_gang_off_have_no_violations(snap: Snapshot) -> None:
    dec = solve(snap, Policy(gang=False, time_limit_s=2))
    assert check(snap, dec, Policy(gang=False)) == [], [str(v) for v in check(snap, dec, Policy(gang=False))]
    keys = {p.group or p.key for p in snap.pods if p.pending}
    assert [o.podgroup for o in dec.podgroups] == sorted(keys)
