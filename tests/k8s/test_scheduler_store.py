"""The informer machinery on its own: what the Store counts as a change, how it shows bindings in
flight, and how an Informer lists, watches, resumes and relists (410 Gone, broken watches, absent
APIs). A scripted stand-in for the API server drives the Informer here, because a real one cannot
be made to answer 410 or drop a watch on cue; the scheduler tests run the same code against the
real server.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from vcsat.adapters.kube.client import PODS, ApiError, Resource
from vcsat.adapters.kube.informer import QUEUED_BINDING_TTL_S, UNCERTAIN_BINDING_TTL_S, Informer, Store

# --- builders ---------------------------------------------------------------------------------


def _pod(
    name: str, rv: str = "1", *, node: str | None = None, phase: str = "Pending", **metadata: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "vcsat", "containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "uid": f"uid-{name}", **metadata},
        "spec": spec,
        "status": {"phase": phase},
    }


def _node(name: str, rv: str = "1", *, ready: str = "True", heartbeat: str = "t0", cpu: str = "4") -> dict[str, Any]:
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "resourceVersion": rv},
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu},
            "conditions": [{"type": "Ready", "status": ready, "lastHeartbeatTime": heartbeat}],
        },
    }


def _podgroup(name: str, rv: str = "1", *, generation: int = 1, min_member: int = 2, phase: str = "") -> dict[str, Any]:
    return {
        "kind": "PodGroup",
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "generation": generation},
        "spec": {"minMember": min_member},
        "status": {"phase": phase},
    }


def _queue(name: str, rv: str = "1", *, state: str = "Open", allocated: str = "0") -> dict[str, Any]:
    return {
        "kind": "Queue",
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "metadata": {"name": name, "resourceVersion": rv},
        "spec": {"weight": 1},
        "status": {"state": state, "allocated": {"cpu": allocated}},
    }


def _changed(obj: dict[str, Any], rv: str, **edits: Any) -> dict[str, Any]:
    """A copy with a new resourceVersion and ``path=value`` edits (``status__phase="Running"``)."""
    out = copy.deepcopy(obj)
    out["metadata"]["resourceVersion"] = rv
    for path, value in edits.items():
        *parents, last = path.split("__")
        target = out
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value
    return out


# --- what counts as a change ------------------------------------------------------------------

_POD = _pod("p")
_NODE = _node("n")
_GROUP = _podgroup("g")
_QUEUE = _queue("q")
_UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no room"}
_READY = {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}


@pytest.mark.parametrize(
    ("kind", "before", "after", "relevant", "reported"),
    [
        pytest.param("Pod", _POD, _changed(_POD, "2", status__phase="Running"), False, True, id="pod-starts-running"),
        pytest.param("Pod", _POD, _changed(_POD, "2", status__podIP="10.0.0.1"), False, False, id="pod-status-detail"),
        pytest.param("Pod", _POD, _changed(_POD, "2", status__phase="Succeeded"), True, False, id="pod-finishes"),
        pytest.param("Pod", _POD, _changed(_POD, "2", metadata__labels={"a": "b"}), True, False, id="pod-relabelled"),
        pytest.param(
            "Pod",
            _POD,
            _changed(_POD, "2", metadata__deletionTimestamp="2025-01-01T00:00:00Z"),
            True,
            False,
            id="pod-deleting",
        ),
        pytest.param("Pod", _POD, _changed(_POD, "2", spec__nodeName="n"), True, False, id="pod-bound-by-someone-else"),
        pytest.param("Node", _NODE, _node("n", "2", heartbeat="t1"), False, False, id="node-heartbeat"),
        pytest.param("Node", _NODE, _node("n", "2", ready="False"), True, False, id="node-not-ready"),
        pytest.param("Node", _NODE, _node("n", "2", cpu="8"), True, False, id="node-resized"),
        pytest.param("Node", _NODE, _changed(_NODE, "2", spec__unschedulable=True), True, False, id="node-cordoned"),
        pytest.param("PodGroup", _GROUP, _podgroup("g", "2", phase="Running"), False, True, id="podgroup-status-ours"),
        pytest.param(
            "PodGroup",
            _GROUP,
            _podgroup("g", "2", generation=2, phase="Running"),
            False,
            True,
            id="podgroup-status-ours-without-status-subresource",
        ),
        pytest.param(
            "PodGroup", _GROUP, _podgroup("g", "2", generation=2, min_member=3), True, False, id="podgroup-spec"
        ),
        pytest.param(
            "PodGroup",
            _GROUP,
            _changed(_GROUP, "2", metadata__annotations={"vcsat.io/scheduler-name": "other"}),
            True,
            False,
            id="podgroup-scheduler-name",
        ),
        pytest.param("Queue", _QUEUE, _queue("q", "2", allocated="3"), False, False, id="queue-usage"),
        pytest.param("Queue", _QUEUE, _queue("q", "2", state="Closed"), True, False, id="queue-closed"),
        pytest.param(
            "Pod", _POD, _changed(_POD, "2", status__conditions=[_UNSCHEDULABLE]), False, True, id="pod-marked"
        ),
        pytest.param("Pod", _POD, _changed(_POD, "2", status__nominatedNodeName="n"), False, True, id="pod-nominated"),
        pytest.param("Pod", _POD, _changed(_POD, "2", status__conditions=[_READY]), False, False, id="pod-ready"),
    ],
)
def test_only_changes_that_can_alter_a_decision_wake_the_loop(
    kind: str, before: dict[str, Any], after: dict[str, Any], relevant: bool, reported: bool
) -> None:
    """``reported``: the change alters only what a cycle writes back (a PodGroup's status counts
    running pods; a PodScheduled condition, a nomination are rewritten when they differ)."""
    store = Store()
    store.replace(kind, [copy.deepcopy(before)])
    woken, generation, noted = store.relevant, store.generation, store.reported
    by_kind = store.relevant_by_kind()
    store.apply(kind, "MODIFIED", copy.deepcopy(after))
    assert store.generation == generation + 1, "every change is counted"
    assert (store.relevant > woken) is relevant
    assert store.relevant_by_kind() - by_kind == ({kind: 1} if relevant else {})
    assert (store.reported > noted) is reported
    key = "ns/" + before["metadata"]["name"] if kind in ("Pod", "PodGroup") else before["metadata"]["name"]
    stale = store.changed_since(
        generation,
        pods=[key] if kind == "Pod" else [],
        podgroup=key if kind == "PodGroup" else None,
        queue=key if kind == "Queue" else None,
        nodes=[key] if kind == "Node" else [],
    )
    assert (stale is not None) is relevant


def test_added_and_deleted_objects_make_gangs_stale_and_wake_the_loop() -> None:
    store = Store()
    store.replace("Node", [_node("n")])
    store.replace("Pod", [_pod("a")])
    generation, woken = store.generation, store.relevant
    store.apply("Pod", "DELETED", _pod("a"))
    assert store.changed_since(generation, pods=["ns/a"]) == "pod ns/a was deleted"
    store.apply("Pod", "ADDED", _pod("a", "7"))
    assert store.changed_since(generation, pods=["ns/a"]) == "pod ns/a changed"
    store.apply("Node", "DELETED", _node("n"))
    assert store.changed_since(generation, nodes=["n"]) == "node n is gone"
    assert store.relevant == woken + 3


def test_a_relist_replaces_the_cache_and_counts_only_real_changes() -> None:
    store = Store()
    store.replace("Pod", [_pod("a"), _pod("b"), _pod("c")])
    generation = store.generation
    store.replace("Pod", [_pod("a"), _pod("b", "2")])
    # a unchanged (same resourceVersion), b changed version only (no relevant field), c deleted.
    assert store.generation == generation + 2
    assert store.get("Pod", "ns/c") is None
    assert store.changed_since(generation, pods=["ns/a", "ns/b"]) is None
    assert store.changed_since(generation, pods=["ns/c"]) == "pod ns/c was deleted"


def test_foreign_pods_landing_on_a_node_make_gangs_aimed_there_stale() -> None:
    store = Store()
    store.replace("Node", [_node("n")])
    store.replace("Pod", [_pod("other")])
    generation = store.generation
    store.apply("Pod", "MODIFIED", _pod("other", "2", node="n"))
    assert store.changed_since(generation, nodes=["n"]) == "node n took other pods"


# --- bindings in flight -----------------------------------------------------------------------


def _snapshot_pod(store: Store, name: str) -> dict[str, Any]:
    return next(o for o in store.snapshot()[1] if o["kind"] == "Pod" and o["metadata"]["name"] == name)


def test_our_binding_shows_as_bound_until_the_watch_confirms_it_and_the_confirmation_is_quiet() -> None:
    store = Store()
    store.replace("Node", [_node("n")])
    store.replace("Pod", [_pod("p")])
    generation, woken = store.generation, store.relevant
    store.expect_binding("ns/p", "n", {"vcsat.io/gpu-ids": "0"})
    sent = _snapshot_pod(store, "p")
    assert sent["spec"]["nodeName"] == "n", "a binding in flight counts as done"
    store.binding_done("ns/p", "bound")
    assumed = _snapshot_pod(store, "p")
    assert assumed["metadata"]["annotations"] == {"vcsat.io/gpu-ids": "0"}
    assert store.get("Pod", "ns/p")["spec"].get("nodeName") is None, "the cache itself is not touched"

    confirmed = _pod("p", "2", node="n")
    confirmed["metadata"]["annotations"] = {"vcsat.io/gpu-ids": "0"}
    store.apply("Pod", "MODIFIED", confirmed)
    assert store.relevant == woken, "our own binding coming back is nothing new to decide"
    assert store.changed_since(generation, nodes=["n"]) is None, "nor is it someone else's load"
    assert _snapshot_pod(store, "p") is store.get("Pod", "ns/p")


def test_the_next_expiry_is_when_the_first_unconfirmed_binding_stops_showing_as_bound() -> None:
    store = Store()
    store.replace("Pod", [_pod("a"), _pod("b")])
    assert store.next_expiry() is None
    before = time.monotonic()
    store.expect_binding("ns/a", "n", {})
    store.expect_binding("ns/b", "n", {})
    store.binding_done("ns/a", "uncertain")
    expiry = store.next_expiry()
    assert expiry is not None
    assert before + UNCERTAIN_BINDING_TTL_S <= expiry <= time.monotonic() + UNCERTAIN_BINDING_TTL_S
    store.apply("Pod", "MODIFIED", _pod("a", "2", node="n"))  # the watch confirms a
    later = store.next_expiry()
    assert later is not None and later >= before + QUEUED_BINDING_TTL_S, "b, still queued, is next"
    store.binding_done("ns/b", "failed")
    assert store.next_expiry() is None


def test_a_binding_waiting_for_its_volumes_keeps_showing_as_bound() -> None:
    store = Store()
    store.replace("Pod", [_pod("p"), _pod("q")])
    store.expect_binding("ns/p", "n", {})
    store._expected["ns/p"].deadline = time.monotonic() - 1  # as if queued longer than the TTL
    store.keep_expecting("ns/p")
    assert _snapshot_pod(store, "p")["spec"].get("nodeName") == "n"
    store.expect_binding("ns/q", "n", {})
    store.binding_done("ns/q", "bound")
    settled = store.next_expiry()
    store.keep_expecting("ns/q")  # a binding the server took is not extended
    store.keep_expecting("ns/gone")  # nor one never expected
    assert store.next_expiry() == settled


def test_a_failed_binding_makes_the_pod_pending_again() -> None:
    store = Store()
    store.replace("Pod", [_pod("p")])
    woken = store.relevant
    store.expect_binding("ns/p", "n", {})
    store.binding_done("ns/p", "failed")
    assert _snapshot_pod(store, "p")["spec"].get("nodeName") is None
    assert store.relevant == woken + 1, "worth another cycle"


def test_an_older_event_arriving_after_the_binding_does_not_unbind_it() -> None:
    store = Store()
    store.replace("Pod", [_pod("p")])
    store.expect_binding("ns/p", "n", {})
    store.binding_done("ns/p", "bound")
    store.apply("Pod", "MODIFIED", _changed(_pod("p"), "2", status__conditions=[]))  # from before the binding
    assert _snapshot_pod(store, "p")["spec"]["nodeName"] == "n"


# --- evictions and nominations in flight -------------------------------------------------------


def _terminating(pod: dict[str, Any]) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def _nominated(pod: dict[str, Any]) -> str | None:
    value: str | None = pod["status"].get("nominatedNodeName")
    return value


@pytest.mark.parametrize(
    ("answer", "shown_after", "woken"),
    [
        # The server took it: shown terminating until the watch says so.
        ("evicted", True, False),
        # Gone, going or another pod by now: nothing of ours to show.
        ("moot", False, False),
        # A PodDisruptionBudget said not now: the victim runs on, which is worth another cycle.
        ("refused", False, True),
    ],
)
def test_an_eviction_in_flight_shows_the_victim_terminating_until_it_is_answered(
    answer: str, shown_after: bool, woken: bool
) -> None:
    store = Store()
    store.replace("Pod", [_pod("victim", node="n", phase="Running")])
    relevant = store.relevant
    store.expect_eviction("ns/victim")
    assert _terminating(_snapshot_pod(store, "victim")), "an eviction in flight counts as done"
    assert not _terminating(store.get("Pod", "ns/victim")), "the cache itself is not touched"
    assert store.next_expiry() is not None
    store.eviction_done("ns/victim", answer)
    assert _terminating(_snapshot_pod(store, "victim")) == shown_after
    assert (store.relevant > relevant) == woken
    assert (store.next_expiry() is not None) == shown_after


def test_the_watch_settles_an_eviction_and_a_nomination_in_flight() -> None:
    store = Store()
    store.replace("Pod", [_pod("victim", node="n", phase="Running"), _pod("preemptor")])
    store.expect_eviction("ns/victim")
    store.expect_nomination("ns/preemptor", "n")
    generation, _objects, changes = store.snapshot_changes(None, frozenset())
    assert changes.assumed == {"ns/victim", "ns/preemptor"}, "both are shown otherwise than stored"
    assert _nominated(_snapshot_pod(store, "preemptor")) == "n"
    assert _snapshot_pod(store, "victim") is _snapshot_pod(store, "victim"), "the same copy each snapshot"

    going = _pod("victim", "2", node="n", phase="Running", deletionTimestamp="2026-01-01T00:00:00Z")
    store.apply("Pod", "MODIFIED", going)
    nominated = _pod("preemptor", "2")
    nominated["status"]["nominatedNodeName"] = "n"
    store.apply("Pod", "MODIFIED", nominated)
    assert _snapshot_pod(store, "victim") is store.get("Pod", "ns/victim"), "the watch's own object now"
    assert _snapshot_pod(store, "preemptor") is store.get("Pod", "ns/preemptor")
    assert store.next_expiry() is None
    _, _, later = store.snapshot_changes(generation, changes.assumed)
    assert later.by_kind is not None and {"ns/victim", "ns/preemptor"} <= set(later.by_kind["Pod"]), (
        "keys shown changed last time are read again"
    )


@pytest.mark.parametrize("written", [True, False])
def test_a_nomination_the_server_refused_is_no_longer_shown(written: bool) -> None:
    store = Store()
    store.replace("Pod", [_pod("preemptor")])
    store.expect_nomination("ns/preemptor", "n")
    store.nomination_done("ns/preemptor", written)
    assert _nominated(_snapshot_pod(store, "preemptor")) == ("n" if written else None)


def test_an_unconfirmed_eviction_stops_showing_after_its_time_to_live() -> None:
    store = Store()
    store.replace("Pod", [_pod("victim", node="n", phase="Running")])
    store.expect_eviction("ns/victim")
    store.eviction_done("ns/victim", "evicted")
    store._marks["ns/victim"].deadline = time.monotonic() - 1  # as if the watch never said so
    assert not _terminating(_snapshot_pod(store, "victim"))
    assert store.next_expiry() is None


def test_a_pod_deleted_while_its_eviction_is_in_flight_leaves_nothing_behind() -> None:
    store = Store()
    store.replace("Pod", [_pod("victim", node="n", phase="Running")])
    store.expect_eviction("ns/victim")
    store.apply("Pod", "DELETED", _pod("victim", "2", node="n", phase="Running"))
    store.eviction_done("ns/victim", "evicted")
    assert store.next_expiry() is None


# --- the informer loop ------------------------------------------------------------------------


class _ScriptedWatch:
    def __init__(self, events: list[Any]) -> None:
        self.events = events
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for event in self.events:
            if isinstance(event, Exception):
                raise event
            yield event
        self.closed.wait(10)  # a quiet watch, until the informer is stopped

    def close(self) -> None:
        self.closed.set()


class _ScriptedServer:
    """Answers list and watch calls from a script, then quiet watches; records what was asked."""

    def __init__(self, lists: list[Any], watches: list[Any]) -> None:
        self.lists = lists
        self.watches = watches
        self.calls: list[tuple[str, str]] = []

    def list(self, resource: Resource) -> tuple[list[dict[str, Any]], str]:
        self.calls.append(("list", ""))
        answer = self.lists.pop(0) if self.lists else ApiError(503, "Unavailable", "script over")
        if isinstance(answer, Exception):
            raise answer
        return copy.deepcopy(answer[0]), answer[1]

    def watch(self, resource: Resource, *, resource_version: str, timeout_s: int) -> Any:
        self.calls.append(("watch", resource_version))
        answer = self.watches.pop(0) if self.watches else _ScriptedWatch([])
        if isinstance(answer, Exception):
            raise answer
        return answer


def _run(server: _ScriptedServer, until: Callable[[Store, list[tuple[str, str]]], bool]) -> Store:
    """Run an informer on the script until ``until(store, calls)`` holds (or fail after a while)."""
    store = Store(["Pod"])
    informer = Informer(
        server,  # type: ignore[arg-type]
        PODS,
        on_list=lambda items: store.replace("Pod", items),
        on_event=lambda kind, obj: store.apply("Pod", kind, obj),
    )
    informer.start()
    try:
        deadline = time.monotonic() + 20
        while not until(store, server.calls):
            assert time.monotonic() < deadline, f"the informer stalled after {server.calls}"
            time.sleep(0.01)
    finally:
        informer.stop()
        informer.join(5)
    return store


def _names(store: Store) -> list[str]:
    return sorted(o["metadata"]["name"] for o in store.objects("Pod"))


def _event(kind: str, pod: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": pod}


def test_informer_watches_from_the_list_and_resumes_after_bookmarks_and_broken_watches() -> None:
    server = _ScriptedServer(
        lists=[([_pod("a", "5")], "5")],
        watches=[
            _ScriptedWatch(
                [
                    _event("ADDED", _pod("b", "6")),
                    {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}},
                    ApiError(0, "WatchBroken", "connection reset"),
                ]
            ),
            _ScriptedWatch([_event("DELETED", _pod("a", "10"))]),
        ],
    )
    _run(server, lambda store, calls: len(calls) >= 3 and _names(store) == ["b"])
    assert server.calls[:3] == [("list", ""), ("watch", "5"), ("watch", "9")], "resumed from the bookmark"


@pytest.mark.parametrize(
    "gone",
    [
        pytest.param(_ScriptedWatch([{"type": "ERROR", "object": {"kind": "Status", "code": 410}}]), id="error-event"),
        pytest.param(ApiError(410, "Expired", "too old resource version"), id="http-410"),
    ],
)
def test_informer_relists_when_its_version_is_gone(gone: Any) -> None:
    server = _ScriptedServer(
        lists=[([_pod("a", "5"), _pod("b", "5")], "5"), ([_pod("b", "5"), _pod("c", "20")], "20")],
        watches=[gone],
    )
    _run(server, lambda store, calls: len(calls) >= 4 and _names(store) == ["b", "c"])
    assert server.calls[:4] == [("list", ""), ("watch", "5"), ("list", ""), ("watch", "20")]


def test_informer_treats_an_api_that_is_not_installed_as_empty() -> None:
    server = _ScriptedServer(
        lists=[ApiError(404, "NotFound", "the server could not find the requested resource")], watches=[]
    )
    store = _run(server, lambda store, calls: store.synced(["Pod"]))
    assert server.calls[0] == ("list", "")
    assert store.objects("Pod") == []


def test_objects_are_kept_as_the_server_sent_them_without_managed_fields() -> None:
    store = Store(["Pod"])
    pod = _pod("a", managedFields=[{"manager": "kubectl"}])
    store.replace("Pod", [pod])
    kept = store.get("Pod", "ns/a")
    assert kept is not None and "managedFields" not in kept["metadata"]
    assert kept["spec"] == _pod("a")["spec"] and kept["kind"] == "Pod"
