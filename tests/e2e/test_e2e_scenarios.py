"""User stories end to end on kwok nodes: an MPI Job's set-up, preemption, reclaim between queues.

The real control plane, kube-controller-manager and kwok (tests/k8s/kwokcluster.py), and ``vcsat
scheduler`` and ``vcsat controller`` as processes of their own, one cluster for the module.

- **MPI with ssh and svc**: deploy/examples/mpi-job.yaml as shipped, its master running a few
  seconds; the Job reaches Completed through its own policy (the master's TaskCompleted completes
  the Job), and what the pods were given (the ssh Secret, the host ConfigMap and its variables,
  the headless Service, MPI_HOST) names exactly the pods that were created, as they resolve.
- **Preemption**: a low-priority gang fills the cluster; a high-priority Job of the same queue
  arrives. vcsat evicts low pods (the whole gang: evicting fewer would break it), binds the
  high Job only once its victims are gone, the victim Job restarts by its PodEvicted policy and
  completes after the high Job. With an elastic victim (minAvailable below its replicas) only the
  fewest pods go, the rest run on, and the Job's plain sync replaces the evicted ones.
- **Reclaim**: a queue of weight 1 holds every GPU; a queue of weight 3 then asks for all of them.
  vcsat evicts the first queue's pods until the GPUs are split by the weights, and then stops.
"""

from __future__ import annotations

import base64
import contextlib
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from controlplane import REPO_ROOT, load_manifests
from cryptography.hazmat.primitives import serialization
from e2e_support import (
    JOBS,
    PodWatch,
    bindings,
    gpu_job,
    gpu_nodes,
    job_phase,
    nodes_by_uid,
    vcsat_daemon,
    wait_until,
)
from gang_timeline import node_overcommits
from kubernetes import client
from kwokcluster import RUN_SECONDS, KwokCluster, finish_pod

MPI_EXAMPLE = REPO_ROOT / "deploy" / "examples" / "mpi-job.yaml"
JOB_LABEL = "volcano.sh/job-name"
TASK_LABEL = "volcano.sh/task-spec"
QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")


@contextlib.contextmanager
def daemons(cluster: KwokCluster, namespace: str, tmp_path: Path) -> Iterator[tuple[Path, ...]]:
    """``vcsat scheduler`` and ``vcsat controller`` (this namespace) running; their logs and kwok's."""
    plane = cluster.plane
    logs = (tmp_path / "scheduler.log", tmp_path / "controller.log", cluster.kwok_log, cluster.controller_manager_log)
    with (
        vcsat_daemon("scheduler", plane.kubeconfig, logs[0], "--time-limit=2"),
        vcsat_daemon("controller", plane.kubeconfig, logs[1], f"--namespace={namespace}", "--resync=5"),
    ):
        yield logs


def create_job(api: client.ApiClient, namespace: str, body: dict[str, Any]) -> None:
    client.CustomObjectsApi(api).create_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], body)


def read_job(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    job: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], name)
    return job


def live_pods(core: client.CoreV1Api, namespace: str, selector: str = "") -> list[Any]:
    return [
        p
        for p in core.list_namespaced_pod(namespace, label_selector=selector).items
        if not p.metadata.deletion_timestamp
    ]


# --- MPI with the ssh and svc plugins -------------------------------------------------------------


def test_mpi_job_runs_to_completed_with_hosts_and_keys_naming_its_pods(
    kwok_cluster: KwokCluster, namespace: str, tmp_path: Path
) -> None:
    (body,) = load_manifests(MPI_EXAMPLE)
    job = body["metadata"]["name"]
    master = next(t for t in body["spec"]["tasks"] if any(p["event"] == "TaskCompleted" for p in t.get("policies", [])))
    master["template"].setdefault("metadata", {}).setdefault("annotations", {})[RUN_SECONDS] = "3"
    size = sum(t["replicas"] for t in body["spec"]["tasks"])
    with (
        gpu_nodes(kwok_cluster, [0, 0]),
        kwok_cluster.plane.api_client() as api,
        PodWatch(api, namespace) as watch,
        daemons(kwok_cluster, namespace, tmp_path) as logs,
    ):
        core = client.CoreV1Api(api)
        create_job(api, namespace, body)

        def all_running() -> list[Any]:
            pods = live_pods(core, namespace, f"{JOB_LABEL}={job}")
            return pods if len(pods) == size and all(p.status.phase == "Running" for p in pods) else []

        running = [api.sanitize_for_serialization(p) for p in wait_until(all_running, "the MPI pods run", logs=logs)]
        # What the pods see, read while they run (the Job's end removes the plugins' objects).
        secret = core.read_namespaced_secret(f"{job}-ssh", namespace).data
        hosts = core.read_namespaced_config_map(f"{job}-svc", namespace).data
        service = api.sanitize_for_serialization(core.read_namespaced_service(job, namespace))
        selected = {
            p.metadata.name for p in core.list_namespaced_pod(namespace, label_selector=_selector(service)).items
        }
        wait_until(lambda: job_phase(api, namespace, job) == "Completed", "the MPI Job Completed", logs=logs)
        status = read_job(api, namespace, job).get("status") or {}
        changes = watch.snapshot()

    checked = _check_mpi_setup(job, master["name"], running, secret, hosts, service)
    # The Service selects exactly the Job's pods.
    assert selected == {p["metadata"]["name"] for p in running}, selected
    # vcsat bound the gang whole, each pod once; the master finished, and that completed the Job.
    bound = bindings(changes)
    assert len(bound) == size and all(len(nodes) == 1 for nodes in nodes_by_uid(changes).values()), bound
    first_finish = next((i for i, c in enumerate(changes) if c.phase in ("Succeeded", "Failed")), len(changes))
    assert all(changes.index(b) < first_finish for b in bound), "a pod was bound after another finished"
    masters = {p["metadata"]["uid"] for p in running if _task(p) == master["name"]}
    assert any(c.uid in masters and c.phase == "Succeeded" for c in changes), "the master did not succeed"
    assert status.get("state", {}).get("phase") == "Completed", status
    print(f"checked: pods={len(running)}, bindings={len(bound)}, {checked}, duplicates found: 0")


def _task(pod: dict[str, Any]) -> str:
    metadata = pod["metadata"]
    return str((metadata.get("labels") or {}).get(TASK_LABEL) or (metadata.get("annotations") or {})[TASK_LABEL])


def _selector(service: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(service["spec"]["selector"].items()))


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


def _check_mpi_setup(
    job: str,
    master_task: str,
    pods: list[dict[str, Any]],
    secret: dict[str, str],
    hosts: dict[str, str],
    service: dict[str, Any],
) -> str:
    """What the pods were given names exactly the pods there are; returns what was counted."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for pod in sorted(pods, key=lambda p: int(p["metadata"]["labels"]["volcano.sh/task-index"])):
        by_task.setdefault(_task(pod), []).append(pod)
    # Each pod's DNS name under the headless Service: <hostname>.<subdomain>, the subdomain the Service.
    assert service["spec"]["clusterIP"] == "None", service["spec"]
    dns = {p["metadata"]["name"]: f"{p['spec']['hostname']}.{p['spec']['subdomain']}" for p in pods}
    for pod in pods:
        assert pod["spec"]["subdomain"] == service["metadata"]["name"], pod["spec"]
        labels = pod["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in service["spec"]["selector"].items()), (labels, service["spec"])

    # The svc ConfigMap: per task its host file, host list and count, in task-index order.
    for task, members in by_task.items():
        names = [dns[p["metadata"]["name"]] for p in members]
        key = task.replace("-", "_")
        assert hosts[f"{key}.host"].splitlines() == names, (task, hosts)
        assert hosts[f"VC_{task.upper().replace('-', '_')}_HOSTS"] == ",".join(names), hosts
        assert hosts[f"VC_{task.upper().replace('-', '_')}_NUM"] == str(len(names)), hosts
    assert len([k for k in hosts if k.endswith(".host")]) == len(by_task), sorted(hosts)

    # The ssh Secret: a key pair that belongs together, authorized on every pod, and a config
    # naming every pod by its hostname and DNS name.
    files = {k: base64.b64decode(v).decode() for k, v in secret.items()}
    private = serialization.load_ssh_private_key(files["id_ed25519"].encode(), password=None)
    public = private.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    assert files["id_ed25519.pub"].split() == public.decode().split() == files["authorized_keys"].split()
    config_hosts = dict(_ssh_hosts(files["config"]))
    assert config_hosts == {p["spec"]["hostname"]: dns[p["metadata"]["name"]] for p in pods}, config_hosts

    # Every container sees them: the Secret at /root/.ssh, the ConfigMap at /etc/volcano, the
    # variables from the ConfigMap's keys, and the master MPI_HOST = the workers' names.
    (worker_task,) = [t for t in by_task if t != master_task]
    worker_names = ",".join(dns[p["metadata"]["name"]] for p in by_task[worker_task])
    for pod in pods:
        mpi_host = _env(pod["spec"]["containers"][0]).get("MPI_HOST")
        assert mpi_host == (worker_names if _task(pod) == master_task else None), (pod["metadata"]["name"], mpi_host)
    variables = 0
    for pod in pods:
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        for container in pod["spec"]["containers"]:
            mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts") or []}
            assert mounts[f"{job}-ssh"] == "/root/.ssh" and mounts[f"{job}-svc"] == "/etc/volcano", mounts
            assert volumes[f"{job}-ssh"]["secret"]["secretName"] == f"{job}-ssh"
            assert volumes[f"{job}-svc"]["configMap"]["name"] == f"{job}-svc"
            for name, source in _env(container).items():
                if isinstance(source, dict) and "configMapKeyRef" in source:
                    ref = source["configMapKeyRef"]
                    assert ref["name"] == f"{job}-svc" and ref["key"] == name and name in hosts, (name, ref)
                    variables += 1
    return f"host files={len(by_task)}, ssh hosts={len(config_hosts)}, variables={variables}"


def _ssh_hosts(config: str) -> Iterator[tuple[str, str]]:
    host = ""
    for line in config.splitlines():
        words = line.split()
        if words[:1] == ["Host"]:
            host = words[1]
        elif words[:1] == ["HostName"]:
            yield host, words[1]


# --- preemption ---------------------------------------------------------------------------------


@contextlib.contextmanager
def priority_classes(api: client.ApiClient, values: dict[str, int]) -> Iterator[dict[str, str]]:
    """PriorityClasses of these values, named uniquely (they are cluster-wide); deleted after."""
    scheduling = client.SchedulingV1Api(api)
    tag = uuid.uuid4().hex[:6]
    names = {key: f"e2e-{key}-{tag}" for key in values}
    for key, value in values.items():
        scheduling.create_priority_class({"metadata": {"name": names[key]}, "value": value})
    try:
        yield names
    finally:
        for name in names.values():
            scheduling.delete_priority_class(name)


def _events(core: client.CoreV1Api, namespace: str, reason: str) -> list[str]:
    return [e.involved_object.name for e in core.list_namespaced_event(namespace).items if e.reason == reason]


def test_a_high_priority_job_preempts_and_the_victim_restarts_and_completes(
    kwok_cluster: KwokCluster, namespace: str, tmp_path: Path
) -> None:
    # Two 4-GPU nodes. "low" (4 pods x 2 GPUs, one gang) fills them; "high" (2 x 2 GPUs) arrives.
    # Evicting part of low would break its gang, so all of it goes; low's PodEvicted policy
    # restarts it, and it can run again only once high has finished.
    evicted_restarts = [{"event": "PodEvicted", "action": "RestartJob"}]
    with (
        gpu_nodes(kwok_cluster, [4, 4]) as nodes,
        kwok_cluster.plane.api_client() as api,
        priority_classes(api, {"low": 100, "high": 10000}) as classes,
        PodWatch(api, namespace) as watch,
        daemons(kwok_cluster, namespace, tmp_path) as logs,
    ):
        core = client.CoreV1Api(api)
        # low runs until the test ends it; high runs 2 s.
        low = gpu_job("low", 4, gpus=2, run_seconds=600, priorityClassName=classes["low"], policies=evicted_restarts)
        create_job(api, namespace, low)
        first = wait_until(lambda: _running(core, namespace, "low", 4), "low runs on the whole cluster", logs=logs)
        create_job(api, namespace, gpu_job("high", 2, gpus=2, run_seconds=2, priorityClassName=classes["high"]))

        wait_until(lambda: job_phase(api, namespace, "high") == "Completed", "high Completed", logs=logs)
        first_uids = {p.metadata.uid for p in first}
        second = wait_until(
            lambda: [p for p in _running(core, namespace, "low", 4) if p.metadata.uid not in first_uids],
            "low runs again",
            logs=logs,
        )
        for pod in second:
            finish_pod(api, namespace, pod.metadata.name)
        wait_until(lambda: job_phase(api, namespace, "low") == "Completed", "low Completed", logs=logs)
        preempted = _events(core, namespace, "Preempted")
        low_status = read_job(api, namespace, "low").get("status") or {}
        changes = watch.snapshot()

    # vcsat evicted low's first run (its whole gang) and nothing else, for preemption. Once the
    # first eviction lands, low's RestartJob policy may delete the rest of the gang before the
    # scheduler's own evictions reach them; an eviction of a pod already gone writes no event, so
    # only some of the first run may carry a Preempted event, but none of it may finish.
    assert preempted and set(preempted) <= {p.metadata.name for p in first}, preempted
    for uid in first_uids:
        assert "Succeeded" not in [c.phase for c in changes if c.uid == uid], "a preempted pod finished"
    # high was bound only into room its victims had left: no node ever held more GPUs than it has.
    assert not node_overcommits(changes, dict.fromkeys(nodes, 4))
    bound = bindings(changes)
    high = [b for b in bound if b.job == "high"]
    assert len(high) == 2, [(b.name, b.node) for b in bound]
    # low restarted by its policy, without spending a retry, and ran again after high finished.
    assert low_status.get("retryCount", 0) == 0 and low_status.get("version", 0) >= 1, low_status
    second_uids = {p.metadata.uid for p in second}
    high_done = max(i for i, c in enumerate(changes) if c.job == "high" and c.phase == "Succeeded")
    second_bound = [i for i, c in enumerate(changes) if c.uid in second_uids and c.node]
    assert min(second_bound) > high_done, "low's second run was bound before high finished"
    assert all(len(n) == 1 for n in nodes_by_uid(changes).values())
    print(
        f"checked: pods={len(nodes_by_uid(changes))}, bindings={len(bound)}, preempted={len(preempted)}, "
        f"restarts=1, duplicates found: 0"
    )


def test_preemption_takes_the_fewest_pods_of_an_elastic_gang_and_its_job_replaces_them(
    kwok_cluster: KwokCluster, namespace: str, tmp_path: Path
) -> None:
    # The same cluster, but "low" needs only 2 of its 4 pods (minAvailable 2) and has no policy:
    # high's 4 GPUs are freed by evicting two low pods, not all four, and low keeps running on
    # the other two; the controller's plain sync recreates the two, which wait for high to end.
    with (
        gpu_nodes(kwok_cluster, [4, 4]) as nodes,
        kwok_cluster.plane.api_client() as api,
        priority_classes(api, {"low": 100, "high": 10000}) as classes,
        PodWatch(api, namespace) as watch,
        daemons(kwok_cluster, namespace, tmp_path) as logs,
    ):
        core = client.CoreV1Api(api)
        low = gpu_job("low", 4, gpus=2, run_seconds=600, priorityClassName=classes["low"], minAvailable=2)
        create_job(api, namespace, low)
        first = wait_until(lambda: _running(core, namespace, "low", 4), "low runs on the whole cluster", logs=logs)
        create_job(api, namespace, gpu_job("high", 2, gpus=2, run_seconds=2, priorityClassName=classes["high"]))
        wait_until(lambda: job_phase(api, namespace, "high") == "Completed", "high Completed", logs=logs)
        final = wait_until(lambda: _running(core, namespace, "low", 4), "low runs four pods again", logs=logs)
        for pod in final:
            finish_pod(api, namespace, pod.metadata.name)
        wait_until(lambda: job_phase(api, namespace, "low") == "Completed", "low Completed", logs=logs)
        preempted = _events(core, namespace, "Preempted")
        low_status = read_job(api, namespace, "low").get("status") or {}
        changes = watch.snapshot()

    first_names = {p.metadata.name: p.metadata.uid for p in first}
    kept = {p.metadata.uid for p in final} & set(first_names.values())
    # Two victims, both low's, and the two others ran on to the end: the gang never went below 2.
    assert len(preempted) == len(set(preempted)) == 2 and set(preempted) <= set(first_names), preempted
    assert len(kept) == 2, f"kept {len(kept)} of low's first pods"
    assert not node_overcommits(changes, dict.fromkeys(nodes, 4))
    # No restart: the Job's version is unchanged; the replacements were bound after high finished.
    assert low_status.get("version", 0) == 0 and low_status.get("retryCount", 0) == 0, low_status
    replacements = {p.metadata.uid for p in final} - kept
    high_done = max(i for i, c in enumerate(changes) if c.job == "high" and c.phase == "Succeeded")
    assert min(i for i, c in enumerate(changes) if c.uid in replacements and c.node) > high_done
    assert all(len(n) == 1 for n in nodes_by_uid(changes).values())
    print(
        f"checked: pods={len(nodes_by_uid(changes))}, bindings={len(bindings(changes))}, "
        f"preempted={len(preempted)}, kept={len(kept)}, duplicates found: 0"
    )


def _running(core: client.CoreV1Api, namespace: str, job: str, size: int) -> list[Any]:
    pods = live_pods(core, namespace, f"{JOB_LABEL}={job}")
    return pods if len(pods) == size and all(p.status.phase == "Running" for p in pods) else []


# --- reclaim ------------------------------------------------------------------------------------

RECLAIM_GPUS = 8
WEIGHTS = {"light": 1, "heavy": 3}
STABLE_S = 4.0
"""An allocation unchanged this long (four scheduler periods) has converged."""
TOLERANCE_GPUS = 0
"""How far from its deserved share a queue may end. Zero: every pod asks one GPU and nothing else
binds, so shares are whole pods, GPUs are every queue's dominant resource (1 of 8 GPUs against 1
of 32 CPUs), and the split 8 x 1/4, 8 x 3/4 = 2, 6 is whole: any difference is reclaim stopping
short or taking too much."""


@contextlib.contextmanager
def weighted_queues(api: client.ApiClient, weights: dict[str, int]) -> Iterator[dict[str, str]]:
    custom = client.CustomObjectsApi(api)
    tag = uuid.uuid4().hex[:6]
    names = {key: f"e2e-{key}-{tag}" for key in weights}
    for key, weight in weights.items():
        body = {
            "apiVersion": "/".join(QUEUES[:2]),
            "kind": "Queue",
            "metadata": {"name": names[key]},
            "spec": {"weight": weight, "reclaimable": True},
        }
        custom.create_cluster_custom_object(*QUEUES, body)
    try:
        yield names
    finally:
        for name in names.values():
            custom.delete_cluster_custom_object(*QUEUES, name)


def test_reclaim_splits_the_gpus_between_weighted_queues_by_their_weights(
    kwok_cluster: KwokCluster, namespace: str, tmp_path: Path
) -> None:
    total = sum(WEIGHTS.values())
    deserved = {key: RECLAIM_GPUS * weight // total for key, weight in WEIGHTS.items()}
    assert sum(deserved.values()) == RECLAIM_GPUS  # whole shares (see TOLERANCE_GPUS)
    evicted_restarts = [{"event": "PodEvicted", "action": "RestartJob"}]
    with (
        gpu_nodes(kwok_cluster, [4, 4]),
        kwok_cluster.plane.api_client() as api,
        weighted_queues(api, WEIGHTS) as queues,
        daemons(kwok_cluster, namespace, tmp_path) as logs,
    ):
        core = client.CoreV1Api(api)

        def held() -> Counter[str]:
            counts = Counter[str]()
            for pod in live_pods(core, namespace):
                if pod.spec.node_name and pod.status.phase in ("Pending", "Running"):
                    counts[pod.metadata.labels[JOB_LABEL].split("-")[0]] += 1
            return counts

        def submit(key: str) -> None:
            for i in range(RECLAIM_GPUS):
                body = gpu_job(f"{key}-{i}", 1, gpus=1, run_seconds=600, queue=queues[key], policies=evicted_restarts)
                create_job(api, namespace, body)

        # "light" takes every GPU while it is alone; then "heavy" asks for all of them too.
        submit("light")
        wait_until(lambda: held()["light"] == RECLAIM_GPUS, "light holds every GPU", logs=logs)
        start = time.monotonic()
        submit("heavy")

        history: list[tuple[float, dict[str, int]]] = []

        def converged() -> bool:
            now = held()
            if not history or history[-1][1] != dict(now):
                history.append((time.monotonic(), dict(now)))
            terminating = any(p.metadata.deletion_timestamp for p in core.list_namespaced_pod(namespace).items)
            return not terminating and now["heavy"] > 0 and time.monotonic() - history[-1][0] >= STABLE_S

        wait_until(converged, "the allocation settles", logs=logs)
        reclaimed = _events(core, namespace, "Reclaimed")
        final = history[-1][1]

    print(f"\ndeserved {deserved}; allocation over time (s after heavy arrived):")
    for at, counts in history:
        print(f"  {at - start:5.1f}  {counts}")
    print(f"reclaimed pods: {len(reclaimed)}")
    for key in WEIGHTS:
        assert abs(final.get(key, 0) - deserved[key]) <= TOLERANCE_GPUS, (key, final, deserved)
    assert sum(final.values()) == RECLAIM_GPUS, f"GPUs left idle: {final}"
    # Only light's pods were reclaimed, each at most once, and no more than its excess.
    assert all(name.startswith("light-") for name in reclaimed), reclaimed
    assert len(reclaimed) == len(set(reclaimed)) == RECLAIM_GPUS - deserved["light"], reclaimed
    print(f"checked: queues={len(WEIGHTS)}, final={final}, reclaimed={len(reclaimed)}, duplicates found: 0")
