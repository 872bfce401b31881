"""The live scheduler's isolation of the waiting groups a solve raises on (vcsat.adapters.live.isolate).

The solve is the real one; only the failure is injected: a solve that raises when given the
snapshot with some "poison" groups in it, as a solver bug triggered by an odd group would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest
from builders import group, node, pod, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters.live.isolate import Isolator, waiting_groups, without_groups
from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver import check, solve

POLICY = Policy(time_limit_s=2)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def cluster(groups: int, *, running: Iterable[int] = ()) -> Snapshot:
    """``groups`` gangs of two 1-cpu pods each (ns/g0, ns/g1, ...) on nodes with room for all,
    a lone pending pod ns/lone, and a PodGroup with no pods yet (ns/empty). Gangs in ``running``
    have one pod bound already."""
    bound = set(running)
    pods = [pod("ns/lone")]
    for index in range(groups):
        pods.append(pod(f"ns/g{index}-0", group=f"ns/g{index}", node="n0" if index in bound else None))
        pods.append(pod(f"ns/g{index}-1", group=f"ns/g{index}"))
    return snapshot(
        nodes=[node(f"n{index}", cpu="8") for index in range(max(1, groups // 3 + 1))],
        pods=pods,
        groups=[group(f"ns/g{index}", min_member=2) for index in range(groups)] + [group("ns/empty")],
    )


def poisoned(*poison: frozenset[str] | str) -> tuple[Callable[[Snapshot], Decision], list[Snapshot]]:
    """A real solve that raises while every group of one of the ``poison`` sets waits in its
    snapshot (a string: a set of one), and the snapshots it was called with."""
    sets = [frozenset({item}) if isinstance(item, str) else item for item in poison]
    calls: list[Snapshot] = []

    def decide(part: Snapshot) -> Decision:
        calls.append(part)
        present = set(waiting_groups(part))
        for bad in sets:
            if bad <= present:
                raise RuntimeError(f"poisoned by {sorted(bad)}")
        return solve(part, POLICY, wall=False)

    return decide, calls


def set_aside(decision: Decision, isolator: Isolator | None = None) -> set[str]:
    """The groups the decision reports set aside, and with ``isolator`` those it holds without
    pods (the contract reports no outcome for a group with no pods)."""
    reported = {outcome.podgroup for outcome in decision.podgroups if outcome.reason == "SchedulerError"}
    return reported | ({"ns/empty"} & set(isolator.set_aside) if isolator is not None else set())


def bound_groups(decision: Decision, snap: Snapshot) -> set[str]:
    pods = snap.pod_by_key
    return {pods[binding.pod].group or binding.pod for binding in decision.bindings}


def test_waiting_groups_and_without_groups() -> None:
    snap = cluster(3, running=[1])
    assert waiting_groups(snap) == ["ns/lone", "ns/g0", "ns/g1", "ns/g2", "ns/empty"]
    left = without_groups(snap, ["ns/g0", "ns/g1", "ns/lone", "ns/empty"])
    # g1 has a bound pod: its PodGroup and that pod stay, its waiting pod goes.
    assert [p.key for p in left.pods] == ["ns/g1-0", "ns/g2-0", "ns/g2-1"]
    assert [g.key for g in left.podgroups] == ["ns/g1", "ns/g2"]
    assert without_groups(snap, []) is snap


@pytest.mark.parametrize(
    ("poison", "expected"),
    [
        (["ns/g2"], {"ns/g2"}),
        (["ns/g0", "ns/g4"], {"ns/g0", "ns/g4"}),
        (["ns/lone"], {"ns/lone"}),
        (["ns/empty"], {"ns/empty"}),
        ([frozenset({"ns/g1", "ns/g3"})], None),  # only both together: either one is enough
    ],
)
def test_the_groups_a_solve_raises_on_are_set_aside_and_the_rest_is_decided(
    poison: list[frozenset[str] | str], expected: set[str] | None
) -> None:
    snap = cluster(6)
    decide, _ = poisoned(*poison)
    isolator = Isolator()
    decision = isolator.decide(snap, decide)
    aside = set_aside(decision, isolator)
    if expected is None:
        assert len(aside) == 1 and aside <= {"ns/g1", "ns/g3"}
    else:
        assert aside == expected
    assert set(isolator.set_aside) == aside
    assert not bound_groups(decision, snap) & aside
    # Everything else is placed (there is room for all), and the decision keeps every rule.
    assert bound_groups(decision, snap) == set(waiting_groups(snap)) - aside - {"ns/empty"}
    assert check(snap, decision, POLICY) == []
    for outcome in decision.podgroups:
        if outcome.podgroup in aside:
            assert outcome.phase == "Pending" and "poisoned" in outcome.message


def test_a_failure_no_waiting_group_causes_is_raised() -> None:
    def always(part: Snapshot) -> Decision:
        raise ValueError("broken everywhere")

    with pytest.raises(ValueError, match="broken everywhere"):
        Isolator().decide(cluster(3), always)


def test_a_failure_that_does_not_repeat_blames_nobody() -> None:
    real, _ = poisoned()
    failures = [RuntimeError("once")]

    def flaky(part: Snapshot) -> Decision:
        if failures:
            raise failures.pop()
        return real(part)

    isolator = Isolator()
    decision = isolator.decide(cluster(3), flaky)
    assert set_aside(decision) == set() and isolator.set_aside == {}
    assert len(decision.bindings) == 7


def test_a_group_set_aside_stays_out_then_is_tried_first_and_backs_off_longer() -> None:
    snap = cluster(8)
    clock = Clock()
    isolator = Isolator(backoff_s=60, max_backoff_s=200, clock=clock)
    decide, calls = poisoned("ns/g5")
    assert set_aside(isolator.decide(snap, decide)) == {"ns/g5"}
    assert isolator.found == 1

    # Within its back-off: the next cycle solves once, without it, and still says why it waits.
    calls.clear()
    clock.now += 30
    assert set_aside(isolator.decide(snap, decide)) == {"ns/g5"}
    assert len(calls) == 1 and "ns/g5" not in waiting_groups(calls[0])

    # Past it, still failing: found again with few solves (tried first), back-off doubled.
    calls.clear()
    clock.now += 31
    assert set_aside(isolator.decide(snap, decide)) == {"ns/g5"}
    assert len(calls) <= 6
    assert isolator.set_aside["ns/g5"].backoff_s == 120 and isolator.found == 2
    clock.now += 121
    isolator.decide(snap, decide)
    assert isolator.set_aside["ns/g5"].backoff_s == 200  # capped

    # Fixed (say, a new version): once due it is decided and forgotten.
    healthy, _ = poisoned()
    clock.now += 201
    decision = isolator.decide(snap, healthy)
    assert set_aside(decision) == set() and isolator.set_aside == {}
    assert "ns/g5" in bound_groups(decision, snap)


def test_a_group_gone_from_the_cluster_is_forgotten() -> None:
    isolator = Isolator()
    decide, _ = poisoned("ns/g1")
    isolator.decide(cluster(3), decide)
    assert set(isolator.set_aside) == {"ns/g1"}
    isolator.decide(without_groups(cluster(3), ["ns/g1"]), decide)
    assert isolator.set_aside == {}


def test_out_of_solves_sets_aside_a_prefix_that_decides() -> None:
    snap = cluster(12)
    decide, calls = poisoned("ns/g3", "ns/g7", "ns/g10")
    isolator = Isolator(max_solves=5)
    decision = isolator.decide(snap, decide)
    aside = set_aside(decision, isolator)
    assert {"ns/g3", "ns/g7", "ns/g10"} <= aside
    assert len(calls) <= 1 + 5 + 1  # the cycle's own try, the budget, and the last check
    assert check(snap, decision, POLICY) == []


@settings(max_examples=25, deadline=None)
@given(
    groups=st.integers(min_value=1, max_value=10),
    data=st.data(),
)
def test_every_poison_is_found_and_nothing_else(groups: int, data: st.DataObject) -> None:
    snap = cluster(groups)
    keys = waiting_groups(snap)
    poison = data.draw(st.sets(st.sampled_from(keys), max_size=3), label="poison")
    decide, _ = poisoned(*poison)
    isolator = Isolator()
    decision = isolator.decide(snap, decide)
    assert set_aside(decision, isolator) == poison
    assert check(snap, decision, POLICY) == []
