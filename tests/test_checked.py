"""The cycle checked with the validator's placement rules beside it: the same decision and the same
violations as the serial path (solve, then check), and an error in the part run beside it raised
as the serial path raises it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_check import CASES, Case, clusters, random_decisions
from vcsat.adapters.convert.instance_file import read_snapshot
from vcsat.model import Decision, Policy
from vcsat.solver import check, checked, solve
from vcsat.solver.checked import solve_checked
from vcsat.solver.validator.check import check_outcomes, check_placements

INSTANCES = Path(__file__).resolve().parent.parent / "instances"
FILES = sorted(path.name for path in INSTANCES.glob("*.yaml"))
POLICIES = {
    "default": Policy(time_limit_s=5.0, num_workers=1),
    "no evictions": Policy(time_limit_s=5.0, num_workers=1, preempt=False, reclaim=False),
    "no gang": Policy(time_limit_s=5.0, num_workers=1, gang=False),
}


def _same(first: Decision, second: Decision) -> None:
    """Equal but for the wall seconds the cycle took."""
    assert first.model_dump(exclude={"solver": {"seconds"}}) == second.model_dump(exclude={"solver": {"seconds"}})


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("policy", list(POLICIES), ids=list(POLICIES))
def test_beside_and_serial_decide_and_check_alike(name: str, policy: str) -> None:
    snapshot = read_snapshot(INSTANCES / name)
    serial = solve(snapshot, POLICIES[policy])
    violations = check(snapshot, serial, POLICIES[policy])
    for fork in (True, False):
        result = solve_checked(snapshot, POLICIES[policy], fork=fork)
        assert result.beside is fork
        _same(result.decision, serial)
        assert result.violations() == violations == []
        assert (result.child is not None) is fork


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_split_rules_flag_what_check_flags(c: Case) -> None:
    """Every broken rule of the validator's table is flagged by the placements' rules plus the
    entries' rules, as by the whole check."""
    placed = check_placements(c.snap, c.dec.bindings, c.dec.nominations, c.dec.evictions, c.policy)
    assert check_outcomes(c.snap, c.dec, placed, c.policy) == check(c.snap, c.dec, c.policy)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.booleans())
def test_split_rules_equal_check_on_random_decisions(data: st.DataObject, gang: bool) -> None:
    snap = data.draw(clusters())
    dec = data.draw(random_decisions(snap))
    policy = Policy(gang=gang)
    placed = check_placements(snap, dec.bindings, dec.nominations, dec.evictions, policy)
    assert check_outcomes(snap, dec, placed, policy) == check(snap, dec, policy)


def test_an_error_in_the_placements_rules_surfaces_as_in_serial(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = read_snapshot(INSTANCES / "gang.yaml")

    def broken(*args: object) -> object:
        raise KeyError("no such pod")

    monkeypatch.setattr(checked, "check_placements", broken)
    for fork in (True, False):
        result = solve_checked(snapshot, POLICIES["default"], fork=fork)
        with pytest.raises(KeyError, match="no such pod"):
            result.violations()


@pytest.mark.parametrize("name", ["gang.yaml", "priority.yaml", "gpus.yaml"])
def test_the_command_prints_the_same_decision_either_way(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from vcsat.adapters.cli.app import main

    printed = {}
    for serial in ("1", "0"):
        monkeypatch.setenv("VCSAT_SERIAL", serial)
        result = CliRunner().invoke(main, ["solve", str(INSTANCES / name), "-o", "json", "--time-limit", "5"])
        assert result.exit_code == 0, result.output
        printed[serial] = Decision.model_validate_json(result.output)
    _same(printed["1"], printed["0"])
