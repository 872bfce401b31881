"""The Helm chart deploy/helm/vcsat, through the real helm (tools/controlplane/build.sh builds it) and
the real API server.

- ``helm lint --strict`` passes with the default values and with every optional part on.
- ``helm template`` renders, and every object goes through server-side apply with ``dryRun=All``
  (schemas, admission, Pod Security "restricted" on the release's namespace), warnings counting as
  failures: with the defaults, with the CRDs and the ServiceMonitor on (the ServiceMonitor's CRD is
  a minimal one written here from the Prometheus Operator's documented API, enough for the fields
  the chart sets), and with other values.
- With the defaults and release ``vcsat`` in ``vcsat-system`` the chart renders what deploy/
  (kustomize) holds, plus only the differences listed here; with the CRDs on, deploy/crds.
- ``helm install`` against the API server creates the release, ``helm uninstall`` removes it.
- Values become what the commands run with: the leader election periods, the scheduler name, the
  scheduler configuration, which the rendered arguments of both commands are accepted with (the
  real command line, with a stand-in elector).
"""

from __future__ import annotations

import os
import subprocess
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml
from click.testing import CliRunner
from controlplane import ControlPlane, load_manifests, locate_binaries
from daemon_support import RecordingElector, logging_restored  # noqa: F401 (an autouse fixture)
from kubernetes import client
from serverside import DEPLOY_DIR, ServerSideApply, describe

from vcsat.adapters.cli import app as cli
from vcsat.adapters.kube import leader
from vcsat.model import Policy

CHART = DEPLOY_DIR / "helm" / "vcsat"
HELM_TIMEOUT_S = 120
ON = ("--set", "crds.install=true", "--set", "serviceMonitor.enabled=true")

# Prometheus Operator's ServiceMonitor (monitoring.coreos.com/v1), only the fields the chart sets,
# typed as its API reference documents them; anything else is refused by strict field validation.
_DURATION = {
    "type": "string",
    "pattern": "^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$",
}
_STRINGS = {"type": "array", "items": {"type": "string"}}
SERVICE_MONITOR_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
    "spec": {
        "group": "monitoring.coreos.com",
        "scope": "Namespaced",
        "names": {
            "kind": "ServiceMonitor",
            "listKind": "ServiceMonitorList",
            "plural": "servicemonitors",
            "singular": "servicemonitor",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["selector"],
                                "properties": {
                                    "selector": {
                                        "type": "object",
                                        "properties": {
                                            "matchLabels": {
                                                "type": "object",
                                                "additionalProperties": {"type": "string"},
                                            },
                                            "matchExpressions": {
                                                "type": "array",
                                                "items": {
                                                    "type": "object",
                                                    "required": ["key", "operator"],
                                                    "properties": {
                                                        "key": {"type": "string"},
                                                        "operator": {"type": "string"},
                                                        "values": _STRINGS,
                                                    },
                                                },
                                            },
                                        },
                                    },
                                    "namespaceSelector": {
                                        "type": "object",
                                        "properties": {"any": {"type": "boolean"}, "matchNames": _STRINGS},
                                    },
                                    "endpoints": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "properties": {
                                                "port": {"type": "string"},
                                                "path": {"type": "string"},
                                                "interval": _DURATION,
                                                "scrapeTimeout": _DURATION,
                                            },
                                        },
                                    },
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}

# What the chart's defaults add to deploy/'s scheduler and controller arguments: every value the
# chart lets one set is passed explicitly (at the commands' own defaults), and the scheduler reads
# its configuration from the chart's ConfigMap.
ADDED_ARGS = {
    "scheduler": [
        "--scheduler-name=vcsat",
        "--policy=/etc/vcsat/volcano-scheduler.conf",
        "--lease-duration=15",
        "--renew-deadline=10",
        "--retry-period=2",
        "--log-level=INFO",
    ],
    "controller": [
        "--scheduler-name=vcsat",
        "--lease-duration=15",
        "--renew-deadline=10",
        "--retry-period=2",
        "--log-level=INFO",
    ],
}
ONLY_IN_CHART = {("ConfigMap", "vcsat-scheduler-configmap")}
NOT_IN_CHART = ("namespace.yaml", "default-queue.yaml", "kustomization.yaml")


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Runs the built helm with its config, cache and data in a scratch directory."""
    binary = locate_binaries(("helm",)) / "helm"
    home = tmp_path_factory.mktemp("helm-home")
    env = {
        **os.environ,
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_DATA_HOME": str(home / "data"),
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(binary), *args], capture_output=True, text=True, env=env, timeout=HELM_TIMEOUT_S, check=False
        )

    return run


@pytest.fixture(scope="module")
def kube_version(control_plane: ControlPlane) -> str:
    """The API server's version, which helm renders for (Capabilities.KubeVersion)."""
    with control_plane.api_client() as api:
        return str(client.VersionApi(api).get_code().git_version)


@pytest.fixture(scope="module")
def render(
    helm: Callable[..., subprocess.CompletedProcess[str]], kube_version: str
) -> Callable[..., list[dict[str, Any]]]:
    def run(*flags: str, namespace: str = "vcsat-system", release: str = "vcsat") -> list[dict[str, Any]]:
        done = helm("template", release, str(CHART), "--namespace", namespace, "--kube-version", kube_version, *flags)
        assert done.returncode == 0, done.stderr
        return [doc for doc in yaml.safe_load_all(done.stdout) if doc]

    return run


@pytest.fixture(scope="module")
def apply(control_plane: ControlPlane) -> Iterator[ServerSideApply]:
    """An applier, with the ServiceMonitor CRD created for real and Established."""
    with control_plane.api_client() as api:
        applier = ServerSideApply(api)
        applier(SERVICE_MONITOR_CRD, dry_run=False)
        extensions = client.ApiextensionsV1Api(api)
        deadline = time.monotonic() + 30
        while True:
            crd = extensions.read_custom_resource_definition(SERVICE_MONITOR_CRD["metadata"]["name"])
            if any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or []):
                break
            assert time.monotonic() < deadline, "the ServiceMonitor CRD did not become Established"
            time.sleep(0.2)
        yield applier


@pytest.fixture
def restricted_namespace(control_plane: ControlPlane) -> Iterator[str]:
    """A fresh namespace enforcing the "restricted" Pod Security Standard, as deploy/namespace.yaml."""
    name = f"helm-{uuid.uuid4().hex[:10]}"
    with control_plane.api_client() as api:
        core = client.CoreV1Api(api)
        core.create_namespace(
            {
                "metadata": {
                    "name": name,
                    "labels": {
                        "pod-security.kubernetes.io/enforce": "restricted",
                        "pod-security.kubernetes.io/enforce-version": "latest",
                    },
                }
            }
        )
        yield name
        core.delete_namespace(name)


def _by_key(docs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    keyed = {(doc["kind"], doc["metadata"]["name"]): doc for doc in docs}
    assert len(keyed) == len(docs), "two objects of the same kind and name"
    return keyed


def _container(docs: list[dict[str, Any]], component: str) -> dict[str, Any]:
    deployment = _by_key(docs)[("Deployment", f"vcsat-{component}")]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


# --- helm lint ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param((), id="defaults"),
        pytest.param(ON, id="crds-and-servicemonitor"),
        pytest.param(
            ("--set", "leaderElection.enabled=false", "--set", "scheduler.podDisruptionBudget.enabled=false"),
            id="no-leader-election",
        ),
    ],
)
def test_helm_lint_strict_passes(
    helm: Callable[..., subprocess.CompletedProcess[str]], kube_version: str, flags: tuple[str, ...]
) -> None:
    done = helm("lint", "--strict", "--kube-version", kube_version, str(CHART), *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout, done.stdout
    assert "[WARNING]" not in done.stdout and "[ERROR]" not in done.stdout, done.stdout


# --- helm template, applied with the API server's dry-run ---------------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param((), id="defaults"),
        pytest.param(ON, id="crds-and-servicemonitor"),
        pytest.param(
            (
                "--set", "leaderElection.enabled=false",
                "--set", "scheduler.replicas=1",
                "--set", "controller.podDisruptionBudget.enabled=false",
                "--set", "schedulerName=gpu-batch",
                "--set", "image.tag=dev",
                "--set", "imagePullSecrets[0].name=registry",
                "--set", "scheduler.nodeSelector.pool=system",
                "--set", "controller.tolerations[0].operator=Exists",
                "--set", "priorityClassName=",
                "--set", "serviceMonitor.enabled=true",
                "--set", "serviceMonitor.labels.release=prometheus",
            ),
            id="other-values",
        ),
    ],
)  # fmt: skip
def test_rendered_manifests_pass_server_side_dry_run(
    render: Callable[..., list[dict[str, Any]]],
    apply: ServerSideApply,
    restricted_namespace: str,
    flags: tuple[str, ...],
) -> None:
    docs = render(*flags, namespace=restricted_namespace, release="vcsat")
    assert docs
    for doc in docs:
        applied = apply(doc, dry_run=True)
        assert applied.obj["kind"] == doc["kind"]
        assert applied.obj["metadata"]["name"] == doc["metadata"]["name"]
        assert applied.warnings == [], f"{describe(doc)}: the server warned: {applied.warnings}"


def test_a_pod_security_breach_would_be_seen(
    render: Callable[..., list[dict[str, Any]]], apply: ServerSideApply, restricted_namespace: str
) -> None:
    """The rendered scheduler without its securityContext draws a warning, so the test above can fail."""
    (deployment,) = [
        doc
        for doc in render(namespace=restricted_namespace)
        if doc["kind"] == "Deployment" and doc["metadata"]["name"] == "vcsat-scheduler"
    ]
    del deployment["spec"]["template"]["spec"]["securityContext"]
    applied = apply(deployment, dry_run=True)
    assert any("restricted" in warning for warning in applied.warnings), applied.warnings


# --- the defaults are deploy/ ------------------------------------------------------------------


def _covers(chart: Any, ours: Any, where: str, component: str | None) -> None:
    """``chart`` holds everything ``ours`` (deploy/) does; it may add labels, pod annotations, the
    arguments of ADDED_ARGS and the configuration volume, nothing else."""
    if isinstance(ours, dict):
        assert isinstance(chart, dict), f"{where}: {chart!r} is not a mapping"
        for key, value in ours.items():
            assert key in chart, f"{where}.{key} is missing from the chart"
            _covers(chart[key], value, f"{where}.{key}", component)
        extra = set(chart) - set(ours)
        if where.endswith(("labels", "matchLabels")) or (where.startswith("Service ") and where.endswith(".selector")):
            return  # the chart's selectors add the release's instance label
        if where.endswith("template.metadata"):
            extra -= {"annotations"}
        assert not extra, f"{where}: the chart adds {sorted(extra)}"
    elif isinstance(ours, list):
        assert isinstance(chart, list), f"{where}: {chart!r} is not a list"
        if where.endswith(".args"):
            assert component is not None
            assert [arg for arg in chart if arg not in ADDED_ARGS[component]] == ours, where
            assert sorted(set(chart) - set(ours)) == sorted(ADDED_ARGS[component]), where
        elif where.endswith((".volumes", ".volumeMounts")):
            assert len(chart) >= len(ours), where
            for index, item in enumerate(ours):
                _covers(chart[index], item, f"{where}[{index}]", component)
            assert [item["name"] for item in chart[len(ours) :]] in ([], ["conf"]), where
        else:
            assert len(chart) == len(ours), f"{where}: {len(chart)} items in the chart, {len(ours)} in deploy/"
            for index, (mine, theirs) in enumerate(zip(chart, ours, strict=True)):
                _covers(mine, theirs, f"{where}[{index}]", component)
    else:
        assert chart == ours, f"{where}: the chart has {chart!r}, deploy/ {ours!r}"


def test_the_defaults_render_what_deploy_holds(render: Callable[..., list[dict[str, Any]]]) -> None:
    """Release vcsat in vcsat-system: the kustomize manifests, objects and fields, with the listed additions."""
    chart = _by_key(render())
    ours = _by_key(
        [
            doc
            for path in sorted(DEPLOY_DIR.glob("*.yaml"))
            if path.name not in NOT_IN_CHART
            for doc in load_manifests(path)
        ]
    )
    assert set(chart) - set(ours) == ONLY_IN_CHART
    assert set(ours) <= set(chart), sorted(set(ours) - set(chart))
    for key, doc in ours.items():
        component = doc["metadata"].get("labels", {}).get("app.kubernetes.io/component")
        _covers(chart[key], doc, f"{key[0]} {key[1]}", component)


def test_the_comparison_above_can_fail(render: Callable[..., list[dict[str, Any]]]) -> None:
    ours = _by_key(load_manifests(DEPLOY_DIR / "rbac-scheduler.yaml"))[("ClusterRole", "vcsat-scheduler")]
    chart = _by_key(render())[("ClusterRole", "vcsat-scheduler")]
    chart["rules"][0]["verbs"].append("delete")
    with pytest.raises(AssertionError, match="rules"):
        _covers(chart, ours, "ClusterRole vcsat-scheduler", "scheduler")


def test_crds_on_render_deploy_crds_kept_on_uninstall(render: Callable[..., list[dict[str, Any]]]) -> None:
    assert not [doc for doc in render() if doc["kind"] == "CustomResourceDefinition"]
    rendered = {doc["metadata"]["name"]: doc for doc in render(*ON) if doc["kind"] == "CustomResourceDefinition"}
    ours = {
        doc["metadata"]["name"]: doc
        for path in sorted((DEPLOY_DIR / "crds").glob("*.yaml"))
        for doc in load_manifests(path)
    }
    assert set(rendered) == set(ours)
    for name, crd in rendered.items():
        meta = crd["metadata"]
        assert meta.pop("annotations") == {"helm.sh/resource-policy": "keep"}, name
        assert meta.pop("labels")["app.kubernetes.io/managed-by"] == "Helm", name
        assert crd == ours[name], name


def test_servicemonitor_selects_both_metrics_services(render: Callable[..., list[dict[str, Any]]]) -> None:
    docs = render("--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.labels.release=prom")
    (monitor,) = [doc for doc in docs if doc["kind"] == "ServiceMonitor"]
    assert monitor["metadata"]["labels"]["release"] == "prom"
    (by_name, by_release) = monitor["spec"]["selector"]["matchExpressions"]
    services = [doc for doc in docs if doc["kind"] == "Service"]
    assert len(services) == 2
    for service in services:
        labels = service["metadata"]["labels"]
        assert labels[by_name["key"]] in by_name["values"] and labels[by_release["key"]] in by_release["values"]
        assert [port["name"] for port in service["spec"]["ports"]] == [monitor["spec"]["endpoints"][0]["port"]]
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == ["vcsat-system"]


# --- values become the commands' flags ----------------------------------------------------------


def test_values_become_flags(render: Callable[..., list[dict[str, Any]]]) -> None:
    docs = render(
        "--set", "leaderElection.leaseDuration=6",
        "--set", "leaderElection.renewDeadline=4",
        "--set", "leaderElection.retryPeriod=0.5",
        "--set", "schedulerName=gpu-batch",
        "--set", "image.repository=registry.example.com/vcsat",
        "--set", "image.tag=dev",
        "--set", "scheduler.resources.requests.cpu=2",
        "--set", "scheduler.extraArgs={--time-limit=5}",
        release="batch",
        namespace="sched",
    )  # fmt: skip
    keyed = _by_key(docs)
    for component in ("scheduler", "controller"):
        deployment = keyed[("Deployment", f"batch-vcsat-{component}")]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        args = container["args"]
        assert args[0] == component
        for flag in (
            "--lease-duration=6",
            "--renew-deadline=4",
            "--retry-period=0.5",
            "--scheduler-name=gpu-batch",
            f"--lease-name=batch-vcsat-{component}",
        ):
            assert flag in args, (component, args)
        assert container["image"] == "registry.example.com/vcsat:dev"
        # The Lease the flags name is the one the release's Role lets the component update.
        (_, named) = keyed[("Role", f"batch-vcsat-{component}-leader-election")]["rules"]
        assert named["resourceNames"] == [f"batch-vcsat-{component}"]
        assert keyed[("ClusterRoleBinding", f"batch-vcsat-{component}")]["subjects"][0]["namespace"] == "sched"
    scheduler = _container_of(keyed, "batch-vcsat-scheduler")
    assert scheduler["args"][-1] == "--time-limit=5"
    assert scheduler["resources"]["requests"]["cpu"] == 2


def _container_of(keyed: dict[tuple[str, str], dict[str, Any]], name: str) -> dict[str, Any]:
    (container,) = keyed[("Deployment", name)]["spec"]["template"]["spec"]["containers"]
    return dict(container)


@pytest.mark.parametrize(
    ("periods", "shown"),
    [
        pytest.param(("15", "15", "2"), "got 2, 15, 15", id="renew-equals-lease"),
        pytest.param(("10", "12", "2"), "got 2, 12, 10", id="renew-above-lease"),
        pytest.param(("15", "10", "10"), "got 10, 10, 15", id="retry-equals-renew"),
        pytest.param(("15", "10", "0"), "got 0, 10, 15", id="retry-zero"),
    ],
)
def test_bad_leader_election_values_fail_at_render(
    helm: Callable[..., subprocess.CompletedProcess[str]], periods: tuple[str, str, str], shown: str
) -> None:
    lease, renew, retry = periods
    done = helm(
        "template", "vcsat", str(CHART),
        "--set", f"leaderElection.leaseDuration={lease}",
        "--set", f"leaderElection.renewDeadline={renew}",
        "--set", f"leaderElection.retryPeriod={retry}",
    )  # fmt: skip
    assert done.returncode != 0
    assert f"leaderElection: need 0 < retryPeriod < renewDeadline < leaseDuration, {shown}" in done.stderr


def test_no_leader_election(render: Callable[..., list[dict[str, Any]]]) -> None:
    args = _container(render("--set", "leaderElection.enabled=false"), "scheduler")["args"]
    assert "--no-leader-elect" in args
    assert not [arg for arg in args if arg.startswith(("--lease", "--renew", "--retry", "--leader-elect"))]


@pytest.mark.parametrize("component", ["scheduler", "controller"])
def test_the_commands_accept_the_rendered_arguments(
    render: Callable[..., list[dict[str, Any]]],
    control_plane: ControlPlane,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    component: str,
) -> None:
    """The real command line, run with the rendered args; the configuration from the rendered ConfigMap."""
    made: ClassVar[list[dict[str, Any]]] = []
    monkeypatch.setattr(RecordingElector, "made", made)
    monkeypatch.setattr(leader, "LeaderElector", RecordingElector)
    docs = render("--set", "leaderElection.leaseDuration=20", "--set", "leaderElection.retryPeriod=3")
    keyed = _by_key(docs)
    conf = keyed[("ConfigMap", "vcsat-scheduler-configmap")]["data"]["volcano-scheduler.conf"]
    mount = tmp_path / "etc-vcsat"
    mount.mkdir()
    (mount / "volcano-scheduler.conf").write_text(conf, encoding="utf-8")
    args = [
        arg.replace("$(POD_NAMESPACE)", "vcsat-system").replace("/etc/vcsat", str(mount))
        for arg in _container(docs, component)["args"]
    ]
    # A free port of our own, so the metrics server the args ask for starts and stops here.
    args = [arg if not arg.startswith("--metrics-port=") else "--metrics-port=0" for arg in args]
    done = CliRunner().invoke(cli.main, [*args, f"--kubeconfig={control_plane.kubeconfig}"], prog_name="vcsat")
    assert done.exit_code == 0, done.output
    (elector,) = made
    assert (elector["lease_duration_s"], elector["renew_deadline_s"], elector["retry_period_s"]) == (20, 10, 3)
    assert (elector["namespace"], elector["name"]) == ("vcsat-system", f"vcsat-{component}")
    assert "vcsat: " not in done.stderr, done.stderr  # the default configuration draws no warning


def test_a_scheduler_conf_given_as_text_is_the_policy(
    render: Callable[..., list[dict[str, Any]]], tmp_path: Path
) -> None:
    """`--set-file scheduler.conf=volcano-scheduler.conf`: the file verbatim, read as Volcano's conf."""
    text = textwrap.dedent(
        """\
        actions: "enqueue, allocate, reclaim"
        tiers:
        - plugins:
          - name: priority
          - name: gang
          - name: conformance
        - plugins:
          - name: overcommit
            arguments:
              overcommit-factor: 1.5
          - name: drf
          - name: predicates
          - name: proportion
          - name: binpack
          - name: network-topology-aware
        """
    )
    source = tmp_path / "volcano-scheduler.conf"
    source.write_text(text, encoding="utf-8")
    docs = _by_key(render("--set-file", f"scheduler.conf={source}"))
    rendered = docs[("ConfigMap", "vcsat-scheduler-configmap")]["data"]["volcano-scheduler.conf"]
    assert rendered == text
    mounted = tmp_path / "mounted.conf"
    mounted.write_text(rendered, encoding="utf-8")
    assert cli.load_policy(str(mounted)) == Policy(preempt=False, overcommit_factor=1.5)


def test_a_conf_change_rolls_the_scheduler(render: Callable[..., list[dict[str, Any]]]) -> None:
    def checksum(*flags: str) -> str:
        deployment = _by_key(render(*flags))[("Deployment", "vcsat-scheduler")]
        return str(deployment["spec"]["template"]["metadata"]["annotations"]["vcsat.io/scheduler-conf-sha256"])

    assert checksum() == checksum()
    assert checksum() != checksum("--set", "scheduler.conf.actions=enqueue\\, allocate")


# --- helm install, for real ---------------------------------------------------------------------


def test_helm_install_and_uninstall(
    helm: Callable[..., subprocess.CompletedProcess[str]],
    control_plane: ControlPlane,
    apply: ServerSideApply,
    restricted_namespace: str,
) -> None:
    """`helm install` against the API server creates the release's objects; `helm uninstall` removes them.

    Release "it" (objects it-vcsat-*), so nothing of deploy/'s vcsat-* objects other tests use is
    touched; the CRDs stay off, since the session's API server has deploy/crds already (a release
    cannot adopt objects it did not create). ``apply`` has created the ServiceMonitor's CRD.
    """
    where = ("--kubeconfig", str(control_plane.kubeconfig), "--namespace", restricted_namespace)
    done = helm("install", "it", str(CHART), *where, "--set", "serviceMonitor.enabled=true")
    assert done.returncode == 0, done.stderr
    with control_plane.api_client() as api:
        apps, rbac = client.AppsV1Api(api), client.RbacAuthorizationV1Api(api)
        names = {d.metadata.name for d in apps.list_namespaced_deployment(restricted_namespace).items}
        assert names == {"it-vcsat-scheduler", "it-vcsat-controller"}
        role = rbac.read_cluster_role("it-vcsat-scheduler")
        assert role.metadata.labels["app.kubernetes.io/managed-by"] == "Helm"
        done = helm("uninstall", "it", *where)
        assert done.returncode == 0, done.stderr
        assert apps.list_namespaced_deployment(restricted_namespace).items == []
        with pytest.raises(client.ApiException) as gone:
            rbac.read_cluster_role("it-vcsat-scheduler")
        assert gone.value.status == 404
