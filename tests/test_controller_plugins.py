"""What each Job plugin adds: objects made before the pods, and the edits to every pod."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from controller_support import UID, job, task, template
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from vcsat.adapters.controller.jobspec import JobSpec
from vcsat.adapters.controller.plugins.flags import Flag, FlagError, parse_flags
from vcsat.adapters.controller.plugins.registry import build_plugins
from vcsat.adapters.controller.plugins.ssh import SshPlugin, generate_key_pair
from vcsat.adapters.controller.plugins.svc import SvcPlugin
from vcsat.adapters.controller.pods import build_pod


def _pod(spec: JobSpec, task_name: str, index: int) -> dict[str, Any]:
    owner = spec.task(task_name)
    assert owner is not None
    return build_pod(spec, owner, index, version=0, retry_count=0, scheduler_name="vcsat", plugins=build_plugins(spec))


def _env(pod: dict[str, Any], container: int = 0) -> dict[str, Any]:
    entries = pod["spec"]["containers"][container].get("env") or []
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in entries}


def _objects(spec: JobSpec) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (recipe.kind, recipe.name): recipe.build() for plugin in build_plugins(spec) for recipe in plugin.objects(spec)
    }


def _with_init(tpl: dict[str, Any]) -> dict[str, Any]:
    tpl["spec"]["initContainers"] = [{"name": "setup", "image": "registry.invalid/setup:1"}]
    return tpl


# --- tensorflow -----------------------------------------------------------------------------------

TF_JOB = job(
    "tf",
    tasks=[task("ps", 2), task("worker", 3), task("chief", 1)],
    plugins={"tensorflow": []},
)


def test_tf_config_for_a_worker() -> None:
    config = json.loads(_env(_pod(TF_JOB, "worker", 1))["TF_CONFIG"])
    assert config == {
        "cluster": {
            "ps": ["tf-ps-0.tf:2222", "tf-ps-1.tf:2222"],
            "worker": ["tf-worker-0.tf:2222", "tf-worker-1.tf:2222", "tf-worker-2.tf:2222"],
            "chief": ["tf-chief-0.tf:2222"],
        },
        "task": {"type": "worker", "index": 1},
    }


def test_tf_config_roles_and_port_from_flags() -> None:
    spec = job(
        "tf",
        tasks=[task("server", 1), task("trainer", 2)],
        plugins={"tensorflow": ["--ps=server", "--worker=trainer", "--port=4000"]},
    )
    config = json.loads(_env(_pod(spec, "server", 0))["TF_CONFIG"])
    assert config == {
        "cluster": {"ps": ["tf-server-0.tf:4000"], "worker": ["tf-trainer-0.tf:4000", "tf-trainer-1.tf:4000"]},
        "task": {"type": "ps", "index": 0},
    }


def test_stand_alone_tensorflow_gets_no_tf_config() -> None:
    spec = job("tf", tasks=[task("worker", 1)], plugins={"tensorflow": []})
    assert "TF_CONFIG" not in _env(_pod(spec, "worker", 0))


# --- svc -----------------------------------------------------------------------------------------


def test_svc_host_files_and_service() -> None:
    spec = job("mpi", tasks=[task("master", 1), task("data-loader", 2)], plugins={"svc": []})
    objects = _objects(spec)
    config_map = objects[("ConfigMap", "mpi-svc")]
    assert config_map["data"] == {
        "master.host": "mpi-master-0.mpi",
        "VC_MASTER_HOSTS": "mpi-master-0.mpi",
        "VC_MASTER_NUM": "1",
        "data_loader.host": "mpi-data-loader-0.mpi\nmpi-data-loader-1.mpi",
        "VC_DATA_LOADER_HOSTS": "mpi-data-loader-0.mpi,mpi-data-loader-1.mpi",
        "VC_DATA_LOADER_NUM": "2",
    }
    selector = {"volcano.sh/job-name": "mpi", "volcano.sh/job-namespace": "ns"}
    service = objects[("Service", "mpi")]
    assert service["spec"] == {"clusterIP": "None", "selector": selector, "publishNotReadyAddresses": False}
    assert service["metadata"]["ownerReferences"][0]["uid"] == UID
    policy = objects[("NetworkPolicy", "mpi")]
    assert policy["spec"] == {
        "podSelector": {"matchLabels": selector},
        "ingress": [{"from": [{"podSelector": {"matchLabels": selector}}]}],
        "policyTypes": ["Ingress"],
    }


def test_svc_edits_every_pod() -> None:
    spec = job(
        "mpi", tasks=[task("master", 1, template=_with_init(template())), task("worker", 2)], plugins={"svc": []}
    )
    pod = _pod(spec, "master", 0)
    assert pod["spec"]["hostname"] == "mpi-master-0"
    assert pod["spec"]["subdomain"] == "mpi"
    for container in (*pod["spec"]["containers"], *pod["spec"]["initContainers"]):
        assert {"name": "mpi-svc", "mountPath": "/etc/volcano"} in container["volumeMounts"]
        names = [e["name"] for e in container["env"]]
        assert names == ["VC_MASTER_HOSTS", "VC_MASTER_NUM", "VC_WORKER_HOSTS", "VC_WORKER_NUM"]
    assert _env(pod)["VC_WORKER_HOSTS"] == {"configMapKeyRef": {"name": "mpi-svc", "key": "VC_WORKER_HOSTS"}}
    assert {"name": "mpi-svc", "configMap": {"name": "mpi-svc"}} in pod["spec"]["volumes"]


@pytest.mark.parametrize(
    ("args", "kinds", "publish", "injected"),
    [
        ([], {"ConfigMap", "Service", "NetworkPolicy"}, False, True),
        (["--disable-network-policy"], {"ConfigMap", "Service"}, False, True),
        (
            ["--publish-not-ready-addresses", "--inject-hosts-env=false"],
            {"ConfigMap", "Service", "NetworkPolicy"},
            True,
            False,
        ),
    ],
)
def test_svc_flags(args: list[str], kinds: set[str], publish: bool, injected: bool) -> None:
    spec = job("j", plugins={"svc": args})
    objects = _objects(spec)
    assert {kind for kind, _ in objects} == kinds
    assert objects[("Service", "j")]["spec"]["publishNotReadyAddresses"] is publish
    assert ("VC_WORKER_HOSTS" in _env(_pod(spec, "worker", 0))) is injected


def test_fixed_hostname_is_one_host() -> None:
    fixed = template()
    fixed["spec"]["hostname"] = "leader"
    fixed["spec"]["subdomain"] = "cluster"
    spec = job("j", tasks=[task("master", 3, template=fixed)], plugins={"svc": []})
    assert SvcPlugin().config_map(spec)["data"]["VC_MASTER_HOSTS"] == "leader.cluster"
    assert _pod(spec, "master", 2)["spec"]["hostname"] == "leader"


# --- env ------------------------------------------------------------------------------------------


def test_env_task_index_in_every_container() -> None:
    spec = job("j", tasks=[task("worker", 4, template=_with_init(template()))], plugins={"env": []})
    pod = _pod(spec, "worker", 3)
    for container in (*pod["spec"]["containers"], *pod["spec"]["initContainers"]):
        assert container["env"] == [{"name": "VK_TASK_INDEX", "value": "3"}, {"name": "VC_TASK_INDEX", "value": "3"}]


# --- pytorch --------------------------------------------------------------------------------------

PT_JOB = job("ddp", tasks=[task("master", 1), task("worker", 3)], plugins={"pytorch": ["--port=29500"]})


@pytest.mark.parametrize(
    ("task_name", "index", "rank"),
    [("master", 0, "0"), ("worker", 0, "1"), ("worker", 2, "3")],
)
def test_pytorch_environment(task_name: str, index: int, rank: str) -> None:
    pod = _pod(PT_JOB, task_name, index)
    env = _env(pod)
    assert {k: env[k] for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")} == {
        "MASTER_ADDR": "ddp-master-0.ddp",
        "MASTER_PORT": "29500",
        "WORLD_SIZE": "4",
        "RANK": rank,
    }
    assert {"name": "pytorchjob-port", "containerPort": 29500} in pod["spec"]["containers"][0]["ports"]


def test_pytorch_workers_can_wait_for_the_master() -> None:
    spec = job("ddp", tasks=[task("master", 1), task("worker", 1)], plugins={"pytorch": ["--wait-master-enabled"]})
    (wait,) = _pod(spec, "worker", 0)["spec"]["initContainers"]
    assert wait["name"] == "wait-for-master" and wait["image"] == "busybox:1.36.1"
    assert "nc -z ddp-master-0.ddp 23456" in wait["command"][2]
    assert "initContainers" not in _pod(spec, "master", 0)["spec"]


# --- mpi --------------------------------------------------------------------------------------------

MPI_JOB = job("mpi", tasks=[task("master", 1), task("worker", 2)], plugins={"mpi": ["--port=2222"]})


def test_mpi_host_on_the_master_only() -> None:
    master = _pod(MPI_JOB, "master", 0)
    worker = _pod(MPI_JOB, "worker", 1)
    assert _env(master)["MPI_HOST"] == "mpi-worker-0.mpi,mpi-worker-1.mpi"
    assert "MPI_HOST" not in _env(worker)
    for pod in (master, worker):
        assert {"name": "mpijob-port", "containerPort": 2222} in pod["spec"]["containers"][0]["ports"]


def test_mpi_brings_ssh_and_svc() -> None:
    kinds = {kind for kind, _ in _objects(MPI_JOB)}
    assert kinds == {"ConfigMap", "Service", "NetworkPolicy", "Secret"}
    master = _pod(MPI_JOB, "master", 0)
    mounts = {m["mountPath"] for m in master["spec"]["containers"][0]["volumeMounts"]}
    assert mounts == {"/etc/volcano", "/root/.ssh"}


# --- ssh --------------------------------------------------------------------------------------------


def _decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {name: base64.b64decode(value).decode() for name, value in secret["data"].items()}


def test_ssh_secret_holds_a_working_key_pair() -> None:
    spec = job("mpi", tasks=[task("master", 1), task("worker", 2)], plugins={"ssh": []})
    secret = _objects(spec)[("Secret", "mpi-ssh")]
    files = _decoded(secret)
    assert set(files) == {"id_ed25519", "id_ed25519.pub", "authorized_keys", "config"}
    key = serialization.load_ssh_private_key(files["id_ed25519"].encode(), password=None)
    assert isinstance(key, ed25519.Ed25519PrivateKey)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    assert files["id_ed25519.pub"] == files["authorized_keys"] == public + "\n"
    assert files["config"] == (
        "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
        "Host mpi-master-0\n  HostName mpi-master-0.mpi\n  Port 22\n"
        "Host mpi-worker-0\n  HostName mpi-worker-0.mpi\n  Port 22\n"
        "Host mpi-worker-1\n  HostName mpi-worker-1.mpi\n  Port 22\n"
    )
    assert secret["type"] == "Opaque"


def test_ssh_mount_is_root_only() -> None:
    spec = job("j", tasks=[task("worker", 1, template=_with_init(template()))], plugins={"ssh": []})
    pod = _pod(spec, "worker", 0)
    (volume,) = pod["spec"]["volumes"]
    assert volume["secret"]["defaultMode"] == 0o600
    assert [item["path"] for item in volume["secret"]["items"]] == [
        ".ssh/id_ed25519",
        ".ssh/id_ed25519.pub",
        ".ssh/authorized_keys",
        ".ssh/config",
    ]
    for container in (*pod["spec"]["containers"], *pod["spec"]["initContainers"]):
        assert container["volumeMounts"] == [{"name": "j-ssh", "mountPath": "/root/.ssh", "subPath": ".ssh"}]


def test_ssh_other_path_port_and_rsa() -> None:
    spec = job("j", plugins={"ssh": ["--ssh-key-file-path=/home/mpi/.ssh", "--ssh-port", "2022", "--ssh-key-type=rsa"]})
    pod = _pod(spec, "worker", 0)
    assert pod["spec"]["volumes"][0]["secret"]["defaultMode"] == 0o644
    assert pod["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] == "/home/mpi/.ssh"
    plugin = SshPlugin(("--ssh-key-type=rsa", "--ssh-port=2022"))
    plugin.key_pair_factory = staticmethod(lambda kind: ("PRIVATE\n", "ssh-rsa AAAA test\n"))  # type: ignore[assignment]
    files = _decoded(plugin.secret(spec))
    assert files["id_rsa"] == "PRIVATE\n" and files["id_rsa.pub"] == "ssh-rsa AAAA test\n"
    assert "  Port 2022\n" in files["config"]


def test_ssh_user_key() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    spec = job("j", plugins={"ssh": [f"--ssh-private-key={private}"]})
    files = _decoded(SshPlugin((f"--ssh-private-key={private}",)).secret(spec))
    assert files["id_rsa"] == private
    assert files["authorized_keys"].startswith("ssh-rsa ")


def test_generated_keys_differ() -> None:
    first, second = generate_key_pair("ed25519"), generate_key_pair("ed25519")
    assert first != second
    assert first[1].startswith("ssh-ed25519 ")


# --- flags ----------------------------------------------------------------------------------------

FLAGS = {"port": Flag("int", 22), "name": Flag("str", "master"), "quiet": Flag("bool", False)}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], {"port": 22, "name": "master", "quiet": False}),
        (["--port=2222", "-name", "head"], {"port": 2222, "name": "head", "quiet": False}),
        (["-quiet"], {"port": 22, "name": "master", "quiet": True}),
        (["--quiet=false", "--port", "0x10"], {"port": 16, "name": "master", "quiet": False}),
        (["--name=a=b", "--"], {"port": 22, "name": "a=b", "quiet": False}),
    ],
)
def test_go_flags(args: list[str], expected: dict[str, Any]) -> None:
    assert parse_flags(args, FLAGS) == expected


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--nope"], "flag provided but not defined: -nope"),
        (["--port"], "flag needs an argument: -port"),
        (["--port=x"], "not an integer"),
        (["--quiet=maybe"], "invalid boolean"),
        (["worker"], "unexpected argument 'worker'"),
        (["--", "worker"], "unexpected argument 'worker' after the flags"),
        (["---port=1"], "bad flag syntax"),
    ],
)
def test_bad_go_flags(args: list[str], words: str) -> None:
    with pytest.raises(FlagError, match=words):
        parse_flags(args, FLAGS)
