"""`vcsat solve --policy` takes a vcsat policy or a Volcano scheduler configuration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vcsat.adapters.cli.app import main

VOLCANO_CONF = """\
actions: "enqueue, allocate, backfill, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
"""


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("time_limit_s: 0\n", "time_limit_s"),
        ("no_such_option: 1\n", "no_such_option"),
        ("tiers: 3\n", "actions"),
    ],
)
def test_a_bad_policy_is_one_line_naming_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    code, _, err = run("solve", "--policy", str(path), "-o", "json")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and field in lines[0] and "Traceback" not in err


def test_volcano_conf_is_accepted_and_what_it_ignores_is_said(tmp_path: Path) -> None:
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(VOLCANO_CONF)
    code, out, err = run("solve", "--policy", str(path), "-o", "json")
    assert code == 0
    assert json.loads(out)["solver"]["status"] in ("OPTIMAL", "FEASIBLE", "WITHIN_GAP", "FALLBACK")
    assert "backfill" in err  # no meaning for an exact solver: said, not silently dropped


def test_volcano_conf_without_reclaim_turns_reclaim_off(tmp_path: Path) -> None:
    from vcsat.adapters.cli.app import load_policy

    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(VOLCANO_CONF)
    policy = load_policy(str(path))
    assert policy.preempt and not policy.reclaim and policy.gang and policy.drf and policy.proportion
