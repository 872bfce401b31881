"""Instances of a live cluster: ``vcsat dump``, and the files ``vcsat scheduler --dump-dir`` writes.

A cycle is only debuggable if it can be replayed offline: ``vcsat solve`` on a dumped instance
must see exactly what the live cycle saw. So an instance here is contract §1's v1 ``List`` of the
very objects the scheduler reads (Nodes, Pods, PodGroups, Queues, PriorityClasses, HyperNodes,
Namespaces, PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes, CSIDrivers,
CSIStorageCapacities and PodDisruptionBudgets, as the API server sends them, ``managedFields``
dropped as kubectl does), and the scheduler writes its cycles' instances with the same function
as this command. The cycle's clock goes with them (``vcsat.io/now`` on the List:
:mod:`vcsat.adapters.convert.clock`), since admission's timeout reads it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click
import yaml

from vcsat.adapters.convert.clock import (
    CLUSTER_DUMP_ANNOTATION,
    CYCLE_ANNOTATION,
    NOW_ANNOTATION,
    SKIPPED_ANNOTATION,
    format_clock,
    wall_clock,
)
from vcsat.adapters.kube.client import SCHEDULING_RESOURCES, ApiError, Kube

_Dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def instance_document(
    objects: Iterable[Mapping[str, Any]],
    *,
    now: float | None = None,
    early: bool = False,
    skipped: Sequence[str] = (),
) -> dict[str, Any]:
    """The v1 List kubectl prints for these objects, marked as a cluster dump; ``now``, the cycle's
    clock, ``early`` (the cycle bound the greedy's sure placements) and ``skipped`` (the optional
    steps it skipped for time), as its annotations."""
    annotations = {CLUSTER_DUMP_ANNOTATION: "true"}
    if now is not None:
        annotations[NOW_ANNOTATION] = format_clock(now)
    if early:
        annotations[CYCLE_ANNOTATION] = "early"
    if skipped:
        annotations[SKIPPED_ANNOTATION] = ",".join(skipped)
    metadata: dict[str, Any] = {"resourceVersion": "", "annotations": annotations}
    return {"apiVersion": "v1", "kind": "List", "metadata": metadata, "items": list(objects)}


def cluster_objects(kube: Kube) -> list[dict[str, Any]]:
    """Every object a scheduling cycle reads, listed now; an API that is not installed lists nothing."""
    objects: list[dict[str, Any]] = []
    for resource in SCHEDULING_RESOURCES:
        try:
            items, _ = kube.list(resource)
        except ApiError as error:
            if error.status == 404:
                continue  # e.g. no HyperNode CRD in this cluster: no HyperNodes
            raise click.ClickException(f"cannot list {resource.plural}: {error}") from None
        for item in items:
            (item.get("metadata") or {}).pop("managedFields", None)
        objects.extend(items)
    return objects


def write_instance(path: Path | None, objects: Iterable[Mapping[str, Any]], *, now: float | None = None) -> None:
    """JSON (YAML when ``path`` ends in .yaml or .yml) to ``path``, or JSON to stdout when None."""
    document = instance_document(objects, now=now)
    as_yaml = path is not None and path.suffix.lower() in (".yaml", ".yml")
    text = (
        yaml.dump(document, Dumper=_Dumper, sort_keys=False)
        if as_yaml
        else json.dumps(document, indent=None, separators=(",", ":")) + "\n"
    )
    if path is None:
        sys.stdout.write(text)
        return
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)  # readers never see half a file


@click.command("dump")
@click.option(
    "-o",
    "--output",
    "output",
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write here (YAML if it ends in .yaml/.yml, else JSON); default: JSON on stdout.",
)
@click.option("--kubeconfig", metavar="FILE", help="Default: in-cluster credentials, else ~/.kube/config.")
def dump_cmd(output: Path | None, kubeconfig: str | None) -> None:
    """Write the live cluster's instance (a v1 List, as `vcsat solve` reads) from the API server."""
    with Kube.from_kubeconfig(kubeconfig, pool_size=4) as kube:
        now = wall_clock()  # as the live scheduler's cycle would have had, listing now
        objects = cluster_objects(kube)
    write_instance(output, objects, now=now)
    if output is not None:
        click.echo(f"wrote {len(objects)} objects to {output}", err=True)
