"""The live scheduler's steady-state cycle, in process: CPU seconds per phase, no API server.

Drives :meth:`vcsat.adapters.live.scheduler.Scheduler.run_cycle` exactly as the daemon does (the
informer store, the :class:`~vcsat.adapters.convert.reuse.ConversionMemo`, ``solve``, ``check``,
the applier assuming its bindings in the store), with an API stand-in that accepts every write.
The cluster is a generated instance file: its nodes, bound pods and everything else go into the
store at once; its pending jobs (PodGroup and pods) arrive in batches of about ``--batch`` pods,
one batch before each cycle. After each cycle the watch "confirms" its bindings (the pods come
back bound, with a new resourceVersion), as the API server's events would.

    vcsat generate --nodes 5000 --pending-jobs 6000 --seed 11 -o 5k.json
    python benchmarks/live_cycle.py 5k.json --cycles 6 --batch 300 --time-limit 2

Prints one JSON line per cycle: CPU seconds per phase (convert, build less admission, admission,
greedy, lp_bound, search, decode, explain, check, assume = the applier's submit and its report
against the stand-in, other = the rest of ``solve``), the cycle's total, the decision's status,
objective and digest (the decision without its seconds). The first cycle is the cold one (every
object converted); the later ones are the steady state. Phases are CPU seconds of the whole
process (the applier's threads included), so on a shared box they say more than wall seconds.
``--follow-ups N`` runs N more cycles after each steady one with no new pods (``follow_up`` 1..N in
its lines): the live loop's follow-ups once a decision is applied, with nothing of ours pending.
``--cold-idle`` holds every pending job back from the cold cycles, as a scheduler started on a
settled cluster (and live_steady_kwok.py's) sees it: the first steady cycle is then the first with
pending pods. After each cycle the loop's own work between cycles runs as the daemon runs it
(``Scheduler._prime``: once, after a first cycle with nothing pending; ``prime`` in the line, off
the cycle's ``total``).
"""

from __future__ import annotations

import cProfile
import hashlib
import importlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

PHASES = {
    "build_problem": "build",
    "greedy": "greedy",
    "lp_bounds": "lp_bound",
    "solve_exact": "search",
    "outcomes": "explain",
    "bindings": "decode",
}


class _AcceptingKube:
    """Answers every request as accepted. A status write (merge patch of ``status``) comes back
    into the store as the watch would show it, so a status once written is not due again; a
    binding is confirmed by the harness after the cycle."""

    pool_size = 4

    def __init__(self) -> None:
        self.store: Any = None
        self.version = 20_000_000
        self.lock = threading.Lock()
        self.writes = 0
        """Requests answered (bindings, status writes, Events)."""

    def request(self, method: str, path: str, **_: Any) -> Any:
        self.writes += 1
        return None

    def get(self, path: str, **_: Any) -> Any:
        return {"resources": [{"name": "podgroups/status"}, {"name": "pods/status"}]}

    def post(self, path: str, body: Any, **_: Any) -> Any:
        self.writes += 1
        return body

    def patch(self, path: str, body: Any, **_: Any) -> Any:
        self.writes += 1
        parts = path.strip("/").split("/")
        if self.store is not None and parts[-1] == "status" and "namespaces" in parts and "status" in body:
            namespace, plural, name = parts[parts.index("namespaces") + 1], parts[-3], parts[-2]
            kind = {"podgroups": "PodGroup", "pods": "Pod"}.get(plural)
            current = self.store.get(kind, f"{namespace}/{name}") if kind else None
            if current is not None:
                with self.lock:
                    self.version += 1
                    version = str(self.version)
                status = {**(current.get("status") or {}), **body["status"]}
                if kind == "Pod":
                    status["conditions"] = body["status"].get("conditions", [])
                metadata = {**current["metadata"], "resourceVersion": version}
                self.store.apply(kind, "MODIFIED", {**current, "metadata": metadata, "status": status})
                return {**current, "metadata": metadata, "status": status}
        return body

    def delete(self, path: str, body: Any = None, **_: Any) -> Any:
        return None

    def close(self) -> None:
        pass


def digest(decision: Any) -> str:
    data = json.loads(decision.model_dump_json())
    data["solver"].pop("seconds", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _batches(objects: list[dict[str, Any]], batch: int) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """The objects present from the start, and the pending jobs (PodGroup + pods) in arrival batches."""
    pending_by_group: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        if obj["kind"] == "Pod" and not (obj.get("spec") or {}).get("nodeName"):
            meta = obj["metadata"]
            group = (meta.get("annotations") or {}).get("scheduling.k8s.io/group-name", meta["name"])
            pending_by_group.setdefault(f"{meta.get('namespace', 'default')}/{group}", []).append(obj)
    groups = {
        f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}": o
        for o in objects
        if o["kind"] == "PodGroup"
    }
    arriving = {id(p) for pods in pending_by_group.values() for p in pods}
    arriving |= {id(groups[key]) for key in pending_by_group if key in groups}
    start = [o for o in objects if id(o) not in arriving]
    batches: list[list[dict[str, Any]]] = [[]]
    count = 0
    for key, pods in pending_by_group.items():
        if count >= batch:
            batches.append([])
            count = 0
        if key in groups:
            batches[-1].append(groups[key])
        batches[-1].extend(pods)
        count += len(pods)
    return start, batches


def run(
    path: Path,
    cycles: int,
    batch: int,
    time_limit_s: float,
    seed_cycles: int,
    profile: Path | None = None,
    follow_ups: int = 0,
    cold_idle: bool = False,
) -> list[dict[str, Any]]:
    from vcsat.adapters.convert import instance_file
    from vcsat.adapters.live import scheduler as scheduler_module
    from vcsat.model import Policy

    solve_module = importlib.import_module("vcsat.solver.solve")
    try:  # where the build calls admission (older trees: the problem module itself)
        memo_module = importlib.import_module("vcsat.solver.admission_memo")
    except ImportError:
        memo_module = importlib.import_module("vcsat.solver.problem")
    solver_package = importlib.import_module("vcsat.solver")

    cpu: dict[str, float] = {}

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                cpu[name] = cpu.get(name, 0.0) + time.process_time() - started

        return wrapper

    for name, label in PHASES.items():
        setattr(solve_module, name, timed(label, getattr(solve_module, name)))
    memo_module.admit = timed("admission", memo_module.admit)
    scheduler_module.snapshot_from_objects = timed("convert", scheduler_module.snapshot_from_objects)
    solver_package.check = timed("check", solver_package.check)
    solve = solver_package.solve
    # No wall stop: the deterministic budgets alone end the search, so a loaded box decides the same.
    solver_package.solve = timed("solve", lambda *a, **k: solve(*a, **{**k, "wall": False}))

    objects = instance_file.read_objects(path)
    start, arrivals = _batches(objects, batch)
    policy = Policy(time_limit_s=time_limit_s)
    kube = _AcceptingKube()
    scheduler = scheduler_module.Scheduler(kube, policy=policy, early_min_pending=0)  # type: ignore[arg-type]
    kube.store = scheduler.store
    scheduler.applier.submit = timed("assume", scheduler.applier.submit)  # type: ignore[method-assign]
    store = scheduler.store
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in start:
        by_kind.setdefault(obj["kind"], []).append(obj)
    for kind in store._kinds:
        store.replace(kind, by_kind.get(kind, []))
    version = 10_000_000
    reports: list[dict[str, Any]] = []
    # Each batch's cycle, then ``follow_ups`` cycles on nothing new (the live loop's ``applied`` ones).
    plan = [(n, 0) for n in range(seed_cycles)] + [
        (n, k) for n in range(seed_cycles, seed_cycles + cycles) for k in range(1 + follow_ups)
    ]
    for number, follow_up in plan:
        # With ``cold_idle`` the cold cycles see nothing pending and the first batch comes after them.
        arriving = number - seed_cycles if cold_idle else number
        for obj in arrivals[arriving] if 0 <= arriving < len(arrivals) and not follow_up else []:
            store.apply(obj["kind"], "ADDED", obj)
        cpu.clear()
        kube.writes = 0
        profiler = cProfile.Profile(time.process_time) if profile is not None and number >= seed_cycles else None
        if profiler is not None:
            profiler.enable()
        started = time.process_time()
        result = scheduler.run_cycle(wait=False)
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(f"{profile}.{number}" + (f".{follow_up}" if follow_up else ""))
        cpu["cycle"] = time.process_time() - started
        waited = time.process_time()
        if result.pending is not None:
            result.pending.result()
        cpu["assume"] = cpu.get("assume", 0.0) + time.process_time() - waited
        inside = sum(cpu.get(label, 0.0) for label in PHASES.values())
        cpu["build"] = cpu.get("build", 0.0) - cpu.get("admission", 0.0)
        cpu["other"] = cpu.pop("solve", 0.0) - inside
        cpu["total"] = cpu["cycle"] + time.process_time() - waited
        # The loop's work after a cycle, off its clock (older trees have none).
        between = getattr(scheduler, "_prime", None)
        if between is not None:
            primed = time.process_time()
            between(result)
            cpu["prime"] = time.process_time() - primed
        decision = result.decision
        # The watch confirms the bindings: each pod comes back bound, as its assumed copy shows it.
        _, shown = store.snapshot()
        bound = {b.pod for b in decision.bindings}
        for obj in shown:
            if obj["kind"] != "Pod":
                continue
            meta = obj["metadata"]
            if f"{meta.get('namespace', 'default')}/{meta['name']}" in bound:
                version += 1
                store.apply("Pod", "MODIFIED", {**obj, "metadata": {**meta, "resourceVersion": str(version)}})
        reports.append(
            {
                "cycle": number,
                "steady": number >= seed_cycles,
                "follow_up": follow_up,
                "nodes": len(result.snapshot.nodes),
                "pending": sum(1 for pod in result.snapshot.pods if pod.pending),
                "bound": len(decision.bindings),
                "api_writes": kube.writes,
                "cpu": {name: round(value, 3) for name, value in cpu.items()},
                "status": decision.solver.status,
                "objective": decision.solver.objective,
                "digest": digest(decision),
            }
        )
    scheduler.applier.close()
    return reports


@click.command()
@click.argument("instance", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--cycles", type=int, default=6, show_default=True, help="Steady-state cycles after the first.")
@click.option("--batch", type=int, default=300, show_default=True, help="New pending pods per cycle (whole jobs).")
@click.option("--time-limit", type=float, default=2.0, show_default=True)
@click.option("--seed-cycles", type=int, default=1, show_default=True, help="Cold cycles before the steady state.")
@click.option("--profile", type=click.Path(path_type=Path), help="cProfile each steady cycle to PROFILE.<n>[.<k>].")
@click.option(
    "--cold-idle",
    is_flag=True,
    help="The cold cycles see nothing pending (every pending job held back), as a scheduler started on "
    "a settled cluster, or live_steady_kwok.py's, sees it; the first batch arrives after them.",
)
@click.option(
    "--follow-ups",
    type=int,
    default=0,
    show_default=True,
    help="Cycles after each steady one with no new pods (the live loop's follow-ups once a decision is applied).",
)
def main(
    instance: Path,
    cycles: int,
    batch: int,
    time_limit: float,
    seed_cycles: int,
    profile: Path | None,
    cold_idle: bool,
    follow_ups: int,
) -> None:
    for report in run(instance, cycles, batch, time_limit, seed_cycles, profile, follow_ups, cold_idle):
        click.echo(json.dumps(report))


if __name__ == "__main__":
    main()
