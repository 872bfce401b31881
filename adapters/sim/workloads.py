"""The workloads the simulator replays: Alibaba's openb trace, synthetic production-like jobs, and the
TensorFlow gang experiment of Volcano's launch article.

Each builder returns a :class:`~vcsat.adapters.sim.engine.Workload` (nodes, queues, jobs) and the
:class:`~vcsat.adapters.sim.engine.SimOptions` its experiment is run with, the same for every
scheduler. Everything is deterministic for a seed.

- **openb** (the trace files ship with the package in ``vcsat/adapters/data/openb``, Apache-2.0, see
  the NOTICE there; ``$VCSAT_OPENB_DIR`` points elsewhere, see :func:`openb_dir`): nodes from
  ``openb_node_list_gpu_node.csv`` with the GPU model as the node label ``nvidia.com/gpu.product``
  (as NVIDIA GPU feature discovery names it; the generator uses the same label), pods from a pod
  list with ``num_gpu`` as ``nvidia.com/gpu`` and a ``gpu_milli`` below 1000 as the GPU share
  ``vcsat.io/gpu-milli`` (contract §1); a pod's ``gpu_spec`` (allowed models, ``|``-separated)
  becomes required node affinity ``In`` on that label. The experiment is the FGD paper's: pods
  arrive in trace order (creation time), or with ``shuffle`` in an order drawn from the seed (as
  the FGD artifact's runs shuffle the pod list per seed, so that each seed is another workload;
  ``vcsat bench`` does), then as random samples of the trace (the simulator's workload inflation),
  in batches of about 1% of the cluster's GPUs, one scheduling cycle per
  batch; nothing leaves, and a pod that does not fit when it arrives is given up. It runs until the
  arrived GPU requests reach ``target`` × the cluster's GPUs; the result is the allocated GPU share
  against the arrived workload.
- **synthetic**: racks of 8-GPU nodes from :mod:`vcsat.adapters.generate.generator` (empty, with kube-system
  DaemonSet pods as fixed load and a 2×4 PCIe GPU interconnect on every node), three weighted queues
  (4/2/1) with equal arrival rates, Poisson arrivals at a chosen offered load, GPUs per job 1/2/4/8
  at 70/10/15/5% plus a 3% tail of multi-node gangs of 2–4 pods × 8 GPUs, log-normal run times
  (median 30 min, σ 1.5, within 2 min and 12 h), 10% high-priority jobs.
- **tf-gang**: Volcano's launch-article experiment: TensorFlow-like jobs of one parameter server
  (cpu) and four GPU workers, all submitted at once on a cluster with room for only two thirds of
  them; their pods are created interleaved (the job controllers run in parallel). A job runs only
  with all its pods bound; partly placed jobs wait, and after ``gang_timeout`` give up and restart.
"""

from __future__ import annotations

import csv
import importlib.resources
import json
import math
import os
import random
from dataclasses import dataclass
from pathlib import Path

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.adapters.sim.engine import JobSpec, SimOptions, TaskSpec, Workload
from vcsat.model import Node, NodeSelectorRequirement, NodeSelectorTerm, Pod
from vcsat.model import resources as res

OPENB_DIR_ENV = "VCSAT_OPENB_DIR"
"""Environment variable naming a directory with the openb CSV files, instead of the packaged ones."""
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
OPENB_TRACES = {
    "default": "openb_pod_list_default.csv",
    "multigpu50": "openb_pod_list_multigpu50.csv",
    "gpushare100": "openb_pod_list_gpushare100.csv",
}
DEFAULT_PODS_LIMIT = 110
"""Kubelet's default ``maxPods``: the trace gives none."""


def openb_dir() -> Path:
    """Where the openb trace is read from: ``$VCSAT_OPENB_DIR`` if set, else the copy shipped inside
    the package (``vcsat/adapters/data/openb``), so an installed vcsat finds it wherever it lives."""
    override = os.environ.get(OPENB_DIR_ENV)
    if override:
        return Path(override)
    return Path(str(importlib.resources.files("vcsat.adapters").joinpath("data", "openb")))


@dataclass(frozen=True)
class Experiment:
    workload: Workload
    options: SimOptions


# --- openb -----------------------------------------------------------------------------------------


def _rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="") as handle:
            return list(csv.DictReader(handle))
    except OSError as error:
        raise InputError(
            f"cannot read: {error.strerror or error} (the openb trace directory is ${OPENB_DIR_ENV} if set, "
            "else the package's own copy)",
            source=str(path),
        ) from None


def _int(row: dict[str, str], column: str, path: Path, line: int) -> int:
    text = (row.get(column) or "").strip()
    try:
        return int(text) if text else 0
    except ValueError:
        raise InputError(f"line {line}: {column}: not an integer: {text!r}", source=str(path)) from None


def openb_nodes(directory: Path | None = None, *, every: int = 1) -> tuple[Node, ...]:
    """The trace's GPU nodes (every ``every``-th one, for a smaller cluster of the same mix)."""
    path = (directory or openb_dir()) / "openb_node_list_gpu_node.csv"
    nodes: list[Node] = []
    for line, row in enumerate(_rows(path), start=2):
        if (line - 2) % every:
            continue
        name = row.get("sn", "").strip()
        if not name:
            raise InputError(f"line {line}: sn: empty node name", source=str(path))
        model = row.get("model", "").strip()
        allocatable = {
            res.CPU: _int(row, "cpu_milli", path, line),
            res.MEMORY: _int(row, "memory_mib", path, line) * res.MIB,
            res.PODS: DEFAULT_PODS_LIMIT,
        }
        gpus = _int(row, "gpu", path, line)
        if gpus:
            allocatable[res.GPU] = gpus
        labels = {"kubernetes.io/hostname": name}
        if model:
            labels[GPU_PRODUCT_LABEL] = model
        nodes.append(Node(name=name, labels=labels, allocatable=allocatable))
    return tuple(nodes)


@dataclass(frozen=True)
class TracePod:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    gpu_milli: int
    gpu_spec: tuple[str, ...]
    created: int

    @property
    def gpu_demand_milli(self) -> int:
        """GPU thousandths: whole GPUs × 1000, or the share."""
        return self.gpus * 1000 if self.gpu_milli >= 1000 else self.gpu_milli

    @property
    def kind(self) -> str:
        if self.gpus == 0:
            return "cpu"
        if self.gpu_milli < 1000:
            return "share"
        return f"{self.gpus}gpu"

    def requests(self) -> dict[str, int]:
        out = {res.CPU: self.cpu_milli, res.MEMORY: self.memory_mib * res.MIB, res.PODS: 1}
        if self.gpus and self.gpu_milli >= 1000:
            out[res.GPU] = self.gpus
        elif self.gpus and self.gpu_milli > 0:
            out[res.GPU_MILLI] = self.gpu_milli
        return {name: amount for name, amount in out.items() if amount}

    def affinity(self) -> tuple[NodeSelectorTerm, ...]:
        if not self.gpu_spec:
            return ()
        requirement = NodeSelectorRequirement(key=GPU_PRODUCT_LABEL, operator="In", values=self.gpu_spec)
        return (NodeSelectorTerm(match_expressions=(requirement,)),)


def openb_pods(trace: str = "default", directory: Path | None = None) -> list[TracePod]:
    """The pods of one pod list, in trace order (creation time, then name)."""
    if trace not in OPENB_TRACES:
        raise InputError(f"unknown openb trace {trace!r} (one of {', '.join(OPENB_TRACES)})")
    path = (directory or openb_dir()) / OPENB_TRACES[trace]
    pods: list[TracePod] = []
    for line, row in enumerate(_rows(path), start=2):
        gpus, milli = _int(row, "num_gpu", path, line), _int(row, "gpu_milli", path, line)
        if gpus < 0 or not 0 <= milli <= 1000 or (milli < 1000 and milli > 0 and gpus != 1):
            raise InputError(f"line {line}: num_gpu {gpus} with gpu_milli {milli}", source=str(path))
        spec = tuple(sorted(s for s in (row.get("gpu_spec") or "").split("|") if s.strip()))
        pods.append(
            TracePod(
                name=row["name"].strip(),
                cpu_milli=_int(row, "cpu_milli", path, line),
                memory_mib=_int(row, "memory_mib", path, line),
                gpus=gpus,
                gpu_milli=milli if gpus else 0,
                gpu_spec=spec,
                created=_int(row, "creation_time", path, line),
            )
        )
    pods.sort(key=lambda p: (p.created, p.name))
    return pods


def as_pod(pod: TracePod) -> Pod:
    """A trace pod as a pending model pod (for the FGD workload distribution)."""
    return Pod(namespace="openb", name=pod.name, requests=pod.requests(), affinity=pod.affinity())


def openb(
    trace: str = "default",
    *,
    every: int = 1,
    target: float = 1.3,
    batch: float = 0.01,
    seed: int = 0,
    directory: Path | None = None,
    shuffle: bool = False,
) -> Experiment:
    """The FGD paper's saturation experiment (see the module docstring). ``every`` > 1 keeps every
    ``every``-th node, for a smaller cluster of the same mix; ``batch`` is the GPU demand of one
    arrival batch as a share of the cluster's GPUs; ``shuffle`` draws the trace's order from the
    seed (without it a seed changes only the samples drawn once the trace is used up, which a
    small cluster never reaches)."""
    nodes = openb_nodes(directory, every=every)
    capacity = sum(node.gpus for node in nodes) * 1000
    trace_pods = openb_pods(trace, directory)
    if shuffle:
        trace_pods = list(trace_pods)
        random.Random(f"openb-order:{trace}:{seed}").shuffle(trace_pods)
    rng = random.Random(f"openb:{trace}:{seed}")
    jobs: list[JobSpec] = []
    arrived = 0
    batch_milli = max(1000, int(batch * capacity))
    batch_index, in_batch = 0, 0
    copy = 0
    source = iter(trace_pods)
    while arrived < target * capacity:
        pod = next(source, None)
        if pod is None:
            pod = rng.choice(trace_pods)
            copy += 1
            name = f"{pod.name}-s{copy}"
        else:
            name = pod.name
        if in_batch >= batch_milli:
            batch_index, in_batch = batch_index + 1, 0
        demand = pod.gpu_demand_milli
        in_batch += demand
        arrived += demand
        task = TaskSpec("main", 1, pod.requests(), affinity=pod.affinity())
        jobs.append(
            JobSpec(
                name=name,
                tasks=(task,),
                namespace="openb",
                arrival=float(batch_index),
                podgroup=False,
                kind=pod.kind,
                pod_offsets=(len(jobs) * 1e-6,),
            )
        )
    workload = Workload(
        name=f"openb-{trace}" + (f"-1of{every}" if every > 1 else ""),
        nodes=nodes,
        jobs=tuple(jobs),
        description=(
            f"openb {trace}: {len(nodes)} nodes, {capacity // 1000} GPUs; {len(jobs)} pods arriving in "
            f"batches of {batch:.0%} of the GPUs until {target:.0%} of them is requested"
        ),
    )
    options = SimOptions(cycle_period=1.0, gang_timeout=None, drop_unplaced_after=1, seed=seed)
    return Experiment(workload, options)


def openb_distribution_pods(trace: str = "default", directory: Path | None = None) -> list[Pod]:
    """The trace's pods as model pods: what FGD is told the workload looks like (as in the paper)."""
    return [as_pod(pod) for pod in openb_pods(trace, directory)]


# --- synthetic -------------------------------------------------------------------------------------

QUEUE_WEIGHTS = (("prod", 4), ("research", 2), ("dev", 1))
GPU_MIX = ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))
MULTI_NODE_SHARE = 0.03
HIGH_PRIORITY = 1000
HIGH_PRIORITY_SHARE = 0.1
MEDIAN_RUN_S = 1800.0
RUN_SIGMA = 1.5
RUN_MIN_S, RUN_MAX_S = 120.0, 12 * 3600.0


def pcie_2x4_topology(gpus: int = 8) -> str:
    """A node-link GPU interconnect: two PCIe switches of four GPUs under one CPU (32 GB/s GPU to
    switch, 16 GB/s switch to CPU), as contract §1's ``vcsat.io/gpu-topology`` holds it."""
    vertices: list[dict[str, object]] = [{"id": "cpu", "kind": "cpu"}]
    edges: list[dict[str, object]] = []
    switches = max(1, math.ceil(gpus / 4))
    for s in range(switches):
        vertices.append({"id": f"sw{s}", "kind": "pcie-switch"})
        edges.append({"source": f"sw{s}", "target": "cpu", "bandwidth": 16})
    for i in range(gpus):
        vertices.append({"id": f"gpu{i}", "kind": "gpu", "index": i})
        edges.append({"source": f"gpu{i}", "target": f"sw{i // 4}", "bandwidth": 32})
    graph = {"directed": False, "multigraph": False, "graph": {}, "nodes": vertices, "edges": edges}
    return json.dumps(graph, separators=(",", ":"))


def _run_time(rng: random.Random) -> float:
    value = rng.lognormvariate(math.log(MEDIAN_RUN_S), RUN_SIGMA)
    return round(min(RUN_MAX_S, max(RUN_MIN_S, value)))


def _mean_gpu_seconds(samples: int = 20000) -> float:
    """Expected GPU-seconds of one synthetic job (Monte Carlo over the mix; a fixed stream)."""
    rng = random.Random("synthetic-mean")
    total = 0.0
    for _ in range(samples):
        gpus, pods = _draw_gpus(rng)
        total += gpus * pods * _run_time(rng)
    return total / samples


def _draw_gpus(rng: random.Random) -> tuple[int, int]:
    """(GPUs per pod, pods) of one job."""
    if rng.random() < MULTI_NODE_SHARE:
        return 8, rng.randint(2, 4)
    draw, acc = rng.random(), 0.0
    for gpus, share in GPU_MIX:
        acc += share
        if draw < acc:
            return gpus, 1
    return GPU_MIX[-1][0], 1


def synthetic(
    *, nodes: int = 64, hours: float = 6.0, load: float = 1.0, seed: int = 0, cycle_period: float = 60.0
) -> Experiment:
    """Production-like GPU jobs arriving for ``hours`` at ``load`` × the cluster's GPU capacity."""
    instance = generate_instance(
        GeneratorOptions(
            nodes=nodes,
            busy_gpu_fraction=0.0,
            pending_jobs=0,
            unavailable_node_fraction=0.0,
            queues=QUEUE_WEIGHTS,
            seed=seed,
        )
    )
    snapshot = snapshot_from_objects(instance["items"])
    topology = pcie_2x4_topology()
    cluster_nodes = tuple(node.model_copy(update={"gpu_topology": topology}) for node in snapshot.nodes)
    capacity = sum(node.gpus for node in cluster_nodes)
    rng = random.Random(f"synthetic:{seed}")
    rate = load * capacity / _mean_gpu_seconds()
    jobs: list[JobSpec] = []
    now = 0.0
    queues = [name for name, _ in QUEUE_WEIGHTS]
    while True:
        now += rng.expovariate(rate)
        if now > hours * 3600:
            break
        gpus, pods = _draw_gpus(rng)
        cpu_per_gpu = rng.choice((4000, 6000, 8000, 10000))
        mem_per_gpu = rng.choice((32, 48, 64, 80)) * 1024 * res.MIB
        requests = {res.CPU: cpu_per_gpu * gpus, res.MEMORY: mem_per_gpu * gpus, res.PODS: 1, res.GPU: gpus}
        queue = rng.choice(queues)
        priority = HIGH_PRIORITY if rng.random() < HIGH_PRIORITY_SHARE else 0
        kind = f"{gpus}gpu" if pods == 1 else f"{gpus}gpu×{pods}"
        jobs.append(
            JobSpec(
                name=f"job-{len(jobs):05d}",
                tasks=(TaskSpec("worker", pods, requests),),
                queue=queue,
                namespace=queue,
                priority=priority,
                arrival=round(now, 3),
                duration=_run_time(rng),
                kind=kind,
            )
        )
    workload = Workload(
        name=f"synthetic-{nodes}n",
        nodes=cluster_nodes,
        jobs=tuple(jobs),
        queues=tuple(q for q in snapshot.queues),
        hypernodes=snapshot.hypernodes,
        fixed_pods=tuple(p for p in snapshot.pods if not p.managed),
        description=(
            f"synthetic: {nodes} nodes, {capacity} GPUs; {len(jobs)} jobs over {hours:g} h at offered "
            f"load {load:.0%}; queues {', '.join(f'{n}:{w}' for n, w in QUEUE_WEIGHTS)}"
        ),
    )
    options = SimOptions(cycle_period=cycle_period, gang_timeout=900.0, seed=seed)
    return Experiment(workload, options)


# --- tf-gang ---------------------------------------------------------------------------------------


def tf_gang(
    *,
    nodes: int = 4,
    gpus_per_node: int = 8,
    jobs: int = 6,
    workers: int = 4,
    gpus_per_worker: int = 2,
    run_time: float = 1800.0,
    timeout: float = 600.0,
    max_restarts: int = 3,
    cycle_period: float = 30.0,
) -> Experiment:
    """TensorFlow-like ps + workers gangs on a cluster too small to run them all at once."""
    cluster = tuple(
        Node(
            name=f"node-{i:02d}",
            labels={"kubernetes.io/hostname": f"node-{i:02d}"},
            allocatable={
                res.CPU: 64000,
                res.MEMORY: 512 * 1024 * res.MIB,
                res.PODS: DEFAULT_PODS_LIMIT,
                res.GPU: gpus_per_node,
            },
        )
        for i in range(nodes)
    )
    ps = TaskSpec("ps", 1, {res.CPU: 4000, res.MEMORY: 16 * 1024 * res.MIB, res.PODS: 1})
    worker = TaskSpec(
        "worker",
        workers,
        {res.CPU: 8000, res.MEMORY: 64 * 1024 * res.MIB, res.PODS: 1, res.GPU: gpus_per_worker},
    )
    specs = [
        JobSpec(
            name=f"tf-{j}",
            tasks=(ps, worker),
            namespace="tf",
            arrival=0.0,
            duration=run_time,
            kind="tf",
            # Pod i of job j is created at i + j/100 s: the controllers create pods side by side.
            pod_offsets=tuple(i + j / 100 for i in range(1 + workers)),
        )
        for j in range(jobs)
    ]
    capacity = nodes * gpus_per_node
    demand = jobs * workers * gpus_per_worker
    workload = Workload(
        name="tf-gang",
        nodes=cluster,
        jobs=tuple(specs),
        description=(
            f"tf-gang: {jobs} jobs of 1 ps + {workers} workers × {gpus_per_worker} GPUs ({demand} GPUs) on "
            f"{nodes} nodes × {gpus_per_node} GPUs ({capacity} GPUs), submitted together"
        ),
    )
    options = SimOptions(cycle_period=cycle_period, gang_timeout=timeout, max_restarts=max_restarts)
    return Experiment(workload, options)


WORKLOADS = ("openb", "synthetic", "tf-gang")
