"""What a simulation run measured, summarised: the numbers `vcsat bench` tables and plots show.

Why a module of its own: every scheduler's run is summarised by the same definitions, written once:

- **GPU allocation**: GPUs held by our bound pods (a share counts its thousandths) over the
  cluster's GPUs, averaged over time from the first arrival to the end (a step function between
  samples), and averaged over the instants when pods were waiting (*while jobs wait*: the room a
  scheduler had work for); for the FGD experiment, the allocation at each level of arrived GPU
  requests.
- **JCT** (job completion time): completion − arrival, over completed jobs; **queueing delay**:
  first start (``minMember`` bound) − arrival, over started jobs; mean, p50, p99; **makespan**: last
  completion − first arrival.
- **fairness**: at every instant each queue's *deserved* GPUs are the cluster's GPUs water-filled
  over the queues by weight, each capped by its demand (GPUs held plus waiting); the *fairness
  error* is ``Σ_q |held_q − deserved_q| / Σ_q deserved_q``, averaged over time; per queue the
  time-averaged held and deserved shares, and Jain's index of ``held_q / deserved_q``.
- **gangs**: timeouts (a partly placed job waited ``gang_timeout`` for its peers and restarted),
  GPU-hours held by partly placed jobs, the most partly placed jobs at once, jobs failed.
- **topology**: of the jobs with more than one GPU, the share that ran inside one node and inside
  one rack (node label ``topology.vcsat.io/rack``, else tier-1 HyperNodes); the mean bottleneck
  bandwidth between the GPUs of single-node jobs on nodes with a ``vcsat.io/gpu-topology`` graph
  (the widest path's narrowest edge, the worst pair).
- **cycles**: wall seconds per decision (mean, p50, p99, max); for vcsat and its ablations (the
  schedulers that prove a bound) the share of all cycles proved optimal, and over every cycle that
  decided but was not proved optimal (FEASIBLE, WITHIN_GAP and FALLBACK alike) the mean and the worst gap
  (:func:`vcsat.model.relative_gap`, ``(bound − objective) / max(|bound|, 1)``), and how many cycles
  fell back to the greedy decision. A cycle that raised decided nothing and has no gap; it is counted
  under errors.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from itertools import pairwise

import networkx as nx

from vcsat.adapters.sim.engine import SimResult
from vcsat.adapters.sim.schedulers import proves_bounds
from vcsat.model import HyperNode, Node, relative_gap
from vcsat.solver.shares import water_levels

RACK_LABEL = "topology.vcsat.io/rack"
ARRIVED_LEVELS = (0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-quantile (0..1) by linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def water_fill(capacity: float, weights: dict[str, float], demand: dict[str, float]) -> dict[str, float]:
    """Max-min fair shares of ``capacity`` by weight, none above its demand: the solver's exact
    water-filling (:func:`vcsat.solver.shares.water_levels`), as floats."""
    queues = list(demand)
    if capacity <= 0 or not queues:
        return dict.fromkeys(queues, 0.0)
    shares = water_levels(
        Fraction(capacity),
        [Fraction(weights.get(q, 1.0)) for q in queues],
        [0] * len(queues),
        [Fraction(max(0.0, demand[q])) for q in queues],
    )
    return {q: float(share) for q, share in zip(queues, shares, strict=True)}


def jain(values: Iterable[float]) -> float | None:
    xs = list(values)
    if not xs or not any(xs):
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


@dataclass
class Summary:
    scheduler: str
    workload: str
    jobs: int = 0
    completed: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    gpu_alloc_mean: float | None = None
    gpu_alloc_busy: float | None = None
    """Time-averaged allocation over the instants when pods were waiting: what a scheduler made of
    the room while there was work for it."""
    jct_mean: float | None = None
    jct_p50: float | None = None
    jct_p99: float | None = None
    wait_mean: float | None = None
    wait_p50: float | None = None
    wait_p99: float | None = None
    makespan: float | None = None
    fairness_error: float | None = None
    jain_index: float | None = None
    queue_shares: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per queue: (time-averaged held GPU share, deserved GPU share) of the cluster."""
    timeouts: int = 0
    restarts: int = 0
    partial_gpu_hours: float = 0.0
    max_partial_jobs: int = 0
    evictions: int = 0
    multi_gpu_jobs: int = 0
    one_node_share: float | None = None
    one_rack_share: float | None = None
    bandwidth_mean: float | None = None
    cycles: int = 0
    cycle_mean: float | None = None
    cycle_p50: float | None = None
    cycle_p99: float | None = None
    cycle_max: float | None = None
    optimal_share: float | None = None
    gap_mean: float | None = None
    gap_worst: float | None = None
    fallbacks: int | None = None
    rejected: int = 0
    first_violation: str = ""
    errors: int = 0
    first_error: str = ""
    wall_seconds: float = 0.0
    alloc_at: dict[float, float] = field(default_factory=dict)
    """FGD experiment: allocated GPU share at each arrived level (share of the cluster's GPUs)."""
    final_alloc: float | None = None
    arrived_final: float | None = None


def summarize(result: SimResult) -> Summary:
    summary = Summary(result.scheduler, result.workload, jobs=len(result.jobs))
    _jobs(result, summary)
    _allocation(result, summary)
    _fairness(result, summary)
    _topology(result, summary)
    _cycles(result, summary)
    summary.evictions = result.evictions
    summary.rejected = result.rejected
    summary.first_violation = result.first_violation
    summary.errors = result.errors
    summary.first_error = result.first_error
    summary.wall_seconds = result.wall_seconds
    return summary


def _jobs(result: SimResult, summary: Summary) -> None:
    done = [job for job in result.jobs if job.finished is not None]
    summary.completed = len(done)
    for job in result.jobs:
        if job.failed:
            summary.failed[job.failed] = summary.failed.get(job.failed, 0) + 1
    jct = [job.finished - job.spec.arrival for job in done if job.finished is not None]
    wait = [job.started - job.spec.arrival for job in result.jobs if job.started is not None]
    summary.jct_mean, summary.jct_p50, summary.jct_p99 = (
        mean(jct),
        percentile(jct, 0.5),
        percentile(jct, 0.99),
    )
    summary.wait_mean, summary.wait_p50 = mean(wait), percentile(wait, 0.5)
    summary.wait_p99 = percentile(wait, 0.99)
    if done:
        first = min(job.spec.arrival for job in result.jobs)
        summary.makespan = max(job.finished for job in done if job.finished is not None) - first
    summary.timeouts = sum(job.timeouts for job in result.jobs)
    summary.restarts = sum(job.restarts for job in result.jobs)


def _intervals(result: SimResult) -> Iterable[tuple[float, int]]:
    """(duration, index of the sample in force) over the run."""
    samples = result.samples
    for i, sample in enumerate(samples):
        end = samples[i + 1].time if i + 1 < len(samples) else max(result.end_time, sample.time)
        if end > sample.time:
            yield end - sample.time, i


def _allocation(result: SimResult, summary: Summary) -> None:
    capacity = result.gpu_capacity_milli
    if not result.samples or capacity <= 0:
        return
    total_time = held = partial = busy_time = busy_held = 0.0
    for span, i in _intervals(result):
        sample = result.samples[i]
        total_time += span
        held += span * sample.gpu_milli
        partial += span * sample.partial_gpu_milli
        if sample.pending_pods:
            busy_time += span
            busy_held += span * sample.gpu_milli
    if total_time > 0:
        summary.gpu_alloc_mean = held / total_time / capacity
    if busy_time > 0:
        summary.gpu_alloc_busy = busy_held / busy_time / capacity
    summary.partial_gpu_hours = partial / 1000 / 3600
    summary.max_partial_jobs = max(sample.partial_jobs for sample in result.samples)
    last = result.samples[-1]
    summary.final_alloc = last.gpu_milli / capacity
    summary.arrived_final = last.arrived_gpu_milli / capacity
    for level in ARRIVED_LEVELS:
        for sample in result.samples:
            if sample.arrived_gpu_milli >= level * capacity:
                summary.alloc_at[level] = sample.gpu_milli / capacity
                break


def allocation_curve(result: SimResult) -> list[tuple[float, float]]:
    """(arrived GPU requests, allocated GPUs) as shares of the cluster's GPUs, sample by sample."""
    capacity = result.gpu_capacity_milli or 1
    return [(s.arrived_gpu_milli / capacity, s.gpu_milli / capacity) for s in result.samples]


def _fairness(result: SimResult, summary: Summary) -> None:
    capacity = result.gpu_capacity_milli
    weights = {queue.name: float(queue.weight) for queue in result.queues}
    if capacity <= 0 or len({q for s in result.samples for q in s.queue_demand_milli}) < 2:
        return
    error_time = error_sum = 0.0
    held_sum: dict[str, float] = {}
    deserved_sum: dict[str, float] = {}
    total_time = 0.0
    for span, i in _intervals(result):
        sample = result.samples[i]
        demand = {q: float(d) for q, d in sample.queue_demand_milli.items()}
        deserved = water_fill(float(capacity), weights, demand)
        total_time += span
        for q in demand:
            held_sum[q] = held_sum.get(q, 0.0) + span * sample.queue_gpu_milli.get(q, 0)
            deserved_sum[q] = deserved_sum.get(q, 0.0) + span * deserved[q]
        want = sum(deserved.values())
        if want > 0:
            miss = sum(abs(sample.queue_gpu_milli.get(q, 0) - deserved[q]) for q in deserved)
            error_sum += span * miss / want
            error_time += span
    if error_time > 0:
        summary.fairness_error = error_sum / error_time
    if total_time > 0:
        summary.queue_shares = {
            q: (held_sum[q] / total_time / capacity, deserved_sum[q] / total_time / capacity) for q in sorted(held_sum)
        }
        ratios = [held_sum[q] / deserved_sum[q] for q in held_sum if deserved_sum[q] > 0]
        summary.jain_index = jain(ratios)


# --- topology ----------------------------------------------------------------------------------


def rack_of(nodes: Sequence[Node], hypernodes: Sequence[HyperNode]) -> dict[str, str]:
    """Each node's rack: its ``topology.vcsat.io/rack`` label, else its tier-1 HyperNode."""
    out = {node.name: node.labels[RACK_LABEL] for node in nodes if RACK_LABEL in node.labels}
    for hyper in sorted(hypernodes, key=lambda h: h.name):
        if hyper.tier != 1:
            continue
        for member in hyper.members:
            if member.type != "Node":
                continue
            for node in nodes:
                if node.name in out:
                    continue
                if (
                    (member.exact_name is not None and member.exact_name == node.name)
                    or (member.regex is not None and re.fullmatch(member.regex, node.name))
                    or (member.labels is not None and all(node.labels.get(k) == v for k, v in member.labels.items()))
                ):
                    out[node.name] = hyper.name
    return out


@lru_cache(maxsize=64)
def _tree(topology: str) -> nx.Graph | None:
    """The maximum spanning tree of a node-link GPU graph: its paths are the widest paths."""
    try:
        data = json.loads(topology)
    except (json.JSONDecodeError, TypeError):
        return None  # a preset name or a malformed annotation: no bandwidth to report
    if not isinstance(data, dict):
        return None
    graph = nx.Graph()
    for vertex in data.get("nodes", []):
        graph.add_node(vertex["id"], **{k: v for k, v in vertex.items() if k != "id"})
    edges = data.get("edges") or data.get("links") or []
    for edge in edges:
        graph.add_edge(edge["source"], edge["target"], bandwidth=float(edge.get("bandwidth", 0)))
    return nx.maximum_spanning_tree(graph, weight="bandwidth")


def bottleneck(topology: str, gpus: Sequence[int]) -> float | None:
    """The narrowest widest-path bandwidth between any two of the GPUs (GB/s)."""
    tree = _tree(topology)
    if tree is None or len(gpus) < 2:
        return None
    vertex = {data.get("index"): v for v, data in tree.nodes(data=True) if data.get("kind") == "gpu"}
    worst: float | None = None
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            if a not in vertex or b not in vertex:
                return None
            path = nx.shortest_path(tree, vertex[a], vertex[b])
            width = min(tree.edges[u, v]["bandwidth"] for u, v in pairwise(path))
            worst = width if worst is None else min(worst, width)
    return worst


def _topology(result: SimResult, summary: Summary) -> None:
    racks = rack_of(result.nodes, result.hypernodes)
    topology = {node.name: node.gpu_topology for node in result.nodes}
    one_node = one_rack = multi = 0
    widths: list[float] = []
    for job in result.jobs:
        if job.started is None or job.spec.gpu_milli <= 1000:
            continue
        multi += 1
        nodes = {node for node, _ in job.placement}
        if len(nodes) == 1:
            one_node += 1
            node = next(iter(nodes))
            graph = topology.get(node)
            gpus = sorted({i for _, ids in job.placement for i in ids})
            width = bottleneck(graph, gpus) if graph else None
            if width is not None:
                widths.append(width)
        if racks and len({racks.get(node, node) for node in nodes}) == 1:
            one_rack += 1
    summary.multi_gpu_jobs = multi
    if multi:
        summary.one_node_share = one_node / multi
        summary.one_rack_share = one_rack / multi if racks else None
    summary.bandwidth_mean = mean(widths)


def _cycles(result: SimResult, summary: Summary) -> None:
    seconds = [cycle.seconds for cycle in result.cycles]
    summary.cycles = len(seconds)
    summary.cycle_mean, summary.cycle_p50 = mean(seconds), percentile(seconds, 0.5)
    summary.cycle_p99 = percentile(seconds, 0.99)
    summary.cycle_max = max(seconds, default=None)
    if not proves_bounds(result.scheduler) or not result.cycles:
        return  # a baseline reports no bound: its cycles have no gap
    decided = [c for c in result.cycles if c.status in ("OPTIMAL", "FEASIBLE", "WITHIN_GAP", "FALLBACK")]
    # Share of all cycles (fallbacks and errors included) that were proved optimal.
    summary.optimal_share = sum(1 for c in decided if c.status == "OPTIMAL") / len(result.cycles)
    gaps = [relative_gap(c.objective, c.bound) for c in decided if c.status != "OPTIMAL"]
    summary.gap_mean = mean(gaps) if gaps else 0.0
    summary.gap_worst = max(gaps, default=0.0)
    summary.fallbacks = sum(1 for c in decided if c.status == "FALLBACK")
