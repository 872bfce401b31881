"""The live cycle's conversion visiting only what changed (``Store.snapshot_changes`` and
``ConversionMemo.changed_by_kind``): after any sequence of watch events, relists and bindings in
flight, the keys a snapshot says may differ cover every object not the very one shown before, and a
conversion that reads only those equals a fresh conversion of every object."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_conversion_reuse import _hypernode, _node, _pod, _podgroup, _priority_class, _queue

from vcsat.adapters.convert import snapshot as snapshot_module
from vcsat.adapters.convert.reuse import ConversionMemo
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.kube.client import object_key
from vcsat.adapters.kube.informer import Store, StoreChanges

KINDS = ("PriorityClass", "Queue", "HyperNode", "Node", "PodGroup", "Pod")


def _gpus(name: str) -> int:
    return 1 if name == "p0" else 0


class _Live:
    """A store fed as the informers feed it, converted as the scheduler converts it each cycle."""

    def __init__(self) -> None:
        self.store = Store(KINDS)
        self.memo = ConversionMemo()
        self.version = 100
        self.converted: tuple[int, frozenset[str]] | None = None
        self.shown: dict[tuple[str, str], dict[str, Any]] = {}
        for kind in KINDS:
            self.store.replace(kind, [])
        for obj in [
            _node("a"),
            _node("b"),
            _queue("q"),
            _priority_class(100),
            _podgroup("g"),
            _hypernode(["a", "b"]),
            _pod("p0", group="g", gpus=1),
            _pod("p1", group="g", node="a", gpus=2),
            _pod("p2", node="b"),
        ]:
            self.store.apply(obj["kind"], "ADDED", obj)

    def _next(self) -> int:
        self.version += 1
        return self.version

    def _current(self, kind: str, key: str) -> dict[str, Any] | None:
        return self.store.get(kind, key)

    def apply(self, step: tuple[Any, ...]) -> None:
        store = self.store
        match step:
            case ("pod", name, group, node):
                store.apply("Pod", "MODIFIED", _pod(name, self._next(), group=group, node=node, gpus=_gpus(name)))
            case ("delete-pod", name):
                if self._current("Pod", f"ns/{name}") is not None:
                    store.apply("Pod", "DELETED", _pod(name))
            case ("status", name):  # a status written (kwok's Running), nothing the converter reads
                obj = self._current("Pod", f"ns/{name}")
                if obj is not None:
                    changed = copy.deepcopy(obj)
                    changed["metadata"]["resourceVersion"] = str(self._next())
                    changed["status"] = {"phase": "Running"}
                    store.apply("Pod", "MODIFIED", changed)
            case ("node", name, cpu):
                if cpu is None:
                    if self._current("Node", name) is not None:
                        store.apply("Node", "DELETED", _node(name))
                else:
                    store.apply("Node", "MODIFIED", _node(name, self._next(), cpu))
            case ("podgroup", name, present):
                if present:
                    store.apply("PodGroup", "MODIFIED", _podgroup(name, self._next()))
                elif self._current("PodGroup", f"ns/{name}") is not None:
                    store.apply("PodGroup", "DELETED", _podgroup(name))
            case ("queue", present):
                if present:
                    store.apply("Queue", "MODIFIED", _queue("q", self._next()))
                elif self._current("Queue", "q") is not None:
                    store.apply("Queue", "DELETED", _queue("q"))
            case ("class", value):
                store.apply("PriorityClass", "MODIFIED", _priority_class(value, self._next()))
            case ("expect", name, node):  # the applier queued a binding: shown bound from now on
                store.expect_binding(f"ns/{name}", node, {"vcsat.io/gpu-ids": "0"} if _gpus(name) else {})
            case ("refused", name):  # the binding failed: pending again
                store.binding_done(f"ns/{name}", "failed")
            case ("expired", name):  # shown bound no longer (nothing confirmed it in time)
                expected = store._expected.get(f"ns/{name}")
                if expected is not None:
                    expected.deadline = 0.0
            case ("confirm", name, node):  # the watch sees the binding
                obj = self._current("Pod", f"ns/{name}")
                if obj is not None and not obj["spec"].get("nodeName"):
                    bound = copy.deepcopy(obj)
                    bound["metadata"]["resourceVersion"] = str(self._next())
                    bound["spec"]["nodeName"] = node
                    store.apply("Pod", "MODIFIED", bound)
            case ("relist", kind):  # the same objects as new dicts, one gone
                objects = copy.deepcopy(store.objects(kind))
                store.replace(kind, objects[1:] if kind == "Pod" else objects)
            case _:
                raise AssertionError(step)

    def cycle(self) -> tuple[StoreChanges, list[dict[str, Any]]]:
        """One cycle's snapshot and conversion, as ``Scheduler.run_cycle`` takes them; checked."""
        last, self.converted = self.converted, None
        generation, objects, changes = self.store.snapshot_changes(*(last or (None, frozenset())))
        assert objects == self.store.snapshot()[1]
        shown = {(obj["kind"], object_key(obj)): obj for obj in objects}
        if changes.by_kind is not None:
            # Every key not said to have changed shows the very object it showed then.
            said = {(kind, key) for kind, entries in changes.by_kind.items() for key in entries}
            for at, obj in shown.items():
                assert at in said or self.shown.get(at) is obj, at
            for at in self.shown.keys() - shown.keys():
                assert at in said, at
            for kind, entries in changes.by_kind.items():
                for key, obj in entries.items():
                    assert obj is shown.get((kind, key))
        converted = snapshot_from_objects(
            objects,
            strict=False,
            now=1.0,
            generation=generation,
            memo=self.memo,
            changes=changes.by_kind,
            since=None if last is None else last[0],
        )
        assert converted == snapshot_from_objects(copy.deepcopy(objects), strict=False, now=1.0, generation=generation)
        # What the memo keeps is this call's objects, no more (deleted and replaced ones out).
        assert {id(found[0]) for found in self.memo.identified.values()} == set(map(id, objects))
        self.converted = (generation, changes.assumed)
        self.shown = shown
        return changes, objects


SEQUENCES: dict[str, list[list[tuple[Any, ...]]]] = {
    # name: cycles of steps, a snapshot converted after each
    "nothing": [[], []],
    "pod-added": [[("pod", "p3", "g", None)]],
    "pod-modified": [[("pod", "p2", None, "a")]],
    "pod-deleted": [[("delete-pod", "p1")]],
    "pod-deleted-and-back": [[("delete-pod", "p1"), ("pod", "p1", "g", "a")]],
    "status-only": [[("status", "p1")], [("status", "p2")]],
    "binding-in-flight-then-confirmed": [[("expect", "p0", "b")], [("confirm", "p0", "b")]],
    "binding-in-flight-then-refused": [[("expect", "p0", "b")], [("refused", "p0")]],
    "binding-in-flight-then-expired": [[("expect", "p0", "b")], [("expired", "p0")], []],
    "binding-in-flight-pod-deleted": [[("expect", "p0", "b")], [("delete-pod", "p0")]],
    "binding-in-flight-pod-changed": [[("expect", "p0", "b")], [("pod", "p0", "g", None)]],
    "node-added-under-a-pod": [[("pod", "p3", None, "c")], [("node", "c", "8")]],
    "node-deleted-under-a-pod": [[("node", "a", None)]],
    "podgroup-added-and-deleted": [[("pod", "p3", "h", None)], [("podgroup", "h", True)], [("podgroup", "h", False)]],
    "queue-deleted-and-back": [[("queue", False)], [("queue", True)]],
    "class-changed": [[("class", 7)]],
    "relist-pods": [[("relist", "Pod")], []],
    "relist-nodes-with-a-binding-in-flight": [[("expect", "p0", "a")], [("relist", "Node"), ("relist", "Pod")]],
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_event_sequences_convert_as_fresh_reading_only_what_changed(name: str) -> None:
    live = _Live()
    live.cycle()
    for steps in SEQUENCES[name]:
        for step in steps:
            live.apply(step)
        changes, _ = live.cycle()
        assert changes.by_kind is not None


def _spy(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str]]:
    """The names identified by the memo's conversions (not the fresh ones the checks make), and
    each call's way: ``walk`` (every object) or ``changed`` (only the changed ones)."""
    identified: list[str] = []
    ways: list[str] = []
    real_identify = snapshot_module._SnapshotConverter._identify
    real_walk = ConversionMemo.identify_by_kind
    real_changed = ConversionMemo.changed_by_kind

    def identify(self: Any, raw: Any, index: int) -> Any:
        if self.memo is not None:
            identified.append(raw["metadata"]["name"])
        return real_identify(self, raw, index)

    def walk(self: Any, *args: Any) -> Any:
        ways.append("walk")
        return real_walk(self, *args)

    def changed(self: Any, *args: Any) -> Any:
        out = real_changed(self, *args)
        if out is not None:
            ways.append("changed")
        return out

    monkeypatch.setattr(snapshot_module._SnapshotConverter, "_identify", identify)
    monkeypatch.setattr(ConversionMemo, "identify_by_kind", walk)
    monkeypatch.setattr(ConversionMemo, "changed_by_kind", changed)
    return identified, ways


def test_a_steady_cycle_identifies_only_the_changed_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    identified, ways = _spy(monkeypatch)
    live = _Live()
    live.cycle()
    assert ways == ["walk"]
    live.apply(("pod", "p3", "g", None))
    live.apply(("status", "p2"))
    live.apply(("expect", "p0", "b"))
    identified.clear()
    live.cycle()
    assert sorted(identified) == ["p0", "p2", "p3"]
    identified.clear()
    live.cycle()  # nothing changed: nothing identified, nothing walked
    assert identified == []
    live.apply(("delete-pod", "p1"))
    live.cycle()
    assert identified == []
    assert ways == ["walk", "changed", "changed", "changed"]


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_event_sequences_take_the_changed_way_after_the_first(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _, ways = _spy(monkeypatch)
    live = _Live()
    live.cycle()
    for steps in SEQUENCES[name]:
        for step in steps:
            live.apply(step)
        live.cycle()
    assert ways == ["walk"] + ["changed"] * len(SEQUENCES[name])


def test_without_a_whole_conversion_before_every_object_is_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    """No earlier conversion, or one the memo does not hold (a failed call): every object is
    walked, and the snapshot is a fresh one's (checked by ``cycle``)."""
    _, ways = _spy(monkeypatch)
    live = _Live()
    changes, _ = live.cycle()
    assert changes.by_kind is None
    live.memo.by_kind = None  # as after a failed call
    live.apply(("pod", "p3", "g", None))
    changes, _ = live.cycle()
    assert changes.by_kind is not None
    live.cycle()
    assert ways == ["walk", "walk", "changed"]


_STEP = st.one_of(
    st.tuples(
        st.just("pod"),
        st.sampled_from(["p0", "p1", "p2", "p3", "p4"]),
        st.sampled_from([None, "g", "h"]),
        st.sampled_from([None, "a", "b", "c"]),
    ),
    st.tuples(st.just("delete-pod"), st.sampled_from(["p0", "p1", "p2", "p3", "p4"])),
    st.tuples(st.just("status"), st.sampled_from(["p0", "p1", "p2", "p3"])),
    st.tuples(st.just("node"), st.sampled_from(["a", "b", "c"]), st.sampled_from([None, "4", "8"])),
    st.tuples(st.just("podgroup"), st.sampled_from(["g", "h"]), st.booleans()),
    st.tuples(st.just("queue"), st.booleans()),
    st.tuples(st.just("class"), st.sampled_from([7, 100])),
    st.tuples(st.just("expect"), st.sampled_from(["p0", "p3", "p4"]), st.sampled_from(["a", "b"])),
    st.tuples(st.just("refused"), st.sampled_from(["p0", "p3", "p4"])),
    st.tuples(st.just("expired"), st.sampled_from(["p0", "p3", "p4"])),
    st.tuples(st.just("confirm"), st.sampled_from(["p0", "p3", "p4"]), st.sampled_from(["a", "b"])),
    st.tuples(st.just("relist"), st.sampled_from(KINDS)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_STEP, max_size=5), min_size=1, max_size=6))
def test_any_event_sequence_converts_as_fresh(cycles: list[list[tuple[Any, ...]]]) -> None:
    live = _Live()
    live.cycle()
    for steps in cycles:
        for step in steps:
            live.apply(step)
        live.cycle()


def test_changes_counted_from_another_conversion_than_the_memos_are_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memo's last call converted other objects (a cycle given part of the store, as the cycle
    cap does) than the snapshot the changes count from: every object is walked, and the snapshot is
    a fresh one's."""
    _, ways = _spy(monkeypatch)
    live = _Live()
    live.cycle()
    since, assumed = live.converted or (0, frozenset())
    generation, objects = live.store.snapshot()
    part = [obj for obj in objects if obj["metadata"]["name"] != "p2"]
    snapshot_from_objects(part, strict=False, now=1.0, generation=generation + 1, memo=live.memo)
    live.apply(("pod", "p3", "g", None))
    generation, objects, changes = live.store.snapshot_changes(since, assumed)
    converted = snapshot_from_objects(
        objects, strict=False, now=1.0, generation=generation, memo=live.memo, changes=changes.by_kind, since=since
    )
    assert converted == snapshot_from_objects(copy.deepcopy(objects), strict=False, now=1.0, generation=generation)
    assert ways == ["walk", "walk", "walk"]


# --- the scheduler's cycles: the changed way after a whole conversion, never after a part -------


def _scheduler_ways(monkeypatch: pytest.MonkeyPatch, cycle_target_s: float, malformed: bool = False) -> list[str]:
    """The ways the conversions of four cycles of a live scheduler took (a pod arriving before
    each), the third also given a malformed pod when ``malformed`` (refused, left out)."""
    from tests.scripts import load_script
    from vcsat.adapters.live.scheduler import Scheduler
    from vcsat.model import Policy

    _, ways = _spy(monkeypatch)
    kube = load_script("benchmarks/live_cycle.py", "live_cycle")._AcceptingKube()
    scheduler = Scheduler(kube, policy=Policy(time_limit_s=1.0), early_min_pending=0, cycle_target_s=cycle_target_s)
    kube.store = scheduler.store
    store = scheduler.store
    live = _Live()
    for kind in store._kinds:
        store.replace(kind, live.store.objects(kind) if kind in KINDS else [])
    try:
        for number in range(4):
            store.apply("Pod", "ADDED", _pod(f"n{number}", 1, group="g"))
            if malformed and number == 2:
                broken = _pod("bad", 1)
                broken["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
                store.apply("Pod", "ADDED", broken)
            result = scheduler.run_cycle(wait=True)
            # The snapshot a fresh conversion of what the cycle converted gives.
            assert [obj["metadata"]["name"] for obj in result.objects].count("bad") == 0
            fresh = snapshot_from_objects(
                copy.deepcopy(result.objects),
                strict=False,
                now=result.snapshot.now,
                generation=result.snapshot.generation,
            )
            assert result.snapshot == fresh
    finally:
        scheduler.applier.close()
    return ways


def test_the_scheduler_converts_the_changes_after_its_first_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _scheduler_ways(monkeypatch, 0.0) == ["walk", "changed", "changed", "changed"]


def test_a_capped_scheduler_walks_every_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cycle given part of the store converts that part: the next one cannot count from it."""
    assert _scheduler_ways(monkeypatch, 0.5) == ["walk", "walk", "walk", "walk"]


def test_after_a_refused_object_the_retry_and_the_next_cycle_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The third cycle's changes hold a malformed pod: refused on the changed way, the retry without
    it walks; the next cycle walks too (the last conversion was of part of the store), is refused
    again while the pod stays, and its retry walks."""
    ways = _scheduler_ways(monkeypatch, 0.0, malformed=True)
    assert ways == ["walk", "changed", "changed", "walk", "walk", "walk"]
