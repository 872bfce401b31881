"""Every manifest in deploy/ is accepted by the real API server, and the kustomization ties them all.

Each object goes through server-side apply with ``dryRun=All``: schema and CEL validation,
defaulting and admission all run, Pod Security included, and nothing is stored. The namespace
vcsat-system itself is created for real first, since objects in a namespace that does not exist
cannot even be dry-run. Warnings count as failures: a deprecated API or a pod spec that breaks the
namespace's "restricted" Pod Security level would be shipped otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from controlplane import ControlPlane, load_manifests
from serverside import DEPLOY_DIR, ServerSideApply, describe

KUSTOMIZATION = DEPLOY_DIR / "kustomization.yaml"
# The Helm chart's files are templates and values, tested through helm in test_helm.py.
MANIFESTS = sorted(
    path
    for path in DEPLOY_DIR.rglob("*.yaml")
    if path != KUSTOMIZATION and path.relative_to(DEPLOY_DIR).parts[0] != "helm"
)


@pytest.fixture(scope="module")
def apply(control_plane: ControlPlane) -> Iterator[ServerSideApply]:
    with control_plane.api_client() as api:
        applier = ServerSideApply(api)
        applier.file(DEPLOY_DIR / "namespace.yaml", dry_run=False)
        yield applier


def test_deploy_has_manifests() -> None:
    names = {path.relative_to(DEPLOY_DIR).as_posix() for path in MANIFESTS}
    assert {"namespace.yaml", "rbac-scheduler.yaml", "rbac-controller.yaml", "scheduler.yaml"} <= names
    assert {"controller.yaml", "default-queue.yaml"} <= names
    assert any(name.startswith("crds/") for name in names)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.relative_to(DEPLOY_DIR).as_posix())
def test_manifest_passes_server_side_dry_run(apply: ServerSideApply, path: Path) -> None:
    docs = load_manifests(path)
    assert docs, f"{path} holds no objects"
    for doc, applied in zip(docs, apply.file(path, dry_run=True), strict=True):
        assert applied.obj["kind"] == doc["kind"]
        assert applied.obj["metadata"]["name"] == doc["metadata"]["name"]
        assert applied.warnings == [], f"{describe(doc)}: the server warned: {applied.warnings}"


def test_deployments_run_as_documented(apply: ServerSideApply) -> None:
    """Two replicas with leader election, probes on the metrics port, non-root, read-only root."""
    for name in ("scheduler", "controller"):
        (deployment,) = [
            a.obj for a in apply.file(DEPLOY_DIR / f"{name}.yaml", dry_run=True) if a.obj["kind"] == "Deployment"
        ]
        spec = deployment["spec"]
        pod = spec["template"]["spec"]
        (container,) = pod["containers"]
        assert spec["replicas"] == 2
        assert pod["serviceAccountName"] == f"vcsat-{name}"
        assert pod["schedulerName"] == "default-scheduler"
        assert container["args"][0] == name and "--leader-elect" in container["args"]
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"metrics": 8080}
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert {"cpu", "memory"} <= set(container["resources"]["requests"])


def test_kustomization_lists_every_manifest_and_nothing_else() -> None:
    kustomization = yaml.safe_load(KUSTOMIZATION.read_text(encoding="utf-8"))
    listed = kustomization["resources"]
    assert len(listed) == len(set(listed))
    for entry in listed:
        assert (DEPLOY_DIR / entry).is_file(), f"kustomization.yaml lists {entry}, which does not exist"
    # Examples are for users to apply by hand, not part of an installation.
    installable = {
        path.relative_to(DEPLOY_DIR).as_posix()
        for path in MANIFESTS
        if "examples" not in path.relative_to(DEPLOY_DIR).parts
    }
    assert set(listed) == installable


def test_warnings_are_caught_so_the_check_above_can_fail(apply: ServerSideApply) -> None:
    """The same Deployment without its securityContext draws a Pod Security warning from the server."""
    (deployment,) = [doc for doc in load_manifests(DEPLOY_DIR / "scheduler.yaml") if doc["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    del pod["securityContext"]
    del pod["containers"][0]["securityContext"]
    applied = apply(deployment, dry_run=True)
    assert any("PodSecurity" in warning and "restricted" in warning for warning in applied.warnings), applied.warnings
