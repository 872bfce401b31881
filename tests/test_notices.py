"""Nothing silent: what a lenient reading (a live cluster, a cluster dump) tolerates but that keeps
work from running (a PodGroup naming a missing queue, a pod naming a missing PodGroup, an invalid
GPU topology) is a notice on the snapshot, a reason in the decision and a warning from ``vcsat solve``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from test_objects import k8s_node, k8s_pod, k8s_podgroup, k8s_queue

from vcsat.adapters.cli import app as cli
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.model import Policy
from vcsat.solver.solve import solve
from vcsat.solver.validator.check import check

BAD_TOPOLOGY = json.dumps({"nodes": [{"id": "g0", "kind": "gpu"}], "edges": []})


def _objects() -> list[dict[str, Any]]:
    return [
        k8s_node("n1", gpus=2, metadata__annotations={"vcsat.io/gpu-topology": BAD_TOPOLOGY}),
        k8s_queue("q"),
        k8s_podgroup("queueless", queue="nope", minMember=1),
        k8s_pod("a", group="queueless"),
        k8s_pod("orphan", group="missing"),
        k8s_pod("fine"),
    ]


def test_a_lenient_reading_lists_what_it_tolerated() -> None:
    snap = snapshot_from_objects(_objects(), strict=False)
    assert sorted((n.kind, n.key, n.reason) for n in snap.notices) == [
        ("Node", "n1", "InvalidGpuTopology"),
        ("Pod", "ns/orphan", "PodGroupNotFound"),
        ("PodGroup", "ns/queueless", "QueueNotFound"),
    ]
    node_notice = next(n for n in snap.notices if n.kind == "Node")
    assert "nodes[0].index" in node_notice.message and "uniformly connected" in node_notice.message
    assert snap.node_by_name["n1"].gpu_topology is None


def test_the_decision_says_why_each_waits() -> None:
    snap = snapshot_from_objects(_objects(), strict=False)
    policy = Policy(time_limit_s=5)
    decision = solve(snap, policy)
    assert check(snap, decision, policy) == []
    assert [b.pod for b in decision.bindings] == ["ns/fine"]
    reasons = {o.podgroup: (o.phase, o.reason) for o in decision.podgroups}
    assert reasons["ns/queueless"] == ("Pending", "QueueNotFound")
    assert reasons["ns/missing"] == ("Pending", "PodGroupNotFound")


def test_a_strict_file_still_refuses_them() -> None:
    import pytest

    from vcsat.adapters.errors import InputError

    with pytest.raises(InputError, match="unknown Queue 'nope'"):
        snapshot_from_objects(_objects()[1:], strict=True)


def test_vcsat_solve_on_a_dump_warns_on_stderr(tmp_path: Path) -> None:
    dump = {"apiVersion": "v1", "kind": "List", "metadata": {"annotations": {"vcsat.io/cluster-dump": "true"}}}
    dump["items"] = _objects()
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump))
    result = CliRunner().invoke(cli.main, ["solve", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("vcsat: warning:")]
    assert len(warnings) == 3
    assert any("PodGroup ns/queueless: QueueNotFound" in line for line in warnings)
    assert any("Pod ns/orphan: PodGroupNotFound" in line for line in warnings)
    assert any("Node n1: InvalidGpuTopology" in line for line in warnings)
    decision = json.loads(result.stdout)
    assert {o["podgroup"]: o["reason"] for o in decision["podgroups"]}["ns/missing"] == "PodGroupNotFound"


def test_with_gang_scheduling_off_a_pod_of_a_missing_podgroup_still_waits() -> None:
    snap = snapshot_from_objects(_objects(), strict=False)
    policy = Policy(time_limit_s=5, gang=False)
    decision = solve(snap, policy)
    assert "ns/orphan" not in {b.pod for b in decision.bindings}
    # With gang off too the decision has an entry per PodGroup, which the validator expects.
    assert check(snap, decision, policy) == []
    assert {o.podgroup: o.reason for o in decision.podgroups}["ns/missing"] == "PodGroupNotFound"


def test_another_schedulers_podgroup_is_not_ours_to_warn_about() -> None:
    objects = [
        k8s_node("n1"),
        k8s_podgroup("theirs", queue="nope", minMember=1),
        k8s_pod("t", group="theirs", scheduler="other-scheduler"),
        k8s_pod("o", group="gone", scheduler="other-scheduler"),
    ]
    assert snapshot_from_objects(objects, strict=False).notices == ()


def test_a_sub_group_policy_is_a_notice() -> None:
    policy = [{"name": "ring", "subGroupSize": 2, "minSubGroups": 1}]
    objects = [
        k8s_node("n1"),
        k8s_queue("default"),
        k8s_podgroup("sub", minMember=2, subGroupPolicy=policy),
        k8s_pod("s0", group="sub"),
        k8s_pod("s1", group="sub"),
        k8s_podgroup("theirs", minMember=1, subGroupPolicy=policy),
        k8s_pod("t", group="theirs", scheduler="other-scheduler"),
    ]
    snap = snapshot_from_objects(objects, strict=False)
    assert [(n.kind, n.key, n.reason) for n in snap.notices] == [("PodGroup", "ns/sub", "SubGroupPolicyIgnored")]
    assert "spec.subGroupPolicy (ring)" in snap.notices[0].message
    # Still placed, as one gang.
    decision = solve(snap, Policy(time_limit_s=5))
    assert sorted(b.pod for b in decision.bindings) == ["ns/s0", "ns/s1"]
