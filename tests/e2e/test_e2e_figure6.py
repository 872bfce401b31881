"""The seed's Figure 6, live: distributed training Jobs that together ask more GPUs than the cluster has.

Four Jobs, two TensorFlow (one ps, three workers) and two MPI (one master, three workers), each
worker asking 2 GPUs: 6 GPUs a Job, 24 in all, on three kwok nodes of 4, 4 and 2 GPUs (10). A Job
computes only once all its pods run (:class:`e2e_support.GangStart` plays that part of the
workload), then runs a few seconds and completes.

- **vcsat** (``vcsat scheduler`` + ``vcsat controller``) places each Job whole or not at all: the
  Jobs run in turn and all complete; no Job ever holds GPUs while it waits for room.
- **kube-scheduler** (the genuine one of the same Kubernetes module, default profile): the same
  Jobs, with ``schedulerName: default-scheduler``, created by the same ``vcsat controller`` told to
  reconcile that scheduler's Jobs and not to wait for PodGroup admission (nobody admits them): the
  very pods vcsat placed, but no gangs. Placing pod by pod, it fills all 10 GPUs with five workers,
  and five workers are never one Job's three plus another's three: at least one Job holds GPUs
  while it waits, and if the workers interleave enough, no Job is ever whole and all of them stall
  for good (the deadlock of the figure; likely when the controller creates the Jobs' pods together,
  see :data:`CONTROLLER_WORKERS`). The round ends when the Jobs complete or nothing has moved
  for :data:`QUIET_S`.

Measured for both: the makespan and the GPU-seconds held by partial Jobs (tests/e2e/gang_timeline).
The numbers are printed; benchmarks/RESULTS.md records a run.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlplane import start_kube_scheduler
from e2e_support import (
    JOBS,
    WAIT_S,
    GangStart,
    PodChange,
    PodWatch,
    bindings,
    gpu_nodes,
    job_phase,
    nodes_by_uid,
    vcsat_daemon,
)
from gang_timeline import JobTimeline, node_overcommits, timelines
from kubernetes import client
from kwokcluster import KwokCluster

NODE_GPUS = [4, 4, 2]
WORKERS = 3
WORKER_GPUS = 2
RUN_S = 2.0
QUIET_S = 3 * RUN_S + 2
"""Nothing bound or finished for this long, while a Job runs at most RUN_S once whole: deadlocked."""
JOB_NAMES = (("tf-a", "tensorflow"), ("mpi-a", "mpi"), ("tf-b", "tensorflow"), ("mpi-b", "mpi"))
CONTROLLER_WORKERS = int(os.environ.get("VCSAT_FIG6_CONTROLLER_WORKERS", len(JOB_NAMES)))
"""Jobs the controller reconciles at once, in both rounds: with one per Job, the Jobs' pods are
created together, as when users submit at the same moment; with fewer, more nearly Job by Job,
which spares kube-scheduler the worst interleavings (set the variable to measure that)."""


def distributed_job(name: str, framework: str, scheduler: str) -> dict[str, Any]:
    """A TensorFlow (ps + workers) or MPI (master + workers) Volcano Job, all its pods one gang."""
    lead = "ps" if framework == "tensorflow" else "master"
    plugins = {"tensorflow": []} if framework == "tensorflow" else {"mpi": [f"--master={lead}", "--worker=worker"]}

    def template(gpus: int) -> dict[str, Any]:
        requests = {"cpu": "1", "memory": "1Gi"}
        limits = {}
        if gpus:
            requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = str(gpus)
        container = {"name": "main", "image": f"registry.invalid/{framework}:1", "resources": {"requests": requests}}
        if limits:
            container["resources"]["limits"] = limits
        return {"spec": {"restartPolicy": "Never", "containers": [container]}}

    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": scheduler,
            "queue": "default",
            "minAvailable": 1 + WORKERS,
            "plugins": plugins,
            "tasks": [
                {"name": lead, "replicas": 1, "template": template(0)},
                {"name": "worker", "replicas": WORKERS, "template": template(WORKER_GPUS)},
            ],
        },
    }


@dataclass(frozen=True)
class Round:
    """One scheduler's run of the Jobs."""

    scheduler: str
    makespan_s: float | None
    """First Job created to last Job Completed; None when not all completed."""
    observed_s: float
    completed: int
    jobs: dict[str, JobTimeline]
    changes: list[PodChange]

    @property
    def partial_gpu_seconds(self) -> float:
        return sum(t.partial_gpu_seconds for t in self.jobs.values())

    @property
    def stalled(self) -> list[str]:
        return [job for job, t in self.jobs.items() if t.stalled and t.max_partial_gpus > 0]

    def line(self) -> str:
        makespan = f"{self.makespan_s:.1f} s" if self.makespan_s is not None else "none (did not finish)"
        return (
            f"{self.scheduler}: completed {self.completed}/{len(self.jobs)} in {self.observed_s:.1f} s observed, "
            f"makespan {makespan}, GPU-seconds held by partial Jobs {self.partial_gpu_seconds:.1f}, "
            f"stalled Jobs {self.stalled or 'none'}, most GPUs held partially at once "
            f"{max(t.max_partial_gpus for t in self.jobs.values())}"
        )


def _run_round(cluster: KwokCluster, workdir: Path, scheduler: str) -> Round:
    plane = cluster.plane
    workdir.mkdir()
    namespace = f"fig6-{uuid.uuid4().hex[:6]}"
    sizes = {name: 1 + WORKERS for name, _ in JOB_NAMES}
    controller_log, scheduler_log = workdir / "controller.log", workdir / "scheduler.log"
    controller_args = [f"--namespace={namespace}", "--resync=5", f"--workers={CONTROLLER_WORKERS}"]
    if scheduler != "vcsat":
        controller_args += [f"--scheduler-name={scheduler}", "--no-wait-for-admission"]
    with contextlib.ExitStack() as stack:
        api = stack.enter_context(plane.api_client())
        core = client.CoreV1Api(api)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
        stack.callback(core.delete_namespace, namespace)
        pods = stack.enter_context(PodWatch(api, namespace))
        if scheduler == "vcsat":
            stack.enter_context(
                vcsat_daemon("scheduler", plane.kubeconfig, scheduler_log, "--time-limit=2", ready=True)
            )
        else:
            scheduler_log = stack.enter_context(start_kube_scheduler(plane)).log
        stack.enter_context(vcsat_daemon("controller", plane.kubeconfig, controller_log, *controller_args, ready=True))
        stack.enter_context(GangStart(api, namespace, sizes, RUN_S))
        custom = client.CustomObjectsApi(api)
        start = time.monotonic()
        for name, framework in JOB_NAMES:
            body = distributed_job(name, framework, scheduler)
            custom.create_namespaced_custom_object(*JOBS[:2], namespace, JOBS[2], body)

        done: dict[str, float] = {}
        while len(done) < len(sizes):
            now = time.monotonic()
            for name in sizes:
                if name not in done and job_phase(api, namespace, name) == "Completed":
                    done[name] = now
            changes = pods.snapshot()
            moved = max((c.at for c in changes if c.node), default=start)
            if scheduler != "vcsat" and now - max(moved, start) > QUIET_S:
                break
            if now - start > WAIT_S:
                tails = "\n".join(log.read_text(errors="replace")[-3000:] for log in (scheduler_log, controller_log))
                raise AssertionError(f"{scheduler}: only {sorted(done)} Completed after {WAIT_S} s\n{tails}")
            time.sleep(0.25)
        end = time.monotonic()
        changes = pods.snapshot()
    makespan = max(done.values()) - start if len(done) == len(sizes) else None
    return Round(scheduler, makespan, end - start, len(done), timelines(changes, sizes, end), changes)


def _check_no_double_binding(run: Round, capacity: dict[str, int]) -> int:
    for uid, seen in nodes_by_uid(run.changes).items():
        assert len(seen) == 1, f"{run.scheduler}: pod {uid} bound to {sorted(seen)}"
    overcommits = node_overcommits(run.changes, capacity)
    assert not overcommits, f"{run.scheduler}: {overcommits[:3]}"
    return len(bindings(run.changes))


def test_gangs_complete_where_pod_at_a_time_placement_stalls(kwok_cluster: KwokCluster, tmp_path: Path) -> None:
    with gpu_nodes(kwok_cluster, NODE_GPUS) as nodes:
        capacity = dict(zip(nodes, NODE_GPUS, strict=True))
        gangs = _run_round(kwok_cluster, tmp_path / "vcsat", "vcsat")
        pods = _run_round(kwok_cluster, tmp_path / "kube-scheduler", "default-scheduler")

    print(f"\ncluster: {len(nodes)} nodes, {sum(NODE_GPUS)} GPUs; Jobs: {len(JOB_NAMES)} x {WORKERS} workers")
    print(
        f"  x {WORKER_GPUS} GPUs (+ 1 CPU pod) = {len(JOB_NAMES) * WORKERS * WORKER_GPUS} GPUs asked; run {RUN_S:g} s; "
        f"controller workers {CONTROLLER_WORKERS}"
    )
    print(gangs.line())
    print(pods.line())

    # vcsat: every Job completed, each bound whole: none held a GPU across another's completion.
    assert gangs.completed == len(JOB_NAMES), gangs.line()
    assert not gangs.stalled, gangs.line()
    assert all(t.bound == t.size for t in gangs.jobs.values()), gangs.jobs
    vcsat_bindings = _check_no_double_binding(gangs, capacity)

    # kube-scheduler: at least one Job held GPUs while waiting for room (within the window).
    assert pods.stalled, pods.line()
    assert pods.partial_gpu_seconds > 0, pods.line()
    kube_bindings = _check_no_double_binding(pods, capacity)
    print(
        f"checked: bindings vcsat={vcsat_bindings} kube-scheduler={kube_bindings}, "
        f"gangs={len(JOB_NAMES)} x 2, stalled gangs vcsat=0 kube-scheduler={len(pods.stalled)}, duplicates found: 0"
    )
