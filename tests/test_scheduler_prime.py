"""The live scheduler primes once (``Scheduler._prime``, ``solver/prime.py``): after its first
cycle, when that cycle had nothing to place, the carries a cycle with pending pods leaves are made
then, so the first batch of new pods does not pay them; after a first cycle that placed pods, or a
second time, nothing is done. A table of first cycles, with what was primed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scripts import load_script
from vcsat.model import Policy
from vcsat.solver import node_side


def _pod(name: str, node: str | None, requests: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "vcsat",
        "containers": [{"name": "c", "resources": {"requests": requests}}],
    }
    if node is not None:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def _objects(pending: int) -> dict[str, list[dict[str, Any]]]:
    nodes = [
        {
            "kind": "Node",
            "apiVersion": "v1",
            "metadata": {"name": f"n{i}", "resourceVersion": "1"},
            "status": {
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": "2"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        for i in range(3)
    ]
    bound = [_pod(f"p{i}", f"n{i}", {"cpu": "1", "nvidia.com/gpu": "1"}) for i in range(2)]
    waiting = [_pod(f"w{i}", None, {"cpu": "1"}) for i in range(pending)]
    return {"Node": nodes, "Pod": [*bound, *waiting]}


# (what, pending pods at the first cycle, cycles run, primes made, the node rooms' resources after)
CASES: list[tuple[str, int, int, int, tuple[str, ...]]] = [
    ("nothing pending: primed for our bound pods' resources", 0, 1, 1, ("cpu", "nvidia.com/gpu", "pods")),
    ("nothing pending, twice: primed once", 0, 2, 1, ("cpu", "nvidia.com/gpu", "pods")),
    ("a pod pending: its build made them, no priming", 1, 1, 0, ("cpu", "pods")),
]


@pytest.mark.parametrize(("what", "pending", "cycles", "primes", "resources"), CASES, ids=[c[0] for c in CASES])
def test_the_scheduler_primes_once_after_a_first_cycle_with_nothing_pending(
    what: str, pending: int, cycles: int, primes: int, resources: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    from vcsat.adapters.live.scheduler import Scheduler
    from vcsat.solver import prime as prime_module

    made: list[list[str]] = []
    real = prime_module.prime
    monkeypatch.setattr(prime_module, "prime", lambda snap: made.append(real(snap)) or made[-1])
    node_side.forget()
    kube = load_script("benchmarks/live_cycle.py", "live_cycle")._AcceptingKube()
    scheduler = Scheduler(kube, policy=Policy(time_limit_s=1.0), early_min_pending=0)
    kube.store = scheduler.store
    objects = _objects(pending)
    for kind in scheduler.store._kinds:
        scheduler.store.replace(kind, objects.get(kind, []))
    try:
        for _ in range(cycles):
            scheduler._prime(scheduler.run_cycle(wait=True))
        carried = node_side._rooms[0]
    finally:
        scheduler.applier.close()
        node_side.forget()
    assert len(made) == primes
    assert scheduler.primed
    # What the next build of pods like the bound ones carries (or what the first build made).
    assert carried == resources


def test_a_priming_that_fails_is_logged_and_the_loop_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from vcsat.adapters.live.scheduler import Scheduler
    from vcsat.solver import prime as prime_module

    def broken(snap: Any) -> list[str]:
        raise RuntimeError("broken")

    monkeypatch.setattr(prime_module, "prime", broken)
    kube = load_script("benchmarks/live_cycle.py", "live_cycle")._AcceptingKube()
    scheduler = Scheduler(kube, policy=Policy(time_limit_s=1.0), early_min_pending=0)
    kube.store = scheduler.store
    objects = _objects(0)
    for kind in scheduler.store._kinds:
        scheduler.store.replace(kind, objects.get(kind, []))
    try:
        scheduler._prime(scheduler.run_cycle(wait=True))
    finally:
        scheduler.applier.close()
        node_side.forget()
    assert scheduler.primed
    assert any(record.getMessage().startswith("priming failed") for record in caplog.records)


def test_the_loop_primes_after_its_first_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Scheduler.run`` itself primes, in the iteration of its first cycle (after the tenure)."""
    import threading

    from vcsat.adapters.live.scheduler import Scheduler
    from vcsat.solver import prime as prime_module

    made: list[list[str]] = []
    real = prime_module.prime
    monkeypatch.setattr(prime_module, "prime", lambda snap: made.append(real(snap)) or made[-1])
    stop = threading.Event()
    kube = load_script("benchmarks/live_cycle.py", "live_cycle")._AcceptingKube()
    scheduler = Scheduler(
        kube, policy=Policy(time_limit_s=1.0), early_min_pending=0, observers=(lambda result: stop.set(),)
    )
    kube.store = scheduler.store
    objects = _objects(0)
    for kind in scheduler.store._kinds:
        scheduler.store.replace(kind, objects.get(kind, []))
    loop = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
    try:
        loop.start()
        loop.join(120)
        assert not loop.is_alive()
    finally:
        stop.set()
        scheduler.applier.close()
        scheduler.tenure.release()
        node_side.forget()
    assert made == [["cpu", "nvidia.com/gpu", "pods"]]
    assert scheduler.cycles >= 1
