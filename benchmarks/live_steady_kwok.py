"""The live scheduler's steady cycle against the real API server: a KWOK cluster from an instance file.

benchmarks/live_cycle.py measures the steady cycle in process, with an API stand-in; this measures
it as deployed: the ``vcsat scheduler`` process, its informers watching a real kube-apiserver, its
bindings and status writes answered by it. The cluster (tests/k8s/kwokcluster.py: etcd,
kube-apiserver, kube-controller-manager, kwok) is loaded from a generated instance file: its
PriorityClasses, Queues, HyperNodes, Nodes (made kwok's), and every PodGroup and bound pod that is
not pending (kwok runs the pods). Its pending jobs (PodGroup and pods) are held back and arrive in
batches of about ``--batch`` pods, as in live_cycle.py: the next once the scheduler has run a cycle
that started after the last batch was created and then no cycle for ``--quiet`` seconds (at least
``--interval`` seconds apart).

One scheduler process per ``--run EARLY[:TREE]``, one after the other on the same cluster, each
given its own ``--batches`` batches after its cold cycle (every object converted) and the quiet that
follows it. EARLY is its ``--early-bind-min-pending`` (0 makes every cycle a full one, as
live_cycle.py's; 1 is the default: sure placements bound before the full cycle); TREE, a source
tree put first on its ``PYTHONPATH`` (a worktree of another commit), so that a change and its
baseline are measured alternately on one cluster under the same load.

    python benchmarks/live_steady_kwok.py 5k.json --batch 300 --batches 5 \\
        --interval 10 --time-limit 2 --run 0:../before --run 0 --run 1 --out rows.jsonl

Each cycle is read from the scheduler's own log (``--log-level debug``: every cycle, busy or not):
wall seconds (snapshot, decision, until its bindings were queued and until all was applied) and the
process's CPU seconds over the same span (the ``cpu_seconds`` fields), and where a tree logs them
its ``phases`` (adapters/live/cycle_probe.py) and ``woke_seconds``. One JSON line per cycle, then
per batch the scheduler's and the cluster's CPU seconds from its creation to the next (/proc) and
the pods' ``latency``: from each pod's creation (its POST answered) to this harness's watch of bound
pods seeing it bound (:class:`BindWatch`), p50, p99, the largest, and how many were not seen bound
before the next batch: a cycle made shorter by making pods wait longer shows there.

``--run EARLY[:TREE]:pin`` pins that process to one CPU and the control plane (kube-apiserver,
etcd, kwok, kube-controller-manager, every thread of each) and this harness (it creates the batches,
as the cluster's users would) to the others while it runs (``sched_setaffinity``), as a deployment
that gives the scheduler a core of its own; without ``:pin`` every process may run on every CPU.

ownerReferences are dropped from the loaded objects (their owners do not exist here, and the
garbage collector would delete them); ``spec.priority`` too (the Priority admission plugin sets it
from the class, and refuses a pod that says it).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click

_HERE = Path(__file__).resolve().parent
_K8S = _HERE.parent / "tests" / "k8s"
for _folder in (_HERE, _K8S):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from controlplane import free_port  # noqa: E402
from kwok_throughput import VCSAT, CpuMeter, cluster_pids  # noqa: E402
from kwokcluster import KWOK_NODE_ANNOTATION, KWOK_NODE_VALUE, KwokCluster, start_kwok_cluster  # noqa: E402
from live_cycle import _batches  # noqa: E402

from vcsat.adapters.kube.client import (  # noqa: E402
    HYPERNODES,
    NAMESPACES,
    NODES,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    QUEUES,
    ApiError,
    Kube,
    Resource,
)

WORKERS = 32
RESOURCES = {
    "PriorityClass": PRIORITY_CLASSES,
    "Queue": QUEUES,
    "HyperNode": HYPERNODES,
    "Node": NODES,
    "PodGroup": PODGROUPS,
    "Pod": PODS,
}
"""What is loaded, in this order (what an object names exists before it)."""


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as a client would create it: no server-set metadata, no owners that do not exist."""
    metadata = {
        key: value
        for key, value in obj["metadata"].items()
        if key not in ("uid", "resourceVersion", "creationTimestamp", "ownerReferences", "generation")
    }
    out = {**obj, "metadata": metadata}
    if obj["kind"] == "Node":
        annotations = {**(metadata.get("annotations") or {}), KWOK_NODE_ANNOTATION: KWOK_NODE_VALUE}
        out["metadata"] = {**metadata, "annotations": annotations}
    elif obj["kind"] == "Pod":
        out["spec"] = {key: value for key, value in obj["spec"].items() if key != "priority"}
        out.pop("status", None)
    return out


def _post(kube: Kube, obj: dict[str, Any]) -> None:
    resource: Resource = RESOURCES[obj["kind"]]
    namespace = obj["metadata"].get("namespace", "default") if resource.namespaced else None
    try:
        kube.post(resource.path(namespace), _clean(obj))
    except ApiError as error:
        if error.status != 409:  # already there (the default Queue, the system PriorityClasses)
            raise


def create(kube: Kube, objects: list[dict[str, Any]]) -> None:
    """Create the objects, kind by kind in :data:`RESOURCES` order, the namespaces first."""
    namespaces = sorted({o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")})
    for name in namespaces:
        with contextlib.suppress(ApiError):
            kube.post(NAMESPACES.path(), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    with ThreadPoolExecutor(WORKERS) as pool:
        for kind in RESOURCES:
            list(pool.map(lambda obj: _post(kube, obj), [o for o in objects if o["kind"] == kind]))


def _pod_key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata'].get('namespace', 'default')}/{obj['metadata']['name']}"


def arrive(kube: Kube, batch: list[dict[str, Any]]) -> dict[str, float]:
    """One batch: its PodGroups, then their pods; when (``time.time()``) each pod's creation was
    answered, by ``namespace/name`` (from then on a user sees it waiting)."""
    created: dict[str, float] = {}

    def post_pod(obj: dict[str, Any]) -> None:
        _post(kube, obj)
        created[_pod_key(obj)] = time.time()

    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(lambda obj: _post(kube, obj), [o for o in batch if o["kind"] == "PodGroup"]))
        list(pool.map(post_pod, [o for o in batch if o["kind"] == "Pod"]))
    return created


class BindWatch:
    """When (``time.time()``) this harness first saw each pod bound: a watch of the pods that have a
    node, in a thread of its own, from the moment it starts. What a user of the cluster sees."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.bound: dict[str, float] = {}
        self._stop = threading.Event()
        self._watch: Any = None
        # The current resourceVersion without listing every pod: a list that matches none.
        _, self._version = kube.list(PODS, fieldSelector="metadata.name=vcsat-none")
        self._thread = threading.Thread(target=self._run, name="bind-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._watch = self.kube.watch(
                    PODS, resource_version=self._version, timeout_s=600, fieldSelector="spec.nodeName!="
                )
                for event in self._watch:
                    obj = event.get("object") or {}
                    metadata = obj.get("metadata") or {}
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        key = f"{metadata.get('namespace', 'default')}/{metadata.get('name')}"
                        self.bound.setdefault(key, time.time())
                    self._version = metadata.get("resourceVersion") or self._version
            except ApiError as error:
                if self._stop.is_set():
                    return
                print(f"# bind watch: {error}; watching again", file=sys.stderr, flush=True)
                if error.status == 410:
                    _, self._version = self.kube.list(PODS, fieldSelector="metadata.name=vcsat-none")
                time.sleep(0.2)

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.close()


def latency(created: dict[str, float], bound: dict[str, float]) -> dict[str, Any]:
    """Seconds from each pod's creation to its binding seen: p50, p99 and the largest, and how many
    were not seen bound (the nearest-rank percentiles of the pods seen bound)."""
    seconds = sorted(bound[key] - at for key, at in created.items() if key in bound)
    if not seconds:
        return {"pods": len(created), "unbound": len(created)}

    def rank(q: float) -> float:
        return round(seconds[min(len(seconds) - 1, max(0, math.ceil(len(seconds) * q) - 1))], 3)

    return {
        "pods": len(created),
        "unbound": len(created) - len(seconds),
        "p50": rank(0.50),
        "p99": rank(0.99),
        "max": round(seconds[-1], 3),
    }


def wait_running(kube: Kube, nodes: int, pods: int, timeout_s: float) -> None:
    """Until kwok reports the nodes Ready and the bound pods Running."""
    deadline = time.monotonic() + timeout_s
    while True:
        listed, _ = kube.list(NODES)
        ready = sum(
            1
            for node in listed
            if any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions") or [])
        )
        running = len(kube.list(PODS, fieldSelector="status.phase=Running")[0])
        print(f"# {time.strftime('%H:%M:%S')} nodes Ready {ready}/{nodes}, pods Running {running}/{pods}", flush=True)
        if ready >= nodes and running >= pods:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"kwok made {ready} of {nodes} nodes Ready, {running} of {pods} pods Running")
        time.sleep(15.0)


class LogTail:
    """The cycle lines of a scheduler's JSON log that appeared since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def cycles(self) -> list[dict[str, Any]]:
        with self.path.open("rb") as log:
            log.seek(self.offset)
            data = log.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        out = []
        for line in data[:end].splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if entry.get("msg") == "cycle":
                    out.append(entry)
        return out


def _set_cpus(pid: int, cpus: set[int]) -> None:
    """Every thread of ``pid`` may run only on ``cpus`` (threads it starts later inherit it)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that just ended
            os.sched_setaffinity(int(task.name), cpus)


@contextlib.contextmanager
def pinned(plane_pids: dict[str, int], pin: bool) -> Iterator[set[int] | None]:
    """While it lasts, the control plane and this harness on every CPU but the last, and the CPUs
    the scheduler gets (the last one); None and nothing changed unless ``pin``."""
    everything = os.sched_getaffinity(0)
    if not pin:
        yield None
        return
    if len(everything) < 2:
        raise click.ClickException("pinning needs two CPUs or more")
    ours = {max(everything)}
    rest = everything - ours
    for pid in [*plane_pids.values(), os.getpid()]:
        _set_cpus(pid, rest)
    try:
        yield ours
    finally:
        for pid in [*plane_pids.values(), os.getpid()]:
            _set_cpus(pid, everything)


@contextlib.contextmanager
def scheduler(
    cluster: KwokCluster,
    log: Path,
    time_limit_s: float,
    early_bind: int,
    tree: str | None,
    cpus: set[int] | None = None,
    dump_dir: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    argv = [
        *VCSAT,
        "scheduler",
        f"--kubeconfig={cluster.plane.kubeconfig}",
        "--scheduler-name=vcsat",
        "--no-leader-elect",
        f"--metrics-port={free_port()}",
        "--log-format=json",
        "--log-level=debug",
        f"--time-limit={time_limit_s}",
        f"--early-bind-min-pending={early_bind}",
        *([f"--dump-dir={dump_dir}"] if dump_dir is not None else []),
    ]
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([tree, *filter(None, [env.get("PYTHONPATH")])])
    with log.open("wb") as out:
        # ``python -c`` puts its working directory first on sys.path, before PYTHONPATH: run from
        # a source tree, that tree's vcsat would be imported whatever TREE says. So it runs in TREE.
        # Pinned before it starts, so every thread it makes inherits the CPUs.
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tree,
            preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus),
        )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def cycle_started(cycle: dict[str, Any]) -> float:
    """When (``time.time()``) a logged cycle started: its line is written once it is applied."""
    ended = datetime.datetime.fromisoformat(cycle["ts"].replace("Z", "+00:00")).timestamp()
    return ended - float(cycle.get("apply_seconds") or cycle.get("seconds") or 0.0)


def settle(
    tail: LogTail, process: subprocess.Popen[bytes], quiet_s: float, timeout_s: float, since: float = 0.0
) -> tuple[list[dict[str, Any]], bool]:
    """Wait for a cycle that started after ``since`` (``time.time()``), then until no cycle has ended
    for ``quiet_s``: the cycles seen, and whether it got quiet within ``timeout_s``."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the scheduler exited ({process.returncode}); see {tail.path}")
        new = tail.cycles()
        if new:
            seen += new
            if last is not None or any(cycle_started(cycle) >= since for cycle in new):
                last = time.monotonic()
        if last is not None and time.monotonic() - last >= quiet_s:
            return seen, True
        time.sleep(0.5)
    return seen, False


FIELDS = (
    "ts",
    "cycle",
    "trigger",
    "why",
    "early",
    "pending",
    "bound",
    "solver",
    "seconds",
    "snapshot_seconds",
    "solver_seconds",
    "apply_seconds",
    "bind_seconds",
    "cpu_seconds",
    "snapshot_cpu_seconds",
    "solve_cpu_seconds",
    "stale",
    "failed",
    "unschedulable",
    "changes",
    "phases",
    "woke_seconds",
    "threads",
    "gc",
)


def measure(
    instance: Path,
    batch: int,
    batches: int,
    interval_s: float,
    quiet_s: float,
    time_limit_s: float,
    runs: tuple[tuple[int, str | None, bool], ...],
    out: Path | None,
    timeout_s: float,
    dump_dir: Path | None = None,
) -> None:
    from vcsat.adapters.convert import instance_file

    objects = instance_file.read_objects(instance)
    start, arrivals = _batches(objects, batch)
    needed = batches * len(runs)
    if len(arrivals) < needed:
        raise click.ClickException(f"{instance} holds {len(arrivals)} batches of {batch} pods; {needed} wanted")
    sink = out.open("a") if out is not None else None

    def emit(row: dict[str, Any]) -> None:
        line = json.dumps(row)
        print(line, flush=True)
        if sink is not None:
            sink.write(line + "\n")
            sink.flush()

    nodes = sum(1 for o in start if o["kind"] == "Node")
    bound = sum(1 for o in start if o["kind"] == "Pod")
    with start_kwok_cluster(node_lifecycle=False) as cluster:
        plane = cluster.plane
        with Kube.from_kubeconfig(str(plane.kubeconfig), pool_size=WORKERS) as kube:
            loading = time.monotonic()
            create(kube, start)
            wait_running(kube, nodes, bound, timeout_s)
            emit({"loaded": {"nodes": nodes, "pods": bound, "seconds": round(time.monotonic() - loading, 1)}})
            binds = BindWatch(kube)
            workdir = Path(tempfile.mkdtemp(prefix="steady-", dir=plane.workdir))
            used = 0
            for run, (early_bind, tree, pin) in enumerate(runs):
                log = workdir / f"vcsat-{run}.log"
                with (
                    pinned(cluster_pids(plane), pin) as cpus,
                    scheduler(
                        cluster,
                        log,
                        time_limit_s,
                        early_bind,
                        tree,
                        cpus,
                        dump_dir=None if dump_dir is None else dump_dir / f"run-{run}",
                    ) as process,
                ):
                    tail = LogTail(log)
                    pids = {**cluster_pids(plane), "scheduler": process.pid}
                    meter = CpuMeter(pids)
                    cold, quiet = settle(tail, process, quiet_s=quiet_s, timeout_s=timeout_s)
                    emit(
                        {
                            "run": run,
                            "early_bind": early_bind,
                            "tree": tree,
                            "pinned": pin,
                            "cold": [{k: c.get(k) for k in FIELDS} for c in cold],
                            "quiet": quiet,
                            "cpu_s": meter.used(),
                            "load": round(os.getloadavg()[0], 1),
                        }
                    )
                    for number in range(batches):
                        meter = CpuMeter(pids)
                        load = os.getloadavg()[0]
                        posted = time.monotonic()
                        created = arrive(kube, arrivals[used])
                        post_s = time.monotonic() - posted
                        pods = sum(1 for o in arrivals[used] if o["kind"] == "Pod")
                        used += 1
                        cycles, quiet = settle(tail, process, quiet_s, min(timeout_s, 300.0), since=time.time())
                        time.sleep(max(0.0, interval_s - (time.monotonic() - posted)))
                        for cycle in cycles + tail.cycles():
                            emit(
                                {
                                    "run": run,
                                    "early_bind": early_bind,
                                    "batch": number,
                                    **{k: cycle.get(k) for k in FIELDS},
                                }
                            )
                        emit(
                            {
                                "run": run,
                                "early_bind": early_bind,
                                "batch": number,
                                "arrived": pods,
                                "post_seconds": round(post_s, 2),
                                "quiet": quiet,
                                "latency": latency(created, binds.bound),
                                "cpu_s": meter.used(),
                                "load": [round(load, 1), round(os.getloadavg()[0], 1)],
                            }
                        )
                if out is not None:  # the scheduler's own log, kept beside the rows
                    shutil.copyfile(log, out.with_name(f"{out.stem}-vcsat-{run}.log"))
            binds.stop()
    if sink is not None:
        sink.close()


@click.command()
@click.argument("instance", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--batch", type=int, default=300, show_default=True, help="New pending pods per batch (whole jobs).")
@click.option("--batches", type=int, default=5, show_default=True, help="Batches per scheduler process.")
@click.option(
    "--interval", type=float, default=10.0, show_default=True, help="Fewest seconds from a batch to the next."
)
@click.option(
    "--quiet",
    type=float,
    default=3.0,
    show_default=True,
    help="The next batch waits for a cycle that started after this one was created and then this many "
    "seconds without a cycle ending (or --timeout).",
)
@click.option("--time-limit", type=float, default=2.0, show_default=True)
@click.option(
    "--run",
    "runs",
    multiple=True,
    default=("0",),
    show_default=True,
    help="EARLY[:TREE][:pin]: one scheduler process, its --early-bind-min-pending and the source tree "
    "put first on its PYTHONPATH; the processes run one after the other. ':pin': the scheduler on "
    "the last CPU, the control plane and this harness on the others, while this process runs.",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Append the JSON lines here too.")
@click.option(
    "--timeout", type=float, default=900.0, show_default=True, help="Seconds for loading and for a cold cycle."
)
@click.option(
    "--dump-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Each scheduler process dumps its cycles under DIR/run-N (its --dump-dir): `vcsat solve` replays them.",
)
def main(
    instance: Path,
    batch: int,
    batches: int,
    interval: float,
    quiet: float,
    time_limit: float,
    runs: tuple[str, ...],
    out: Path | None,
    timeout: float,
    dump_dir: Path | None,
) -> None:
    measure(instance, batch, batches, interval, quiet, time_limit, tuple(map(parse_run, runs)), out, timeout, dump_dir)


def parse_run(run: str) -> tuple[int, str | None, bool]:
    """``--run EARLY[:TREE][:pin]`` as (early, tree or None, pinned)."""
    early, _, tree = run.partition(":")
    pin = tree == "pin" or tree.endswith(":pin")
    if pin:
        tree = tree.removesuffix("pin").removesuffix(":")
    try:
        return int(early), tree or None, pin
    except ValueError:
        raise click.BadParameter(f"{run!r}: EARLY must be an integer", param_hint="--run") from None


if __name__ == "__main__":
    main()
