"""``vcsat explain INSTANCE POD``: why one pod or PodGroup gets what it gets, in full.

A cycle gives the full reason to the first ``explain_per_queue`` waiting groups of each queue
(the policy's field) and ``NotExamined`` to the rest; this command solves the cycle on the
instance and examines the group asked for (:mod:`vcsat.solver.on_demand`).
"""

from __future__ import annotations

import json
import time

import click

from vcsat.adapters.cli.app import load_instance, load_policy
from vcsat.adapters.errors import InputError


@click.command("explain")
@click.argument("instance", metavar="INSTANCE")
@click.argument("name", metavar="POD")
@click.option(
    "--output",
    "-o",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table for people; json prints the podgroups entry of docs/contract.md §2.",
)
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), metavar="S", help="As for vcsat solve.")
@click.option("--policy", "policy_file", metavar="FILE", help="As for vcsat solve.")
@click.option("--workers", type=click.IntRange(min=1), metavar="N", help="As for vcsat solve.")
def explain_command(
    instance: str,
    name: str,
    output: str,
    time_limit: float | None,
    policy_file: str | None,
    workers: int | None,
) -> None:
    """Explain in full why POD (namespace/name of a pod or a PodGroup) is placed or waits in one cycle
    on INSTANCE, also when the cycle's policy left it NotExamined. Use the policy and --workers the
    cycle ran with (a dump's decision records its workers)."""
    policy = load_policy(policy_file, time_limit_s=time_limit, num_workers=workers)
    from vcsat.solver.on_demand import explain_one, outcome_key

    started = time.monotonic()
    snapshot = load_instance(instance, scheduler_name=policy.scheduler_name)
    if outcome_key(snapshot, name) is None:
        raise InputError(f"no pod or PodGroup {name} in the instance", source=instance, obj=name)
    decision, found = explain_one(snapshot, policy, name, started=started)
    if found is None:
        click.echo(f"{name}: no pending pods in this cycle, nothing to explain")
        return
    members = {pod.key for pod in snapshot.pods_of_group.get(name, ())} or {name}
    placed = [b for b in decision.bindings if b.pod in members]
    if output == "json":
        click.echo(json.dumps(found.model_dump(mode="json"), indent=2))
        return
    line = f"{found.podgroup}: {found.phase}"
    if found.reason:
        line += f" ({found.reason}): {found.message}"
    click.echo(line)
    for binding in placed:
        gpus = f" GPUs {list(binding.gpus)}" if binding.gpus else ""
        click.echo(f"{binding.pod}: bound to {binding.node}{gpus}")
    if decision.solver.wall_stopped:
        click.echo("note: the time limit cut the search short; a cycle given more time may decide differently")
