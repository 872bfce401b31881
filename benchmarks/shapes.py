"""A named set of differently shaped generated clusters, so a gap is judged on more than one.

``vcsat generate``'s default cluster has three queues weighted 4, 2, 1, no capability and every
queue about equally served; a gap measured there alone says little about clusters we did not tune
on. Each shape here is generator options plus a small edit of the generated objects (a capability
on a queue, running work moved to one queue, HyperNodes taken away), so the generator itself stays
as it is and the same seed always gives the same file.

    python benchmarks/shapes.py NAME [--nodes N] [--seed S] -o FILE     # write one
    python benchmarks/shapes.py --list                                  # names and what they are
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import click

from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance

Instance = dict[str, Any]
Edit = Callable[[Instance, GeneratorOptions], None]

FIVE_QUEUES = (("q1", 1), ("q2", 1), ("q3", 4), ("q4", 2), ("q5", 3))
"""The issue's weighted queues."""


def _cap_queue(queue: str, share: float) -> Edit:
    """``queue`` gets a capability of ``share`` of the cluster's GPUs (and as much CPU/memory as it likes)."""

    def edit(instance: Instance, options: GeneratorOptions) -> None:
        gpus = round(share * options.nodes * options.gpus_per_node)
        for item in instance["items"]:
            if item["kind"] == "Queue" and item["metadata"]["name"] == queue:
                item["spec"]["capability"] = {"nvidia.com/gpu": str(gpus)}

    return edit


def _over_serve(queue: str, share: float) -> Edit:
    """Running PodGroups move to ``queue`` until about ``share`` of them are its: a queue far above
    its deserved share while the others are below theirs (what reclaim and the fair-share levels
    must see)."""

    def edit(instance: Instance, options: GeneratorOptions) -> None:
        running = [i for i in instance["items"] if i["kind"] == "PodGroup" and i["status"]["phase"] == "Running"]
        for number, group in enumerate(running):
            if (number * 7919) % 1000 < share * 1000:
                group["spec"]["queue"] = queue

    return edit


def _no_hypernodes(instance: Instance, options: GeneratorOptions) -> None:
    instance["items"] = [i for i in instance["items"] if i["kind"] != "HyperNode"]
    for item in instance["items"]:
        if item["kind"] == "PodGroup":
            item["spec"].pop("networkTopology", None)


@dataclass(frozen=True)
class Shape:
    name: str
    about: str
    options: GeneratorOptions
    edits: tuple[Edit, ...] = field(default=())

    def instance(self, *, nodes: int | None = None, seed: int | None = None) -> Instance:
        """The cluster; ``nodes`` scales it (pending jobs twice the nodes, as the default)."""
        options = self.options
        if nodes is not None:
            options = replace(options, nodes=nodes, pending_jobs=round(options.pending_jobs * nodes / options.nodes))
        if seed is not None:
            options = replace(options, seed=seed)
        instance = generate_instance(options)
        for edit in self.edits:
            edit(instance, options)
        return instance


SHAPES: dict[str, Shape] = {
    shape.name: shape
    for shape in (
        Shape("default", "vcsat generate's cluster: queues 4, 2, 1, half busy, HyperNodes", GeneratorOptions()),
        Shape(
            "weighted",
            "five queues weighted 1, 1, 4, 2, 3, half busy, HyperNodes",
            GeneratorOptions(queues=FIVE_QUEUES),
        ),
        Shape(
            "capped",
            "five weighted queues, the weight-4 queue capped at 8% of the GPUs, 60% busy",
            GeneratorOptions(queues=FIVE_QUEUES, busy_gpu_fraction=0.6),
            (_cap_queue("q3", 0.08),),
        ),
        Shape(
            "over-served",
            "five weighted queues, 60% of the running jobs in q1 (weight 1), 70% busy, high/low priority mix",
            GeneratorOptions(
                queues=FIVE_QUEUES, busy_gpu_fraction=0.7, high_priority_share=0.2, low_priority_share=0.4
            ),
            (_over_serve("q1", 0.6),),
        ),
        Shape(
            "big-gangs",
            "three queues 4, 2, 1, a fifth of the jobs multi-node gangs and a tenth ps/worker, 30% busy, no HyperNodes",
            GeneratorOptions(busy_gpu_fraction=0.3, multi_node_job_share=0.2, ps_worker_job_share=0.1),
            (_no_hypernodes,),
        ),
        Shape(
            "contended",
            "five weighted queues, 85% busy, half the work low priority and a fifth high, no HyperNodes",
            GeneratorOptions(
                queues=FIVE_QUEUES, busy_gpu_fraction=0.85, high_priority_share=0.2, low_priority_share=0.5
            ),
            (_no_hypernodes,),
        ),
        Shape(
            "saturated",
            "three queues 4, 2, 1, 97% busy, HyperNodes: little free room, in pieces over many nodes",
            GeneratorOptions(busy_gpu_fraction=0.97),
        ),
    )
}


@click.command()
@click.argument("name", required=False, type=click.Choice(sorted(SHAPES)))
@click.option("--nodes", type=click.IntRange(min=1), help="Scale the shape to this many nodes.")
@click.option("--seed", type=int, help="Generator seed (default 0).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="File (default stdout).")
@click.option("--list", "listing", is_flag=True, help="List the shapes.")
def main(name: str | None, nodes: int | None, seed: int | None, output: Path | None, listing: bool) -> None:
    """Write the generated cluster of shape NAME (a v1 List of contract §1)."""
    if listing or name is None:
        for shape in SHAPES.values():
            click.echo(f"{shape.name:12} {shape.about}")
        return
    text = json.dumps(SHAPES[name].instance(nodes=nodes, seed=seed), separators=(",", ":"))
    if output is None:
        sys.stdout.write(text + "\n")
    else:
        output.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
