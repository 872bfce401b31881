"""``vcsat solve`` reads PyYAML only when it meets YAML (session 29).

Large clusters are dumped as JSON and their decisions asked for as JSON: importing PyYAML at the
start of every ``vcsat solve`` cost ~0.02 s of a process with a 10 s promise. In a fresh process
(the console script's one-shot exit, as a user runs it): a JSON file with JSON output never
imports it; YAML output, a YAML file or a YAML policy does, and decides as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.scripts import run_saying_loaded

REPO = Path(__file__).resolve().parent.parent


def _as_json(tmp_path: Path) -> Path:
    """The gang instance of instances/ as the JSON List ``kubectl get -o json`` would print."""
    (document,) = [d for d in yaml.safe_load_all((REPO / "instances" / "gang.yaml").read_text()) if d]
    path = tmp_path / "gang.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    ("instance", "output", "policy", "loaded"),
    [
        ("json", "json", False, False),
        ("json", "yaml", False, True),
        ("yaml", "json", False, True),
        ("json", "json", True, True),
    ],
    ids=["json-in-json-out", "yaml-out", "yaml-in", "yaml-policy"],
)
def test_yaml_is_read_only_for_yaml(tmp_path: Path, instance: str, output: str, policy: bool, loaded: bool) -> None:
    path = _as_json(tmp_path) if instance == "json" else REPO / "instances" / "gang.yaml"
    extra = []
    if policy:
        (tmp_path / "policy.yaml").write_text("time_limit_s: 2\n")
        extra = ["--policy", str(tmp_path / "policy.yaml")]
    result = run_saying_loaded("yaml", "solve", str(path), "-o", output, "--time-limit", "2", *extra)
    assert result.returncode == 0, result.stderr
    assert f"yaml loaded: {loaded}\n" in result.stderr
    decided = yaml.safe_load(result.stdout) if output == "yaml" else json.loads(result.stdout)
    assert decided["bindings"], "the gang instance places its pods"


def test_json_and_yaml_instances_decide_alike(tmp_path: Path) -> None:
    """The same cluster read from its YAML and its JSON spelling: the same decision."""
    runs = [
        run_saying_loaded("yaml", "solve", str(path), "-o", "json", "--time-limit", "2", check=True)
        for path in (_as_json(tmp_path), REPO / "instances" / "gang.yaml")
    ]
    decisions = [json.loads(run.stdout) for run in runs]
    for decision in decisions:
        decision["solver"].pop("seconds")
    assert decisions[0] == decisions[1]
