"""The dashboard's HTML: server-rendered pages, every value escaped, no script.

Each page is a function of the dashboard's :class:`~vcsat.adapters.dashboard.state.Seen` (the last
cycle and the cycles before it) that returns a whole document. Text and attribute values go through
:func:`esc` and path segments through :func:`link`, so an object named ``<script>`` shows as text.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterable, Sequence
from urllib.parse import quote

from vcsat.adapters.dashboard.hints import what_would_help
from vcsat.adapters.dashboard.state import CycleSummary, Seen
from vcsat.adapters.dashboard.views import GpuCell, JobView, NodeView, Waiting
from vcsat.adapters.live.queue_view import QueueRow
from vcsat.model import resources as res

REFRESH_S = 10
NAV = (("/", "Overview"), ("/queues", "Queues"), ("/podgroups", "Waiting"), ("/nodes", "GPUs"), ("/cycles", "Cycles"))
STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
nav a{margin-right:1em} h1{font-size:1.4em} h2{font-size:1.15em;margin-top:1.5em}
table{border-collapse:collapse;margin:.5em 0} th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f3f3f3} td.num{text-align:right} .muted{color:#777} .reason{font-weight:600}
.gpus{display:flex;gap:3px} .gpu{width:1.6em;height:1.6em;border:1px solid #555;font-size:.7em;
text-align:center;line-height:1.6em} .held{background:#d9534f;color:#fff} .shared{background:#f0ad4e}
.free{background:#5cb85c;color:#fff} .stranded{background:#777;color:#fff} .unavailable{background:#ddd}
.bar{background:#eee;width:8em;height:.8em;display:inline-block} .bar span{background:#337ab7;height:.8em;display:block}
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def link(*segments: str) -> str:
    return "/" + "/".join(quote(segment, safe="") for segment in segments)


def job_link(key: str) -> str:
    namespace, _, name = key.partition("/")
    return f'<a href="{esc(link("jobs", namespace, name))}">{esc(key)}</a>'


def document(title: str, body: str) -> str:
    nav = " ".join(f'<a href="{esc(href)}">{esc(text)}</a>' for href, text in NAV)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="{REFRESH_S}">'
        f"<title>{esc(title)} · vcsat</title><style>{STYLE}</style></head>"
        f"<body><nav>{nav}</nav><h1>{esc(title)}</h1>{body}</body></html>\n"
    )


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Iterable[int] = ()) -> str:
    """A table; cells are HTML already escaped by the caller."""
    right = set(numeric)
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="num">{c}</td>' if i in right else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _vector(vector: dict[str, int] | None, none: str = "–") -> str:
    if vector is None:
        return f'<span class="muted">{esc(none)}</span>'
    shown = {k: v for k, v in vector.items() if v and k != res.PODS}
    return esc(res.format_vector(shown)) if shown else '<span class="muted">0</span>'


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def _no_cycle(seen: Seen) -> str:
    return (
        '<p class="muted">No cycle has run on this replica yet'
        + (" (it stands by while another replica leads)." if not seen.leading else ".")
        + "</p>"
    )


# --- sections ------------------------------------------------------------------------------------


def queues_section(rows: Sequence[QueueRow]) -> str:
    def share_cell(row: QueueRow) -> str:
        width = min(100, round(row.share * 100))
        return f'<span class="bar"><span style="width:{width}%"></span></span> {row.share:.2f}'

    table = _table(
        ["Queue", "State", "Weight", "Deserved", "Allocated", "Capability", "Share", "Running", "Inqueue", "Pending"],
        (
            [
                esc(row.name) + (f' <span class="muted">(in {esc(row.parent)})</span>' if row.parent else ""),
                "Open" if row.open else "Closed",
                esc(row.weight),
                _vector(row.deserved),
                _vector(row.allocated),
                _vector(row.capability, "unbounded"),
                share_cell(row),
                esc(row.podgroups.get("Running", 0)),
                esc(row.podgroups.get("Inqueue", 0)),
                esc(row.podgroups.get("Pending", 0)),
            ]
            for row in rows
        ),
        numeric=(2, 7, 8, 9),
    )
    return (
        '<h2 id="queues">Queues</h2><p class="muted">Share: the largest allocated/deserved over resources '
        "(Volcano's). Allocated counts the last decision's bindings and evictions.</p>" + table
    )


def waiting_section(rows: Sequence[Waiting]) -> str:
    if not rows:
        return '<h2 id="waiting">Waiting PodGroups</h2><p class="muted">None: the last cycle left none waiting.</p>'
    table = _table(
        ["PodGroup", "Queue", "Phase", "Reason", "Message", "Pods (pending / min)"],
        (
            [
                job_link(row.key),
                esc(row.queue),
                esc(row.phase),
                f'<span class="reason">{esc(row.reason)}</span>',
                esc(row.message),
                f"{esc(row.pending)} / {esc(row.min_member)}",
            ]
            for row in rows
        ),
    )
    return f'<h2 id="waiting">Waiting PodGroups ({len(rows)})</h2>' + table


def nodes_section(nodes: Sequence[NodeView]) -> str:
    gpu_nodes = [node for node in nodes if node.gpus]
    totals = {state: sum(node.count(state) for node in gpu_nodes) for state in ("held", "shared", "free", "stranded")}
    legend = " ".join(
        f'<span class="gpu {s}" style="display:inline-block">{esc(n)}</span> {esc(s)}' for s, n in totals.items()
    )
    rows = []
    for node in nodes:
        cells = "".join(
            f'<span class="gpu {esc(cell.state)}" title="{esc(_cell_title(cell))}">{esc(cell.index)}</span>'
            for cell in node.gpus
        )
        rows.append(
            [
                esc(node.name) + ("" if node.schedulable else ' <span class="muted">(takes nothing new)</span>'),
                f'<div class="gpus">{cells}</div>' if cells else '<span class="muted">no GPUs</span>',
                " / ".join(esc(node.count(s)) for s in ("held", "shared", "free", "stranded")) if node.gpus else "",
                _vector({k: v for k, v in node.free.items() if k in (res.CPU, res.MEMORY)}),
                esc(node.pods),
            ]
        )
    table = _table(["Node", "GPUs", "held / shared / free / stranded", "Free cpu, memory", "Pods"], rows, numeric=(4,))
    return (
        '<h2 id="nodes">Nodes and GPUs</h2>'
        f"<p>{legend}</p>"
        '<p class="muted">Stranded: free, but no GPU task type of the current workload fits the cpu, '
        "memory and GPU room the node has left (fragmentation).</p>" + table
    )


def _cell_title(cell: GpuCell) -> str:
    text = f"GPU {cell.index}: {cell.state}"
    if cell.state == "shared":
        text += f" ({cell.used_milli}/1000 used)"
    if cell.pods:
        text += " by " + ", ".join(cell.pods)
    return text


def cycles_section(cycles: Sequence[CycleSummary]) -> str:
    if not cycles:
        return '<h2 id="cycles">Cycles</h2><p class="muted">None yet.</p>'
    table = _table(
        ["Cycle", "Time", "Trigger", "Solver", "Gap", "Seconds", "Bound", "Evicted", "Waiting", "Violations"],
        (
            [
                esc(c.number),
                esc(_when(c.at)),
                esc(c.trigger),
                esc(c.status),
                esc(f"{c.gap:.4%}"),
                esc(f"{c.seconds:.3f}"),
                esc(c.bound),
                esc(c.evicted),
                esc(c.waiting),
                esc(c.violations),
            ]
            for c in reversed(cycles)
        ),
        numeric=(0, 4, 5, 6, 7, 8, 9),
    )
    return f'<h2 id="cycles">Last cycles ({len(cycles)})</h2>' + table


# --- pages ---------------------------------------------------------------------------------------


def overview(seen: Seen) -> str:
    if seen.last is None:
        return document("vcsat scheduler", _no_cycle(seen))
    last = seen.cycles[-1]
    summary = (
        f"<p>Cycle {esc(last.number)} at {esc(_when(last.at))}: solver {esc(last.status)}, "
        f"gap {esc(f'{last.gap:.4%}')}, "
        f"{esc(last.bound)} bound, {esc(last.waiting)} PodGroups waiting.</p>"
    )
    body = summary + queues_section(seen.queues()) + waiting_section(seen.waiting()) + nodes_section(seen.nodes())
    return document("vcsat scheduler", body + cycles_section(seen.cycles[-10:]))


def section_page(seen: Seen, which: str) -> str:
    titles = {"queues": "Queues", "podgroups": "Waiting PodGroups", "nodes": "Nodes and GPUs", "cycles": "Cycles"}
    if which == "cycles":
        return document(titles[which], cycles_section(seen.cycles))
    if seen.last is None:
        return document(titles[which], _no_cycle(seen))
    body = {
        "queues": lambda: queues_section(seen.queues()),
        "podgroups": lambda: waiting_section(seen.waiting()),
        "nodes": lambda: nodes_section(seen.nodes()),
    }[which]()
    return document(titles[which], body)


def job_page(seen: Seen, key: str) -> tuple[int, str]:
    """The page of one PodGroup (or lone pod): why it waits and what would let it run."""
    title = f"PodGroup {key}"
    if seen.last is None:
        return 200, document(title, _no_cycle(seen))
    job = seen.job(key)
    if not job.exists:
        return 404, document(title, "<p>The last cycle's snapshot has no such PodGroup or pod.</p>")
    queue = next((row for row in seen.queues() if row.name == job.queue), None)
    return 200, document(title, _job_body(job, queue))


def _job_body(job: JobView, queue: QueueRow | None) -> str:
    facts = _table(
        ["Queue", "Phase", "minMember", "Pods"],
        [[esc(job.queue), esc(job.phase), esc(job.min_member), esc(len(job.pods))]],
    )
    outcome = job.outcome
    if outcome is None:
        why = '<p class="muted">The last cycle had nothing to decide for it (no pending pods).</p>'
    elif outcome.phase == "Running":
        why = "<p>It is not pending: the last cycle placed it.</p>"
    else:
        why = (
            f'<p>Reason: <span class="reason" id="reason">{esc(outcome.reason or "Unknown")}</span></p>'
            f'<p id="message">{esc(outcome.message)}</p>'
        )
    helps = "".join(f"<li>{esc(line)}</li>" for line in what_would_help(job, queue))
    notices = "".join(f"<li>{esc(n)}</li>" for n in job.notices)
    pods = _table(
        ["Pod", "State", "Node", "Requests"],
        ([esc(p.name), esc(p.state), esc(p.node), _vector(p.requests)] for p in job.pods),
    )
    return (
        facts
        + "<h2>Why is it pending?</h2>"
        + why
        + "<h2>What would let it run?</h2>"
        + f"<ul>{helps}</ul>"
        + (f"<h2>Input problems</h2><ul>{notices}</ul>" if notices else "")
        + "<h2>Pods</h2>"
        + pods
    )
