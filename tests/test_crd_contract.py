"""deploy/crds against the Volcano-shaped CRDs of tests/k8s/data/volcano-crds: the same contract.

Same names, scope, versions, subresources and printer columns, every field Volcano's schema has
present in ours with the same type, and ours adding fields only where Volcano's keeps unknown
ones; plus the decisions recorded in docs/volcano-compatibility.md (no PodGroup status
subresource, no ``spec.preemptable``, the Command CRD shipped).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.scripts import load_script

REPO = Path(__file__).resolve().parents[1]
OURS = REPO / "deploy" / "crds"
VOLCANO = REPO / "tests" / "k8s" / "data" / "volcano-crds"
NAMES = sorted(path.name for path in VOLCANO.glob("*.yaml"))


def _crd(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return doc


def _fields(schema: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, str, bool]]:
    """(path, type, keeps unknown fields) for every node of a structural schema."""
    yield path, str(schema.get("type", "")), bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    for key, child in (schema.get("properties") or {}).items():
        yield from _fields(child, f"{path}.{key}")
    if isinstance(schema.get("items"), Mapping):
        yield from _fields(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from _fields(schema["additionalProperties"], f"{path}{{}}")


def test_every_volcano_crd_is_shipped() -> None:
    assert sorted(path.name for path in OURS.glob("*.yaml")) == NAMES
    assert "bus.volcano.sh_commands.yaml" in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_same_names_scope_versions_subresources_and_columns(name: str) -> None:
    ours, theirs = _crd(OURS / name), _crd(VOLCANO / name)
    assert ours["metadata"]["name"] == theirs["metadata"]["name"]
    for key in ("group", "scope", "names"):
        assert ours["spec"][key] == theirs["spec"][key], key
    assert [v["name"] for v in ours["spec"]["versions"]] == [v["name"] for v in theirs["spec"]["versions"]]
    for mine, volcano in zip(ours["spec"]["versions"], theirs["spec"]["versions"], strict=True):
        assert (mine.get("served"), mine.get("storage")) == (volcano.get("served"), volcano.get("storage"))
        assert (mine.get("subresources") or {}) == (volcano.get("subresources") or {})
        assert (mine.get("additionalPrinterColumns") or []) == (volcano.get("additionalPrinterColumns") or [])


@pytest.mark.parametrize("name", NAMES)
def test_same_fields_and_types(name: str) -> None:
    mine = {
        path: (kind, keeps)
        for path, kind, keeps in _fields(_crd(OURS / name)["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    }
    volcano = {
        path: (kind, keeps)
        for path, kind, keeps in _fields(_crd(VOLCANO / name)["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    }
    missing = sorted(set(volcano) - set(mine))
    assert not missing, f"fields Volcano has and we lack: {missing}"
    assert {p: mine[p][0] for p in volcano} == {p: volcano[p][0] for p in volcano}
    for extra in sorted(set(mine) - set(volcano)):
        parent = next(p for p in sorted(volcano, key=len, reverse=True) if extra.startswith(p))
        assert volcano[parent][1], f"{extra}: an extra field under {parent or 'the root'}, whose schema prunes it"


def test_podgroup_decisions() -> None:
    podgroup = _crd(OURS / "scheduling.volcano.sh_podgroups.yaml")["spec"]["versions"][0]
    assert "subresources" not in podgroup  # as Volcano's: the status is written on the object
    spec = podgroup["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert "preemptable" not in spec  # the pod annotation volcano.sh/preemptable instead
    assert "subGroupPolicy" in spec


def test_job_accepts_restart_partition() -> None:
    job = _crd(OURS / "batch.volcano.sh_jobs.yaml")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = job["properties"]["spec"]["properties"]
    assert "RestartPartition" in spec["policies"]["items"]["properties"]["action"]["enum"]
    task = spec["tasks"]["items"]["properties"]
    assert "RestartPartition" in task["policies"]["items"]["properties"]["action"]["enum"]
    assert {"partitionPolicy", "template"} <= set(task) and "runningEstimate" in spec


def test_cronjob_crd_is_generated_from_the_job_crd() -> None:
    """deploy/crds and the Volcano-shaped test data both hold what tools/crds/make-cronjob-crd.py
    makes from the Job CRD beside them: the template's schema is the Job's, rules included."""
    tool = load_script("tools/crds/make-cronjob-crd.py", "make_cronjob_crd")
    for folder in (OURS, VOLCANO):
        made = tool.cronjob_crd(_crd(folder / "batch.volcano.sh_jobs.yaml"))
        assert made == _crd(folder / "batch.volcano.sh_cronjobs.yaml"), f"{folder}: run tools/crds/make-cronjob-crd.py"
    cron = _crd(OURS / "batch.volcano.sh_cronjobs.yaml")["spec"]["versions"][0]
    job = _crd(OURS / "batch.volcano.sh_jobs.yaml")["spec"]["versions"][0]
    template = cron["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["jobTemplate"]
    assert template["properties"]["spec"] == job["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert cron["subresources"] == {"status": {}}
