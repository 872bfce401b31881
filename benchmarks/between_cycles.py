"""The live scheduler's work after each cycle, in process: the status writes' look over the
PodGroups and the metrics' observe, on a generated cluster, without solving.

Why: that work runs off the cycle's timing but on the cores the next cycle and the API server
share, and neither ``live_cycle.py`` (no metrics; the solve dominates its instruction count) nor
``phases.py`` shows it alone. Here each step adds a batch of about ``--batch`` pending pods to the
informer store, converts the snapshot with one :class:`~vcsat.adapters.convert.reuse.ConversionMemo`
(the pod indexes carried, as the scheduler does), makes a decision that places every pending pod of
ours on the first node (a stand-in: the solve is not what is measured), runs the applier's PodGroup
status writes against an API stand-in that accepts everything, observes the metrics, and then
confirms the bindings in the store as the watch would. Prints one JSON line per step: CPU seconds of
the status writes and of the observe, and a digest of the writes and of the metrics' exposition
(equal digests: the same writes and the same series values).

    python benchmarks/between_cycles.py 5k-s11.json --steps 6 --batch 300
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import click
from live_cycle import _AcceptingKube, _batches

NOW = 1.8e9
"""The cycles' clock: fixed, so the metrics' values (job latencies) repeat from run to run."""


class _Cycle:
    """What the metrics read of one cycle."""

    def __init__(self, snapshot: Any, decision: Any, report: Any) -> None:
        self.snapshot = snapshot
        self.decision = decision
        self.report = report
        self.seconds = 0.5
        self.snapshot_seconds = 0.1


def _digest(registry: Any) -> str:
    """The metrics' exposition, but when each series was made (a clock reading)."""
    from prometheus_client import generate_latest

    lines = [line for line in generate_latest(registry).decode().splitlines() if "_created" not in line]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:8]


def run(path: Path, steps: int, batch: int) -> list[dict[str, Any]]:
    from prometheus_client import CollectorRegistry

    from vcsat.adapters.convert import instance_file
    from vcsat.adapters.convert.reuse import ConversionMemo
    from vcsat.adapters.convert.snapshot import snapshot_from_objects
    from vcsat.adapters.kube.applier import Applier
    from vcsat.adapters.kube.apply_state import ApplyReport, GangOutcome
    from vcsat.adapters.kube.informer import Store
    from vcsat.adapters.live.volcano_metrics import VolcanoMetrics
    from vcsat.model import Binding, Decision, PodGroupOutcome, SolverStats
    from vcsat.solver import pod_indexes, pod_sums

    objects = instance_file.read_objects(path)
    start, arrivals = _batches(objects, batch)
    store = Store()
    kube = _AcceptingKube()
    kube.store = store
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in start:
        by_kind.setdefault(obj["kind"], []).append(obj)
    for kind in store._kinds:
        store.replace(kind, by_kind.get(kind, []))
    applier = Applier(kube, store)  # type: ignore[arg-type]
    registry = CollectorRegistry()
    metrics = VolcanoMetrics(registry)
    memo = ConversionMemo()
    version = 10_000_000
    out: list[dict[str, Any]] = []
    try:
        for step in range(steps + 1):
            for obj in arrivals[step - 1] if 0 < step <= len(arrivals) else []:
                store.apply(obj["kind"], "ADDED", obj)
            pod_sums.carry()
            generation, shown = store.snapshot()
            snapshot = snapshot_from_objects(
                shown, scheduler_name="vcsat", strict=False, generation=generation, memo=memo, now=NOW
            )
            pod_indexes.carry(snapshot)
            node = snapshot.nodes[0].name
            placed = {}
            for pod in snapshot.pods:
                if pod.pending and pod.managed:
                    placed.setdefault(pod.group or pod.key, []).append(Binding(pod=pod.key, node=node))
            decision = Decision(
                bindings=[b for bindings in placed.values() for b in bindings],
                podgroups=[PodGroupOutcome(podgroup=key, phase="Running") for key in sorted(placed)],
                solver=SolverStats(status="WITHIN_GAP"),
            )
            gangs = {key: GangOutcome(bound=bindings) for key, bindings in placed.items()}
            report = ApplyReport()
            report.bound.extend(b.pod for b in decision.bindings)
            writes = kube.writes
            started = time.process_time()
            applier._podgroups(decision, snapshot, gangs, report)
            walked = time.process_time()
            metrics.observe(_Cycle(snapshot, decision, report), now=NOW)
            observed = time.process_time()
            # The watch confirms the bindings: each pod comes back bound.
            bound = {b.pod: b.node for b in decision.bindings}
            for obj in store.objects("Pod"):
                meta = obj["metadata"]
                key = f"{meta.get('namespace', 'default')}/{meta['name']}"
                if key in bound:
                    version += 1
                    spec = {**obj.get("spec", {}), "nodeName": bound[key]}
                    status = {**obj.get("status", {}), "phase": "Running"}
                    changed = {**obj, "metadata": {**meta, "resourceVersion": str(version)}}
                    store.apply("Pod", "MODIFIED", {**changed, "spec": spec, "status": status})
            done = sorted(report.podgroups_updated) + sorted(report.events)
            out.append(
                {
                    "step": step,
                    "podgroups": len(snapshot.podgroups),
                    "placed_groups": len(placed),
                    "writes": kube.writes - writes,
                    "cpu": {"status_writes": round(walked - started, 4), "observe": round(observed - walked, 4)},
                    "writes_digest": hashlib.sha256(json.dumps(done).encode()).hexdigest()[:8],
                    "metrics_digest": _digest(registry),
                }
            )
    finally:
        applier.close()
    return out


@click.command()
@click.argument("instance", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--steps", type=int, default=6, show_default=True, help="Steps after the first (cold) one.")
@click.option("--batch", type=int, default=300, show_default=True, help="New pending pods per step (whole jobs).")
def main(instance: Path, steps: int, batch: int) -> None:
    for line in run(instance, steps, batch):
        click.echo(json.dumps(line))


if __name__ == "__main__":
    main()
