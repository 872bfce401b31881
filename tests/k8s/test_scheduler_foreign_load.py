"""Other schedulers' work is load, counted once, live: next to another scheduler's running gang our
Job's PodGroup is admitted (its bound pods are used room; none of its PodGroup's need is reserved
again), and a default-scheduler Deployment's pods are load our gang is placed around."""

from __future__ import annotations

from scheduler_support import Bubble, wait_cached

from vcsat.adapters.kube.client import PODGROUPS
from vcsat.adapters.kube.status_subresource import StatusWriter
from vcsat.adapters.live.scheduler import Scheduler


def test_a_job_next_to_another_schedulers_running_gang_is_admitted(bubble: Bubble) -> None:
    nodes = [bubble.node("n0", cpu="8"), bubble.node("n1", cpu="8")]
    foreign = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "theirs",
            "namespace": bubble.namespace,
            "annotations": {"vcsat.io/scheduler-name": "other-scheduler"},
        },
        "spec": {"minMember": 4},
    }
    bubble.kube.post(PODGROUPS.path(bubble.namespace), foreign)
    StatusWriter(bubble.kube).patch_status(PODGROUPS, bubble.namespace, "theirs", {"phase": "Running"})
    for i in range(4):
        bubble.pod(f"theirs-{i}", cpu="3", group="theirs", scheduler="other-scheduler", node_name=nodes[i % 2])
    # Our Volcano Job's PodGroup: no pods until it is admitted.
    bubble.podgroup("ours", 1, minResources={"cpu": "2"})
    # A default-scheduler Deployment's pod, bound: load too.
    bubble.pod("web", cpu="1", scheduler="default-scheduler", node_name=nodes[0])
    scheduler = Scheduler(bubble.kube, policy=bubble.policy(admit_by_fit=False))
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=["theirs-0", "web"], podgroups=["theirs", "ours"])
        result = scheduler.run_cycle()
    finally:
        scheduler.close()
    outcomes = {o.podgroup: o for o in result.decision.podgroups}
    assert f"{bubble.namespace}/theirs" not in outcomes
    assert bubble.get_podgroup("ours")["status"]["phase"] == "Inqueue"
    assert bubble.get_podgroup("theirs")["status"]["phase"] == "Running"  # not ours to write


def test_our_gang_is_placed_around_a_deployments_pods(bubble: Bubble) -> None:
    nodes = [bubble.node("n0", cpu="8"), bubble.node("n1", cpu="8")]
    for i, node in enumerate(nodes):
        bubble.pod(f"web-{i}", cpu="5", scheduler="default-scheduler", node_name=node)
    names = bubble.gang("g", 2, cpu="3")
    scheduler = Scheduler(bubble.kube, policy=bubble.policy())
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=[*names, "web-0", "web-1"], podgroups=["g"])
        scheduler.run_cycle()
    finally:
        scheduler.close()
    placement = bubble.placement()
    assert sorted(placement[name] or "" for name in names) == sorted(nodes)
