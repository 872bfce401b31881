"""The decision's ``podgroups`` entries with gang scheduling off: one per PodGroup, as with it on.

With ``Policy.gang`` off every pod is placed on its own, so the solver treats each pending pod as a
gang of one and explains each pod. The decision still reports per PodGroup (contract §2; Volcano
keeps a PodGroup's status whether or not its gang plugin runs, and the live scheduler writes it):
the entries of one PodGroup's pods merge into one entry for the PodGroup. It is ``Running`` when
any of its pods is placed; else, when one of its pods is nominated, that pod's entry (it waits for
evictions); else the entry of its first pod by key (why that pod waits), ``Inqueue`` if the
PodGroup already is (nothing demotes an admitted group). A lone pod keeps its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from vcsat.model import PodGroupOutcome, Snapshot

WAITING_FOR_EVICTION = "WaitingForEviction"


def per_podgroup(snapshot: Snapshot, entries: Iterable[PodGroupOutcome]) -> list[PodGroupOutcome]:
    """Merge the per-pod entries of each PodGroup's pods into one entry for it, in key order."""
    merged: dict[str, list[PodGroupOutcome]] = {}
    for entry in entries:
        pod = snapshot.pod_by_key.get(entry.podgroup)
        key = pod.group if pod is not None and pod.group is not None else entry.podgroup
        merged.setdefault(key, []).append(entry)
    out: list[PodGroupOutcome] = []
    for key, members in sorted(merged.items()):
        members.sort(key=lambda entry: entry.podgroup)
        if any(entry.phase == "Running" for entry in members):
            out.append(PodGroupOutcome(podgroup=key, phase="Running"))
            continue
        waiting = [entry for entry in members if entry.reason == WAITING_FOR_EVICTION]
        chosen = (waiting or members)[0]
        group = snapshot.podgroup_by_key.get(key)
        phase = "Inqueue" if group is not None and group.phase == "Inqueue" else chosen.phase
        out.append(chosen.model_copy(update={"podgroup": key, "phase": phase}))
    return out
