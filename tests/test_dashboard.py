"""The web dashboard's pages, rendered from a real solved cycle, and its read-only HTTP server."""

from __future__ import annotations

import html
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import builders as b
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.adapters import cli
from vcsat.adapters.dashboard.hints import WHAT_HELPS
from vcsat.adapters.dashboard.server import Dashboard, render
from vcsat.adapters.dashboard.state import DashboardState
from vcsat.adapters.dashboard.views import node_views
from vcsat.adapters.live.queue_view import QueueRow, share
from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver import solve


@dataclass
class _Report:
    bound: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)


@dataclass
class _Result:
    snapshot: Snapshot
    decision: Decision
    number: int = 1
    trigger: str = "change"
    seconds: float = 0.2
    apply_seconds: float | None = 0.3
    report: Any = field(default_factory=_Report)
    violations: list[Any] = field(default_factory=list)


def _cluster() -> Snapshot:
    """gpu-a: GPU 0 held whole, GPU 1 shared, GPUs 2-3 free; gpu-b: its cpu taken by a cpu-only pod,
    so its two GPUs are stranded for the 1-GPU pods the workload asks; queue train waits with a
    gang too large for any node."""
    pods = [
        b.pod("ml/whole", cpu="1", gpus=1, node="gpu-a", gpu_ids=[0]),
        b.pod("ml/share", cpu="1", gpu_milli=500, node="gpu-a", gpu_ids=[1]),
        b.pod("ml/cpu-hog", cpu="8", node="gpu-b"),
    ]
    waiting, groups = b.gangs("huge", queue="train", size=2, cpu="30", namespace="ml")
    nodes = [b.node("gpu-a", cpu="16", gpus=4), b.node("gpu-b", cpu="8", gpus=2)]
    return b.snapshot(nodes, [*pods, *waiting], groups, [b.queue("train", weight=3, capability={"cpu": "40"})])


@pytest.fixture(scope="module")
def cycle() -> _Result:
    snap = _cluster()
    return _Result(snap, solve(snap, Policy(time_limit_s=5)))


@pytest.fixture
def state(cycle: _Result) -> DashboardState:
    state = DashboardState()
    state.observe(cycle)
    return state


def _text(page: str) -> str:
    """The page as a person reads it: tags out, entities read."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_overview_shows_queues_waiting_groups_gpus_and_the_cycle(state: DashboardState, cycle: _Result) -> None:
    status, page = render(state, "/")
    assert status == 200
    text = _text(page)
    assert "train" in text and "default" in text
    outcome = next(o for o in cycle.decision.podgroups if o.podgroup == "ml/huge-0")
    assert outcome.phase != "Running", "the setting's premise: the gang cannot fit"
    assert 'href="/jobs/ml/huge-0"' in page
    assert outcome.reason in text
    assert "Cycle 1" in text and cycle.decision.solver.status in text
    for section in ("/queues", "/podgroups", "/nodes", "/cycles"):
        assert render(state, section)[0] == 200


def test_job_page_says_why_and_what_would_help(state: DashboardState, cycle: _Result) -> None:
    outcome = next(o for o in cycle.decision.podgroups if o.podgroup == "ml/huge-0")
    status, page = render(state, "/jobs/ml/huge-0")
    assert status == 200
    assert f'<span class="reason" id="reason">{outcome.reason}</span>' in page
    text = _text(page)
    assert WHAT_HELPS[outcome.reason].split(":")[0] in text
    assert "Its waiting pods ask 60000m cpu" in text
    # 60 cores asked against the queue's capability of 40: the page says so.
    assert "Its queue's capability (40000m cpu) is below what its waiting pods ask (60000m cpu)" in text
    assert "huge-0-0" in text and "huge-0-1" in text
    assert render(state, "/jobs/ml/nothing-here")[0] == 404
    assert render(state, "/no/such/page")[0] == 404


def test_gpu_map_tells_held_shared_free_and_stranded(cycle: _Result) -> None:
    nodes = {n.name: n for n in node_views(cycle.snapshot, cycle.decision)}
    assert [c.state for c in nodes["gpu-a"].gpus] == ["held", "shared", "free", "free"]
    assert nodes["gpu-a"].gpus[1].used_milli == 500 and nodes["gpu-a"].gpus[1].pods == ("ml/share",)
    assert [c.state for c in nodes["gpu-b"].gpus] == ["stranded", "stranded"]


def test_values_are_escaped(cycle: _Result) -> None:
    snap = cycle.snapshot
    evil = "<script>alert(1)</script>"
    decision = b.decision(snap, podgroups=[b.outcome("ml/huge-0", "Pending", "Fragmented", evil)])
    state = DashboardState()
    state.observe(_Result(snap, decision))
    for path in ("/", "/podgroups", "/jobs/ml/huge-0"):
        page = render(state, path)[1]
        assert "<script" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_before_any_cycle_the_pages_say_so() -> None:
    state = DashboardState()
    assert "No cycle has run on this replica yet" in render(state, "/")[1]
    assert render(state, "/jobs/a/b")[0] == 200


@pytest.fixture
def served(state: DashboardState) -> Iterator[str]:
    dashboard = Dashboard()
    dashboard.state = state
    dashboard.serve(0, host="127.0.0.1")
    try:
        yield f"http://127.0.0.1:{dashboard.port}"
    finally:
        dashboard.shutdown()


def test_the_server_serves_pages_and_refuses_every_write(served: str) -> None:
    with urllib.request.urlopen(served + "/queues", timeout=5) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        assert "train" in response.read().decode()
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        request = urllib.request.Request(served + "/queues", data=b"x", method=method)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        assert refused.value.code == 405


def test_dashboard_and_metrics_ports_must_differ() -> None:
    result = CliRunner().invoke(cli.main, ["scheduler", "--metrics-port", "9000", "--dashboard-port", "9000"])
    assert result.exit_code == 2
    assert "--dashboard-port" in result.output and "must differ from --metrics-port" in result.output


@settings(max_examples=60, deadline=None)
@given(message=st.text(max_size=80), reason=st.text(min_size=1, max_size=20))
def test_any_reason_and_message_come_back_exactly_as_text(cycle: _Result, message: str, reason: str) -> None:
    """Whatever a message holds (markup, quotes, entities), the page shows it as text, exactly."""
    decision = b.decision(cycle.snapshot, podgroups=[b.outcome("ml/huge-0", "Pending", reason, message)])
    state = DashboardState()
    state.observe(_Result(cycle.snapshot, decision))
    page = render(state, "/jobs/ml/huge-0")[1]
    shown = re.search(r'<p id="message">(.*?)</p>', page, flags=re.DOTALL)
    assert shown is not None and html.unescape(shown.group(1)) == message
    code = re.search(r'<span class="reason" id="reason">(.*?)</span>', page, flags=re.DOTALL)
    assert code is not None and html.unescape(code.group(1)) == reason
    assert "<" not in shown.group(1) and "<" not in code.group(1)


@given(
    st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(0, 10**6)),
    st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(0, 10**6)),
)
def test_queue_share_is_the_largest_ratio_and_overuse_means_every_share_reached(
    allocated: dict[str, int], deserved: dict[str, int]
) -> None:
    value = share(allocated, deserved)
    ratios = [allocated.get(r, 0) / d if d else float(allocated.get(r, 0) > 0) for r, d in deserved.items()]
    assert value == max(ratios, default=0.0)
    row = QueueRow("q", None, 1, True, None, deserved, allocated, {}, {})
    assert row.overused == all(allocated.get(r, 0) >= d for r, d in deserved.items())
    if row.overused and any(deserved.values()):
        assert value >= 1


def test_a_cycle_applied_late_does_not_replace_the_newer_view(cycle: _Result) -> None:
    newer = b.decision(cycle.snapshot, podgroups=[b.outcome("ml/huge-0", "Pending", "QueueOverused", "newer")])
    older = b.decision(cycle.snapshot, podgroups=[b.outcome("ml/huge-0", "Pending", "Fragmented", "older")])
    state = DashboardState()
    state.observe(_Result(cycle.snapshot, newer, number=8))
    state.observe(_Result(cycle.snapshot, older, number=7))
    page = render(state, "/jobs/ml/huge-0")[1]
    assert "QueueOverused" in page and "Fragmented" not in page
    assert [c.number for c in state.seen().cycles] == [7, 8]
