"""Leader election against the real API server: one leader at a time, and failover on every kind of end.

Short durations (lease 2 s, renew deadline 1.5 s, retry 0.3 s) keep each case to a few seconds.
Failover times are measured and printed (run with ``-s`` to see them), never asserted: what is
asserted is the safety property, that a new leader starts only after the old one stopped.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from controlplane import ControlPlane
from kubernetes import client
from kubernetes.client import ApiClient, Configuration

from vcsat.adapters.errors import InputError
from vcsat.adapters.kube.leader import LeaderElector, default_identity

FAST = {"lease_duration_s": 2.0, "renew_deadline_s": 1.5, "retry_period_s": 0.3}
WAIT_S = 20.0
"""Deadline of every wait loop: generous, it only keeps a broken build from hanging."""


def wait_for(condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.01)


@dataclass
class Timeline:
    """What every candidate's callbacks did, on this process's monotonic clock."""

    events: list[tuple[str, str, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, who: str, what: str) -> None:
        with self.lock:
            self.events.append((who, what, time.monotonic()))

    def times(self, who: str, what: str) -> list[float]:
        with self.lock:
            return [t for w, e, t in self.events if w == who and e == what]

    def first(self, who: str, what: str) -> float:
        """When ``who`` first did ``what``, waiting for it (callbacks run in their own threads)."""
        wait_for(lambda: bool(self.times(who, what)), f"{who}: {what}")
        return self.times(who, what)[0]

    def starters(self) -> list[str]:
        with self.lock:
            return [w for w, e, _ in self.events if e == "start"]


@dataclass
class Candidate:
    identity: str
    elector: LeaderElector
    stop: threading.Event
    thread: threading.Thread
    api: ApiClient

    def is_leader(self) -> bool:
        return self.elector.is_leader()

    def halt(self) -> None:
        self.stop.set()
        self.thread.join(WAIT_S)
        assert not self.thread.is_alive(), f"{self.identity}: run() did not return after stop"


@pytest.fixture
def candidates(control_plane: ControlPlane, k8s_namespace: str) -> Iterator[Callable[..., Candidate]]:
    """Starts electors on one lease of the test's namespace; all are stopped after the test."""
    started: list[Candidate] = []
    lease = "vcsat-test-lease"

    def start(
        identity: str,
        timeline: Timeline,
        *,
        api: ApiClient | None = None,
        work: Callable[[threading.Event], None] | None = None,
        **options: Any,
    ) -> Candidate:
        api = api or control_plane.api_client()
        elector = LeaderElector(api, namespace=k8s_namespace, name=lease, identity=identity, **{**FAST, **options})

        def on_started_leading(term: threading.Event) -> None:
            timeline.add(identity, "start")
            if work is not None:
                work(term)
            else:
                term.wait()
            timeline.add(identity, "term over")

        stop = threading.Event()
        thread = threading.Thread(
            target=elector.run,
            args=(stop, on_started_leading, lambda: timeline.add(identity, "stop")),
            name=f"elector-{identity}",
            daemon=True,
        )
        candidate = Candidate(identity, elector, stop, thread, api)
        started.append(candidate)
        thread.start()
        return candidate

    yield start
    for candidate in started:
        candidate.stop.set()
    for candidate in started:
        candidate.thread.join(WAIT_S)
        candidate.api.close()


def _holder(k8s_client: ApiClient, namespace: str) -> tuple[str, int]:
    lease = client.CoordinationV1Api(k8s_client).read_namespaced_lease("vcsat-test-lease", namespace)
    assert lease.spec is not None
    return lease.spec.holder_identity or "", lease.spec.lease_transitions or 0


def _report(name: str, seconds: float) -> None:
    print(f"\n[leader failover] {name}: {seconds:.2f} s")


def test_exactly_one_of_two_leads(
    candidates: Callable[..., Candidate], k8s_client: ApiClient, k8s_namespace: str
) -> None:
    timeline = Timeline()
    a = candidates("replica-a", timeline)
    b = candidates("replica-b", timeline)
    wait_for(lambda: a.is_leader() or b.is_leader(), "a leader")

    samples = []
    for _ in range(300):  # ~3 s: ten renewals at the 0.3 s retry period
        samples.append((a.is_leader(), b.is_leader()))
        time.sleep(0.01)
    assert all(leads_a != leads_b for leads_a, leads_b in samples), "not exactly one leader at some sample"

    leader = a if a.is_leader() else b
    assert _holder(k8s_client, k8s_namespace) == (leader.identity, 0)
    assert timeline.starters() == [leader.identity]


def test_clean_stop_hands_over_quickly(
    candidates: Callable[..., Candidate], k8s_client: ApiClient, k8s_namespace: str
) -> None:
    timeline = Timeline()
    first = candidates("replica-a", timeline)
    wait_for(first.is_leader, "the first replica to lead")
    second = candidates("replica-b", timeline)
    time.sleep(0.5)  # the standby has campaigned and found the lease held
    assert not second.is_leader()

    stopped_at = time.monotonic()
    first.halt()
    second_start = timeline.first("replica-b", "start")
    first_stop = timeline.first("replica-a", "stop")
    assert second.is_leader()
    assert timeline.first("replica-a", "term over") < first_stop  # the work ended, then the lease was released
    assert first_stop < second_start
    assert _holder(k8s_client, k8s_namespace) == ("replica-b", 1)
    _report("clean stop (release) -> standby leads", second_start - stopped_at)


def test_crashed_leader_is_replaced_after_the_lease_expires(
    candidates: Callable[..., Candidate], k8s_client: ApiClient, k8s_namespace: str
) -> None:
    timeline = Timeline()
    first = candidates("replica-a", timeline, release_on_stop=False)
    wait_for(first.is_leader, "the first replica to lead")
    second = candidates("replica-b", timeline)
    time.sleep(0.5)

    crashed_at = time.monotonic()
    first.halt()  # stops renewing and leaves the lease as it is, as a killed process would
    assert _holder(k8s_client, k8s_namespace)[0] == "replica-a"
    second_start = timeline.first("replica-b", "start")
    assert second.is_leader()
    assert _holder(k8s_client, k8s_namespace) == ("replica-b", 1)
    _report("crash (no release) -> standby leads, lease 2 s", second_start - crashed_at)


def test_leader_whose_lease_is_taken_steps_down(
    candidates: Callable[..., Candidate], k8s_client: ApiClient, k8s_namespace: str
) -> None:
    timeline = Timeline()
    leader = candidates("replica-a", timeline)
    wait_for(leader.is_leader, "the replica to lead")

    # Another writer overwrites the lease without looking at its resourceVersion.
    client.CoordinationV1Api(k8s_client).patch_namespaced_lease(
        "vcsat-test-lease", k8s_namespace, {"spec": {"holderIdentity": "thief", "leaseDurationSeconds": 60}}
    )
    stolen_at = time.monotonic()
    stopped = timeline.first("replica-a", "stop")
    timeline.first("replica-a", "term over")  # the term event was set
    assert not leader.is_leader()
    time.sleep(1.0)  # still campaigning, and it must not take back a lease that is valid
    assert not leader.is_leader()
    assert _holder(k8s_client, k8s_namespace)[0] == "thief"
    assert timeline.starters() == ["replica-a"]
    _report(
        "lease taken by another writer -> leader steps down",
        stopped - stolen_at,
    )


class CuttableProxy:
    """A TCP relay to the API server that can be cut, as a network partition cuts one replica off."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.cut_off = threading.Event()
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            if self.cut_off.is_set():
                downstream.close()
                continue
            upstream = socket.create_connection(self.target)
            with self.lock:
                self.sockets += [downstream, upstream]
            for source, sink in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def cut(self) -> None:
        self.cut_off.set()
        with self.lock:
            for sock in self.sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def close(self) -> None:
        self.cut()
        self.listener.close()


def test_leader_cut_off_from_the_server_stops_before_the_standby_starts(
    control_plane: ControlPlane, candidates: Callable[..., Candidate]
) -> None:
    host, port = control_plane.server.removeprefix("https://").rsplit(":", 1)
    proxy = CuttableProxy((host, int(port)))
    try:
        configuration = Configuration(
            host=f"https://127.0.0.1:{proxy.port}",
            api_key={"authorization": f"Bearer {control_plane.token}"},
            ssl_ca_cert=str(control_plane.ca_file),
        )
        timeline = Timeline()
        cut_off = candidates("replica-a", timeline, api=ApiClient(configuration))
        wait_for(cut_off.is_leader, "the proxied replica to lead")
        standby = candidates("replica-b", timeline)
        time.sleep(0.5)

        cut_at = time.monotonic()
        proxy.cut()
        new_start = timeline.first("replica-b", "start")
        old_stop = timeline.first("replica-a", "stop")
        assert standby.is_leader()
        timeline.first("replica-a", "term over")
        assert not cut_off.is_leader()
        assert old_stop < new_start, "the standby led while the cut-off leader still acted"
        _report("partition: old leader stopped after", old_stop - cut_at)
        _report("partition: standby leads after", new_start - cut_at)
    finally:
        proxy.close()


def test_work_that_ends_by_itself_hands_the_lease_over(
    candidates: Callable[..., Candidate], k8s_client: ApiClient, k8s_namespace: str
) -> None:
    timeline = Timeline()

    def crash(term: threading.Event) -> None:
        raise RuntimeError("the scheduler loop died")

    broken = candidates("replica-a", timeline, work=crash)
    timeline.first("replica-a", "stop")
    assert not broken.is_leader()
    healthy = candidates("replica-b", timeline)
    wait_for(healthy.is_leader, "the healthy replica to lead")
    assert _holder(k8s_client, k8s_namespace) == ("replica-b", 1)
    time.sleep(FAST["lease_duration_s"] + 0.5)  # the broken one campaigns again, and finds it held
    assert healthy.is_leader() and not broken.is_leader()


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"identity": ""}, "identity"),
        ({"lease_duration_s": 10, "renew_deadline_s": 10}, "lease_duration_s"),
        ({"renew_deadline_s": 2, "retry_period_s": 2}, "lease_duration_s"),
        ({"retry_period_s": 0}, "lease_duration_s"),
    ],
)
def test_inconsistent_settings_are_refused(options: dict[str, Any], field: str) -> None:
    settings: dict[str, Any] = {"namespace": "ns", "name": "lease", "identity": "me", **options}
    with pytest.raises(InputError) as caught:
        LeaderElector(object(), **settings)
    assert caught.value.field == field


def test_default_identities_are_unique_per_process_and_name_the_host() -> None:
    first, second = default_identity(), default_identity()
    assert first != second
    assert first.startswith(f"{socket.gethostname()}_")
