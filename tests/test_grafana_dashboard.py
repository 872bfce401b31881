"""deploy/grafana's dashboard queries only series vcsat emits, and shows what the operator needs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import builders as b
from prometheus_client.parser import text_string_to_metric_families

from vcsat.adapters.live.metrics import Metrics
from vcsat.model import Policy
from vcsat.solver import solve

DASHBOARD = Path(__file__).resolve().parent.parent / "deploy" / "grafana" / "vcsat-scheduler.json"
METRIC = re.compile(r"\b(?:vcsat|volcano)_[a-zA-Z0-9_:]+")


class _Report:
    def __init__(self, bound: list[str]) -> None:
        self.bound, self.failed, self.evicted = bound, [], []


class _Cycle:
    """A cycle that binds one gang and leaves one waiting (the pending-by-reason gauge shows only then)."""

    def __init__(self) -> None:
        fits, fits_groups = b.gangs("fits", size=2, cpu="1")
        waits, waits_groups = b.gangs("waits", size=2, cpu="3", queue="q")
        queues = [b.queue("q", capability={"cpu": "8"})]
        self.snapshot = b.snapshot([b.node("n", cpu="4", gpus=1)], fits + waits, fits_groups + waits_groups, queues)
        self.decision = solve(self.snapshot, Policy(time_limit_s=5))
        self.report = _Report([binding.pod for binding in self.decision.bindings])
        self.seconds = 0.1
        self.snapshot_seconds = 0.01


def _emitted() -> set[str]:
    """Every sample name a scheduler's /metrics serves once a cycle has run."""
    metrics = Metrics()
    cycle = _Cycle()
    metrics.observe_cycle(cycle.decision, 0.2)
    metrics.observe_result(cycle)
    metrics.observe_trigger("start")
    metrics.observe_idle_periods(1)
    metrics.observe_bound(1)
    metrics.observe_evictions(0)
    metrics.set_leader(True)
    text = metrics.exposition().decode()
    return {sample.name for family in text_string_to_metric_families(text) for sample in family.samples}


def _queries(node: Any) -> list[str]:
    """Every PromQL string of the dashboard: panel targets and templating queries."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            promql = key in ("expr", "definition") or (key == "query" and "(" in str(value))
            if promql and isinstance(value, str):
                found.append(value)
            else:
                found.extend(_queries(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_queries(item))
    return found


def test_every_query_names_only_emitted_series() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    queries = _queries(dashboard)
    named = {name for query in queries for name in METRIC.findall(query)}
    assert named, "the dashboard queries something"
    emitted = _emitted()
    assert sorted(named - emitted) == []


def test_every_panel_queries_a_metric_and_the_needed_views_are_there() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    panels = dashboard["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels)
    for panel in panels:
        assert panel["targets"] and all(METRIC.search(t["expr"]) for t in panel["targets"]), panel["title"]
    everything = " ".join(_queries(dashboard))
    for needed in ("volcano_queue_share", "vcsat_cycle_seconds_bucket", "vcsat_solver_relative_gap"):
        assert needed in everything
    assert "sum by (reason) (vcsat_pending_podgroups)" in everything  # waiting groups by reason
    assert dashboard["uid"] and dashboard["title"]
