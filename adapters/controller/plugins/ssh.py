"""The ``ssh`` plugin: password-less ssh between all pods of a job (what ``mpirun`` uses).

The controller generates one key pair per job and stores it in a Secret ``<job>-ssh`` with the
private key, the public key, ``authorized_keys`` (the same public key) and an ssh ``config`` that
names every pod of the job and turns off host-key prompts (pods are new hosts every run). The
Secret is mounted at ``/root/.ssh`` with mode 0600, which sshd insists on.

Volcano's flags: ``--ssh-key-file-path`` (another mount point; the files are then 0644 so that a
non-root user can read them), ``--ssh-private-key`` / ``--ssh-public-key`` (bring your own key)
and ``--ssh-port``. vcsat adds ``--ssh-key-type`` (``ed25519``, the default, or ``rsa``): an
ed25519 key is generated in microseconds where RSA takes a noticeable fraction of a second, and
every OpenSSH of the last decade accepts it. The files are named as ssh expects for the type
(``id_ed25519`` or ``id_rsa``), so ``ssh`` finds them without ``-i``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from vcsat.adapters.controller import naming
from vcsat.adapters.controller.plugins.base import (
    JobPlugin,
    ObjectRecipe,
    add_mount,
    add_volume,
    containers,
    object_metadata,
)
from vcsat.adapters.controller.plugins.flags import Flag

if TYPE_CHECKING:
    from vcsat.adapters.controller.jobspec import JobSpec, TaskSpec

DEFAULT_KEY_PATH = "/root/.ssh"
RELATIVE_PATH = ".ssh"
AUTHORIZED_KEYS = "authorized_keys"
CONFIG = "config"
ROOT_MODE = 0o600
SHARED_MODE = 0o644
KEY_FILES = {"ed25519": "id_ed25519", "rsa": "id_rsa"}

KeyPairFactory = Callable[[str], tuple[str, str]]


def generate_key_pair(key_type: str) -> tuple[str, str]:
    """A fresh (private key in OpenSSH format, public key line) pair of ``key_type``."""
    key: ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey
    if key_type == "rsa":
        key = rsa.generate_private_key(public_exponent=65537, key_size=3072)
    else:
        key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public.decode() + "\n"


def ssh_config(job: JobSpec, port: int) -> str:
    """An ssh config naming every pod (``ssh <job>-worker-0`` works), host keys not checked."""
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in job.tasks:
        indices = range(min(task.replicas, 1)) if task.hostname else range(task.replicas)
        for index in indices:
            hostname = task.hostname or naming.pod_name(job.name, task.name, index)
            lines += [f"Host {hostname}", f"  HostName {hostname}.{task.subdomain or job.name}", f"  Port {port}"]
    return "\n".join(lines) + "\n"


class SshPlugin(JobPlugin):
    name = "ssh"
    flags: ClassVar[Mapping[str, Flag]] = {
        "ssh-key-file-path": Flag("str", DEFAULT_KEY_PATH, "where the keys are mounted"),
        "ssh-private-key": Flag("str", "", "use this private key instead of a generated one"),
        "ssh-public-key": Flag("str", "", "the public key of --ssh-private-key"),
        "ssh-port": Flag("int", 22, "sshd's port, written into the ssh config"),
        "ssh-key-type": Flag("str", "ed25519", "type of a generated key: ed25519 or rsa"),
    }
    key_pair_factory: KeyPairFactory = staticmethod(generate_key_pair)

    def problem(self, tasks: tuple[TaskSpec, ...]) -> str | None:
        port = self.flag_int("ssh-port")
        if not 0 < port < 65536:
            return f"--ssh-port={port} is not a port (1 to 65535)"
        if self.flag_str("ssh-key-type") not in KEY_FILES:
            return f"--ssh-key-type must be ed25519 or rsa, not {self.flag_str('ssh-key-type')!r}"
        if not self.flag_str("ssh-key-file-path").startswith("/"):
            return "--ssh-key-file-path must be an absolute path"
        if self.flag_str("ssh-private-key"):
            try:
                self.user_key_pair()
            except ValueError as error:
                return f"--ssh-private-key: {error}"
        return None

    def secret_name(self, job: JobSpec) -> str:
        return naming.plugin_object_name(job.name, self.name)

    @property
    def key_file(self) -> str:
        if self.flag_str("ssh-private-key"):
            return _key_file_of(_load_private_key(self.flag_str("ssh-private-key")))
        return KEY_FILES[self.flag_str("ssh-key-type")]

    @property
    def file_names(self) -> list[str]:
        return [self.key_file, f"{self.key_file}.pub", AUTHORIZED_KEYS, CONFIG]

    def user_key_pair(self) -> tuple[str, str]:
        """The key pair given in the flags; the public half derived when not given."""
        private = self.flag_str("ssh-private-key")
        public = self.flag_str("ssh-public-key")
        key = _load_private_key(private)
        if not public:
            public = (
                key.public_key()
                .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
                .decode()
            )
        return (private if private.endswith("\n") else private + "\n"), (
            public if public.endswith("\n") else public + "\n"
        )

    def objects(self, job: JobSpec) -> list[ObjectRecipe]:
        return [ObjectRecipe("v1", "Secret", self.secret_name(job), lambda: self.secret(job))]

    def secret(self, job: JobSpec) -> dict[str, Any]:
        if self.flag_str("ssh-private-key"):
            private, public = self.user_key_pair()
        else:
            private, public = self.key_pair_factory(self.flag_str("ssh-key-type"))
        files = {
            self.key_file: private,
            f"{self.key_file}.pub": public,
            AUTHORIZED_KEYS: public,
            CONFIG: ssh_config(job, self.flag_int("ssh-port")),
        }
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": object_metadata(job, self.secret_name(job)),
            "type": "Opaque",
            "data": {name: base64.b64encode(text.encode()).decode() for name, text in files.items()},
        }

    def mutate_pod(self, pod: dict[str, Any], job: JobSpec, task: TaskSpec, index: int) -> None:
        name = self.secret_name(job)
        path = self.flag_str("ssh-key-file-path")
        mode = ROOT_MODE if path == DEFAULT_KEY_PATH else SHARED_MODE
        add_volume(
            pod,
            {
                "name": name,
                "secret": {
                    "secretName": name,
                    "items": [{"key": key, "path": f"{RELATIVE_PATH}/{key}"} for key in self.file_names],
                    "defaultMode": mode,
                },
            },
        )
        for container in containers(pod):
            add_mount(container, {"name": name, "mountPath": path, "subPath": RELATIVE_PATH})


def _load_private_key(text: str) -> Any:
    data = text.encode()
    loaders: list[Callable[[bytes], Any]] = [
        lambda raw: serialization.load_ssh_private_key(raw, password=None),
        lambda raw: serialization.load_pem_private_key(raw, password=None),
    ]
    for loader in loaders:
        try:
            return loader(data)
        except (ValueError, TypeError):
            continue
    raise ValueError("not an unencrypted private key in OpenSSH or PEM format")


def _key_file_of(key: Any) -> str:
    """The file name ssh looks for by default, for this type of key."""
    if isinstance(key, rsa.RSAPrivateKey):
        return "id_rsa"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return "id_ecdsa"
    return "id_ed25519"
