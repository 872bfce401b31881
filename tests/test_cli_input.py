"""``vcsat solve``: exit statuses, one-line errors for bad input, and the three output formats.

The solver is replaced by a stand-in here (a fake ``vcsat.solver`` module), so these tests are
about the command line, not about decisions.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import types
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from tests.scripts import run_saying_loaded
from vcsat.adapters.cli import app as cli
from vcsat.adapters.cli.render import header_line
from vcsat.model import (
    Binding,
    Decision,
    Eviction,
    LevelBound,
    Nomination,
    PodGroupOutcome,
    Policy,
    Snapshot,
    SolverStats,
)

INSTANCE = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status: {allocatable: {cpu: "8", memory: 8Gi, pods: "10", nvidia.com/gpu: "2"}}
- apiVersion: scheduling.volcano.sh/v1beta1
  kind: PodGroup
  metadata: {name: pg, namespace: ns}
  spec: {minMember: 1}
- apiVersion: v1
  kind: Pod
  metadata:
    name: p
    namespace: ns
    annotations: {scheduling.k8s.io/group-name: pg}
  spec:
    schedulerName: vcsat
    containers:
    - name: c
      resources:
        requests: {cpu: 500m}
        limits: {nvidia.com/gpu: 1}
"""


class FakeSolver:
    """Stands in for ``vcsat.solver``: binds every pending pod to the first node."""

    def __init__(self) -> None:
        self.policies: list[Policy] = []
        self.started: list[float | None] = []
        self.violations: list[str] = []
        self.error: Exception | None = None

    def solve(
        self, snapshot: Snapshot, policy: Policy, *, started: float | None = None, skip: Collection[str] = ()
    ) -> Decision:
        self.policies.append(policy)
        self.started.append(started)
        if self.error is not None:
            raise self.error
        pending = [pod for pod in snapshot.pods if pod.pending]
        node = snapshot.nodes[0].name
        return Decision(
            bindings=[Binding(pod=pod.key, node=node, gpus=list(range(pod.gpus))) for pod in pending],
            nominations=[Nomination(pod="ns/later", node=node)],
            evictions=[Eviction(pod="ns/victim", reason="preempt")],
            podgroups=[
                PodGroupOutcome(podgroup="ns/pg", phase="Running"),
                PodGroupOutcome(podgroup="ns/big", phase="Pending", reason="Unschedulable", message="no node fits"),
            ],
            solver=SolverStats(status="FEASIBLE", objective=10.0, bound=12.0, seconds=0.25),
        )

    def check(self, snapshot: Snapshot, decision: Decision, policy: Policy) -> list[str]:
        return self.violations


@pytest.fixture
def solver(monkeypatch: pytest.MonkeyPatch) -> FakeSolver:
    fake = FakeSolver()
    module = types.ModuleType("vcsat.solver")
    module.solve = fake.solve  # type: ignore[attr-defined]
    module.check = fake.check  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vcsat.solver", module)
    return fake


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli.main, list(args), env=env)


def write(tmp_path: Path, text: str | bytes, name: str = "in.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# --- success ----------------------------------------------------------------------------------


def test_the_time_limit_counts_from_the_command_start(tmp_path: Path, solver: FakeSolver) -> None:
    """The cycle's clock starts before the file is read: the time limit covers reading it."""
    path = write(tmp_path, INSTANCE)
    before = time.monotonic()
    result = run("solve", str(path), "--output", "json")
    after = time.monotonic()
    assert result.exit_code == 0, result.stderr
    (started,) = solver.started
    assert started is not None and before <= started <= after


def test_json_output_is_the_decision(tmp_path: Path, solver: FakeSolver) -> None:
    result = run("solve", str(write(tmp_path, INSTANCE)), "--output", "json")
    assert result.exit_code == 0, result.stderr
    printed = json.loads(result.stdout)
    assert list(printed) == ["bindings", "nominations", "evictions", "podgroups", "solver"]
    assert printed["bindings"] == [{"pod": "ns/p", "node": "n1", "gpus": [0]}]
    assert printed["solver"]["status"] == "FEASIBLE"
    assert result.stderr == ""


def test_yaml_output_keeps_the_contract_order(tmp_path: Path, solver: FakeSolver) -> None:
    result = run("solve", str(write(tmp_path, INSTANCE)), "-o", "yaml")
    assert result.exit_code == 0, result.stderr
    printed = yaml.safe_load(result.stdout)
    assert list(printed) == ["bindings", "nominations", "evictions", "podgroups", "solver"]
    assert printed["podgroups"][1] == {
        "podgroup": "ns/big",
        "phase": "Pending",
        "reason": "Unschedulable",
        "message": "no node fits",
    }


def test_table_output(tmp_path: Path, solver: FakeSolver) -> None:
    result = run("solve", str(write(tmp_path, INSTANCE)))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "solver FEASIBLE  objective 10  bound 12  gap 16.67%  0.25 s"
    assert any("ns/pg" in line and "Running" in line and "p→n1[0]" in line for line in lines)
    assert any("ns/big" in line and "Unschedulable" in line and "no node fits" in line for line in lines)
    assert "nominations" in result.stdout and "ns/later" in result.stdout
    assert "evictions" in result.stdout and "ns/victim" in result.stdout
    assert "\x1b[" not in result.stdout  # no colour into a pipe


def test_options_and_policy_file_reach_the_solver(tmp_path: Path, solver: FakeSolver) -> None:
    policy = write(tmp_path, "time_limit_s: 3\nrandom_seed: 7\nnum_workers: 2\n", "policy.yaml")
    result = run("solve", str(write(tmp_path, INSTANCE)), "--policy", str(policy), "--time-limit", "1.5", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert solver.policies == [Policy(time_limit_s=1.5, random_seed=7, num_workers=2)]
    run("solve", str(write(tmp_path, INSTANCE)), "--workers", "4", "-o", "json")
    assert solver.policies[-1] == Policy(num_workers=4)
    run("solve", str(write(tmp_path, INSTANCE)), "--relative-gap", "0", "-o", "json")
    assert solver.policies[-1] == Policy(relative_gap=0.0)  # the full search, whatever the default


def test_policy_scheduler_name_decides_which_pods_are_ours(tmp_path: Path, solver: FakeSolver) -> None:
    policy = write(tmp_path, "scheduler_name: volcano\n", "policy.yaml")
    result = run("solve", str(write(tmp_path, INSTANCE)), "--policy", str(policy), "-o", "json")
    assert json.loads(result.stdout)["bindings"] == []  # the pod asks for vcsat, not volcano


def test_without_instance_the_built_in_demo_is_solved(
    tmp_path: Path, solver: FakeSolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "data").mkdir()
    write(tmp_path / "data", INSTANCE, "demo.yaml")
    monkeypatch.setattr(cli.importlib.resources, "files", lambda package: tmp_path)
    result = run("solve", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["bindings"][0]["pod"] == "ns/p"


# --- exit 1: bugs -----------------------------------------------------------------------------


def test_a_decision_that_breaks_a_rule_is_never_printed(tmp_path: Path, solver: FakeSolver) -> None:
    solver.violations = ["node n1 over cpu", "gang ns/pg split"]
    result = run("solve", str(write(tmp_path, INSTANCE)), "-o", "json")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "breaks 2 hard rule(s)" in result.stderr
    assert "node n1 over cpu" in result.stderr and "gang ns/pg split" in result.stderr


def test_an_internal_error_is_one_line(tmp_path: Path, solver: FakeSolver) -> None:
    solver.error = RuntimeError("boom\nsecond line")
    result = run("solve", str(write(tmp_path, INSTANCE)))
    assert result.exit_code == 1
    assert result.stderr == "vcsat: internal error: RuntimeError: boom second line\n"


def test_vcsat_debug_shows_the_traceback(tmp_path: Path, solver: FakeSolver) -> None:
    solver.error = RuntimeError("boom")
    result = run("solve", str(write(tmp_path, INSTANCE)), env={"VCSAT_DEBUG": "1"})
    assert result.exit_code == 1
    assert "Traceback" in result.stderr
    assert result.stderr.endswith("vcsat: internal error: RuntimeError: boom\n")


# --- exit 2: bad input, one line naming file, object and field --------------------------------


def _instance_with(old: str, new: str) -> str:
    assert old in INSTANCE
    return INSTANCE.replace(old, new)


BAD_INSTANCES = [
    pytest.param(b"", ["in.yaml: file is empty"], id="empty file"),
    pytest.param(b"\x00\x01\x02\xff\xfe binary", ["in.yaml: binary data"], id="binary garbage"),
    pytest.param(b"\xc3\x28 not utf-8", ["in.yaml: not UTF-8 text"], id="not UTF-8"),
    pytest.param(
        INSTANCE.replace("  spec: {minMember: 1}", "  spec: {minMember: 1"),
        ["in.yaml: invalid YAML at line 12, column 13"],
        id="malformed YAML",
    ),
    pytest.param(
        _instance_with("requests: {cpu: 500m}", "requests: {cpu: 5 cores}"),
        ["in.yaml: Pod ns/p: spec.containers[0].resources.requests.cpu: not a quantity: '5 cores'"],
        id="bad quantity",
    ),
    pytest.param(
        _instance_with("requests: {cpu: 500m}", "requests: {cpu: -1}"),
        ["in.yaml: Pod ns/p: spec.containers[0].resources.requests.cpu: must not be negative"],
        id="negative quantity",
    ),
    pytest.param(
        _instance_with("spec: {minMember: 1}", "spec: {minMember: one}"),
        ["in.yaml: PodGroup ns/pg: spec.minMember: must be an integer, not a string"],
        id="wrong type",
    ),
    pytest.param(
        _instance_with("spec: {minMember: 1}", "spec: {minMember: 1, queue: research}"),
        ["in.yaml: PodGroup ns/pg: spec.queue: unknown Queue 'research'"],
        id="unknown queue",
    ),
    pytest.param(
        _instance_with("group-name: pg}", "group-name: other}"),
        ["in.yaml: Pod ns/p: metadata.annotations", "unknown PodGroup 'ns/other'"],
        id="unknown podgroup",
    ),
    pytest.param(
        _instance_with("    schedulerName: vcsat", "    schedulerName: vcsat\n    priorityClassName: gold"),
        ["in.yaml: Pod ns/p: spec.priorityClassName: unknown PriorityClass 'gold'"],
        id="unknown priority class",
    ),
    pytest.param(
        _instance_with("    schedulerName: vcsat", "    schedulerName: vcsat\n    nodeName: gone"),
        ["in.yaml: Pod ns/p: spec.nodeName: unknown Node 'gone'"],
        id="unknown node",
    ),
    pytest.param(
        _instance_with("  metadata: {name: n1}\n", "  metadata: {labels: {a: b}}\n"),
        ["in.yaml: Node: objects[0].metadata.name: missing"],
        id="missing name",
    ),
    pytest.param(
        _instance_with("- apiVersion: v1\n  kind: Node", "- kind: Node"),
        ["in.yaml: Node n1: items[0].apiVersion: missing"],
        id="missing apiVersion",
    ),
    pytest.param(
        b"- just\n- words\n",
        ["in.yaml: [0]: must be an object (a mapping), not the text 'just'"],
        id="list of text",
    ),
    pytest.param(b"kind: List\nitems: 3\n", ["in.yaml: items: must be a list, not int"], id="items not a list"),
    pytest.param(
        INSTANCE + INSTANCE[INSTANCE.index("- apiVersion: v1\n  kind: Pod") :],
        ["duplicate object"],
        id="duplicate",
    ),
    pytest.param(
        INSTANCE
        + "- apiVersion: v1\n  kind: PersistentVolumeClaim\n  metadata: {name: data, namespace: ns}\n"
        + "  spec: {accessModes: [ReadWriteSometimes]}\n",
        ["in.yaml: PersistentVolumeClaim ns/data: spec.accessModes[0]: must be one of"],
        id="bad claim access mode",
    ),
]


@pytest.mark.parametrize(("content", "expected"), BAD_INSTANCES)
def test_bad_instances_exit_2_with_one_line(
    tmp_path: Path, solver: FakeSolver, content: str | bytes, expected: list[str]
) -> None:
    path = write(tmp_path, content)
    result = run("solve", str(path))
    assert_one_line_error(result, [*expected, str(tmp_path)])
    assert solver.policies == []  # the solver never ran


def test_missing_file_and_directory(tmp_path: Path, solver: FakeSolver) -> None:
    assert_one_line_error(run("solve", str(tmp_path / "nope.yaml")), ["nope.yaml: no such file"])
    assert_one_line_error(run("solve", str(tmp_path)), [f"{tmp_path}: is a directory"])


BAD_POLICIES = [
    pytest.param(
        "time_limit: 3\n",
        ["policy.yaml: Policy: time_limit: Extra inputs are not permitted"],
        id="unknown key",
    ),
    pytest.param(
        "time_limit_s: -1\n",
        ["policy.yaml: Policy: time_limit_s: Input should be greater than 0"],
        id="bad value",
    ),
    pytest.param("num_workers: many\n", ["policy.yaml: Policy: num_workers:"], id="wrong type"),
    pytest.param("- 1\n", ["policy.yaml: the top level must be a mapping"], id="not a mapping"),
    pytest.param("a: [\n", ["policy.yaml: invalid YAML at line 2"], id="malformed"),
]


@pytest.mark.parametrize(("content", "expected"), BAD_POLICIES)
def test_bad_policy_files(tmp_path: Path, solver: FakeSolver, content: str, expected: list[str]) -> None:
    policy = write(tmp_path, content, "policy.yaml")
    result = run("solve", str(write(tmp_path, INSTANCE)), "--policy", str(policy))
    assert_one_line_error(result, expected)


USAGE = [
    pytest.param(["solve", "x.yaml", "--output", "xml"], ["'xml' is not one of 'table', 'json', 'yaml'"], id="output"),
    pytest.param(["solve", "x.yaml", "--time-limit", "0"], ["--time-limit", "x>0"], id="time limit zero"),
    pytest.param(["solve", "x.yaml", "--time-limit", "soon"], ["'soon' is not a valid float"], id="time limit text"),
    pytest.param(["solve", "x.yaml", "--workers", "0"], ["--workers", "x>=1"], id="workers"),
    pytest.param(["solve", "x.yaml", "--relative-gap", "-1"], ["--relative-gap", "x>=0"], id="relative gap"),
    pytest.param(["solve", "x.yaml", "--frobnicate"], ["No such option", "frobnicate"], id="unknown option"),
    pytest.param(["solve", "a.yaml", "b.yaml"], ["unexpected extra argument (b.yaml)"], id="two instances"),
    pytest.param(["solvee"], ["No such command 'solvee'"], id="unknown command"),
]


@pytest.mark.parametrize(("args", "expected"), USAGE)
def test_usage_errors_are_one_line(solver: FakeSolver, args: list[str], expected: list[str]) -> None:
    assert_one_line_error(run(*args), ["--help", *expected])


def test_the_installed_command(tmp_path: Path) -> None:
    """The console script itself, in a fresh process: bad input exits 2 with one line."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from vcsat.adapters.cli.app import main; main()",
            "solve",
            str(tmp_path / "none.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr == f"vcsat: {tmp_path / 'none.yaml'}: no such file\n"


def assert_one_line_error(result: Result, expected: list[str]) -> None:
    assert result.exit_code == 2, (result.exit_code, result.stderr, result.stdout)
    assert result.stdout == ""
    stderr: Any = result.stderr
    assert stderr.endswith("\n") and stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr
    for part in expected:
        assert part in stderr, (part, stderr)


@pytest.mark.parametrize(("output", "table"), [("json", False), ("yaml", False), ("table", True)])
def test_only_the_table_reads_its_modules(tmp_path: Path, output: str, table: bool) -> None:
    """In a fresh process: ``vcsat solve -o json`` (or yaml) never imports the table's modules
    (rich), which starting the command would otherwise pay for; the table still does."""
    path = write(tmp_path, INSTANCE)
    result = run_saying_loaded("rich", "solve", str(path), "-o", output, "--time-limit", "2")
    assert result.returncode == 0, result.stderr
    assert f"rich loaded: {table}\n" in result.stderr
    assert "ns/p" in result.stdout


HEADERS = [
    # (levels as (name, value, bound), skipped steps, the lines under the status line)
    ([], [], []),
    ([], ["second_fill", "exchange_trades=3"], ["skipped for the time limit: second_fill, exchange_trades=3"]),
    (
        [("queue fair share, each queue's 1 highest priorities", 50, 50), ("placed work at priority 0", 10, 12)],
        [],
        ["first level below its bound: placed work at priority 0  10 of 12  gap 16.67%"],
    ),
    (
        [("queue fair share, each queue's 1 highest priorities", 40, 50), ("placed work at priority 0", 10, 12)],
        ["search"],
        [
            "first level below its bound: queue fair share, each queue's 1 highest priorities  40 of 50  gap 20.00%",
            "skipped for the time limit: search",
        ],
    ),
    ([("queue fair share, each queue's 1 highest priorities", 50, 50), ("placed work at priority 0", 12, 12)], [], []),
]


@pytest.mark.parametrize(("levels", "skipped", "under"), HEADERS)
def test_the_table_names_the_first_level_below_its_bound_and_the_skipped_steps(
    levels: list[tuple[str, int, int]], skipped: list[str], under: list[str]
) -> None:
    stats = SolverStats(
        status="FEASIBLE",
        objective=10,
        bound=12,
        seconds=0.25,
        levels=[LevelBound(level=name, value=value, bound=bound) for name, value, bound in levels],
        skipped=skipped,
    )
    lines = header_line(Decision(solver=stats)).splitlines()
    assert lines[0] == "solver FEASIBLE  objective 10  bound 12  gap 16.67%  0.25 s"
    assert lines[1:] == under
