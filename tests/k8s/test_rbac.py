"""deploy/rbac-*.yaml grant the scheduler and the controller what they need, and nothing much more.

The manifests are applied for real, then the API server's own RBAC authorizer is asked through
SubjectAccessReview about each ServiceAccount, for requests it must be able to make and requests
it must not. One check goes the whole way: a token minted for the scheduler's ServiceAccount binds
a pod through the Binding subresource and is refused secrets.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from controlplane import ControlPlane
from kubernetes import client
from kubernetes.client import ApiClient, Configuration
from serverside import DEPLOY_DIR, ServerSideApply

NAMESPACE = "vcsat-system"
SCHEDULER = f"system:serviceaccount:{NAMESPACE}:vcsat-scheduler"
CONTROLLER = f"system:serviceaccount:{NAMESPACE}:vcsat-controller"
# What the API server puts a ServiceAccount token's user in.
SA_GROUPS = ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}", "system:authenticated"]
WAIT_S = 20.0


def resource_attributes(resource: str) -> dict[str, str]:
    """Read ``kubectl auth can-i`` notation: ``plural[.group][/subresource]``.

    For example ``podgroups.scheduling.volcano.sh/status`` or ``pods/binding``.
    """
    kind_group, _, subresource = resource.partition("/")
    plural, _, group = kind_group.partition(".")
    return {"group": group, "resource": plural, "subresource": subresource}


def _review(api: ApiClient, user: str, verb: str, resource: str, **attributes: str) -> bool:
    review = client.AuthorizationV1Api(api).create_subject_access_review(
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": user,
                "groups": SA_GROUPS,
                "resourceAttributes": {"verb": verb, **resource_attributes(resource), **attributes},
            },
        }
    )
    return bool(review.status.allowed)


@pytest.fixture(scope="module")
def admin(control_plane: ControlPlane) -> Iterator[ApiClient]:
    """An admin client, with deploy/'s namespace and RBAC applied and in force."""
    with control_plane.api_client() as api:
        apply = ServerSideApply(api)
        for name in ("namespace.yaml", "rbac-scheduler.yaml", "rbac-controller.yaml"):
            apply.file(DEPLOY_DIR / name, dry_run=False)
        # The authorizer reads RBAC objects from a cache: wait until the new bindings are in it.
        deadline = time.monotonic() + WAIT_S
        while not (
            _review(api, SCHEDULER, "create", "pods/binding", namespace="team")
            and _review(api, CONTROLLER, "create", "podgroups.scheduling.volcano.sh", namespace="team")
        ):
            assert time.monotonic() < deadline, "the RBAC bindings never took effect"
            time.sleep(0.1)
        yield api


# (verb, resource in can-i notation, extra attributes, allowed).
SCHEDULER_CASES: list[tuple[str, str, dict[str, str], bool]] = [
    ("list", "nodes", {}, True),
    ("watch", "nodes", {}, True),
    ("list", "pods", {}, True),
    ("watch", "pods", {}, True),
    ("patch", "pods", {"namespace": "team"}, True),
    ("create", "pods/binding", {"namespace": "team"}, True),
    ("create", "bindings", {"namespace": "team"}, True),
    ("create", "pods/eviction", {"namespace": "team"}, True),
    ("patch", "pods/status", {"namespace": "team"}, True),
    ("watch", "podgroups.scheduling.volcano.sh", {}, True),
    ("update", "podgroups.scheduling.volcano.sh/status", {"namespace": "team"}, True),
    ("patch", "podgroups.scheduling.volcano.sh/status", {"namespace": "team"}, True),
    ("patch", "podgroups.scheduling.volcano.sh", {"namespace": "team"}, True),  # no status subresource
    ("list", "queues.scheduling.volcano.sh", {}, True),
    ("watch", "priorityclasses.scheduling.k8s.io", {}, True),
    ("watch", "hypernodes.topology.volcano.sh", {}, True),
    ("watch", "namespaces", {}, True),
    ("list", "poddisruptionbudgets.policy", {}, True),
    ("watch", "poddisruptionbudgets.policy", {}, True),
    ("watch", "namespaces", {}, True),
    ("watch", "persistentvolumes", {}, True),
    ("list", "persistentvolumeclaims", {}, True),
    ("watch", "persistentvolumeclaims", {}, True),
    ("patch", "persistentvolumes", {}, True),  # VolumeBinding's PreBind: claimRef
    ("patch", "persistentvolumeclaims", {"namespace": "team"}, True),  # ... and selected-node
    ("watch", "storageclasses.storage.k8s.io", {}, True),
    ("list", "csinodes.storage.k8s.io", {}, True),
    ("watch", "csinodes.storage.k8s.io", {}, True),
    ("list", "csidrivers.storage.k8s.io", {}, True),
    ("watch", "csistoragecapacities.storage.k8s.io", {}, True),
    ("create", "events", {"namespace": "team"}, True),
    ("create", "events.events.k8s.io", {"namespace": "team"}, True),
    ("create", "leases.coordination.k8s.io", {"namespace": NAMESPACE}, True),
    ("get", "leases.coordination.k8s.io", {"namespace": NAMESPACE, "name": "vcsat-scheduler"}, True),
    ("update", "leases.coordination.k8s.io", {"namespace": NAMESPACE, "name": "vcsat-scheduler"}, True),
    # ... and not:
    ("delete", "nodes", {}, False),
    ("update", "nodes", {}, False),
    ("update", "namespaces", {}, False),
    ("get", "secrets", {"namespace": "team"}, False),
    ("list", "secrets", {}, False),
    ("create", "pods", {"namespace": "team"}, False),
    ("delete", "pods", {"namespace": "team"}, False),
    ("update", "pods/status", {"namespace": "team"}, False),
    ("create", "podgroups.scheduling.volcano.sh", {"namespace": "team"}, False),
    ("update", "podgroups.scheduling.volcano.sh", {"namespace": "team"}, False),
    ("update", "queues.scheduling.volcano.sh", {}, False),
    ("create", "jobs.batch.volcano.sh", {"namespace": "team"}, False),
    ("create", "leases.coordination.k8s.io", {"namespace": "team"}, False),
    ("update", "leases.coordination.k8s.io", {"namespace": NAMESPACE, "name": "vcsat-controller"}, False),
    ("update", "leases.coordination.k8s.io", {"namespace": "kube-system", "name": "kube-scheduler"}, False),
    ("create", "clusterrolebindings.rbac.authorization.k8s.io", {}, False),
    ("update", "persistentvolumes", {}, False),
    ("update", "persistentvolumeclaims", {"namespace": "team"}, False),
    ("create", "persistentvolumeclaims", {"namespace": "team"}, False),
    ("delete", "persistentvolumes", {}, False),
    ("delete", "persistentvolumeclaims", {"namespace": "team"}, False),
    ("update", "namespaces", {}, False),
    ("update", "storageclasses.storage.k8s.io", {}, False),
    ("update", "csinodes.storage.k8s.io", {}, False),
    ("delete", "poddisruptionbudgets.policy", {"namespace": "team"}, False),
]

CONTROLLER_CASES: list[tuple[str, str, dict[str, str], bool]] = [
    ("watch", "jobs.batch.volcano.sh", {}, True),
    ("update", "jobs.batch.volcano.sh", {"namespace": "team"}, True),
    ("update", "jobs.batch.volcano.sh/status", {"namespace": "team"}, True),
    ("create", "podgroups.scheduling.volcano.sh", {"namespace": "team"}, True),
    ("delete", "podgroups.scheduling.volcano.sh", {"namespace": "team"}, True),
    ("watch", "podgroups.scheduling.volcano.sh", {}, True),
    ("create", "pods", {"namespace": "team"}, True),
    ("delete", "pods", {"namespace": "team"}, True),
    ("watch", "pods", {}, True),
    ("create", "services", {"namespace": "team"}, True),
    ("update", "configmaps", {"namespace": "team"}, True),
    ("create", "secrets", {"namespace": "team"}, True),
    ("delete", "networkpolicies.networking.k8s.io", {"namespace": "team"}, True),
    ("create", "events", {"namespace": "team"}, True),
    ("delete", "jobs.batch.volcano.sh", {"namespace": "team"}, True),
    ("patch", "pods", {"namespace": "team"}, True),
    ("create", "persistentvolumeclaims", {"namespace": "team"}, True),
    ("update", "leases.coordination.k8s.io", {"namespace": NAMESPACE, "name": "vcsat-controller"}, True),
    ("watch", "commands.bus.volcano.sh", {}, True),
    ("delete", "commands.bus.volcano.sh", {"namespace": "default"}, True),
    ("patch", "queues.scheduling.volcano.sh/status", {}, True),
    ("list", "queues.scheduling.volcano.sh", {}, True),
    ("patch", "queues.scheduling.volcano.sh", {}, True),
    ("watch", "cronjobs.batch.volcano.sh", {}, True),
    ("patch", "cronjobs.batch.volcano.sh/status", {"namespace": "team"}, True),
    ("update", "cronjobs.batch.volcano.sh/finalizers", {"namespace": "team"}, True),
    ("create", "jobs.batch.volcano.sh", {"namespace": "team"}, True),
    # ... and not:
    ("update", "cronjobs.batch.volcano.sh", {"namespace": "team"}, False),
    ("create", "commands.bus.volcano.sh", {"namespace": "team"}, False),
    ("create", "pods/binding", {"namespace": "team"}, False),
    ("create", "pods/eviction", {"namespace": "team"}, False),
    ("patch", "pods/status", {"namespace": "team"}, False),
    ("list", "nodes", {}, False),
    ("update", "podgroups.scheduling.volcano.sh/status", {"namespace": "team"}, False),
    ("update", "queues.scheduling.volcano.sh", {}, False),
    ("update", "persistentvolumeclaims", {"namespace": "team"}, False),
    ("create", "deployments.apps", {"namespace": "team"}, False),
    ("update", "leases.coordination.k8s.io", {"namespace": NAMESPACE, "name": "vcsat-scheduler"}, False),
]


def _case_id(case: tuple[str, str, dict[str, str], bool]) -> str:
    verb, resource, attributes, allowed = case
    name = f"/{attributes['name']}" if "name" in attributes else ""
    return f"{'can' if allowed else 'cannot'}-{verb}-{resource}{name}"


@pytest.mark.parametrize("case", SCHEDULER_CASES, ids=_case_id)
def test_scheduler_service_account(admin: ApiClient, case: tuple[str, str, dict[str, str], bool]) -> None:
    verb, resource, attributes, allowed = case
    assert _review(admin, SCHEDULER, verb, resource, **attributes) is allowed


@pytest.mark.parametrize("case", CONTROLLER_CASES, ids=_case_id)
def test_controller_service_account(admin: ApiClient, case: tuple[str, str, dict[str, str], bool]) -> None:
    verb, resource, attributes, allowed = case
    assert _review(admin, CONTROLLER, verb, resource, **attributes) is allowed


@pytest.mark.parametrize(
    ("resource", "expected"),
    [
        ("pods/binding", ("", "pods", "binding")),
        ("bindings", ("", "bindings", "")),
        ("poddisruptionbudgets.policy", ("policy", "poddisruptionbudgets", "")),
        ("podgroups.scheduling.volcano.sh/status", ("scheduling.volcano.sh", "podgroups", "status")),
    ],
)
def test_case_notation_reads_as_meant(resource: str, expected: tuple[str, str, str]) -> None:
    attributes = resource_attributes(resource)
    assert (attributes["group"], attributes["resource"], attributes["subresource"]) == expected


def test_scheduler_token_binds_a_pod_and_is_refused_secrets(
    control_plane: ControlPlane, admin: ApiClient, k8s_namespace: str
) -> None:
    core = client.CoreV1Api(admin)
    token = core.create_namespaced_service_account_token(
        "vcsat-scheduler",
        NAMESPACE,
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    ).status.token
    node = f"node-{uuid.uuid4().hex[:8]}"
    core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    core.create_namespaced_pod(
        k8s_namespace,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"schedulerName": "vcsat", "containers": [{"name": "c", "image": "busybox"}]},
        },
    )
    as_scheduler = ApiClient(
        Configuration(
            host=control_plane.server,
            api_key={"authorization": f"Bearer {token}"},
            ssl_ca_cert=str(control_plane.ca_file),
        )
    )
    try:
        scheduler_core = client.CoreV1Api(as_scheduler)
        assert node in {n.metadata.name for n in scheduler_core.list_node().items}
        scheduler_core.create_namespaced_pod_binding(
            "p",
            k8s_namespace,
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "p"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            },
            # The server answers a Status, not a Binding; the typed client cannot read it as one.
            _preload_content=False,
        )
        assert core.read_namespaced_pod("p", k8s_namespace).spec.node_name == node
        with pytest.raises(client.ApiException) as refused:
            scheduler_core.list_namespaced_secret(k8s_namespace)
        assert refused.value.status == 403
        with pytest.raises(client.ApiException) as refused:
            scheduler_core.delete_node(node)
        assert refused.value.status == 403
    finally:
        as_scheduler.close()
        core.delete_namespaced_pod("p", k8s_namespace, grace_period_seconds=0)
        core.delete_node(node)
