"""The pending work: jobs in a production-like mix (single pods of 1 to a whole node of GPUs,
data-parallel gangs, multi-node gangs with network topology, parameter-server jobs), some pinned
to a GPU model, some spreading their pods over nodes or zones.

Spread constraints and anti-affinity are drawn from random streams of their own, so turning them
on leaves the rest of the instance as it was.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from vcsat.adapters.generate.jobs import IMAGES, Job, cpu_task, draw_priority, gpu_task
from vcsat.adapters.generate.kube import GPU_PRODUCT_LABEL, SPINE_LABEL
from vcsat.adapters.generate.options import GeneratorOptions


def draw_pending_jobs(
    options: GeneratorOptions, rng: random.Random, products: list[str], next_id: Iterator[int], start: int
) -> list[Job]:
    jobs_total = options.pending_jobs
    per_node = options.gpus_per_node
    queue_names = [name for name, _ in options.queues]
    kinds: list[tuple[str, list[int]]] = []  # (kind, replicas per task)

    multi_node = min(round(jobs_total * options.multi_node_job_share), jobs_total)
    ps_worker = min(round(jobs_total * options.ps_worker_job_share), jobs_total - multi_node)
    kinds += [("multi-node", [rng.randint(2, 4)]) for _ in range(multi_node)]
    kinds += [("ps-worker", [1, rng.randint(2, 4)]) for _ in range(ps_worker)]
    # A tight pod target (few pods per job) has no room for every multi-pod job: drop the last ones.
    budget = options.pending_pods - jobs_total
    while kinds and sum(sum(r) - 1 for _, r in kinds) > budget:
        kinds.pop()
    multi_node = sum(1 for kind, _ in kinds if kind == "multi-node")
    ps_worker = len(kinds) - multi_node
    rest_jobs = jobs_total - multi_node - ps_worker
    extra = options.pending_pods - rest_jobs - sum(sum(r) for _, r in kinds)
    # The pods beyond one per job go to data-parallel gangs of 2–8 replicas; a gang of one more
    # replica until the total is met (or every remaining job is already a full gang).
    gangs: list[int] = []
    while extra > 0 and len(gangs) < rest_jobs:
        grow = min(extra, rng.randint(1, 4))
        gangs.append(1 + grow)
        extra -= grow
    for i in range(len(gangs)):
        if extra <= 0:
            break
        grow = min(extra, 8 - gangs[i])
        gangs[i] += grow
        extra -= grow
    kinds += [("ddp", [replicas]) for replicas in gangs]
    singles = ("cpu", "gpu1", "gpu2", "gpu4", f"gpu{per_node}")
    kinds += [(rng.choices(singles, (0.12, 0.65, 0.11, 0.08, 0.04))[0], [1]) for _ in range(rest_jobs - len(gangs))]
    rng.shuffle(kinds)

    jobs = []
    created = start
    for kind, replicas in kinds:
        created += rng.randint(1, 30)
        queue = rng.choice(queue_names)
        if kind == "multi-node":
            tasks = [gpu_task(rng, "worker", replicas[0], per_node, IMAGES["train"])]
            prefix = "pretrain"
        elif kind == "ps-worker":
            tasks = [
                cpu_task(rng, "ps", 1, IMAGES["ps"]),
                gpu_task(rng, "worker", replicas[1], rng.choice((1, 2)), IMAGES["ps"]),
            ]
            prefix = "recsys"
        elif kind == "ddp":
            tasks = [gpu_task(rng, "worker", replicas[0], rng.choice((1, 1, 2)), IMAGES["train"])]
            prefix = "ddp"
        elif kind == "cpu":
            tasks = [cpu_task(rng, "main", 1, IMAGES["etl"])]
            prefix = "etl"
        else:
            gpus = int(kind[3:])
            prefix = "infer" if gpus == 1 and rng.random() < 0.4 else "finetune"
            tasks = [gpu_task(rng, "main", 1, gpus, IMAGES["infer" if prefix == "infer" else "train"])]
        job = Job(f"{prefix}-{next(next_id):06d}", queue, queue, draw_priority(rng, options), created, tasks)
        if kind != "cpu" and rng.random() < options.model_pinned_share:
            _pin_model(job, products, rng)
        if kind == "multi-node":
            draw = rng.random()
            if draw < 0.4:
                job.topology = {"mode": "hard", "highestTierAllowed": 1}
            elif draw < 0.7:
                job.topology = {"mode": "soft", "highestTierAllowed": 1}
        jobs.append(job)
    return jobs


def add_spread(jobs: list[Job], options: GeneratorOptions) -> None:
    """Topology spread on a share of the pending jobs, drawn from a generator of its own so that the
    rest of the instance is the same as without it."""
    rng = random.Random(f"{options.seed}-spread")
    for job in jobs:
        if job.topology is not None or rng.random() >= options.spread_job_share:
            continue
        job.spread = {
            "maxSkew": 1,
            "topologyKey": SPINE_LABEL if rng.random() < 0.5 else "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"volcano.sh/job-name": job.name}},
        }


def add_anti_affinity(jobs: list[Job], options: GeneratorOptions) -> None:
    """Mark random whole jobs as spreading one pod per node until their pods reach the share."""
    rng = random.Random(f"anti-affinity-{options.seed}")
    target = round(options.anti_affinity_share * sum(job.pods for job in jobs))
    marked = 0
    for job in rng.sample(jobs, len(jobs)):
        if marked >= target:
            break
        job.spread_pods = True
        marked += job.pods


def _pin_model(job: Job, products: list[str], rng: random.Random) -> None:
    product = rng.choice(products)
    style = rng.randrange(3)
    if style == 0:
        job.selector = {GPU_PRODUCT_LABEL: product}
        return
    if style == 1 or len(products) < 2:
        requirement = {"key": GPU_PRODUCT_LABEL, "operator": "In", "values": [product]}
    else:
        requirement = {"key": GPU_PRODUCT_LABEL, "operator": "NotIn", "values": [products[-1]]}
    job.affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [requirement]}]
            }
        }
    }
