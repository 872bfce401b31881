"""Faults end to end on kwok nodes: the scheduler leader killed, the API server and etcd restarted.

The real control plane, kube-controller-manager and kwok (tests/k8s/kwokcluster.py), and
``vcsat scheduler`` and ``vcsat controller`` as processes of their own.

- Two ``vcsat scheduler`` replicas elect a leader on one Lease; during a burst of gang Jobs the
  leader is killed with SIGKILL (no release of the Lease). The standby takes over once the Lease
  expires; no pod is ever bound to two nodes, every gang is whole by the end of the first cycle
  after its first binding (a gang cut by the kill: the new leader's first cycle), and all gangs
  end bound and their Jobs complete.
- kube-apiserver is stopped and started again on the same port and etcd, mid-run; then etcd is.
  Both daemons must reconnect by themselves and finish the work: every Job Completed, no pod
  duplicated or bound twice. The test's own requests retry while the API server is away (a create
  that may have landed reads the object back): what is under test is the daemons, not the test.
- A Job's finished pod deleted before the Job completed (what the taint eviction of a node that
  went NotReady does) is made again and placed, its succeeded peer counting toward the gang.

(The controller killed while it creates a Job's pods is tests/k8s/test_controller_crash.py.)
Each test prints what it checked.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import signal
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from controlplane import _etcd_healthy, _http_ok, _spawn
from e2e_support import (
    JOBS,
    REQUEST_TIMEOUT_S,
    STOP_S,
    VCSAT,
    PodWatch,
    bindings,
    create_or_get,
    gpu_job,
    gpu_nodes,
    job_phase,
    nodes_by_uid,
    retried,
    tolerant,
    vcsat_daemon,
    wait_until,
)
from kubernetes import client
from kwokcluster import RUN_SECONDS, KwokCluster, start_kwok_cluster

NODES = 50
NODE_GPUS = 8
LEASE_S = 5.0
"""The replicas' Lease duration (--lease-duration; 15 s by default): short, to keep the test short."""
RENEW_S = 4.0
"""Their renew deadline (--renew-deadline)."""
RETRY_S = 1.0
"""Their retry period (--retry-period): how often a standby looks at the Lease."""
SLACK_S = 1.5
"""Watch delivery and log-line lag between a binding, its event here and its cycle's log line."""


def log_lines(log: Path) -> list[dict[str, Any]]:
    lines = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            lines.append(json.loads(line))
    return lines


def wall(ts: str) -> float:
    return datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.UTC).timestamp()


@contextlib.contextmanager
def scheduler_replica(kubeconfig: Path, log: Path, lease_ns: str, lease: str) -> Iterator[subprocess.Popen[bytes]]:
    """``vcsat scheduler`` with leader election on ``lease_ns/lease``; SIGTERM after (if alive)."""
    argv = [
        *VCSAT,
        "scheduler",
        f"--kubeconfig={kubeconfig}",
        f"--lease-namespace={lease_ns}",
        f"--lease-name={lease}",
        f"--lease-duration={LEASE_S:g}",
        f"--renew-deadline={RENEW_S:g}",
        f"--retry-period={RETRY_S:g}",
        "--metrics-port=0",
        "--log-format=json",
        "--time-limit=2",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(STOP_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def identity_of(log: Path) -> str:
    for line in log_lines(log):
        if line.get("msg") == "starting":
            return str(line["identity"])
    return ""


def lease_holder(api: client.ApiClient, namespace: str, name: str) -> str:
    try:
        lease = client.CoordinationV1Api(api).read_namespaced_lease(name, namespace, _request_timeout=REQUEST_TIMEOUT_S)
    except client.ApiException as error:
        if error.status == 404:
            return ""
        raise
    return (lease.spec.holder_identity if lease.spec else None) or ""


def lease_acquired(api: client.ApiClient, namespace: str, name: str) -> float:
    """When the lease's current holder acquired it (its ``spec.acquireTime``), as a Unix time."""
    leases = client.CoordinationV1Api(api)

    def read() -> Any:
        return leases.read_namespaced_lease(name, namespace, _request_timeout=REQUEST_TIMEOUT_S)

    lease = retried(read, "read the lease")
    assert lease.spec is not None and lease.spec.acquire_time is not None, f"lease {name} has no acquireTime"
    return float(lease.spec.acquire_time.timestamp())


def create_jobs(api: client.ApiClient, namespace: str, names: list[str], sizes: list[int], run_s: float) -> None:
    """Create the Jobs; each create retried while the API server does not answer (it may be coming
    back from a restart): a Job of the same name already there is the one an earlier try made."""
    custom = client.CustomObjectsApi(api)
    group, version, plural = JOBS
    timeout = REQUEST_TIMEOUT_S
    for name, size in zip(names, sizes, strict=True):
        body = gpu_job(name, size, gpus=1, run_seconds=run_s)
        create_or_get(
            lambda body=body: custom.create_namespaced_custom_object(
                group, version, namespace, plural, body, _request_timeout=timeout
            ),
            lambda name=name: custom.get_namespaced_custom_object(
                group, version, namespace, plural, name, _request_timeout=timeout
            ),
            f"create Job {namespace}/{name}",
        )


def api_ready(plane: Any) -> bool:
    """Whether kube-apiserver's /readyz answers 200. No answer in time is "not yet": while etcd is
    down or just back, /readyz takes longer than the probe's own 2 s to say 500."""
    with contextlib.suppress(OSError):
        return _http_ok(f"{plane.server}/readyz", token=plane.token, ca_file=plane.ca_file)
    return False


def pending_report(api: client.ApiClient, namespace: str) -> str:
    """The pods still unbound and their PodGroups' conditions: what a failed wait shows."""
    pods = [p for p in client.CoreV1Api(api).list_namespaced_pod(namespace).items if not p.spec.node_name]
    groups = client.CustomObjectsApi(api).list_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", namespace, "podgroups"
    )
    wanted = {(p.metadata.annotations or {}).get("scheduling.k8s.io/group-name") for p in pods}
    lines = [
        f"pod {p.metadata.name} group {(p.metadata.annotations or {}).get('scheduling.k8s.io/group-name')}"
        for p in pods
    ]
    for group in groups["items"]:
        if group["metadata"]["name"] in wanted:
            lines.append(f"podgroup {group['metadata']['name']}: spec {group['spec']} status {group.get('status')}")
    return "\n".join(lines)


def jobs_report(api: client.ApiClient, namespace: str, names: list[str], changes: list[Any]) -> str:
    """The Jobs not Completed, with their PodGroups, pods and every change the watch saw to their
    pods (seconds since the first change): what a failed wait shows."""
    custom = client.CustomObjectsApi(api)
    groups = custom.list_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", namespace, "podgroups")["items"]
    pods = client.CoreV1Api(api).list_namespaced_pod(namespace).items
    lines = []
    for name in names:
        job = custom.get_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], name)
        if ((job.get("status") or {}).get("state") or {}).get("phase") == "Completed":
            continue
        lines.append(f"job {name}: uid {job['metadata']['uid']} status {job.get('status')}")
        for group in groups:
            owners = [o.get("name") for o in group["metadata"].get("ownerReferences") or []]
            if name in owners or group["metadata"]["name"].startswith(f"{name}-"):
                metadata, status = group["metadata"], group.get("status")
                lines.append(f"  podgroup {metadata['name']}: spec {group['spec']} status {status}")
        for pod in pods:
            if (pod.metadata.labels or {}).get("volcano.sh/job-name") == name:
                lines.append(
                    f"  pod {pod.metadata.name} node {pod.spec.node_name} phase {pod.status.phase} "
                    f"deleting {pod.metadata.deletion_timestamp is not None} annotations {pod.metadata.annotations}"
                )
        start = changes[0].wall if changes else 0.0
        for change in changes:
            if change.job == name:
                lines.append(
                    f"  {change.wall - start:7.2f}s {change.kind} {change.name} node {change.node or '-'} "
                    f"phase {change.phase} deleting {change.deleting}"
                )
    return "\n".join(lines)


def gang_rounds(events: list[Any], jobs: list[str]) -> dict[str, int]:
    """Per Job, the Scheduled events of its PodGroup: vcsat writes one per round of bindings."""
    rounds: Counter[str] = Counter()
    for event in events:
        if event.reason != "Scheduled" or event.involved_object.kind != "PodGroup":
            continue
        job = next((j for j in jobs if event.involved_object.name.startswith(f"{j}-")), None)
        if job is not None:
            rounds[job] += event.count or 1
    return dict(rounds)


def burst_sizes(jobs: int, pods: int | None = None) -> list[int]:
    """Gang sizes 4, 5, 6, 7, 8, 4, ... of ``jobs`` Jobs; the last one grown so they hold ``pods``."""
    sizes = [4 + (i % 5) for i in range(jobs)]
    if pods is not None:
        sizes[-1] += pods - sum(sizes)
    return sizes


@pytest.mark.parametrize(
    ("sizes", "node_count", "wait_s"),
    [
        # A few hundred pods in gangs of 4 to 8 on 50 nodes of 8 GPUs: all of them fit at once.
        pytest.param(burst_sizes(48), NODES, 90.0, id="burst"),
        # The 10,000 pods (1,667 gangs of 4 to 8) on 500 nodes: they run in waves.
        pytest.param(burst_sizes(1667, 10_000), 500, 3600.0, id="burst-10k", marks=pytest.mark.long),
    ],
)
def test_scheduler_leader_killed_during_a_burst_standby_takes_over(
    kwok_cluster: KwokCluster, namespace: str, tmp_path: Path, sizes: list[int], node_count: int, wait_s: float
) -> None:
    plane = kwok_cluster.plane
    lease = "vcsat-scheduler-faults"
    replica_logs = (tmp_path / "scheduler-a.log", tmp_path / "scheduler-b.log")
    controller_log = tmp_path / "controller.log"
    logs = (*replica_logs, controller_log, kwok_cluster.kwok_log)
    # Half the Jobs before the kill, half after it.
    names = [f"burst-{i:04d}" for i in range(len(sizes))]
    half = len(names) // 2
    with (
        gpu_nodes(kwok_cluster, [NODE_GPUS] * node_count, cpu="64", memory="256Gi") as nodes,
        plane.api_client() as api,
        PodWatch(api, namespace) as pods,
        scheduler_replica(plane.kubeconfig, replica_logs[0], namespace, lease) as replica_a,
        scheduler_replica(plane.kubeconfig, replica_logs[1], namespace, lease) as replica_b,
        vcsat_daemon("controller", plane.kubeconfig, controller_log, f"--namespace={namespace}", "--resync=5"),
    ):
        wait_until(lambda: all(identity_of(log) for log in replica_logs), "both replicas log their identity", logs=logs)
        replicas = {identity_of(replica_logs[0]): replica_a, identity_of(replica_logs[1]): replica_b}
        leader = wait_until(tolerant(lambda: lease_holder(api, namespace, lease)), "a replica leads", logs=logs)
        assert leader in replicas, f"unknown holder {leader!r}; replicas {sorted(replicas)}"

        create_jobs(api, namespace, names[:half], sizes[:half], run_s=8)
        wait_until(lambda: len(bindings(pods.snapshot())) >= 8, "the leader binds pods", logs=logs)
        replicas[leader].kill()
        killed_at = time.time()
        replicas[leader].wait()
        create_jobs(api, namespace, names[half:], sizes[half:], run_s=8)

        standby = wait_until(
            tolerant(lambda: (h := lease_holder(api, namespace, lease)) != leader and h), "the standby leads", logs=logs
        )
        # The standby's own record of when it took the lease: creating the second half of a large
        # burst (above) can take longer than the takeover, so the time this line runs is too late.
        took_over_at = lease_acquired(api, namespace, lease)
        total = sum(sizes)
        try:
            wait_until(lambda: len(bindings(pods.snapshot())) >= total, f"all {total} pods bound", wait_s, logs=logs)
        except AssertionError as error:
            raise AssertionError(f"{error}\n--- left pending ---\n{pending_report(api, namespace)}") from None
        try:
            wait_until(
                tolerant(lambda: all(job_phase(api, namespace, n) == "Completed" for n in names)),
                "every Job Completed",
                wait_s,
                logs=logs,
            )
        except AssertionError as error:
            report = jobs_report(api, namespace, names, pods.snapshot())
            raise AssertionError(f"{error}\n--- not Completed ---\n{report}") from None
        changes = pods.snapshot()
        events = retried(lambda: client.CoreV1Api(api).list_namespaced_event(namespace).items, "list the events")

    assert standby in replicas and standby != leader
    takeover_s = took_over_at - killed_at
    assert takeover_s <= LEASE_S + 2 * RETRY_S + 5, f"the standby took {takeover_s:.1f}s to lead (lease {LEASE_S}s)"

    # No pod bound twice: one node per pod over the whole run.
    seen = nodes_by_uid(changes)
    twice = {uid: n for uid, n in seen.items() if len(n) > 1}
    assert not twice, f"pods bound to two nodes: {twice}"
    rounds = gang_rounds(events, names)
    assert set().union(*seen.values()) <= set(nodes)

    # Each gang whole within one cycle: no cycle (of either replica) ends between its first and last
    # binding. A gang cut by the kill must be whole by the end of the new leader's first cycle.
    cycles = sorted(
        wall(line["ts"])
        for log in replica_logs
        for line in log_lines(log)
        if line.get("msg") == "cycle" and line.get("bound")
    )
    bound = bindings(changes)
    by_job: dict[str, list[float]] = {}
    for change in bound:
        by_job.setdefault(change.job, []).append(change.wall)
    assert sorted(by_job) == sorted(names)
    cut = 0
    for job, size in zip(names, sizes, strict=True):
        times = sorted(by_job[job])
        history = [
            (round(c.wall - killed_at, 2), c.kind, c.name, c.node, c.phase, c.deleting) for c in changes if c.job == job
        ]
        assert len(times) == size, f"Job {job}: {len(times)} pods bound, its gang is {size}: {history}"
        # A cycle that ended while the gang was partly bound (margins for watch and log lag).
        inside = [c for c in cycles if times[0] + SLACK_S < c < times[-1] - SLACK_S]
        assert not inside, f"gang {job} stayed partly bound across {len(inside)} cycle(s): {history}"
        straddles = times[0] < killed_at < times[-1]
        cut += straddles
        # The PodGroup's Scheduled events, one per round of bindings: at most the round of its cycle
        # and the retry of a refused binding in the next, one more for a gang cut by the kill (none
        # when the leader died between its bindings and its event).
        assert rounds.get(job, 0) <= 2 + straddles, f"gang {job} bound in {rounds.get(job)} rounds: {history}"
    print(
        f"checked: pods={len(seen)}, gangs={len(names)}, bindings={len(bound)}, gangs cut by the kill={cut}, "
        f"takeover={takeover_s:.1f}s (lease {LEASE_S:g}s), gangs with Scheduled events={len(rounds)}, "
        "pods bound twice: 0, duplicates found: 0"
    )


# --- the fake nodes' heartbeat ---------------------------------------------------------------------


def test_kwok_nodes_heartbeat_through_their_leases(kwok_cluster: KwokCluster) -> None:
    """The node lifecycle controller takes a node whose heartbeat (its Lease in kube-node-lease, or
    its status) is older than 50 s for unreachable, and the taint eviction then deletes its pods:
    every scenario here longer than that needs kwok to renew its nodes' Leases."""
    with gpu_nodes(kwok_cluster, [NODE_GPUS]) as nodes, kwok_cluster.plane.api_client() as api:
        leases = client.CoordinationV1Api(api)

        def renewed() -> Any:
            try:
                return leases.read_namespaced_lease(nodes[0], "kube-node-lease").spec.renew_time
            except client.ApiException as error:
                if error.status == 404:
                    return None
                raise

        first = wait_until(tolerant(renewed), "the node has a Lease")
        later = wait_until(tolerant(lambda: (t := renewed()) != first and t), "kwok renews the node's Lease", 40)
    print(f"checked: node {nodes[0]}'s Lease renewed {(later - first).total_seconds():.0f}s after its first renewal")


# --- a finished pod deleted before its Job completed ----------------------------------------------


def test_a_finished_pod_deleted_before_its_job_completed_is_made_again(
    kwok_cluster: KwokCluster, namespace: str, tmp_path: Path
) -> None:
    """A node that goes NotReady under load has every pod on it deleted by the taint eviction,
    finished ones too. Here a Job's finished pod is deleted while the controller is down, and its
    other pod then finishes: the PodGroup, every pod left finished, reads Completed while the Job
    still runs. The controller must make the pod again (Volcano syncs pods under any PodGroup phase
    but Pending) and the scheduler place it, its succeeded peer counting toward the gang."""
    plane = kwok_cluster.plane
    logs = (tmp_path / "scheduler.log", tmp_path / "controller.log", tmp_path / "controller-2.log")
    body = gpu_job("redo", 1, gpus=1, run_seconds=1)
    quick = body["spec"]["tasks"][0]
    # The second task runs until this test gives it a run time (kwok ends a pod only when told).
    held = json.loads(json.dumps(quick))
    held["name"] = "held"
    del held["template"]["metadata"]["annotations"]
    body["spec"]["tasks"].append(held)
    body["spec"]["minAvailable"] = 2
    custom = client.CustomObjectsApi(api_client := plane.api_client())
    core = client.CoreV1Api(api_client)

    def phase_of(pod: str) -> str:
        try:
            return str(core.read_namespaced_pod(pod, namespace).status.phase)
        except client.ApiException as error:
            if error.status == 404:
                return ""
            raise

    def podgroup_phase() -> str:
        groups = custom.list_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", namespace, "podgroups")
        return ",".join(str((g.get("status") or {}).get("phase")) for g in groups["items"])

    with (
        api_client,
        gpu_nodes(kwok_cluster, [NODE_GPUS], cpu="64", memory="256Gi"),
        vcsat_daemon("scheduler", plane.kubeconfig, logs[0], "--time-limit=2"),
    ):
        with vcsat_daemon("controller", plane.kubeconfig, logs[1], f"--namespace={namespace}", "--resync=5"):
            custom.create_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], body)
            wait_until(lambda: phase_of("redo-worker-0") == "Succeeded", "the quick pod succeeded", logs=logs)
            wait_until(lambda: phase_of("redo-held-0") == "Running", "the held pod runs", logs=logs)
        core.delete_namespaced_pod("redo-worker-0", namespace, grace_period_seconds=0)
        wait_until(lambda: phase_of("redo-worker-0") == "", "the finished pod gone", logs=logs)
        core.patch_namespaced_pod("redo-held-0", namespace, {"metadata": {"annotations": {RUN_SECONDS: "1"}}})
        wait_until(lambda: podgroup_phase() == "Completed", "the PodGroup reads Completed", logs=logs)
        assert job_phase(api_client, namespace, "redo") == "Running"
        with vcsat_daemon("controller", plane.kubeconfig, logs[2], f"--namespace={namespace}", "--resync=5"):
            wait_until(lambda: job_phase(api_client, namespace, "redo") == "Completed", "the Job Completed", logs=logs)
        pods = core.list_namespaced_pod(namespace).items
    assert sorted((p.metadata.name, p.status.phase) for p in pods) == [
        ("redo-held-0", "Succeeded"),
        ("redo-worker-0", "Succeeded"),
    ]
    print("checked: the deleted finished pod was made again, placed and succeeded; the Job Completed")


# --- restarts of the control plane ---------------------------------------------------------------


def find_process(marker: str) -> int:
    """The pid of this session's child process whose command line holds ``marker``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        parent = next((line.split()[1] for line in status.splitlines() if line.startswith("PPid:")), "")
        if parent == str(os.getpid()) and any(marker.encode() in a for a in argv):
            return int(entry.name)
    raise AssertionError(f"no child process runs with {marker}")


def restart(name: str, marker: str, workdir: Path, ready: Any) -> Any:
    """Stop the process (SIGTERM, SIGKILL after a grace) and start it again with the same argv."""
    pid = find_process(marker)
    argv = [a.decode() for a in (Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")) if a]
    os.kill(pid, signal.SIGTERM)
    # kube-apiserver drains its watches first; past this grace it is killed, as a service manager would.
    deadline = time.monotonic() + 10
    while "Z" not in _state(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
        time.sleep(0.05)
    time.sleep(1.0)  # a moment down, as during a real restart
    proc = _spawn(name, argv, workdir / f"{name}-restarted.log")

    def up() -> bool:
        with contextlib.suppress(Exception):
            return bool(ready())
        return False

    wait_until(up, f"{name} back up", logs=(proc.log,))
    return proc


def etcd_client_url(pid: int) -> str:
    for arg in Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0"):
        if arg.startswith("--listen-client-urls="):
            return arg.split("=", 1)[1]
    raise AssertionError("etcd has no --listen-client-urls")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


@pytest.mark.parametrize("component", ["kube-apiserver", "etcd"])
def test_daemons_reconnect_after_a_restart_and_finish_the_work(component: str, tmp_path: Path) -> None:
    # A cluster of its own: the restarted process is this test's to stop.
    with start_kwok_cluster() as cluster:
        plane = cluster.plane
        logs = (tmp_path / "scheduler.log", tmp_path / "controller.log", cluster.kwok_log)
        namespace = f"e2e-{uuid.uuid4().hex[:8]}"
        sizes = [4, 6, 4, 8, 4, 6]
        names = [f"job-{i}" for i in range(len(sizes))]
        half = len(names) // 2
        restarted = None
        try:
            with (
                gpu_nodes(cluster, [NODE_GPUS] * 4, cpu="64", memory="256Gi") as nodes,
                plane.api_client() as api,
                vcsat_daemon("scheduler", plane.kubeconfig, logs[0], "--time-limit=2"),
                vcsat_daemon("controller", plane.kubeconfig, logs[1], f"--namespace={namespace}", "--resync=5"),
            ):
                core = client.CoreV1Api(api)
                core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
                create_jobs(api, namespace, names[:half], sizes[:half], run_s=6)

                def bound() -> int:
                    listed = core.list_namespaced_pod(namespace, _request_timeout=REQUEST_TIMEOUT_S)
                    return sum(1 for p in listed.items if p.spec.node_name)

                wait_until(lambda: bound() >= 4, "the first pods bound", logs=logs)
                if component == "kube-apiserver":
                    marker = f"--cert-dir={plane.workdir / 'apiserver-certs'}"
                    restarted = restart(component, marker, plane.workdir, lambda: api_ready(plane))
                else:
                    data_dir = f"--data-dir={plane.workdir / 'etcd-data'}"
                    url = etcd_client_url(find_process(data_dir))
                    restarted = restart(component, data_dir, plane.workdir, lambda: _etcd_healthy(url))
                    wait_until(lambda: api_ready(plane), "kube-apiserver ready again", logs=logs)
                create_jobs(api, namespace, names[half:], sizes[half:], run_s=6)
                wait_until(
                    tolerant(lambda: all(job_phase(api, namespace, n) == "Completed" for n in names)),
                    f"every Job Completed after the {component} restart",
                    logs=logs,
                )
                pods = retried(lambda: core.list_namespaced_pod(namespace).items, "list the pods")
                events = retried(lambda: core.list_namespaced_event(namespace).items, "list the events")
        finally:
            if restarted is not None:
                restarted.stop()

    per_job = Counter((p.metadata.labels or {}).get("volcano.sh/job-name", "") for p in pods)
    assert per_job == dict(zip(names, sizes, strict=True)), f"pods per Job {dict(per_job)}, expected {sizes}"
    assert all(p.spec.node_name in nodes and p.status.phase == "Succeeded" for p in pods)
    rounds = gang_rounds(events, names)
    # A round of its cycle and at most the retry of a refused binding (an API server going away).
    twice = {job: count for job, count in rounds.items() if count > 2}
    assert not twice, f"gangs bound in more than two rounds: {twice}"
    bound_pods = sum(1 for p in pods if p.spec.node_name)
    print(
        f"checked after the {component} restart: pods={len(pods)}, gangs={len(names)}, "
        f"bindings={bound_pods}, gangs with Scheduled events={len(rounds)}, Jobs Completed={len(names)}, "
        "duplicates found: 0"
    )
