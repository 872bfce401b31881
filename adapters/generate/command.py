"""``vcsat generate``: the command line around :mod:`vcsat.adapters.generate.generator`.

The generator is a pure function of its options and seed; this module only maps flags to
:class:`~vcsat.adapters.generate.generator.GeneratorOptions` (an impossible mix is a usage error,
exit 2) and writes the instance to a file or to stdout.
"""

from __future__ import annotations

import sys

import click

from vcsat.adapters.generate.generator import GeneratorOptions, dump_instance, generate_instance, write_instance


@click.command("generate")
@click.option("--nodes", type=click.IntRange(min=1), default=GeneratorOptions.nodes, show_default=True)
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=GeneratorOptions.gpus_per_node, show_default=True)
@click.option("--pending-jobs", type=click.IntRange(min=0), default=GeneratorOptions.pending_jobs, show_default=True)
@click.option(
    "--busy",
    type=click.FloatRange(0.0, 1.0),
    default=GeneratorOptions.busy_gpu_fraction,
    show_default=True,
    help="Share of GPUs held by running pods.",
)
@click.option(
    "--anti-affinity",
    type=click.FloatRange(0.0, 1.0),
    default=GeneratorOptions.anti_affinity_share,
    show_default=True,
    help="Share of pending pods whose jobs spread one pod per node (required pod anti-affinity).",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    help="File to write (.json: compact JSON, else YAML); stdout (YAML) when omitted.",
)
def generate_cmd(
    nodes: int,
    gpus_per_node: int,
    pending_jobs: int,
    busy: float,
    anti_affinity: float,
    seed: int,
    output: str | None,
) -> None:
    """Make up a realistic GPU cluster instance (docs/contract.md §1), the same for the same seed."""
    try:
        options = GeneratorOptions(
            nodes=nodes,
            gpus_per_node=gpus_per_node,
            pending_jobs=pending_jobs,
            busy_gpu_fraction=busy,
            anti_affinity_share=anti_affinity,
            seed=seed,
        )
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    instance = generate_instance(options)
    if output is None:
        click.echo(dump_instance(instance, "yaml"), nl=False)
        return
    size = write_instance(instance, output)
    kinds: dict[str, int] = {}
    for item in instance["items"]:
        kinds[item["kind"]] = kinds.get(item["kind"], 0) + 1
    summary = ", ".join(f"{count} {kind}" for kind, count in kinds.items())
    click.echo(f"{output}: {size} bytes; {summary}", file=sys.stderr)
