"""The human table of a decision: what ``vcsat solve`` prints by default.

JSON and YAML are for programs (contract §2); this is for a person asking "what happened to my
job, and if it waits, why". One row per PodGroup with its placed pods and, for the rest, the
reason code and message; then nominations and evictions, which need a later cycle to finish.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console
from rich.text import Text

from vcsat.adapters.cli.columns import print_columns
from vcsat.model import Decision, Snapshot, first_short
from vcsat.model.gpu_topology import gpu_topology
from vcsat.model.hypernodes import resolve_hypernodes


def render_decision(decision: Decision, snapshot: Snapshot, console: Console) -> None:
    """Print the header line, the PodGroup table and any nominations and evictions."""
    console.print(Text(header_line(decision)))
    headers = ("podgroup", "phase", "placed", "topology", "reason", "message")
    print_columns(console, headers, _podgroup_rows(decision, snapshot))
    if decision.nominations:
        print_columns(
            console,
            ("pod", "node", "gpus"),
            [(nomination.pod, nomination.node, _gpus(nomination.gpus)) for nomination in decision.nominations],
            title="nominations (bound once the evictions are done)",
        )
    if decision.evictions:
        evictions = [(eviction.pod, eviction.reason) for eviction in decision.evictions]
        print_columns(console, ("pod", "reason"), evictions, title="evictions")


def header_line(decision: Decision) -> str:
    """The solver's status, objective, bound, gap and seconds; then, where the decision may be
    short of a better one, the first level of the objective where it may be (its value, bound and
    gap there), since the gap over placed work is measured at the fair shares this decision gave;
    then the optional steps the cycle skipped for its time limit, if any."""
    stats = decision.solver
    line = (
        f"solver {stats.status}  objective {_number(stats.objective)}  bound {_number(stats.bound)}  "
        f"gap {stats.gap:.2%}  {stats.seconds:.2f} s"
    )
    short = first_short(stats.levels)
    if short is not None:
        line += f"\nfirst level below its bound: {short.level}  {short.value} of {short.bound}  gap {short.gap:.2%}"
    if stats.skipped:
        # A decision made on less than the policy asks says so: a longer --time-limit runs these.
        line += f"\nskipped for the time limit: {', '.join(stats.skipped)}"
    return line


def _number(value: float) -> str:
    """A whole number in full (objectives of large clusters run to millions, which ``g`` rounds)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def placed_text(pod: str, node: str, gpus: list[int], podgroup: str) -> str:
    """``pod→node[0,1]``; the pod's namespace is left out when its PodGroup already says it."""
    namespace, _, name = pod.partition("/")
    shown = name if podgroup.startswith(f"{namespace}/") else pod
    return f"{shown}→{node}{_gpus(gpus)}"


def _podgroup_rows(decision: Decision, snapshot: Snapshot) -> list[tuple[str, ...]]:
    placed = _placed_by_group(decision, snapshot)
    spans = _spans(decision, snapshot)
    return [
        (
            outcome.podgroup,
            outcome.phase,
            "\n".join(placed.get(outcome.podgroup, [])) or "-",
            spans.get(outcome.podgroup, ""),
            outcome.reason,
            outcome.message,
        )
        for outcome in decision.podgroups
    ]


def _group_of(binding_pod: str, snapshot: Snapshot) -> str:
    pod = snapshot.pod_by_key.get(binding_pod)
    return pod.group if pod is not None and pod.group is not None else binding_pod


def _placed_by_group(decision: Decision, snapshot: Snapshot) -> Mapping[str, list[str]]:
    out: dict[str, list[str]] = {}
    for binding in decision.bindings:
        group = _group_of(binding.pod, snapshot)
        text = placed_text(binding.pod, binding.node, binding.gpus, group)
        if len(binding.gpus) > 1:
            text += f" {_bottleneck(snapshot, binding.node, binding.gpus)}"
        out.setdefault(group, []).append(text)
    return out


def _bottleneck(snapshot: Snapshot, node_name: str, gpus: list[int]) -> str:
    """The slowest link inside a multi-GPU pod's set (GB/s per direction)."""
    from vcsat.solver.placement.gpu_choice import bottleneck  # the solver package loads OR-Tools: only when shown

    node = snapshot.node_by_name.get(node_name)
    if node is None:
        return ""
    try:
        topology = gpu_topology(node.gpu_topology, node.gpus)
    except ValueError:
        return ""
    return f"@{bottleneck(topology, gpus):g}GB/s"


def _spans(decision: Decision, snapshot: Snapshot) -> Mapping[str, str]:
    """Per gang placed on more than one node: the HyperNode tier it spans (``tier 1`` = one rack)."""
    nodes: dict[str, set[str]] = {}
    pods: dict[str, int] = {}
    for binding in decision.bindings:
        group = _group_of(binding.pod, snapshot)
        nodes.setdefault(group, set()).add(binding.node)
        pods[group] = pods.get(group, 0) + 1
    tree = None
    if snapshot.hypernodes:
        try:
            tree = resolve_hypernodes(snapshot.hypernodes, snapshot.nodes)
        except ValueError:
            tree = None
    out: dict[str, str] = {}
    for group, names in nodes.items():
        if len(names) == 1:
            if pods[group] > 1:
                out[group] = "one node"
            continue
        tier = tree.span_tier(names) if tree is not None else None
        out[group] = f"{len(names)} nodes, tier {tier}" if tier is not None else f"{len(names)} nodes"
    return out


def _gpus(gpus: list[int]) -> str:
    return f"[{','.join(str(index) for index in gpus)}]" if gpus else ""
