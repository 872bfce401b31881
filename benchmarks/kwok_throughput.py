"""Throughput and pod start latency on a KWOK cluster: vcsat, kube-scheduler and the API server's ceiling.

One cluster (tests/k8s/kwokcluster.py: etcd, kube-apiserver, kube-controller-manager, kwok) with
``nodes`` kwok nodes of 128 cpu, 40% of them with 16 GPUs, labelled ``vcsat-bench/kind``. The
workload is ``pods`` pods: half in gangs of 8, half single pods; a tenth of each ask for one GPU
(and 4 cpu), the rest for 1 or 2 cpu. The workloads of all the runs fit at once with room to
spare, so what is measured is how fast each scheduler places work, not what it leaves out.

Each scheduler runs as its own process, as deployed, on the same cluster, one after the other:

- ``binder``: benchmarks/trivial_binder.py, which binds every pod to the next node of its kind
  without deciding anything: the API server's ceiling;
- ``kube-scheduler``: the genuine one built from the same module as the API server
  (tools/controlplane/build.sh), default profile, plain pods (no PodGroups: it knows none);
- ``vcsat``: ``vcsat scheduler``, the gangs as Volcano PodGroups (minMember 8, queue default).

Two scenarios each:

- ``live``: the scheduler is ready (it has bound a canary pod) when the pods start being created
  by 32 threads; pods/s is ``pods`` over the time from the first creation to the last binding,
  and a pod's start latency is from its creation (the POST answered) to its binding (seen by a
  watch in this process): p50 and p99;
- ``waiting``: every pod exists before the scheduler's process is started; first binding and
  pods/s are counted from the process's start (its caches filling included).

Each run starts on an empty cluster: a fresh one for the issue's sizes, or the same one with the
last run's pods deleted (grace period 0) for small ones. CPU seconds of every process of the run
and the load average go with each result: the machine may be shared, and the schedulers of one
comparison suffer the same load only in so far as it stays the same through the run. Plain
module: benchmarks/test_kwok_throughput.py runs it at the issue's sizes (marker ``long``),
tests/e2e/test_e2e_throughput.py at a small one.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
_K8S = _HERE.parent / "tests" / "k8s"
for _folder in (_HERE, _K8S):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from controlplane import (  # noqa: E402
    ControlPlane,
    free_port,
    locate_binaries,
    write_kubeconfig,
    write_scheduler_config,
)
from kwokcluster import KwokCluster, kwok_node  # noqa: E402
from trivial_binder import KIND_LABEL  # noqa: E402

from vcsat.adapters.kube.client import NODES, PODGROUPS, PODS, ApiError, Kube  # noqa: E402
from vcsat.adapters.kube.informer import Informer  # noqa: E402

SCHEDULERS = ("binder", "kube-scheduler", "vcsat")
SCENARIOS = ("live", "waiting")
RUNS = (
    ("binder", "live"),
    ("kube-scheduler", "live"),
    ("vcsat", "live"),
    ("kube-scheduler", "waiting"),
    ("vcsat", "waiting"),
)
"""(scheduler, scenario) in the order :func:`compare` runs them (the binder has no start to measure)."""
GANG = 8
CREATE_WORKERS = 32
VCSAT = [sys.executable, "-c", "from vcsat.adapters.cli.app import main; main()"]
NAME_OF = {"binder": "bench-binder", "kube-scheduler": "default-scheduler", "vcsat": "bench-vcsat"}
"""Each scheduler's ``spec.schedulerName``."""


@dataclass(frozen=True)
class Unit:
    """A gang (``size`` 8, a PodGroup for vcsat) or a single pod."""

    name: str
    size: int
    gpu: bool


def workload(pods: int, seed: int = 0) -> list[Unit]:
    """Half the pods in gangs of 8, half single; a tenth of each ask for a GPU; creation order shuffled."""
    gangs = pods // 2 // GANG
    singles = pods - gangs * GANG
    units = [Unit(f"g{i:05d}", GANG, i % 10 == 0) for i in range(gangs)]
    units += [Unit(f"s{i:05d}", 1, i % 10 == 0) for i in range(singles)]
    random.Random(seed).shuffle(units)
    return units


def node_objects(count: int) -> list[dict[str, Any]]:
    """The kwok nodes: 128 cpu each, 40% with 16 GPUs."""
    out = []
    for i in range(count):
        gpu = i % 5 < 2
        node = kwok_node(
            f"bench-{i:05d}",
            cpu="128",
            memory="768Gi" if gpu else "512Gi",
            gpus=16 if gpu else 0,
            labels={KIND_LABEL: "gpu" if gpu else "cpu"},
        )
        out.append(node)
    return out


def make_nodes(cluster: KwokCluster, count: int, timeout_s: float) -> None:
    """Create the nodes and wait until kwok reports them all Ready."""
    with Kube.from_kubeconfig(str(cluster.plane.kubeconfig), pool_size=CREATE_WORKERS) as kube:
        with ThreadPoolExecutor(CREATE_WORKERS) as pool:
            list(pool.map(lambda node: kube.post(NODES.path(), node), node_objects(count)))
        deadline = time.monotonic() + timeout_s
        while True:
            nodes, _ = kube.list(NODES, labelSelector=KIND_LABEL)
            ready = sum(
                1
                for node in nodes
                if any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions") or [])
            )
            if ready >= count:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"kwok made only {ready} of {count} nodes Ready; see {cluster.kwok_log}")
            time.sleep(1.0)


def _pod(unit: Unit, index: int, namespace: str, scheduler: str, gangs: bool) -> dict[str, Any]:
    name = f"{unit.name}-{index}" if unit.size > 1 else unit.name
    if unit.gpu:
        requests = {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}
        limits = {"nvidia.com/gpu": "1"}
    else:
        requests = {"cpu": "2" if unit.size > 1 else "1", "memory": "2Gi"}
        limits = {}
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if gangs and unit.size > 1:
        metadata["annotations"] = {"scheduling.k8s.io/group-name": unit.name}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.invalid/bench:1",
                    "resources": {"requests": requests, "limits": limits},
                }
            ],
        },
    }


def pod_names(units: list[Unit]) -> list[str]:
    return [f"{u.name}-{i}" if u.size > 1 else u.name for u in units for i in range(u.size)]


class Creator:
    """Creates the workload's objects for one scheduler and notes when each pod's POST was answered."""

    def __init__(self, kube: Kube, namespace: str, which: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.which = which
        self.created: dict[str, float] = {}

    def unit(self, unit: Unit) -> None:
        gangs = self.which == "vcsat"
        if gangs and unit.size > 1:
            self.kube.post(
                PODGROUPS.path(self.namespace),
                {
                    "apiVersion": "scheduling.volcano.sh/v1beta1",
                    "kind": "PodGroup",
                    "metadata": {"name": unit.name, "namespace": self.namespace},
                    "spec": {"minMember": unit.size, "queue": "default"},
                },
            )
        for index in range(unit.size):
            pod = _pod(unit, index, self.namespace, NAME_OF[self.which], gangs)
            self.kube.post(PODS.path(self.namespace), pod)
            self.created[pod["metadata"]["name"]] = time.monotonic()

    def all(self, units: list[Unit]) -> None:
        with ThreadPoolExecutor(CREATE_WORKERS) as pool:
            list(pool.map(self.unit, units))


class BoundClock:
    """Watches a namespace's pods and notes when each is first seen bound."""

    def __init__(self, kube: Kube, namespace: str, expected: set[str]) -> None:
        self.expected = expected
        self.bound: dict[str, float] = {}
        self.nodes: dict[str, str] = {}
        self.rebound: list[str] = []
        self.done = threading.Event()
        self._lock = threading.Lock()
        self._informer = Informer(
            kube,
            PODS,
            on_list=lambda pods: [self._event("LIST", pod) for pod in pods],
            on_event=self._event,
            params={"fieldSelector": f"metadata.namespace={namespace},spec.nodeName!="},
        )

    def _event(self, kind: str, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        node = pod["spec"].get("nodeName")
        if kind == "DELETED" or not node or name not in self.expected:
            return
        with self._lock:
            if name in self.nodes and self.nodes[name] != node:
                self.rebound.append(name)
            self.nodes.setdefault(name, node)
            self.bound.setdefault(name, time.monotonic())
            if len(self.bound) >= len(self.expected):
                self.done.set()

    def __enter__(self) -> BoundClock:
        self._informer.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._informer.stop()
        self._informer.join(5)


class CpuMeter:
    """CPU seconds (user + system) of some processes from now on."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.start = {name: _cpu_seconds(pid) for name, pid in pids.items()}

    def used(self) -> dict[str, float]:
        return {name: round(_cpu_seconds(pid) - self.start[name], 1) for name, pid in self.pids.items()}


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cluster_pids(plane: ControlPlane) -> dict[str, int]:
    """The cluster's processes (by binary name) whose command line names the plane's directory."""
    found: dict[str, int] = {}
    marker = str(plane.workdir).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            binary = Path(argv[0].decode(errors="replace")).name
            if binary in ("kube-apiserver", "etcd", "kwok", "kube-controller-manager") and marker in b" ".join(argv):
                found[binary] = int(entry.name)
    return found


@dataclass
class Result:
    scheduler: str
    scenario: str
    pods: int
    nodes: int
    seconds: float
    """From the first creation (live) or the process's start (waiting) to the last binding."""
    first_binding_s: float
    latency_p50_s: float | None = None
    latency_p99_s: float | None = None
    cpu_s: dict[str, float] = field(default_factory=dict)
    load: tuple[float, float] = (0.0, 0.0)
    """The 1-minute load average at the start and at the end of the run."""
    rebound: int = 0
    partial_gangs: int = 0
    cycles: dict[str, int] = field(default_factory=dict)
    """vcsat's cycles that bound pods: ``early`` (sure placements) and ``full``."""
    namespace: str = ""

    @property
    def pods_per_second(self) -> float:
        return self.pods / self.seconds if self.seconds > 0 else 0.0


@contextlib.contextmanager
def scheduler_process(which: str, cluster: KwokCluster, namespace: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Start one scheduler's process (not waiting for it to be ready), output to ``log``; stopped on exit."""
    plane = cluster.plane
    workdir = log.parent
    if which == "binder":
        argv = [sys.executable, str(_HERE / "trivial_binder.py"), str(plane.kubeconfig), namespace, NAME_OF[which]]
    elif which == "kube-scheduler":
        kubeconfig = workdir / "kube-scheduler.kubeconfig"
        write_kubeconfig(kubeconfig, plane.server, plane.ca_file, plane.token)
        config = workdir / "kube-scheduler.yaml"
        write_scheduler_config(config, kubeconfig)
        bin_dir = plane.bin_dir
        if bin_dir is None or not os.access(bin_dir / "kube-scheduler", os.X_OK):
            bin_dir = locate_binaries(("kube-scheduler",))
        argv = [str(bin_dir / "kube-scheduler"), f"--config={config}", "--secure-port=0", "--v=1"]
    else:
        argv = [
            *VCSAT,
            "scheduler",
            f"--kubeconfig={plane.kubeconfig}",
            f"--scheduler-name={NAME_OF[which]}",
            "--no-leader-elect",
            f"--metrics-port={free_port()}",
            "--log-format=json",
            "--bind-workers=32",
        ]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _canary(kube: Kube, which: str, namespace: str, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Wait until the scheduler binds a lone canary pod of its own; then delete the pod."""
    unit = Unit("canary", 1, False)
    pod = _pod(unit, 0, namespace, NAME_OF[which], False)
    kube.post(PODS.path(namespace), pod)
    deadline = time.monotonic() + timeout_s
    while not kube.get(PODS.path(namespace, "canary"))["spec"].get("nodeName"):
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{which} never bound its canary pod (exit {process.poll()})")
        time.sleep(0.1)
    kube.delete(PODS.path(namespace, "canary"), gracePeriodSeconds=0)


def _namespace(kube: Kube, which: str, scenario: str) -> str:
    name = f"bench-{which[:4]}-{scenario[:4]}-{uuid.uuid4().hex[:6]}"
    kube.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def _empty(kube: Kube, namespace: str, timeout_s: float) -> None:
    """Delete the namespace's pods and PodGroups at once and wait until no pod is left."""
    deadline = time.monotonic() + timeout_s
    asked = 0.0
    while True:
        if time.monotonic() - asked > 30:
            # A collection of thousands may outlast the client's read timeout; the server goes
            # on deleting, and asking again deletes what is left.
            asked = time.monotonic()
            for path, params in ((PODGROUPS.path(namespace), {}), (PODS.path(namespace), {"gracePeriodSeconds": 0})):
                with contextlib.suppress(ApiError):
                    kube.delete(path, **params)
        with contextlib.suppress(ApiError):
            if not kube.get(PODS.path(namespace), limit=1)["items"]:
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"pods of {namespace} not deleted in {timeout_s} s")
        time.sleep(1.0)


def _partial_gangs(units: list[Unit], clock: BoundClock) -> int:
    """Gangs with some but not all of their pods bound (at the end of the run)."""
    out = 0
    for unit in units:
        if unit.size > 1:
            bound = sum(1 for i in range(unit.size) if f"{unit.name}-{i}" in clock.bound)
            out += 0 < bound < unit.size
    return out


def run(
    cluster: KwokCluster,
    which: str,
    scenario: str,
    units: list[Unit],
    nodes: int,
    timeout_s: float,
    workdir: Path,
) -> Result:
    """One scheduler, one scenario: create the workload, wait until every pod is bound, measure.
    The pods stay (:func:`empty` removes them)."""
    plane = cluster.plane
    names = pod_names(units)
    with Kube.from_kubeconfig(str(plane.kubeconfig), pool_size=CREATE_WORKERS) as kube:
        namespace = _namespace(kube, which, scenario)
        creator = Creator(kube, namespace, which)
        log = workdir / f"{which}-{scenario}.log"
        pids = cluster_pids(plane)
        load_start = os.getloadavg()[0]
        with BoundClock(kube, namespace, set(names)) as clock:
            if scenario == "waiting":
                creator.all(units)
                meter_pids = {**pids, "this": os.getpid()}
                started = time.monotonic()
                with scheduler_process(which, cluster, namespace, log) as process:
                    meter = CpuMeter({**meter_pids, "scheduler": process.pid})
                    _wait(clock, process, which, timeout_s)
                    used = meter.used()
                origin = started
            else:
                with scheduler_process(which, cluster, namespace, log) as process:
                    _canary(kube, which, namespace, process, timeout_s)
                    meter = CpuMeter({**pids, "this": os.getpid(), "scheduler": process.pid})
                    origin = time.monotonic()
                    creator.all(units)
                    _wait(clock, process, which, timeout_s)
                    used = meter.used()
        result = Result(
            scheduler=which,
            scenario=scenario,
            pods=len(names),
            nodes=nodes,
            seconds=round(max(clock.bound.values()) - origin, 2),
            first_binding_s=round(min(clock.bound.values()) - origin, 2),
            cpu_s=used,
            load=(round(load_start, 1), round(os.getloadavg()[0], 1)),
            rebound=len(clock.rebound),
            partial_gangs=_partial_gangs(units, clock) if which == "vcsat" else 0,
            cycles=_binding_cycles(log) if which == "vcsat" else {},
            namespace=namespace,
        )
        if scenario == "live":
            latencies = sorted(max(0.0, clock.bound[n] - creator.created[n]) for n in names)
            result.latency_p50_s = round(statistics.median(latencies), 3)
            result.latency_p99_s = round(latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 3)
    return result


def _binding_cycles(log: Path) -> dict[str, int]:
    out = {"early": 0, "full": 0}
    for line in log.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if entry.get("msg") == "cycle" and entry.get("bound"):
                out["early" if entry.get("early") else "full"] += 1
    return out


def empty(cluster: KwokCluster, namespace: str, timeout_s: float) -> None:
    """Delete a run's pods and PodGroups, so the next run starts on an empty cluster."""
    with Kube.from_kubeconfig(str(cluster.plane.kubeconfig)) as kube:
        _empty(kube, namespace, timeout_s)


def _wait(clock: BoundClock, process: subprocess.Popen[bytes], which: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not clock.done.wait(1.0):
        if process.poll() is not None:
            raise AssertionError(f"{which} exited ({process.returncode}) with {len(clock.bound)} pods bound")
        if time.monotonic() > deadline:
            raise AssertionError(f"{which}: only {len(clock.bound)} of {len(clock.expected)} pods bound")


def compare(
    cluster: KwokCluster | Callable[[], AbstractContextManager[KwokCluster]],
    *,
    nodes: int,
    pods: int,
    runs: tuple[tuple[str, str], ...] = RUNS,
    timeout_s: float | None = None,
    report: Callable[[Result], None] = lambda result: None,
    delete_between: bool = True,
) -> list[Result]:
    """Do the runs, each ``(scheduler, scenario)``, in order.

    ``cluster``: one cluster for all runs (its nodes made once), or a function that starts a fresh
    one, made for each run with its nodes. On one cluster, ``delete_between`` deletes each run's
    pods before the next (fine for small sizes: deleting thousands costs the API server minutes);
    without it they stay, and the later runs share the nodes with them (there is room for all).
    """
    timeout_s = timeout_s or max(300.0, pods / 10)
    units = workload(pods)
    results: list[Result] = []
    if isinstance(cluster, KwokCluster):
        make_nodes(cluster, nodes, timeout_s)
    for which, scenario in runs:
        with contextlib.ExitStack() as stack:
            if isinstance(cluster, KwokCluster):
                here = cluster
                if results and delete_between:
                    empty(here, results[-1].namespace, timeout_s)
            else:
                here = stack.enter_context(cluster())
                make_nodes(here, nodes, timeout_s)
            workdir = Path(tempfile.mkdtemp(prefix="kwok-bench-", dir=here.plane.workdir))
            result = run(here, which, scenario, units, nodes, timeout_s, workdir)
        report(result)
        results.append(result)
    return results


def table(results: list[Result]) -> str:
    """The results as a Markdown table, with each scheduler's ratio to kube-scheduler's pods/s."""
    kube_rate = {r.scenario: r.pods_per_second for r in results if r.scheduler == "kube-scheduler"}
    kube_p99 = {r.scenario: r.latency_p99_s for r in results if r.scheduler == "kube-scheduler"}
    lines = [
        "| scenario | scheduler | pods/s | × kube-scheduler | first binding s | p50 s | p99 s | p99 × kube | "
        "CPU s (scheduler / apiserver / etcd / kwok) | load 1m start→end | vcsat cycles binding (early + full) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ratio = r.pods_per_second / kube_rate[r.scenario] if kube_rate.get(r.scenario) else None
        p99 = kube_p99.get(r.scenario)
        p99_ratio = r.latency_p99_s / p99 if r.latency_p99_s is not None and p99 else None
        cpu = " / ".join(str(r.cpu_s.get(k, "-")) for k in ("scheduler", "kube-apiserver", "etcd", "kwok"))
        lines.append(
            f"| {r.scenario} | {r.scheduler} | {r.pods_per_second:.0f} | {_fmt(ratio, 2)} | {r.first_binding_s} | "
            f"{_fmt(r.latency_p50_s, 2)} | {_fmt(r.latency_p99_s, 2)} | {_fmt(p99_ratio, 2)} | {cpu} | "
            f"{r.load[0]}→{r.load[1]} | {_cycles(r)} |"
        )
    return "\n".join(lines)


def _cycles(result: Result) -> str:
    return f"{result.cycles['early']} + {result.cycles['full']}" if result.cycles else "-"


def _fmt(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
