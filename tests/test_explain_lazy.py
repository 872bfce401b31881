"""Lazy explanations: ``Policy.explain_per_queue`` full examinations per queue, ``NotExamined`` for
the rest, and ``vcsat explain`` giving on demand exactly what a cycle with no cut-off gives."""

from __future__ import annotations

from typing import Any

import pytest
from builders import node, pod, queue, snapshot
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcsat.adapters.cli.app import main
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.generator import GeneratorOptions, generate_instance
from vcsat.model import Decision, Policy, Snapshot
from vcsat.solver import solve
from vcsat.solver.explain import NOT_EXAMINED
from vcsat.solver.on_demand import explain_one

BASE = Policy(time_limit_s=2, preempt=False, reclaim=False)


def reasons(snap: Snapshot, limit: int | None, **policy: Any) -> dict[str, str]:
    decision = solve(snap, BASE.model_copy(update={"explain_per_queue": limit, **policy}), wall=False)
    return {o.podgroup: o.reason for o in decision.podgroups}


def crowded(queues: tuple[str, ...] = ("default",), jobs: int = 4) -> Snapshot:
    """One 4-CPU node; per queue ``jobs`` lone 4-CPU pods (never held back by admission): one is
    placed, the others wait although each fits on its own."""
    pods = [
        pod(f"{name}/p{j}", cpu="4", queue_name=None if name == "default" else name, created=float(j))
        for name in queues
        for j in range(jobs)
    ]
    return snapshot(
        nodes=[node("n1", cpu="4")], pods=pods, queues=[queue(name) for name in queues if name != "default"]
    )


FULL = "a full reason"
"""Any reason but the cheap ones and NotExamined: the trial placement was made."""

CASES: list[tuple[str, Snapshot, int | None, dict[str, str]]] = [
    ("every group examined", crowded(), None, {"default/p1": FULL, "default/p2": FULL, "default/p3": FULL}),
    (
        "the first one examined",
        crowded(),
        1,
        {"default/p1": FULL, "default/p2": NOT_EXAMINED, "default/p3": NOT_EXAMINED},
    ),
    ("none examined", crowded(), 0, {"default/p1": NOT_EXAMINED, "default/p2": NOT_EXAMINED}),
    (
        "counted per queue",
        crowded(("qa", "qb"), jobs=3),
        1,
        # qa's first waiting pod holds its deserved share once examined, qb's is outranked.
        {"qa/p1": "QueueOverused", "qa/p2": NOT_EXAMINED, "qb/p0": "Outranked", "qb/p1": NOT_EXAMINED},
    ),
    (
        "cheap reasons past the limit: too little free in the whole cluster",
        snapshot(
            nodes=[node("n1", cpu="8")],
            pods=[pod("ns/run", cpu="6", node="n1"), pod("ns/small", cpu="1"), pod("ns/big", cpu="4", created=5.0)],
        ),
        0,
        {"ns/big": "InsufficientResources"},
    ),
    (
        "cheap reasons past the limit: the queue's capability",
        snapshot(
            nodes=[node("n1", cpu="16")],
            pods=[pod(f"ns/c{j}", cpu="4", queue_name="capped", created=float(j)) for j in range(3)],
            queues=[queue("capped", capability={"cpu": "8"})],
        ),
        0,
        {"ns/c2": "QueueOverused"},
    ),
]
CHEAP = {"InsufficientResources", "QueueOverused", NOT_EXAMINED, ""}


@pytest.mark.parametrize(("snap", "limit", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reasons_by_limit(snap: Snapshot, limit: int | None, want: dict[str, str]) -> None:
    got = reasons(snap, limit)
    seen = {key: FULL if got[key] not in CHEAP and want[key] == FULL else got[key] for key in want}
    assert seen == want


def test_not_examined_says_how_to_get_the_full_reason() -> None:
    decision = solve(crowded(), BASE.model_copy(update={"explain_per_queue": 1}), wall=False)
    entry = next(o for o in decision.podgroups if o.reason == NOT_EXAMINED)
    assert entry.podgroup == "default/p2"
    assert entry.phase in ("Pending", "Inqueue")
    assert f"vcsat explain INSTANCE {entry.podgroup}" in entry.message
    assert "first 1 waiting groups of queue default" in entry.message
    assert "explain_per_queue" in entry.message


def without_reasons(decision: Decision) -> dict[str, Any]:
    data = decision.model_dump(mode="json")
    data["solver"].pop("seconds")
    data["podgroups"] = [(o["podgroup"], o["phase"]) for o in data["podgroups"]]
    return data


def generated(seed: int, nodes: int, jobs: int, extra: dict[str, Any]) -> Snapshot:
    instance = generate_instance(GeneratorOptions(nodes=nodes, pending_jobs=jobs, seed=seed, **extra))
    return snapshot_from_objects(instance["items"], source="generated")


SHAPES = st.sampled_from(
    [
        {},
        {"busy_gpu_fraction": 0.8},
        {"multi_node_job_share": 0.4, "rack_size": 4},
        {"anti_affinity_share": 0.3},
        {"spread_job_share": 0.3, "rack_size": 4},
    ]
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    nodes=st.integers(4, 12),
    jobs=st.integers(6, 30),
    extra=SHAPES,
    limit=st.sampled_from([0, 1, 2]),
)
def test_on_demand_gives_what_the_eager_cycle_gives(
    seed: int, nodes: int, jobs: int, extra: dict[str, Any], limit: int
) -> None:
    snap = generated(seed, nodes, jobs, extra)
    policy = Policy(time_limit_s=1, explain_per_queue=limit)
    lazy = solve(snap, policy, wall=False)
    eager = solve(snap, policy.model_copy(update={"explain_per_queue": None}), wall=False)
    # The cut-off changes reasons only, never a placement, an eviction or the solver's numbers.
    assert without_reasons(lazy) == without_reasons(eager)
    full = {o.podgroup: o for o in eager.podgroups}
    assert NOT_EXAMINED not in {o.reason for o in full.values()}
    skipped = []
    for entry in lazy.podgroups:
        assert entry.phase == "Running" or entry.reason, "every waiting group has a reason"
        if entry.reason == NOT_EXAMINED:
            skipped.append(entry.podgroup)
        else:
            # Examined groups get the eager reason whatever was skipped before them.
            assert entry == full[entry.podgroup]
    for key in skipped[:: max(1, len(skipped) // 3)][:3]:  # each on-demand answer solves the cycle again
        _, on_demand = explain_one(snap, policy, key, wall=False)
        assert on_demand == full[key]
    if limit == 0:
        assert not any(o.reason in ("Outranked", "Fragmented") for o in lazy.podgroups)


def test_cli_explain(tmp_path: Any) -> None:
    objects = generate_instance(GeneratorOptions(nodes=6, pending_jobs=30, seed=4))
    path = tmp_path / "instance.json"
    import json

    path.write_text(json.dumps(objects))
    policy = tmp_path / "policy.yaml"
    policy.write_text("explain_per_queue: 0\ntime_limit_s: 1\n")
    snap = snapshot_from_objects(objects["items"], source=str(path))
    lazy = solve(snap, Policy(time_limit_s=1, explain_per_queue=0), wall=False)
    skipped = [o for o in lazy.podgroups if o.reason == NOT_EXAMINED]
    assert skipped, "the case has a group left unexamined"
    runner = CliRunner()
    result = runner.invoke(main, ["explain", str(path), skipped[0].podgroup, "--policy", str(policy), "-o", "json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.output)
    assert got["podgroup"] == skipped[0].podgroup
    assert got["reason"] not in ("", NOT_EXAMINED)
    table = runner.invoke(main, ["explain", str(path), skipped[0].podgroup, "--policy", str(policy)])
    assert table.exit_code == 0 and got["reason"] in table.output
    missing = runner.invoke(main, ["explain", str(path), "nobody/none"])
    assert missing.exit_code == 2
    assert "nobody/none" in missing.output
