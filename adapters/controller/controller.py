"""``vcsat controller``: watch Jobs, their pods and PodGroups, and reconcile each Job by key.

Watches only say *which* Job to look at; the reconciler then reads that Job afresh, so a missed or
duplicated event costs at most one extra pass, and a periodic resync catches anything missed. A
work queue keyed by ``namespace/name`` guarantees that one Job is never reconciled by two workers
at once and that a burst of events for it collapses into one pass. A failing Job is retried with
exponential backoff (capped) while the others go on; nothing a single Job contains can stop the
loop: bad specs become a status and an Event, API refusals a backoff.

With ``--leader-elect`` (the default, as deployed) only the replica holding the Lease acts, and
every term starts a fresh controller with empty memory: everything it needs is in the API.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import click

from vcsat.adapters.controller import naming
from vcsat.adapters.controller.commands import COMMANDS, CommandObject, read_command_object
from vcsat.adapters.controller.queue_states import ACTIONS as QUEUE_ACTIONS
from vcsat.adapters.controller.queue_states import QueueRefused, QueueStates
from vcsat.adapters.controller.reconciler import JOBS, Conflict, Reconciler, WriteHook
from vcsat.adapters.kube.client import PODGROUPS, PODS, ApiError, Kube
from vcsat.adapters.live.daemon import daemon_options, default_lease_namespace, leader_timing, stop_on_signals

log = logging.getLogger("vcsat.controller")

FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 30.0
CONFLICT_RETRY_S = 0.05

Key = tuple[str, str]


class WorkQueue:
    """Job keys to reconcile, each at most once in the queue and never in two workers at once.

    ``add(key, delay)`` schedules a look no later than ``delay`` seconds from now (an earlier add
    wins); a key added while a worker holds it comes back once that worker is ``done``.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Key]] = []
        self._due: dict[Key, float] = {}
        self._active: set[Key] = set()
        self._again: dict[Key, float] = {}
        self._order = itertools.count()
        self._closed = False

    def add(self, key: Key, delay_s: float = 0.0) -> None:
        due = time.monotonic() + max(0.0, delay_s)
        with self._cond:
            if key in self._active:
                self._again[key] = min(due, self._again.get(key, due))
                return
            if key in self._due and self._due[key] <= due:
                return
            self._due[key] = due
            heapq.heappush(self._heap, (due, next(self._order), key))
            self._cond.notify()

    def get(self) -> Key | None:
        """The next due key (blocks); None once the queue is closed."""
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                while self._heap and self._due.get(self._heap[0][2]) != self._heap[0][0]:
                    heapq.heappop(self._heap)  # superseded by an earlier add
                if self._heap and self._heap[0][0] <= now:
                    _, _, key = heapq.heappop(self._heap)
                    del self._due[key]
                    self._active.add(key)
                    return key
                self._cond.wait(None if not self._heap else self._heap[0][0] - now)
            return None

    def done(self, key: Key) -> None:
        with self._cond:
            self._active.discard(key)
            due = self._again.pop(key, None)
        if due is not None:
            self.add(key, due - time.monotonic())

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._due)


class JobController:
    """Watches and workers around a :class:`Reconciler`; ``run(stop)`` blocks until ``stop`` is set."""

    def __init__(
        self,
        api_client: Any,
        *,
        scheduler_name: str = "vcsat",
        namespace: str | None = None,
        wait_for_admission: bool = True,
        claim_unset: bool = True,
        workers: int = 2,
        resync_s: float = 60.0,
        on_write: WriteHook | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.namespace = namespace
        self.workers = workers
        self.resync_s = resync_s
        self.kube = Kube.from_api_client(api_client, pool_size=8)
        self.reconciler = Reconciler(
            self.kube,
            scheduler_name=scheduler_name,
            claim_unset=claim_unset,
            wait_for_admission=wait_for_admission,
            on_write=on_write,
            clock=clock,
        )
        self.queue = WorkQueue()
        self._lock = threading.Lock()
        self._jobs: set[Key] = set()
        self._tombstones: dict[Key, dict[str, dict[str, Any]]] = {}
        self._alive: dict[Key, dict[str, dict[str, Any]]] = {}
        """Per job, its pods as last seen alive by the watch: tombstones for pods a fresh list
        lacks before their DELETED event arrives (the reconciler only uses those it lacks)."""
        self._failures: dict[Key, int] = {}
        self.reconciles = 0
        """Completed reconciles (successful or not): a liveness signal for probes and tests."""
        self._listed: set[str] = set()
        self._commands: dict[Key, dict[str, CommandObject]] = {}
        """Per job, the Command objects that target it (kept by the Command watch)."""
        self._queue_commands: dict[tuple[str, str], CommandObject] = {}
        self.queue_states = QueueStates(self.kube)
        self._watched = {"jobs", "pods", "podgroups"}
        self._arrivals = itertools.count()

    # --- running ---------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        from vcsat.adapters.kube.informer import Informer

        informers = [
            Informer(self.kube, JOBS, on_list=self._jobs_listed, on_event=self._job_event, watch_timeout_s=60),
            Informer(self.kube, PODS, on_list=self._pods_listed, on_event=self._pod_event, watch_timeout_s=60),
            Informer(self.kube, PODGROUPS, on_list=self._groups_listed, on_event=self._group_event, watch_timeout_s=60),
        ]
        if self._commands_served():
            self._watched.add("commands")
            informers.append(
                Informer(
                    self.kube, COMMANDS, on_list=self._commands_listed, on_event=self._command_event, watch_timeout_s=60
                )
            )
        else:
            log.warning(
                "the Command CRD (commands.bus.volcano.sh) is not installed: "
                "vcctl and vcsat job/queue commands are not handled"
            )
        threads = [
            threading.Thread(target=self._work, args=(stop,), name=f"controller-worker-{n}", daemon=True)
            for n in range(self.workers)
        ]
        for informer in informers:
            informer.start()
        for thread in threads:
            thread.start()
        log.info("controller running", extra={"namespace": self.namespace or "(all)", "workers": self.workers})
        try:
            while not stop.wait(self.resync_s):
                with self._lock:
                    known = list(self._jobs)
                for key in known:
                    self.queue.add(key)
                self._run_queue_commands()
                self._finish_closing_queues()
        finally:
            self.queue.close()
            for informer in informers:
                informer.stop()
            for thread in threads:
                thread.join(10.0)
            for informer in informers:
                informer.join(5.0)
            self.kube.close()
            log.info("controller stopped")

    def synced(self) -> bool:
        """Whether every watch has delivered its first list (readiness)."""
        return self._watched <= self._listed

    def _work(self, stop: threading.Event) -> None:
        while not stop.is_set():
            key = self.queue.get()
            if key is None:
                return
            try:
                self._process(key)
            finally:
                self.queue.done(key)

    def _process(self, key: Key) -> None:
        namespace, name = key
        with self._lock:
            dead = self._tombstones.pop(key, {})
            tombstones = {**self._alive.get(key, {}), **dead}
        try:
            with self._lock:
                commands = list(self._commands.get(key, {}).values())
            requeue = self.reconciler.reconcile(namespace, name, tombstones.values(), commands)
        except Conflict as conflict:
            log.debug("conflict; reconciling again", extra={"job": f"{namespace}/{name}", "why": str(conflict)})
            self._restore(key, dead)
            self.queue.add(key, CONFLICT_RETRY_S)
        except Exception as error:  # one Job's trouble must never stop the loop
            failures = self._failures.get(key, 0) + 1
            self._failures[key] = failures
            delay = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2 ** (failures - 1))
            log.warning(
                "reconcile failed; retrying",
                extra={"job": f"{namespace}/{name}", "error": f"{type(error).__name__}: {error}", "retry_in_s": delay},
            )
            self._restore(key, dead)
            self.queue.add(key, delay)
        else:
            self._failures.pop(key, None)
            if requeue is not None:
                self.queue.add(key, requeue)
        finally:
            self.reconciles += 1

    def _restore(self, key: Key, tombstones: Mapping[str, dict[str, Any]]) -> None:
        if tombstones:
            with self._lock:
                self._tombstones.setdefault(key, {}).update(tombstones)

    # --- watch events ------------------------------------------------------------------------

    def _mine(self, obj: Mapping[str, Any]) -> bool:
        namespace = (obj.get("metadata") or {}).get("namespace") or ""
        return self.namespace is None or namespace == self.namespace

    def _jobs_listed(self, jobs: list[dict[str, Any]]) -> None:
        keys = {_key(job) for job in jobs if self._mine(job)}
        with self._lock:
            gone = self._jobs - keys
            self._jobs = keys
        for key in keys | gone:
            self.queue.add(key)
        self._listed.add("jobs")

    def _job_event(self, event_type: str, job: dict[str, Any]) -> None:
        if not self._mine(job):
            return
        key = _key(job)
        with self._lock:
            if event_type == "DELETED":
                self._jobs.discard(key)
            else:
                self._jobs.add(key)
        self.queue.add(key)

    def _pods_listed(self, pods: list[dict[str, Any]]) -> None:
        for pod in pods:
            self._pod_event("ADDED", pod)
        self._listed.add("pods")

    def _pod_event(self, event_type: str, pod: dict[str, Any]) -> None:
        metadata = pod.get("metadata") or {}
        job_name = (metadata.get("labels") or {}).get(naming.JOB_NAME_KEY)
        if not job_name or not self._mine(pod):
            return
        key = (metadata.get("namespace") or "default", job_name)
        name = str(metadata.get("name"))
        with self._lock:
            if event_type == "DELETED":
                # The reconciler reads pods afresh and would not see this one any more; keep its
                # last state so that an eviction is noticed (see state.py: PodEvicted).
                self._tombstones.setdefault(key, {})[name] = pod
                self._alive.get(key, {}).pop(name, None)
            else:
                # Its last state, too: a pod can vanish from a fresh list before the watch says it
                # was deleted, and a pod that vanished must never be taken for one never made.
                self._alive.setdefault(key, {})[name] = pod
        self.queue.add(key)

    def _groups_listed(self, groups: list[dict[str, Any]]) -> None:
        for group in groups:
            self._group_event("ADDED", group)
        self._listed.add("podgroups")

    def _group_event(self, event_type: str, group: dict[str, Any]) -> None:
        metadata = group.get("metadata") or {}
        if event_type == "DELETED":  # queues are cluster-wide: any namespace's group counts
            self._finish_closing_queues()
        if not self._mine(group):
            return
        for ref in metadata.get("ownerReferences") or []:
            if ref.get("kind") == naming.JOB_KIND and ref.get("apiVersion") == naming.JOB_API_VERSION:
                self.queue.add((metadata.get("namespace") or "default", str(ref.get("name"))))

    # --- Command objects -------------------------------------------------------------------

    def _commands_served(self) -> bool:
        try:
            found = self.kube.get(f"/apis/{COMMANDS.api_version}")
        except ApiError:
            return False
        return any(item.get("name") == COMMANDS.plural for item in found.get("resources") or ())

    def _commands_listed(self, commands: list[dict[str, Any]]) -> None:
        with self._lock:
            self._commands.clear()
            self._queue_commands.clear()
        for obj in commands:
            self._command_event("ADDED", obj)
        self._listed.add("commands")

    def _command_event(self, event_type: str, obj: dict[str, Any]) -> None:
        command = read_command_object(obj)
        if command is None or not self._mine(obj):
            return
        command = replace(command, arrival=next(self._arrivals))
        if command.for_job:
            key = (command.namespace or "default", command.target_name)
            with self._lock:
                if event_type == "DELETED":
                    self._commands.get(key, {}).pop(command.name, None)
                else:
                    self._commands.setdefault(key, {})[command.name] = command
            if event_type != "DELETED":
                self.queue.add(key)
        elif command.for_queue:
            with self._lock:
                if event_type == "DELETED":
                    self._queue_commands.pop((command.namespace, command.name), None)
                else:
                    self._queue_commands[(command.namespace, command.name)] = command
            if event_type != "DELETED":
                self._run_queue_commands()

    def _finish_closing_queues(self) -> None:
        """Close the Closing queues whose last PodGroup is gone (queue_states.py)."""
        try:
            self.queue_states.finish_closing()
        except Exception as error:  # called from a watch: never let it stop the watch
            log.warning("closing queues not checked", extra={"error": f"{type(error).__name__}: {error}"})

    def _run_queue_commands(self) -> None:
        """Open or close the queues that Commands name (a queue that still holds PodGroups goes
        Closing, not Closed: queue_states.py), then delete those Commands (idempotent: a failure is
        logged and tried again on the next resync)."""
        with self._lock:
            pending = sorted(self._queue_commands.values(), key=lambda c: c.order)
        for command in pending:
            where = {"queue": command.target_name, "command": f"{command.namespace}/{command.name}"}
            try:
                if command.action in QUEUE_ACTIONS:
                    try:
                        self.queue_states.apply(command.target_name, command.action)
                    except QueueRefused as refused:
                        log.warning(f"{refused}; command dropped", extra=where)
                else:
                    log.warning(f"unknown queue action {command.action!r}; command dropped", extra=where)
                self.kube.delete(COMMANDS.path(command.namespace, command.name))
            except ApiError as error:
                if error.status != 404:
                    log.warning("queue command not applied", extra={**where, "error": str(error)})
                    continue
            with self._lock:
                self._queue_commands.pop((command.namespace, command.name), None)


def _key(obj: Mapping[str, Any]) -> Key:
    metadata = obj.get("metadata") or {}
    return (metadata.get("namespace") or "default", str(metadata.get("name")))


# --- the command ------------------------------------------------------------------------------


@click.command("controller")
@click.option("--kubeconfig", metavar="FILE", help="Default: in-cluster credentials, else ~/.kube/config.")
@click.option(
    "--scheduler-name",
    default="vcsat",
    show_default=True,
    metavar="NAME",
    help="Reconcile Jobs whose spec.schedulerName is this.",
)
@click.option(
    "--claim-unset/--no-claim-unset",
    default=True,
    show_default=True,
    help="Also reconcile Jobs with no schedulerName (no Volcano admission webhook set one); "
    "their pods get --scheduler-name.",
)
@click.option("--namespace", "-n", metavar="NS", help="Only Jobs in this namespace (default: all).")
@click.option(
    "--wait-for-admission/--no-wait-for-admission",
    default=True,
    show_default=True,
    help="Create a Job's pods only once the scheduler has admitted its PodGroup (Inqueue).",
)
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True, metavar="N")
@click.option(
    "--resync",
    "resync_s",
    type=click.FloatRange(min=1.0),
    default=60.0,
    show_default=True,
    metavar="S",
    help="Seconds between full passes over every Job (the watches do the rest).",
)
@daemon_options(lease_name="vcsat-controller")
def controller_command(
    kubeconfig: str | None,
    scheduler_name: str,
    claim_unset: bool,
    namespace: str | None,
    wait_for_admission: bool,
    workers: int,
    resync_s: float,
    leader_elect: bool,
    lease_namespace: str | None,
    lease_name: str,
    lease_duration_s: float,
    renew_deadline_s: float,
    retry_period_s: float,
    metrics_port: int,
    log_format: str,
    log_level: str,
) -> None:
    """Run the Job controller: Volcano Jobs → PodGroups, pods, plugins and status, until SIGTERM."""
    timing = leader_timing(lease_duration_s, renew_deadline_s, retry_period_s)
    from kubernetes.client import ApiClient

    from vcsat.adapters.kube.client import load_configuration
    from vcsat.adapters.live.logs import setup_logging

    setup_logging(log_format, log_level.upper())
    configuration = load_configuration(kubeconfig)
    stop = stop_on_signals(log)

    options: dict[str, Any] = {
        "scheduler_name": scheduler_name,
        "namespace": namespace,
        "wait_for_admission": wait_for_admission,
        "claim_unset": claim_unset,
        "workers": workers,
        "resync_s": resync_s,
    }
    current: dict[str, JobController] = {}
    metrics = None
    with ApiClient(configuration) as api_client:
        if metrics_port:
            from vcsat.adapters.live.metrics import Metrics

            metrics = Metrics()
            metrics.serve(
                metrics_port,
                healthy=lambda: True,
                # A standby replica is ready (it can take over); a leader once its watches listed.
                ready=lambda: "controller" not in current or current["controller"].synced(),
            )

        def lead(term: threading.Event) -> None:
            from vcsat.adapters.controller.cronjob import run_cronjobs_beside

            controller = JobController(api_client, **options)
            current["controller"] = controller
            if metrics is not None:
                metrics.set_leader(True)
            try:
                # Its own connections: the Job controller closes its client when its term ends.
                with (
                    Kube.from_api_client(api_client, pool_size=4) as cron_kube,
                    run_cronjobs_beside(cron_kube, term, namespace=namespace, resync_s=resync_s),
                ):
                    controller.run(term)
            finally:
                if metrics is not None:
                    metrics.set_leader(False)

        try:
            if leader_elect:
                from vcsat.adapters.kube.leader import LeaderElector, default_identity

                elector = LeaderElector(
                    api_client,
                    namespace=lease_namespace or default_lease_namespace(),
                    name=lease_name,
                    lease_duration_s=timing.lease_duration_s,
                    renew_deadline_s=timing.renew_deadline_s,
                    retry_period_s=timing.retry_period_s,
                    identity=default_identity(),
                )
                elector.run(stop, lead, lambda: log.info("no longer leading; standing by"))
            else:
                lead(stop)
        finally:
            if metrics is not None:
                metrics.shutdown()
