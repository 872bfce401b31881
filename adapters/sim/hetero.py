"""Heterogeneous openb: the FGD saturation experiment with pods that ask for a GPU model.

Why it exists: real GPU clusters mix models (a big pool of one, a T4 pool for inference, a few old
V100s) and some pods may only run on one of them, through required node affinity on the node's
GPU model label. Alibaba's openb pod list has no such pods, so a scheduler that strands a scarce
model with work that could have run anywhere looks as good as one that keeps it; these variants
show the difference.

What a variant is: :func:`vcsat.adapters.sim.workloads.openb` (the same nodes, pods and arrival
batches for a seed), then a chosen ``fraction`` of the pods that ask for GPUs is constrained to a
GPU model through required node affinity ``In`` on ``nvidia.com/gpu.product``. The model is drawn
in the proportions of the cluster's GPUs per model, among the models that have a node the pod fits
when empty (an 8-GPU pod is never sent to the 2-GPU T4 nodes: that pod would be lost under every
scheduler and measure nothing). Some models accept an alternative (:data:`ALTERNATIVES`, e.g.
``V100M16|V100M32``): a pod drawn for one of them accepts both with probability
:data:`ALTERNATIVE_SHARE`. CPU-only pods ask for no GPU model and are never constrained. The
draws come from a random stream of their own (``hetero:<fraction>:<seed>``), so for one seed every
fraction shares the pods and batches of the homogeneous experiment, and a higher fraction's
constrained pods are a superset of a lower one's.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from vcsat.adapters.sim.engine import JobSpec, TaskSpec, Workload
from vcsat.adapters.sim.workloads import GPU_PRODUCT_LABEL, Experiment, openb
from vcsat.model import Node, NodeSelectorRequirement, NodeSelectorTerm, Pod
from vcsat.model import resources as res

FRACTIONS = (0.10, 0.25, 0.33, 0.50)
"""The shares of GPU pods constrained to a model in ``vcsat bench``'s heterogeneous variants."""
ALTERNATIVES: tuple[frozenset[str], ...] = (frozenset({"V100M16", "V100M32"}),)
"""Models that stand in for each other: a pod drawn for one may accept the others."""
ALTERNATIVE_SHARE = 0.5
"""Of the pods drawn for a model with alternatives, the share that accepts them all."""
PREFIX = "openb-hetero-"


def workload_name(fraction: float) -> str:
    """``openb-hetero-33`` for a third: the name ``vcsat bench --workload`` takes."""
    return f"{PREFIX}{round(fraction * 100)}"


WORKLOADS = tuple(workload_name(f) for f in FRACTIONS)


def fraction_of(name: str) -> float | None:
    """The fraction a workload name asks for (``openb-hetero-25`` → 0.25), None for other names."""
    if not name.startswith(PREFIX):
        return None
    digits = name[len(PREFIX) :]
    if not digits.isdigit() or not 0 < int(digits) <= 100:
        return None
    return int(digits) / 100


def model_gpus(nodes: Sequence[Node]) -> dict[str, int]:
    """GPUs per model (node label ``nvidia.com/gpu.product``), models in name order."""
    out: dict[str, int] = {}
    for node in nodes:
        model = node.labels.get(GPU_PRODUCT_LABEL)
        if model and node.gpus:
            out[model] = out.get(model, 0) + node.gpus
    return dict(sorted(out.items()))


def _fits_empty(node: Node, requests: dict[str, int]) -> bool:
    gpus = requests.get(res.GPU, 0) or (1 if requests.get(res.GPU_MILLI, 0) else 0)
    if node.gpus < gpus:
        return False
    return all(
        amount <= node.allocatable.get(name, 0)
        for name, amount in requests.items()
        if name not in (res.GPU, res.GPU_MILLI)
    )


def hosting_models(nodes: Sequence[Node], requests: dict[str, int]) -> tuple[str, ...]:
    """The models with a node that ``requests`` fits when the node is empty."""
    models = {
        node.labels[GPU_PRODUCT_LABEL]
        for node in nodes
        if node.labels.get(GPU_PRODUCT_LABEL) and _fits_empty(node, requests)
    }
    return tuple(sorted(models))


def draw_spec(rng: random.Random, weights: dict[str, int], allowed: Sequence[str]) -> tuple[str, ...]:
    """A model among ``allowed`` by its GPUs in ``weights``, with its alternatives when drawn so."""
    choices = [model for model in allowed if weights.get(model, 0) > 0]
    if not choices:
        return ()
    model = rng.choices(choices, weights=[weights[m] for m in choices])[0]
    spec = {model}
    for group in ALTERNATIVES:
        if model in group and rng.random() < ALTERNATIVE_SHARE:
            spec |= {m for m in group if m in weights}
    return tuple(sorted(spec))


def model_affinity(spec: tuple[str, ...]) -> tuple[NodeSelectorTerm, ...]:
    requirement = NodeSelectorRequirement(key=GPU_PRODUCT_LABEL, operator="In", values=spec)
    return (NodeSelectorTerm(match_expressions=(requirement,)),)


def constrain(workload: Workload, fraction: float, seed: int) -> Workload:
    """``workload`` with ``fraction`` of its GPU pods (lone pods, one task each) asking for a model."""
    weights = model_gpus(workload.nodes)
    rng = random.Random(f"hetero:{seed}")
    hosts: dict[tuple[tuple[str, int], ...], tuple[str, ...]] = {}
    jobs: list[JobSpec] = []
    constrained = 0
    gpu_pods = 0
    for job in workload.jobs:
        # Two draws per pod whatever the fraction: a higher fraction constrains a superset.
        chance, stream = rng.random(), rng.random()
        task = job.tasks[0]
        if not task.gpu_milli:
            jobs.append(job)
            continue
        gpu_pods += 1
        if chance >= fraction:
            jobs.append(job)
            continue
        key = tuple(sorted(task.requests.items()))
        allowed = hosts.get(key)
        if allowed is None:
            allowed = hosts[key] = hosting_models(workload.nodes, task.requests)
        spec = draw_spec(random.Random(stream), weights, allowed)
        if not spec:
            jobs.append(job)
            continue
        constrained += 1
        tasks: tuple[TaskSpec, ...] = (replace(task, affinity=model_affinity(spec)), *job.tasks[1:])
        jobs.append(replace(job, tasks=tasks, kind=f"{job.kind}@{'|'.join(spec)}"))
    share = constrained / gpu_pods if gpu_pods else 0.0
    mix = ", ".join(f"{model} {gpus}" for model, gpus in weights.items())
    return replace(
        workload,
        name=f"{workload.name}-hetero{round(fraction * 100)}",
        jobs=tuple(jobs),
        description=(
            f"{workload.description}; {constrained} of the {gpu_pods} GPU pods ({share:.0%}) ask for a GPU "
            f"model (GPUs per model: {mix})"
        ),
    )


def openb_hetero(
    fraction: float,
    trace: str = "default",
    *,
    every: int = 1,
    target: float = 1.3,
    batch: float = 0.01,
    seed: int = 0,
) -> Experiment:
    """The openb experiment for ``seed`` with ``fraction`` of its GPU pods asking for a GPU model."""
    base = openb(trace, every=every, target=target, batch=batch, seed=seed)
    return Experiment(constrain(base.workload, fraction, seed), base.options)


def distribution_pods(workload: Workload) -> list[Pod]:
    """The workload's pods as model pods, affinity included: what FGD is told the workload looks like
    (as the homogeneous experiment gives it the trace's pods)."""
    return [
        Pod(namespace=job.namespace, name=job.name, requests=dict(task.requests), affinity=task.affinity)
        for job in workload.jobs
        for task in job.tasks
    ]
