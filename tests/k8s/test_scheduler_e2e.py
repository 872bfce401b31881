"""``vcsat scheduler`` end to end against the real API server: gangs, foreign pods, a crash, GPUs,
evictions, stale decisions and conflicts.

The scheduler runs in-process (its loop in a thread, or one ``run_cycle`` at a time where a test
needs a decision at a precise moment); kwok (the module's cluster, scheduler_support.kwok_control_plane)
plays the kubelets, so bound pods turn Running and evicted pods go away. Every test lives in its own
bubble (see scheduler_support.py). Nothing here measures time: waits have a generous deadline
only so that a broken scheduler fails the test instead of hanging it.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from scheduler_support import (
    Bubble,
    cycles_after,
    kwok_control_plane,  # noqa: F401 (the fixture control_plane: this module's own, with kwok)
    running_scheduler,
    wait_cached,
    wait_until,
)

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.kube.applier import Applier
from vcsat.adapters.kube.client import PODS, ApiError, Kube
from vcsat.adapters.kube.informer import Informer
from vcsat.adapters.live.scheduler import Scheduler
from vcsat.model import Binding, Decision, Eviction, Nomination, SolverStats
from vcsat.solver import solve


def _condition_types(podgroup: dict[str, Any]) -> list[str]:
    return [c["type"] for c in (podgroup.get("status") or {}).get("conditions") or ()]


def _gpu_ids(pod: dict[str, Any]) -> list[int]:
    text = (pod["metadata"].get("annotations") or {}).get("vcsat.io/gpu-ids", "")
    return [int(part) for part in text.split(",") if part]


# --- gangs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod_cpu", "expect_bound"),
    [pytest.param("2", True, id="fits-only-whole"), pytest.param("3", False, id="cannot-fit")],
)
def test_gang_of_four_on_three_nodes_binds_whole_or_not_at_all(
    bubble: Bubble, k8s_client: Any, pod_cpu: str, expect_bound: bool
) -> None:
    # Room for exactly four 2-cpu pods (2 + 1 + 1); 3-cpu pods fit one per big node only.
    nodes = [bubble.node("big", cpu="4"), bubble.node("small-a", cpu="2"), bubble.node("small-b", cpu="2")]
    scheduler = Scheduler(bubble.kube, policy=bubble.policy())
    scheduler.applier.event_refresh_s = 0.0  # refresh the waiting Event every cycle: its count must grow
    pods = bubble.gang("train", 4, cpu=pod_cpu)  # whole before the scheduler looks: one reason to wait
    with running_scheduler(scheduler):
        if expect_bound:
            wait_until(lambda: all(bubble.placement().values()), "all four pods bound")
            assert Counter(bubble.placement().values()) == {nodes[0]: 2, nodes[1]: 1, nodes[2]: 1}
            wait_until(
                lambda: (bubble.get_podgroup("train").get("status") or {}).get("running") == 4,
                "the PodGroup counts four running pods",
            )
            status = bubble.get_podgroup("train")["status"]
            assert status["phase"] == "Running"
            assert (status["succeeded"], status["failed"]) == (0, 0)
            assert _condition_types(bubble.get_podgroup("train")) == ["Scheduled"]
            events = bubble.events("train")
            assert [(e["type"], e["reason"]) for e in events] == [("Normal", "Scheduled")]
            assert "Bound 4 pod(s)" in events[0]["message"]
        else:
            wait_until(
                lambda: "Unschedulable" in _condition_types(bubble.get_podgroup("train")),
                "the PodGroup is reported waiting",
            )
            wait_until(cycles_after(scheduler, 3), "three more cycles")
            assert set(bubble.placement().values()) == {None}, "no pod of a gang that cannot fit whole is bound"
            assert set(bubble.placement()) == set(pods)
            status = bubble.get_podgroup("train")["status"]
            assert status["phase"] == "Pending"
            (condition,) = status["conditions"]
            assert condition["reason"] and condition["message"]
            warnings = [e for e in bubble.events("train") if e["type"] == "Warning"]
            assert len(warnings) == 1, "one Event per reason, counted, not one per cycle"
            assert warnings[0]["reason"] == condition["reason"]
            wait_until(
                lambda: next(e["count"] for e in bubble.events("train") if e["type"] == "Warning") >= 2,
                "the waiting Event's count grows",
            )
            assert len([e for e in bubble.events("train") if e["type"] == "Warning"]) == 1


def test_pods_of_other_schedulers_are_left_alone_and_count_as_load(bubble: Bubble, k8s_client: Any) -> None:
    a, b = bubble.node("a", cpu="4"), bubble.node("b", cpu="2")
    bubble.pod("foreign-bound", cpu="3", scheduler="default-scheduler", node_name=a)
    bubble.pod("foreign-pending", cpu="1", scheduler="someone-else")
    # A short resync: the cycles after the binding come even once nothing changes any more.
    scheduler = Scheduler(bubble.kube, policy=bubble.policy(), resync_s=1.0)
    with running_scheduler(scheduler):
        mine = bubble.gang("mine", 3, cpu="1")
        wait_until(lambda: all(bubble.placement()[pod] for pod in mine), "our gang bound")
        wait_until(cycles_after(scheduler, 2), "two more cycles")
        placement = bubble.placement()
        # a has 1 cpu left beside the foreign pod; b has 2.
        assert Counter(placement[pod] for pod in mine) == {a: 1, b: 2}
        assert placement["foreign-bound"] == a
        assert placement["foreign-pending"] is None
        foreign = bubble.pods()["foreign-pending"]
        assert "vcsat.io/gpu-ids" not in (foreign["metadata"].get("annotations") or {})
        assert not (foreign.get("status") or {}).get("nominatedNodeName")


# --- a crash in the middle of a gang ------------------------------------------------------------


class _DiesAfterBindings(Kube):
    """A client whose process "dies" after ``allowed`` bindings: every later request fails unsent."""

    def __init__(self, configuration: Any, allowed: int) -> None:
        super().__init__(configuration)
        self.allowed = allowed
        self.bindings_sent: list[str] = []
        self.dead = False
        self._lock = threading.Lock()

    def request(self, method: str, path: str, **options: Any) -> Any:
        with self._lock:
            if path.endswith("/binding") and not self.dead:
                if len(self.bindings_sent) >= self.allowed:
                    self.dead = True
                else:
                    self.bindings_sent.append(path)
            if self.dead:
                raise ApiError(0, "Killed", "the scheduler process is gone")
        return super().request(method, path, **options)


def test_scheduler_killed_mid_bind_and_restarted_loses_nothing_and_binds_nothing_twice(
    bubble: Bubble, k8s_client: Any, kube: Kube
) -> None:
    # Room to spare: with exactly four GPUs the solver's enqueue refuses the cut-off gang today
    # (it counts the two bound pods against the gang's own admission; reported to the lead).
    for i in range(2):
        bubble.node(f"n{i}", cpu="8", gpus=4)
    node_history: dict[str, list[str]] = {}
    lock = threading.Lock()

    def record(_event_type: str, pod: dict[str, Any]) -> None:
        if pod["metadata"].get("namespace") != bubble.namespace:
            return
        node = pod["spec"].get("nodeName")
        with lock:
            history = node_history.setdefault(pod["metadata"]["name"], [])
            if node and (not history or history[-1] != node):
                history.append(node)

    watcher = Informer(kube, PODS, on_list=lambda pods: [record("LIST", pod) for pod in pods], on_event=record)
    watcher.start()
    try:
        first_client = _DiesAfterBindings(kube.configuration, allowed=2)
        first = Scheduler(first_client, policy=bubble.policy())
        with running_scheduler(first):
            pods = bubble.gang("job", 4, cpu="1", gpus=1)
            wait_until(lambda: first_client.dead, "the first scheduler dies mid-gang")
        assert first_client.bindings_sent and len(first_client.bindings_sent) == 2
        wait_until(lambda: sum(1 for p in pods if bubble.placement()[p]) == 2, "two pods bound before the crash")
        assert sum(1 for pod in pods if bubble.placement()[pod]) == 2

        second_client = _DiesAfterBindings(kube.configuration, allowed=10**6)
        with running_scheduler(Scheduler(second_client, policy=bubble.policy())):
            wait_until(
                lambda: all(bubble.placement()[pod] for pod in pods), "the restarted scheduler completes the gang"
            )
        second_client.close()
        first_client.close()
    finally:
        watcher.stop()
        watcher.join(5)

    # Every pod got exactly one binding request, and its node never changed.
    sent = sorted(first_client.bindings_sent + second_client.bindings_sent)
    assert sent == sorted(PODS.path(bubble.namespace, pod, "binding") for pod in pods)
    with lock:
        assert {pod: len(node_history.get(pod, [])) for pod in pods} == dict.fromkeys(pods, 1)
    # GPU indices of the two runs never collide on a node.
    by_node: dict[str, list[int]] = {}
    for pod in bubble.pods().values():
        by_node.setdefault(pod["spec"]["nodeName"], []).extend(_gpu_ids(pod))
    for node, ids in by_node.items():
        assert sorted(ids) == sorted(set(ids)), f"GPU indices repeat on {node}: {ids}"
        assert all(0 <= i < 4 for i in ids)
    assert sum(len(ids) for ids in by_node.values()) == 4


# --- GPU indices, status, events ------------------------------------------------------------


def test_gpu_ids_are_written_and_distinct_per_node_across_cycles(bubble: Bubble, k8s_client: Any) -> None:
    nodes = [bubble.node(f"g{i}", cpu="8", gpus=4) for i in range(2)]
    with running_scheduler(Scheduler(bubble.kube, policy=bubble.policy())):
        first = bubble.gang("ones", 3, cpu="500m", gpus=1) + bubble.gang("twos", 2, cpu="500m", gpus=2)
        wait_until(lambda: all(bubble.placement()[pod] for pod in first), "both gangs bound")
        # A later cycle must take the one GPU index left, not one the annotations already hold.
        bubble.pod("last", cpu="500m", gpus=1)
        wait_until(lambda: bubble.placement()["last"], "the last pod bound")
        wait_until(
            lambda: all(
                (bubble.get_podgroup(g).get("status") or {}).get("running") == n for g, n in [("ones", 3), ("twos", 2)]
            ),
            "both PodGroups count their running pods",
        )
    held: dict[str, list[int]] = {}
    for name, pod in bubble.pods().items():
        ids = _gpu_ids(pod)
        wanted = 2 if name.startswith("twos") else 1
        assert len(ids) == wanted, f"{name} holds {ids}"
        held.setdefault(pod["spec"]["nodeName"], []).extend(ids)
    assert sorted(held) == sorted(nodes)
    for ids in held.values():
        assert sorted(ids) == [0, 1, 2, 3], "every GPU of both nodes held exactly once"


# --- evictions and nominations ------------------------------------------------------------------


def test_a_high_priority_job_evicts_a_low_priority_one_and_binds_after(bubble: Bubble, k8s_client: Any) -> None:
    # Both jobs need the "fast" node; the "slow" one leaves the queue room, so the high job is
    # admitted (enqueue) and can only run by preempting. With the whole queue full, enqueue keeps a
    # job Pending and it never preempts, as in Volcano.
    node = bubble.node("fast", cpu="4", labels={"pool": "fast"})
    bubble.node("slow", cpu="4", labels={"pool": "slow"})
    low_class, high_class = bubble.priority_class("low", 10), bubble.priority_class("high", 1000)
    fast = {"pool": "fast"}
    scheduler = Scheduler(bubble.kube, policy=bubble.policy())
    with running_scheduler(scheduler):
        low = bubble.gang("low", 2, cpu="2", priority_class=low_class, node_selector=fast)
        wait_until(
            lambda: all((bubble.pods()[p].get("status") or {}).get("phase") == "Running" for p in low),
            "the low-priority job runs",
        )
        high = bubble.gang("high", 2, cpu="2", priority_class=high_class, node_selector=fast)
        wait_until(lambda: all(bubble.placement().get(p) == node for p in high), "the high-priority job is bound")
        assert not any(name in bubble.pods() for name in low), "the victims were evicted, and are gone"
        preempted = {e["involvedObject"]["name"] for e in bubble.events() if e["reason"] == "Preempted"}
        assert preempted == set(low)
        wait_until(
            lambda: (bubble.get_podgroup("high").get("status") or {}).get("phase") == "Running",
            "the high-priority PodGroup is Running",
        )


def _two_victims(bubble: Bubble, budget: bool) -> tuple[str, str]:
    """A 4-cpu node full with two low-priority 2-cpu pods (``low-0``, ``low-1``), under a
    PodDisruptionBudget that allows no disruption when ``budget``; the node and a high class."""
    node = bubble.node("n", cpu="4")
    low_class, high_class = bubble.priority_class("low", 10), bubble.priority_class("high", 1000)
    for i in range(2):
        bubble.pod(f"low-{i}", cpu="2", node_name=node, priority_class=low_class, labels={"app": "low"})
    if budget:
        bubble.kube.post(
            f"/apis/policy/v1/namespaces/{bubble.namespace}/poddisruptionbudgets",
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "keep-low"},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "low"}}},
            },
        )
    return node, high_class


@pytest.mark.parametrize("budget", [False, True], ids=["evicts-then-binds", "disruption-budget-says-not-now"])
def test_evictions_free_room_that_nominated_pods_take(bubble: Bubble, k8s_client: Any, budget: bool) -> None:
    # The solver's preemption is applied through this path; the decision here is written by hand so
    # the applier's eviction and nomination steps are tested on their own.
    node, high_class = _two_victims(bubble, budget)
    low = [f"{bubble.namespace}/low-{i}" for i in range(2)]
    high = [f"{bubble.namespace}/{name}" for name in ("high-0", "high-1")]
    wait_until(
        lambda: all(bubble.pods()[f"low-{i}"]["status"].get("phase") == "Running" for i in range(2)),
        "the low-priority pods run",
    )
    bubble.gang("high", 2, cpu="2", priority_class=high_class)
    scheduler = Scheduler(bubble.kube, policy=bubble.policy())
    scheduler.start()
    try:
        wait_cached(scheduler, bubble.namespace, pods=["high-0", "high-1"], podgroups=["high"])
        waiting = scheduler.run_cycle()
        assert waiting.report is not None and waiting.report.bound == [], "no room without evictions"
        (outcome,) = waiting.decision.podgroups
        assert outcome.podgroup == f"{bubble.namespace}/high" and outcome.phase != "Running"
        decision = Decision(
            evictions=[Eviction(pod=key, reason="preempt") for key in low],
            nominations=[Nomination(pod=key, node=node) for key in high],
            solver=SolverStats(status="OPTIMAL"),
        )
        report = scheduler.applier.apply(decision, waiting.snapshot)
        nominated = {name: (pod.get("status") or {}).get("nominatedNodeName") for name, pod in bubble.pods().items()}
        assert nominated["high-0"] == nominated["high-1"] == node
        if budget:
            assert report.evicted == []
            assert sorted(report.evictions_deferred) == low
            assert all(why.startswith("not now") for why in report.evictions_deferred.values())
            pods = bubble.pods()
            assert all(not pods[f"low-{i}"]["metadata"].get("deletionTimestamp") for i in range(2))
            again = scheduler.run_cycle()
            assert again.report is not None and again.report.bound == []
        else:
            assert sorted(report.evicted) == low
            reasons = {e["involvedObject"]["name"]: e["reason"] for e in bubble.events() if e["reason"] == "Preempted"}
            assert reasons == {"low-0": "Preempted", "low-1": "Preempted"}
            wait_until(lambda: not any(name.startswith("low") for name in bubble.pods()), "the victims are gone")
            wait_until(
                lambda: scheduler.store.get("Pod", low[0]) is None and scheduler.store.get("Pod", low[1]) is None,
                "the cache sees them gone",
            )
            bound = scheduler.run_cycle()
            assert bound.report is not None and sorted(bound.report.bound) == high
            assert bubble.placement()["high-0"] == bubble.placement()["high-1"] == node
    finally:
        scheduler.close()


class _Held(Kube):
    """The real client, holding every eviction and nomination back until ``gate`` opens."""

    def __init__(self, kube: Kube, gate: threading.Event) -> None:
        super().__init__(kube.configuration)
        self.gate = gate
        self.answered = 0
        self._lock = threading.Lock()

    def request(self, method: str, path: str, **options: Any) -> Any:
        held = path.endswith("/eviction") or (method == "PATCH" and path.endswith("/status"))
        if held:
            assert self.gate.wait(120), "the test opens the gate"
        try:
            return super().request(method, path, **options)
        finally:
            if held:
                with self._lock:
                    self.answered += 1


@pytest.mark.parametrize("budget", [False, True], ids=["evicted", "disruption-budget-says-not-now"])
def test_evictions_and_nominations_go_on_in_the_background_shown_done_meanwhile(
    bubble: Bubble, kube: Kube, budget: bool
) -> None:
    # The cycle that preempts hands its writes over and goes on; a cycle that starts before any is
    # answered must see the victims going and the preemptors nominated, not the same room free to
    # take again by more evictions. The store here is one listing (it hears nothing after), so what
    # it shows of those pods is the applier's doing alone.
    node, high_class = _two_victims(bubble, budget)
    bubble.gang("high", 2, cpu="2", priority_class=high_class)
    low = [f"{bubble.namespace}/low-{i}" for i in range(2)]
    high = [f"{bubble.namespace}/high-{i}" for i in range(2)]
    store, snapshot = bubble.listed()
    gate = threading.Event()
    held = _Held(kube, gate)
    applier = Applier(held, store)

    def shown() -> dict[str, Any]:
        generation, objects = store.snapshot()
        return snapshot_from_objects(
            objects, scheduler_name=bubble.scheduler_name, strict=False, generation=generation
        ).pod_by_key

    try:
        decision = Decision(
            evictions=[Eviction(pod=key, reason="preempt") for key in low],
            nominations=[Nomination(pod=key, node=node) for key in high],
            solver=SolverStats(status="OPTIMAL"),
        )
        applying = applier.submit(decision, snapshot)
        assert held.answered == 0, "submit returned with every eviction and nomination still unanswered"
        meanwhile = shown()
        assert [meanwhile[key].terminating for key in low] == [True, True]
        assert [meanwhile[key].nominated_node for key in high] == [node, node]
        relevant = store.relevant
        gate.set()
        report = applying.result(120)
        assert sorted(report.nominated) == high
        after = shown()
        if budget:
            assert report.evicted == [] and sorted(report.evictions_deferred) == low
            assert [after[key].terminating for key in low] == [False, False], "the victims stay, and show so"
            assert store.relevant > relevant, "a refused eviction is worth another cycle"
        else:
            assert sorted(report.evicted) == low
            assert [after[key].terminating for key in low] == [True, True], "until the watch says so"
            pods = bubble.pods()
            # kwok lets an evicted pod go at once: each is gone, or terminating.
            assert all(
                f"low-{i}" not in pods or pods[f"low-{i}"]["metadata"].get("deletionTimestamp") for i in range(2)
            ), "the API server took the evictions"
        nominated = {name: (pod.get("status") or {}).get("nominatedNodeName") for name, pod in bubble.pods().items()}
        assert nominated["high-0"] == nominated["high-1"] == node
    finally:
        gate.set()
        applier.close()


# --- stale decisions and conflicts --------------------------------------------------------------


@pytest.mark.parametrize("change", ["pod-relabelled", "node-deleted", "pod-deleted"])
def test_a_gang_that_changed_after_its_snapshot_is_skipped_and_decided_again(bubble: Bubble, change: str) -> None:
    nodes = [bubble.node(f"n{i}", cpu="2") for i in range(3)]
    scheduler = Scheduler(bubble.kube, policy=bubble.policy())
    scheduler.start()
    try:
        pods = bubble.gang("g", 2, cpu="2")
        keys = [f"{bubble.namespace}/{pod}" for pod in pods]
        wait_cached(scheduler, bubble.namespace, pods=pods, podgroups=["g"])
        generation, objects = scheduler.store.snapshot()
        snapshot = snapshot_from_objects(
            objects, scheduler_name=bubble.scheduler_name, strict=False, generation=generation
        )
        decision = solve(snapshot, bubble.policy())
        assert sorted(b.pod for b in decision.bindings) == keys
        target = decision.bindings[0].node

        if change == "pod-relabelled":
            bubble.kube.patch(PODS.path(bubble.namespace, pods[0]), {"metadata": {"labels": {"touched": "yes"}}})
        elif change == "node-deleted":
            bubble.kube.delete(f"/api/v1/nodes/{target}")
        else:
            bubble.kube.delete(PODS.path(bubble.namespace, pods[1]), gracePeriodSeconds=0)
        wait_until(
            lambda: scheduler.store.changed_since(generation, pods=keys, nodes=[target]),
            "the cache sees the change",
        )

        report = scheduler.applier.apply(decision, snapshot)
        assert list(report.stale) == [f"{bubble.namespace}/g"]
        assert report.bound == [] and report.failed == {}
        assert not any(bubble.placement().values())

        again = scheduler.run_cycle()
        assert again.report is not None
        if change == "pod-deleted":
            assert again.report.bound == [], "one pod left of a gang of two: nothing to bind"
        else:
            assert sorted(again.report.bound) == keys
            placement = bubble.placement()
            assert all(placement[pod] in nodes for pod in pods)
            if change == "node-deleted":
                assert target not in placement.values()
    finally:
        scheduler.close()


def test_conflicts_the_server_finds_bind_nothing_twice(bubble: Bubble, kube: Kube) -> None:
    a, b = bubble.node("a", cpu="8"), bubble.node("b", cpu="8")
    for name in ("gone", "taken"):
        bubble.pod(name, cpu="1")
    bubble.gang("g", 2, cpu="1")
    # A cache that never hears of what happens next, as if the watch lagged far behind.
    store, snapshot = bubble.listed()
    ns = bubble.namespace
    decision = Decision(
        bindings=[Binding(pod=f"{ns}/{name}", node=a) for name in ("gone", "taken", "g-0", "g-1")],
        solver=SolverStats(status="OPTIMAL"),
    )
    kube.delete(PODS.path(ns, "gone"), gracePeriodSeconds=0)
    kube.delete(PODS.path(ns, "g-1"), gracePeriodSeconds=0)
    kube.post(
        PODS.path(ns, "taken", "binding"),
        {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "taken"}, "target": {"kind": "Node", "name": b}},
    )

    applier = Applier(kube, store)
    try:
        report = applier.apply(decision, snapshot)
    finally:
        applier.close()

    assert report.bound == [f"{ns}/g-0"]
    assert report.failed[f"{ns}/gone"] == "the pod is gone"
    assert report.failed[f"{ns}/g-1"] == "the pod is gone"
    assert (
        "changed since the snapshot" in report.failed[f"{ns}/taken"] or "already bound" in report.failed[f"{ns}/taken"]
    )
    assert report.partial == [f"{ns}/g"], "a gang cut off mid-bind is reported"
    assert bubble.placement() == {"taken": b, "g-0": a}, "the pod bound elsewhere stays where it is"


def test_a_podgroup_without_pods_is_admitted_so_the_controller_can_create_them(bubble: Bubble) -> None:
    """The Job controller creates pods only once their PodGroup is Inqueue: a group that has no pod
    yet is admitted by the scheduler (Volcano's enqueue) when its minResources fit, and left
    Pending with the reason when they do not."""
    bubble.node("cpu", cpu="4")
    bubble.podgroup("fits", 2, minResources={"cpu": "2"})
    bubble.podgroup("too-big", 2, minResources={"cpu": "400"})
    scheduler = Scheduler(bubble.kube, policy=bubble.policy())
    with running_scheduler(scheduler):
        wait_until(
            lambda: (bubble.get_podgroup("fits").get("status") or {}).get("phase") == "Inqueue",
            "the group that fits is admitted",
        )
        wait_until(
            lambda: (
                (bubble.get_podgroup("too-big").get("status") or {}).get("phase") == "Pending"
                and (bubble.get_podgroup("too-big").get("status") or {}).get("conditions")
            ),
            "the group that cannot fit stays Pending with a reason",
        )
