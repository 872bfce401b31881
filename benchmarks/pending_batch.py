"""A generated cluster with only a batch of its pending pods: what a live cycle sees.

A generated file holds its whole backlog pending at once (thousands of pods at 1,000 nodes),
while a live scheduler meets them in batches (``live_steady_kwok.py`` sends 200 at a time): the
allocate phase then ends early enough for the eviction phase to be asked. This keeps every running
pod and every pending pod of an evenly spaced choice of the pending pod groups (by name), until
about ``--pending`` pods wait; the pod groups of pods dropped go too.

    python benchmarks/pending_batch.py saturated-s540.json --pending 200 -o batch.json
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click


def group_of(pod: dict[str, Any]) -> str:
    annotations = pod["metadata"].get("annotations") or {}
    name = annotations.get("scheduling.k8s.io/group-name") or pod["metadata"]["name"]
    return f"{pod['metadata'].get('namespace', 'default')}/{name}"


def batch(items: list[dict[str, Any]], pending: int) -> list[dict[str, Any]]:
    """``items`` with about ``pending`` pending pods left, whole pod groups at a time."""
    pods = [item for item in items if item["kind"] == "Pod"]
    waiting: dict[str, int] = {}
    for pod in pods:
        if not pod["spec"].get("nodeName"):
            waiting[group_of(pod)] = waiting.get(group_of(pod), 0) + 1
    names = sorted(waiting)
    total = sum(waiting.values())
    step = max(1, round(total / max(1, pending)))
    kept: set[str] = set()
    count = 0
    for name in names[::step] + names:  # evenly spaced first, then in order if still short
        if count >= pending:
            break
        if name not in kept:
            kept.add(name)
            count += waiting[name]
    dropped = set(waiting) - kept
    running = {group_of(pod) for pod in pods if pod["spec"].get("nodeName")}
    out = []
    for item in items:
        if item["kind"] == "Pod" and not item["spec"].get("nodeName") and group_of(item) in dropped:
            continue
        if item["kind"] == "PodGroup":
            key = f"{item['metadata'].get('namespace', 'default')}/{item['metadata']['name']}"
            if key in dropped and key not in running:
                continue
        out.append(item)
    return out


@click.command()
@click.argument("instance", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--pending", type=int, default=200, show_default=True, help="Pending pods to keep, about.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True)
def main(instance: Path, pending: int, output: Path) -> None:
    data = json.loads(instance.read_text())
    data["items"] = batch(data["items"], pending)
    output.write_text(json.dumps(data))


if __name__ == "__main__":
    main()
