"""The Helm chart's files that need no helm binary: its CRDs are deploy/crds, and its default
scheduler configuration is vcsat's default policy.

Helm reads only files inside a chart, so deploy/helm/vcsat/files/crds holds copies of deploy/crds;
tools/helm/sync-crds.sh makes them so, and the first test fails whenever they drift apart (run the
script). The rendering itself (helm lint, helm template, the API server's dry-run) is tested in
tests/k8s/test_helm.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from vcsat.adapters.cli import app as cli
from vcsat.adapters.convert.volcano_conf import parse_volcano_conf
from vcsat.model import Policy

ROOT = Path(__file__).resolve().parents[1]
CRDS = ROOT / "deploy" / "crds"
CHART = ROOT / "deploy" / "helm" / "vcsat"
CHART_CRDS = CHART / "files" / "crds"
SYNC = ROOT / "tools" / "helm" / "sync-crds.sh"


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*.yaml"))}


def test_the_charts_crds_are_deploy_crds_byte_for_byte() -> None:
    ours, chart = _files(CRDS), _files(CHART_CRDS)
    assert ours, "deploy/crds holds no CRD"
    differ = sorted(name for name in ours.keys() | chart.keys() if ours.get(name) != chart.get(name))
    assert not differ, f"{differ} differ between deploy/crds and {CHART_CRDS}: run bash tools/helm/sync-crds.sh"


def test_sync_crds_copies_them_and_drops_stale_ones(tmp_path: Path) -> None:
    """The script, run in a copy of the tree whose chart holds an outdated and a removed CRD."""
    tree = tmp_path / "repo"
    (tree / "tools" / "helm").mkdir(parents=True)
    shutil.copy2(SYNC, tree / "tools" / "helm" / SYNC.name)
    shutil.copytree(CRDS, tree / "deploy" / "crds")
    stale = tree / "deploy" / "helm" / "vcsat" / "files" / "crds"
    stale.mkdir(parents=True)
    first = sorted(CRDS.glob("*.yaml"))[0].name
    (stale / first).write_text("# outdated\n", encoding="utf-8")
    (stale / "gone.example.com_things.yaml").write_text("# removed from deploy/crds\n", encoding="utf-8")

    subprocess.run(["bash", str(tree / "tools" / "helm" / SYNC.name)], check=True, timeout=60)

    assert _files(stale) == _files(CRDS)


def _default_conf() -> object:
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    return values["scheduler"]["conf"]


def test_the_default_scheduler_conf_is_vcsats_default_policy() -> None:
    """Installing with the chart's defaults schedules as `vcsat scheduler` with no --policy does."""
    conf = parse_volcano_conf(yaml.safe_dump(_default_conf()), source="values.yaml")
    assert conf.warnings == ()
    assert conf.policy == Policy()


def test_the_scheduler_reads_the_default_conf_as_mounted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The file the chart mounts, read by `vcsat scheduler --policy` (no warning on stderr)."""
    mounted = tmp_path / "volcano-scheduler.conf"
    mounted.write_text(yaml.safe_dump(_default_conf()), encoding="utf-8")
    assert cli.load_policy(str(mounted), scheduler_name="gpu-batch") == Policy(scheduler_name="gpu-batch")
    assert capsys.readouterr().err == ""
