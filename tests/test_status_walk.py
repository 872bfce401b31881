"""A full apply looks again only at the PodGroups whose skip may have changed since the last one
(``StatusWrites._looked_at``): it must submit exactly what a walk over every group submits, in the
same order, whatever changed in between (pods, PodGroups, the store's objects, early applies).

Two appliers see the same cluster through stores, conversion memos and API stand-ins of their own;
one walks every group each time. After each step both must have submitted the same work in the same
order and their stores must show the same statuses."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_objects import k8s_node, k8s_pod, k8s_podgroup, k8s_queue

from vcsat.adapters.convert.reuse import ConversionMemo
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.kube.applier import Applier
from vcsat.adapters.kube.apply_state import ApplyReport, GangOutcome
from vcsat.adapters.kube.informer import Store
from vcsat.model import Binding, Decision, PodGroupOutcome, Snapshot, SolverStats
from vcsat.solver import changes

GROUPS = [f"g{i}" for i in range(5)]
PODS = [f"p{i}" for i in range(8)]


class _Kube:
    """Accepts every request; a status write comes back into the store as the watch shows it."""

    pool_size = 2

    def __init__(self, store: Store) -> None:
        self.store = store
        self.version = 1000
        self.lock = threading.Lock()

    def request(self, method: str, path: str, **_: Any) -> Any:
        return None

    def get(self, path: str, **_: Any) -> Any:
        return {"resources": [{"name": "podgroups/status"}, {"name": "pods/status"}]}

    def post(self, path: str, body: Any, **_: Any) -> Any:
        return body

    def patch(self, path: str, body: Any, **_: Any) -> Any:
        parts = path.strip("/").split("/")
        if parts[-1] == "status" and "podgroups" in parts:
            key = f"{parts[parts.index('namespaces') + 1]}/{parts[-2]}"
            with self.lock:
                current = self.store.get("PodGroup", key)
                if current is not None:
                    self.version += 1
                    status = {**(current.get("status") or {}), **body["status"]}
                    metadata = {**current["metadata"], "resourceVersion": str(self.version)}
                    self.store.apply("PodGroup", "MODIFIED", {**current, "metadata": metadata, "status": status})
        return body

    def delete(self, path: str, body: Any = None, **_: Any) -> Any:
        return None

    def close(self) -> None:
        pass


class _Side:
    """One applier with its own store, memo and API stand-in; ``fresh``: walks every group."""

    def __init__(self, objects: dict[str, dict[str, Any]], fresh: bool) -> None:
        self.store = Store()
        self.memo = ConversionMemo()
        self.applier = Applier(_Kube(self.store), self.store, workers=2)  # type: ignore[arg-type]
        if fresh:
            self.applier._looked_at = lambda snapshot, outcomes, gangs: snapshot.podgroups  # type: ignore[method-assign]
        self.submitted: list[tuple[str, str]] = []
        lane = self.applier._reports
        for name in ("submit", "submit_urgent"):
            original = getattr(lane, name)

            def record(fn: Any, first: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                self.submitted.append((fn.__name__, first.key))
                return _original(fn, first, *args, **kwargs)

            setattr(lane, name, record)
        for kind in self.store._kinds:
            self.store.replace(kind, [copy.deepcopy(o) for o in objects.values() if o["kind"] == kind])

    def step(self, edits: dict[str, dict[str, Any] | None], decision: dict[str, Any], bound_only: bool) -> Snapshot:
        for name, obj in edits.items():
            kind = "PodGroup" if name.startswith("g") else "Pod"
            if obj is None:
                key = f"ns/{name}"
                current = self.store.get(kind, key)
                if current is not None:
                    self.store.apply(kind, "DELETED", current)
            else:
                self.store.apply(kind, "MODIFIED", copy.deepcopy(obj))
        _, objects = self.store.snapshot()
        snapshot = snapshot_from_objects(objects, strict=False, memo=self.memo)
        made = Decision(
            podgroups=[
                PodGroupOutcome(podgroup=f"ns/{g}", phase=phase, reason=reason, message=reason)
                for g, (phase, reason) in sorted(decision["outcomes"].items())
            ],
            solver=SolverStats(status="WITHIN_GAP"),
        )
        gangs = {
            f"ns/{g}": GangOutcome(bound=[Binding(pod=f"ns/{p}", node="n1") for p in pods])
            for g, pods in decision["gangs"].items()
        }
        self.submitted.clear()
        self.applier._podgroups(made, snapshot, gangs, ApplyReport(), bound_only=bound_only)
        return snapshot

    def statuses(self) -> dict[str, Any]:
        return {
            key: (obj.get("status") or {}).get("phase")
            for key, obj in ((f"ns/{g}", self.store.get("PodGroup", f"ns/{g}")) for g in GROUPS)
            if obj is not None
        }


def _pod(name: str, group: str, state: str, ours: bool = True) -> dict[str, Any]:
    node = "n1" if state in ("Running", "Succeeded") else None
    obj = k8s_pod(name, group=group, node=node, scheduler="vcsat" if ours else "other")
    obj["status"] = {"phase": state if state != "Pending" else "Pending"}
    return obj


def _group(name: str, phase: str | None = None, version: int = 1) -> dict[str, Any]:
    obj = k8s_podgroup(name, queue="q", minMember=1)
    obj["metadata"]["resourceVersion"] = str(version)
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def _start() -> dict[str, dict[str, Any]]:
    objects: dict[str, dict[str, Any]] = {"n1": k8s_node("n1"), "q": k8s_queue("q")}
    for i, g in enumerate(GROUPS):
        objects[g] = _group(g)
        objects[PODS[i]] = _pod(PODS[i], g, "Running" if i % 2 else "Pending", ours=i != 4)
    return objects


def _run(steps: list[tuple[dict[str, dict[str, Any] | None], dict[str, Any], bool]]) -> None:
    changes.forget()
    start = _start()
    carried, fresh = _Side(start, fresh=False), _Side(start, fresh=True)
    try:
        for number, (edits, decision, bound_only) in enumerate(steps):
            carried.step(edits, decision, bound_only)
            fresh.step(edits, decision, bound_only)
            assert carried.submitted == fresh.submitted, f"step {number}"
            assert carried.statuses() == fresh.statuses(), f"step {number}"
    finally:
        carried.applier.close()
        fresh.applier.close()


NOTHING: dict[str, Any] = {"outcomes": {}, "gangs": {}}


def _settle(n: int = 3) -> list[tuple[dict[str, dict[str, Any] | None], dict[str, Any], bool]]:
    """Steps with nothing decided: every group writes its status, then shows it and turns quiet."""
    return [({}, NOTHING, False)] * n


CASES: dict[str, list[tuple[dict[str, dict[str, Any] | None], dict[str, Any], bool]]] = {
    "nothing changes": _settle(4),
    "someone else rewrites a quiet group's status": [*_settle(), ({"g1": _group("g1", "Pending", 7)}, NOTHING, False)],
    "a quiet group's object replaced unchanged": [
        *_settle(),
        ({"g0": None}, NOTHING, False),
        ({"g0": _group("g0", None, 9)}, NOTHING, False),
        *_settle(2),
    ],
    "a pod of a quiet group starts running": [*_settle(), ({"p0": _pod("p0", "g0", "Running")}, NOTHING, False)],
    "a pod joins a quiet group": [*_settle(), ({"p5": _pod("p5", "g2", "Running")}, NOTHING, False)],
    "a quiet group's only pod goes": [*_settle(), ({"p3": None}, NOTHING, False)],
    "another scheduler's pod turns ours": [*_settle(), ({"p4": _pod("p4", "g4", "Running")}, NOTHING, False)],
    "a quiet group goes and comes back": [
        *_settle(),
        ({"g1": None}, NOTHING, False),
        ({"g1": _group("g1")}, NOTHING, False),
    ],
    "a decision speaks of a quiet group, then not": [
        *_settle(),
        ({}, {"outcomes": {"g0": ("Pending", "NoRoom")}, "gangs": {}}, False),
        *_settle(2),
    ],
    "an admission and a gang bound": [
        *_settle(),
        ({}, {"outcomes": {"g0": ("Inqueue", ""), "g2": ("Running", "")}, "gangs": {"g2": ["p2"]}}, False),
        *_settle(2),
    ],
    "an early apply between full ones": [
        *_settle(),
        ({}, {"outcomes": {"g0": ("Running", "")}, "gangs": {"g0": ["p0"]}}, True),
        ({"p0": _pod("p0", "g0", "Running")}, NOTHING, False),
        *_settle(2),
    ],
    "an early apply's events alone unsettle a group skipped since": [
        *_settle(),
        ({}, {"outcomes": {"g0": ("Running", "")}, "gangs": {"g0": ["p0"]}}, False),
        *_settle(2),
        ({}, {"outcomes": {"g0": ("Running", "")}, "gangs": {"g0": ["p0"]}}, True),
        *_settle(2),
    ],
}


@pytest.mark.parametrize("steps", list(CASES.values()), ids=list(CASES))
def test_carried_walk_submits_what_a_full_walk_submits(steps: Any) -> None:
    _run(steps)


def test_a_settled_group_is_not_looked_at_again() -> None:
    changes.forget()
    side = _Side(_start(), fresh=False)
    try:
        for _ in range(3):
            snapshot = side.step({}, NOTHING, False)
        looked = side.applier._looked_at(snapshot, {}, {})
        assert len(looked) < len(snapshot.podgroups)
        assert side.submitted == []
    finally:
        side.applier.close()


_edit = st.one_of(
    st.tuples(
        st.sampled_from(PODS),
        st.sampled_from(GROUPS),
        st.sampled_from(["Pending", "Running", "Succeeded"]),
        st.booleans(),
    ).map(lambda t: (t[0], _pod(*t))),
    st.tuples(st.sampled_from(PODS), st.none()),
    st.tuples(
        st.sampled_from(GROUPS), st.sampled_from([None, "Pending", "Inqueue", "Running"]), st.integers(1, 10**6)
    ).map(lambda t: (t[0], _group(*t))),
    st.tuples(st.sampled_from(GROUPS), st.none()),
)
_decision = st.fixed_dictionaries(
    {
        "outcomes": st.dictionaries(
            st.sampled_from(GROUPS),
            st.tuples(st.sampled_from(["Pending", "Inqueue", "Running"]), st.sampled_from(["", "NoRoom"])),
            max_size=2,
        ),
        "gangs": st.dictionaries(st.sampled_from(GROUPS), st.lists(st.sampled_from(PODS), max_size=2), max_size=1),
    }
)
_step = st.tuples(st.lists(_edit, max_size=3).map(dict), st.one_of(st.just(NOTHING), _decision), st.booleans())


@settings(max_examples=40, deadline=None)
@given(st.lists(_step, min_size=1, max_size=8))
def test_any_changes_between_applies(steps: Any) -> None:
    _run([*_settle(2), *steps, *_settle(2)])


def _named(name: str, version: int) -> dict[str, Any]:
    return _group(name, None, version)


@pytest.mark.parametrize(
    ("events", "since", "expected"),
    [
        pytest.param([("ADDED", "a"), ("ADDED", "b")], 0, ["ns/b", "ns/a"], id="added-newest-first"),
        pytest.param([("ADDED", "a"), ("ADDED", "b")], 1, ["ns/b"], id="only-after-the-generation"),
        pytest.param([("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a")], 2, ["ns/a"], id="modified-moves-up"),
        pytest.param([("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a")], 2, ["ns/a"], id="deleted-counts"),
        pytest.param([("ADDED", "a"), ("ADDED", "b")], 2, [], id="nothing-since"),
        pytest.param([("ADDED", "a"), ("DELETED", "a"), ("ADDED", "a")], 1, ["ns/a"], id="deleted-and-back-once"),
    ],
)
def test_store_journal(events: list[tuple[str, str]], since: int, expected: list[str]) -> None:
    store = Store()
    for number, (kind, name) in enumerate(events):
        store.apply("PodGroup", kind, _named(name, number + 1))
    assert store.touched_since("PodGroup", since) == expected


def test_store_journal_bounded_forgets_old_deletions() -> None:
    store = Store()
    for number in range(1200):
        store.apply("PodGroup", "ADDED", _named(f"g{number}", number + 1))
    before = store.generation
    for number in range(1200):
        store.apply("PodGroup", "DELETED", _named(f"g{number}", number + 1))
    assert store.touched_since("PodGroup", before) is None, "deletions since were forgotten: cannot tell"
    assert store.touched_since("PodGroup", 0) is None
    assert store.touched_since("PodGroup", store.generation) == []
