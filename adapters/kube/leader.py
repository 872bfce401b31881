"""Leader election on a ``coordination.k8s.io/v1`` Lease, so that of several replicas exactly one acts.

Two scheduler replicas that both bind would place pods twice; a Lease decides which one works.
The protocol is client-go's (``tools/leaderelection``), re-implemented here:

- The Lease holds a record: holder identity, lease duration, acquire and renew times, transitions.
- Every write carries the ``resourceVersion`` last read, so of two candidates writing at once the
  API server accepts one and answers the other 409 Conflict.
- A candidate never compares the record's timestamps with its own clock (clocks of two machines
  disagree). It notes *when, on its own monotonic clock,* it last saw the record change, and holds
  the lease for expired once ``leaseDurationSeconds`` have passed on that clock with no change.
- The leader renews every retry period. It measures its own deadline from the moment it *sent*
  the last successful renewal, which is before any other replica can have seen that write, so it
  steps down (``renew_deadline`` after that send) strictly before a rival can take over
  (``lease_duration`` after seeing it). ``renew_deadline < lease_duration`` keeps the margin.
- Finding the lease held by someone else while leading is a step-down at once; nothing is gained
  by retrying against a rival who already works.
- A clean stop lets the work stop first (the term event is set, renewals continue until
  ``on_started_leading`` returns), then writes an empty holder with a one-second duration, so a
  standby replica takes over at its next retry instead of waiting out the lease.

Requests go through the API client's raw JSON transport, so the Lease's MicroTime fields are
written exactly as the API server parses them (``RFC3339`` with six fractional digits).
"""

from __future__ import annotations

import contextlib
import datetime
import enum
import functools
import json
import logging
import math
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes.client import ApiClient, ApiException

from vcsat.adapters.errors import InputError

log = logging.getLogger(__name__)

ACQUIRE_JITTER = 0.2
"""Candidates wait the retry period plus up to this fraction of it, so they do not move in step."""
EXPIRY_MARGIN_S = 0.01
"""A campaign timed for a lease's expiry lands this much after it, never a hair before."""
POLL_SLICE_S = 0.05
"""How often a waiting elector looks at its stop event and its callback; cheap and prompt enough."""


def default_identity() -> str:
    """A holder identity unique per process: the host (the pod name in a cluster) and a random tail.

    Two processes must never share an identity: each would take the other's lease for its own.
    """
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class LeaseRecord:
    """The part of a Lease that leader election reads and writes (its ``spec``)."""

    holder: str
    duration_s: int
    acquire_time: str | None
    renew_time: str | None
    transitions: int

    @classmethod
    def from_lease(cls, lease: dict[str, Any]) -> LeaseRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder=spec.get("holderIdentity") or "",
            duration_s=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration_s,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.transitions,
        }


class _Attempt(enum.Enum):
    HOLDING = "holding"
    """The lease is ours now (acquired or renewed)."""
    HELD_ELSEWHERE = "held elsewhere"
    """Another identity holds a lease that has not expired by our observation."""
    FAILED = "failed"
    """The request failed or lost a race (409); try again later."""


class _TermEnd(enum.Enum):
    STOPPED = "stopped"
    """The caller's stop event was set."""
    RETURNED = "returned"
    """on_started_leading returned (or raised) on its own while we still led."""
    LOST = "lost"
    """No renewal succeeded within the renew deadline, or a rival holds the lease."""
    GRACE_OVER = "grace over"
    """While stopping, on_started_leading did not return within one lease duration."""


def _now_micro() -> str:
    """Wall-clock time as a Kubernetes MicroTime: informational only, never used to judge expiry."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _describe(error: BaseException) -> str:
    """One line for a failed request: status and the server's message, or the transport error."""
    if isinstance(error, ApiException):
        message = ""
        with contextlib.suppress(ValueError, TypeError):
            message = str(json.loads(error.body or "{}").get("message") or "")
        return f"{error.status} {error.reason}" + (f": {message}" if message else "")
    return f"{type(error).__name__}: {error}"


_REQUEST_ERRORS = (ApiException, urllib3.exceptions.HTTPError, OSError, json.JSONDecodeError)
"""What one request to the API server can end in, short of a bug."""


class LeaderElector:
    """Campaigns for one Lease and runs a callback for as long as this process holds it.

    ``run`` blocks until ``stop`` is set. Each time this process becomes leader it calls
    ``on_started_leading(term)`` in a new thread, with an Event that is set when leadership ends
    (stop, lost renewal, a rival's write); the callback must stop acting once ``term`` is set and
    should return soon after. ``on_stopped_leading()`` follows every term, in ``run``'s thread.
    After a lost term the elector waits for the callback to return and campaigns again.

    ``api_client`` is a ``kubernetes.client.ApiClient``; an object that only carries a
    ``configuration`` (``vcsat.adapters.kube.client.Kube``) gets an ApiClient of its own made from it.
    The lease should have its own connection pool either way: a renewal that waits for a free
    connection behind a burst of bindings can miss its deadline.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration_s: float = 15,
        renew_deadline_s: float = 10,
        retry_period_s: float = 2,
        release_on_stop: bool = True,
    ) -> None:
        """``release_on_stop=False`` leaves the lease to expire on stop, as a crashed process would."""
        if not identity:
            raise InputError("must not be empty", obj="LeaderElector", field="identity")
        if not 0 < retry_period_s < renew_deadline_s < lease_duration_s:
            raise InputError(
                "need 0 < retry period < renew deadline < lease duration, got "
                f"retry {retry_period_s}s, renew deadline {renew_deadline_s}s, lease {lease_duration_s}s",
                obj="LeaderElector",
                field="lease_duration_s",
            )
        if not hasattr(api_client, "param_serialize") and hasattr(api_client, "configuration"):
            # A client that only carries credentials (vcsat.adapters.kube.client.Kube): the lease gets its
            # own connection pool, so renewals never queue behind a burst of bindings.
            api_client = ApiClient(api_client.configuration)
        self._api = api_client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        # The Lease stores whole seconds; rounding up keeps rivals waiting at least as long as we say.
        self._lease_duration_s = float(lease_duration_s)
        self._lease_seconds = math.ceil(lease_duration_s)
        self._renew_deadline_s = float(renew_deadline_s)
        self._retry_period_s = float(retry_period_s)
        self._release_on_stop = release_on_stop
        self._path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"

        self._lock = threading.Lock()
        self._lease: dict[str, Any] | None = None
        """The Lease as the server last returned it (its resourceVersion makes writes conditional)."""
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        """Monotonic time at which ``_observed`` was first seen: the only basis for expiry."""
        self._renewed_at = 0.0
        """Monotonic time at which the last successful acquire or renew was *sent*."""
        self._leading_until = 0.0
        """While acting as leader: ``_renewed_at + renew_deadline``; 0 otherwise."""
        self._reported_holder: str | None = None

    # --- public -------------------------------------------------------------------------------

    def is_leader(self) -> bool:
        """True while this process leads and its last renewal is within the renew deadline.

        Judged on the clock, not only on the loop's state, so a stalled loop never looks like a
        leader past the moment a rival may take over.
        """
        with self._lock:
            return time.monotonic() < self._leading_until

    def run(
        self,
        stop: threading.Event,
        on_started_leading: Callable[[threading.Event], None],
        on_stopped_leading: Callable[[], None],
    ) -> None:
        """Campaign, lead, and campaign again after a lost term, until ``stop`` is set."""
        where = f"{self.namespace}/{self.name}"
        while not stop.is_set():
            log.info("campaigning for the lease", extra={"lease": where, "identity": self.identity})
            if not self._acquire(stop):
                return
            term = threading.Event()
            returned = threading.Event()
            self._set_acting(True)
            log.info("became leader", extra={"lease": where, "identity": self.identity})
            worker = threading.Thread(
                target=self._lead,
                args=(on_started_leading, term, returned),
                name=f"leader-{self.name}",
                daemon=True,
            )
            worker.start()

            try:
                end = self._hold(functools.partial(self._first_end, stop, returned))
            finally:
                # Whatever happens in here, the work must learn that the term is over.
                term.set()
                self._set_acting(False)
            if end is _TermEnd.STOPPED and self._release_on_stop:
                # Keep the lease while the work winds down, so no rival starts before it has.
                end = self._hold(self._grace_end(returned))
            log.info("stopped leading", extra={"lease": where, "identity": self.identity, "why": end.value})
            try:
                on_stopped_leading()
            except Exception:
                log.exception("on_stopped_leading raised", extra={"lease": where})
            if end is _TermEnd.RETURNED:
                self._release()
            if stop.is_set():
                return
            if end is _TermEnd.RETURNED and stop.wait(self._lease_duration_s):
                # The work ended by itself: a healthy replica gets the first chance to lead.
                return
            self._await_worker(worker, stop)

    # --- the term ------------------------------------------------------------------------------

    def _lead(
        self,
        on_started_leading: Callable[[threading.Event], None],
        term: threading.Event,
        returned: threading.Event,
    ) -> None:
        try:
            on_started_leading(term)
        except Exception:
            log.exception("on_started_leading raised", extra={"lease": f"{self.namespace}/{self.name}"})
        finally:
            if not term.is_set():
                log.warning(
                    "on_started_leading returned while still leading; stepping down",
                    extra={"lease": f"{self.namespace}/{self.name}"},
                )
            returned.set()

    @staticmethod
    def _first_end(stop: threading.Event, returned: threading.Event) -> _TermEnd | None:
        if stop.is_set():
            return _TermEnd.STOPPED
        if returned.is_set():
            return _TermEnd.RETURNED
        return None

    def _grace_end(self, returned: threading.Event) -> Callable[[], _TermEnd | None]:
        grace_until = time.monotonic() + self._lease_duration_s

        def end() -> _TermEnd | None:
            if returned.is_set():
                return _TermEnd.RETURNED
            if time.monotonic() >= grace_until:
                log.warning(
                    "on_started_leading did not return in time; leaving the lease to expire",
                    extra={"lease": f"{self.namespace}/{self.name}"},
                )
                return _TermEnd.GRACE_OVER
            return None

        return end

    def _await_worker(self, worker: threading.Thread, stop: threading.Event) -> None:
        """Never campaign while the previous term's callback still runs: it could act twice."""
        waited = 0.0
        while worker.is_alive() and not stop.is_set():
            worker.join(self._retry_period_s)
            waited += self._retry_period_s
            if worker.is_alive() and waited >= self._lease_duration_s:
                log.warning(
                    "on_started_leading still running after losing the lease",
                    extra={"lease": f"{self.namespace}/{self.name}", "waited_s": round(waited, 1)},
                )
                waited = 0.0

    def _hold(self, end_of_term: Callable[[], _TermEnd | None]) -> _TermEnd:
        """Renew every retry period until ``end_of_term`` names a reason or a renewal is lost."""
        while True:
            reason = self._sleep_until(self._renewed_at + self._retry_period_s, end_of_term)
            if reason is not None:
                return reason
            while True:
                started = time.monotonic()
                deadline = self._renewed_at + self._renew_deadline_s
                if started >= deadline:
                    log.warning(
                        "could not renew the lease within the renew deadline",
                        extra={"lease": f"{self.namespace}/{self.name}"},
                    )
                    return _TermEnd.LOST
                outcome = self._attempt(leading=True, deadline=deadline)
                if outcome is _Attempt.HOLDING:
                    self._renewed(started)
                    break
                if outcome is _Attempt.HELD_ELSEWHERE:
                    return _TermEnd.LOST
                retry_at = min(time.monotonic() + self._retry_period_s, deadline)
                reason = self._sleep_until(retry_at, end_of_term)
                if reason is not None:
                    return reason

    # --- campaigning ---------------------------------------------------------------------------

    def _acquire(self, stop: threading.Event) -> bool:
        """Try every retry period (jittered) until the lease is ours; False once ``stop`` is set."""
        while not stop.is_set():
            started = time.monotonic()
            if self._attempt(leading=False, deadline=started + self._renew_deadline_s) is _Attempt.HOLDING:
                self._renewed(started)
                return True
            if stop.wait(self._next_campaign_in()):
                break
        return False

    def _next_campaign_in(self) -> float:
        """The jittered retry period, or less when the holder's lease expires sooner by our clock."""
        wait = self._retry_period_s * (1 + random.uniform(0, ACQUIRE_JITTER))
        observed = self._observed
        if observed is not None and observed.holder and observed.holder != self.identity:
            # Polling past the expiry would add up to a retry period to every failover.
            expires_in = self._observed_at + observed.duration_s - time.monotonic()
            if 0 < expires_in < wait:
                wait = expires_in + EXPIRY_MARGIN_S
        return wait

    def _attempt(self, *, leading: bool, deadline: float) -> _Attempt:
        """One acquire-or-renew, as client-go's tryAcquireOrRenew: fast path, then read and decide."""
        if leading and self._lease is not None:
            # Fast path: write over the lease we last wrote; a 409 means someone else wrote since.
            try:
                self._write(self._lease, self._next_record(self._observed, leading=True), deadline)
                return _Attempt.HOLDING
            except _REQUEST_ERRORS as error:
                if not (isinstance(error, ApiException) and error.status == 409):
                    self._warn("renewing the lease failed", error)
                    return _Attempt.FAILED
        try:
            lease = self._request("GET", deadline=deadline)
        except ApiException as error:
            if error.status != 404:
                self._warn("reading the lease failed", error)
                return _Attempt.FAILED
            return self._create(deadline)
        except _REQUEST_ERRORS as error:
            self._warn("reading the lease failed", error)
            return _Attempt.FAILED

        record = LeaseRecord.from_lease(lease)
        self._observe(record)
        if record.holder != self.identity:
            if leading:
                log.warning(
                    "the lease was taken over while we led",
                    extra={"lease": f"{self.namespace}/{self.name}", "holder": record.holder},
                )
                return _Attempt.HELD_ELSEWHERE
            if record.holder and time.monotonic() < self._observed_at + record.duration_s:
                return _Attempt.HELD_ELSEWHERE
        try:
            self._write(lease, self._next_record(record, leading=record.holder == self.identity), deadline)
        except _REQUEST_ERRORS as error:
            if isinstance(error, ApiException) and error.status == 409:
                log.debug("lost a race for the lease", extra={"lease": f"{self.namespace}/{self.name}"})
            else:
                self._warn("writing the lease failed", error)
            return _Attempt.FAILED
        return _Attempt.HOLDING

    def _create(self, deadline: float) -> _Attempt:
        now = _now_micro()
        record = LeaseRecord(self.identity, self._lease_seconds, now, now, 0)
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }
        try:
            created = self._request("POST", body=body, deadline=deadline, path=self._path.rsplit("/", 1)[0])
        except _REQUEST_ERRORS as error:
            if not (isinstance(error, ApiException) and error.status == 409):
                self._warn("creating the lease failed", error)
            return _Attempt.FAILED
        self._stored(created)
        return _Attempt.HOLDING

    def _next_record(self, current: LeaseRecord | None, *, leading: bool) -> LeaseRecord:
        now = _now_micro()
        if leading and current is not None:
            # Renewing: the term keeps its start and its transition count.
            return LeaseRecord(self.identity, self._lease_seconds, current.acquire_time, now, current.transitions)
        transitions = current.transitions + 1 if current is not None else 0
        return LeaseRecord(self.identity, self._lease_seconds, now, now, transitions)

    def _release(self) -> None:
        """Hand the lease back: empty holder, one second, conditional on our last write."""
        lease = self._lease
        if lease is None or LeaseRecord.from_lease(lease).holder != self.identity:
            return
        current = LeaseRecord.from_lease(lease)
        now = _now_micro()
        released = LeaseRecord("", 1, now, now, current.transitions)
        try:
            self._write(lease, released, time.monotonic() + self._renew_deadline_s)
        except _REQUEST_ERRORS as error:
            self._warn("releasing the lease failed; it will expire instead", error)
            return
        log.info("released the lease", extra={"lease": f"{self.namespace}/{self.name}"})

    # --- bookkeeping ---------------------------------------------------------------------------

    def _set_acting(self, acting: bool) -> None:
        with self._lock:
            self._leading_until = self._renewed_at + self._renew_deadline_s if acting else 0.0

    def _renewed(self, sent_at: float) -> None:
        with self._lock:
            self._renewed_at = sent_at
            if self._leading_until:
                self._leading_until = sent_at + self._renew_deadline_s

    def _observe(self, record: LeaseRecord) -> None:
        if record != self._observed:
            self._observed = record
            self._observed_at = time.monotonic()
        if record.holder != self._reported_holder:
            self._reported_holder = record.holder
            log.info(
                "lease holder observed",
                extra={"lease": f"{self.namespace}/{self.name}", "holder": record.holder or "(none)"},
            )

    def _stored(self, lease: dict[str, Any]) -> None:
        """Remember what the server stored after our own write: it is observed as of now."""
        self._lease = lease
        self._observe(LeaseRecord.from_lease(lease))

    def _write(self, lease: dict[str, Any], record: LeaseRecord, deadline: float) -> None:
        # Metadata is sent back as read (labels and annotations survive), resourceVersion included.
        body = {**lease, "spec": {**(lease.get("spec") or {}), **record.to_spec()}}
        self._stored(self._request("PUT", body=body, deadline=deadline))

    def _request(
        self, method: str, *, body: dict[str, Any] | None = None, deadline: float, path: str | None = None
    ) -> dict[str, Any]:
        """A raw JSON request, abandoned at ``deadline`` (monotonic): never a renewal past its deadline.

        Raw JSON because the typed client's datetime handling would garble MicroTime.
        """
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"{method} {self._path}: the deadline passed before the request")
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        request = self._api.param_serialize(
            method, path or self._path, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        response = self._api.call_api(*request, _request_timeout=remaining)
        data = response.read()
        if not 200 <= response.status <= 299:
            raise ApiException(http_resp=response)
        result: dict[str, Any] = json.loads(data)
        return result

    def _sleep_until(self, until: float, end_of_term: Callable[[], _TermEnd | None]) -> _TermEnd | None:
        while True:
            reason = end_of_term()
            if reason is not None:
                return reason
            remaining = until - time.monotonic()
            if remaining <= 0:
                return None
            time.sleep(min(POLL_SLICE_S, remaining))

    def _warn(self, what: str, error: BaseException) -> None:
        log.warning(what, extra={"lease": f"{self.namespace}/{self.name}", "error": _describe(error)})
