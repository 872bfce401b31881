"""A real, throwaway Kubernetes control plane (etcd + kube-apiserver) for integration tests.

vcsat's live scheduler and Job controller talk to an apiserver; faking one would test our guess
of its behaviour (validation, the binding subresource, CRD schemas and CEL rules, status
subresources) instead of the real thing. This module starts the genuine binaries that
tools/controlplane/build.sh compiles, on free loopback ports with their own certificates and
data directory, so any number of test sessions can run side by side and leave nothing behind.

There is no controller-manager or kubelet (kwokcluster.py adds kube-controller-manager and kwok
for the tests that need pods to run), and no scheduler unless a test starts one
(:func:`start_kube_scheduler`, the oracle of tests/k8s/test_differential.py): objects are stored
and validated, but nothing reconciles them. Pods stay Pending until something binds them, namespaces deleted stay
Terminating, and no service-account tokens are minted (the ServiceAccount admission plugin is
off so that pods need none).

Plain module (no pytest imports) so that benchmarks and scripts can use it too:

    with start_control_plane() as cp:
        api = kubernetes.client.CoreV1Api(cp.api_client())
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import datetime
import ipaddress
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from kubernetes import client
from kubernetes.client import ApiClient, Configuration
from kubernetes.dynamic import DynamicClient

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "tools" / "controlplane" / "build.sh"
CRD_DIR = REPO_ROOT / "deploy" / "crds"
DEFAULT_QUEUE_FILE = REPO_ROOT / "deploy" / "default-queue.yaml"

ADMIN_USER = "vcsat-test-admin"
# The first-run build compiles kube-apiserver from source, which takes many minutes on two cores;
# a cached build returns at once.
BUILD_TIMEOUT_S = float(os.environ.get("VCSAT_CONTROLPLANE_BUILD_TIMEOUT", "3600"))
START_TIMEOUT_S = float(os.environ.get("VCSAT_CONTROLPLANE_START_TIMEOUT", "90"))
STOP_TIMEOUT_S = 15.0
LOG_TAIL_LINES = 60
WORKDIR_PREFIX = "vcsat-controlplane-"
OWNER_FILE = "owner.pid"


class ControlPlaneError(RuntimeError):
    """The control plane could not be built or started; the message carries the logs."""


def locate_binaries(names: tuple[str, ...] = ("kube-apiserver", "etcd")) -> Path:
    """Directory holding the control-plane binaries, building them first when not cached.

    ``names`` are checked there (kube-scheduler is asked for only by the tests that run it).
    VCSAT_CONTROLPLANE_BIN_DIR points at prebuilt binaries and skips build.sh altogether.
    """
    override = os.environ.get("VCSAT_CONTROLPLANE_BIN_DIR")
    if override:
        bin_dir = Path(override)
    else:
        try:
            proc = subprocess.run(
                ["bash", str(BUILD_SCRIPT)],
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ControlPlaneError(f"{BUILD_SCRIPT} did not finish within {BUILD_TIMEOUT_S:.0f}s") from exc
        if proc.returncode != 0:
            raise ControlPlaneError(f"{BUILD_SCRIPT} failed with exit code {proc.returncode}:\n{proc.stderr}")
        lines = proc.stdout.strip().splitlines()
        if not lines:
            raise ControlPlaneError(f"{BUILD_SCRIPT} printed no directory:\n{proc.stderr}")
        bin_dir = Path(lines[-1])
    for name in names:
        if not os.access(bin_dir / name, os.X_OK):
            raise ControlPlaneError(f"{bin_dir / name} is missing or not executable")
    return bin_dir


@dataclass(frozen=True)
class ControlPlane:
    """A running control plane, as tests see it."""

    server: str
    """Base URL of the apiserver, e.g. https://127.0.0.1:41234."""
    token: str
    """Bearer token of an admin (group system:masters)."""
    ca_file: Path
    """PEM file of the CA that signed the apiserver's serving certificate."""
    kubeconfig: Path
    """A kubeconfig file with one context that uses the token above."""
    workdir: Path
    """Temporary directory with certificates, etcd data and the processes' logs."""
    bin_dir: Path | None = None
    """Where its binaries came from (kube-scheduler is looked for there too)."""

    def api_client(self) -> ApiClient:
        """A fresh kubernetes.client.ApiClient for this control plane (caller closes it)."""
        configuration = Configuration(
            host=self.server,
            # "authorization" is the key both older and newer kubernetes clients read.
            api_key={"authorization": f"Bearer {self.token}"},
            ssl_ca_cert=str(self.ca_file),
        )
        return ApiClient(configuration)

    def create_objects(self, objects: Iterable[dict[str, Any]] | Path) -> list[dict[str, Any]]:
        """Create each object (any kind, CRDs' too) and return them as the server stored them.

        Accepts a YAML/JSON file (single document, multi-document or a v1 List) or dicts.
        """
        docs = load_manifests(objects) if isinstance(objects, Path) else list(objects)
        created: list[dict[str, Any]] = []
        with self.api_client() as api:
            dyn = DynamicClient(api)  # type: ignore[no-untyped-call]
            for doc in docs:
                resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
                namespace = doc.get("metadata", {}).get("namespace")
                if resource.namespaced and not namespace:
                    namespace = "default"
                obj = resource.create(body=doc, namespace=namespace if resource.namespaced else None)
                created.append(obj.to_dict())
        return created


def load_manifests(path: Path) -> list[dict[str, Any]]:
    """Objects in a YAML or JSON manifest, with v1 Lists flattened."""
    docs: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for doc in yaml.safe_load_all(fh):
            if not doc:
                continue
            if doc.get("kind") == "List" or str(doc.get("kind", "")).endswith("List"):
                docs.extend(doc.get("items") or [])
            else:
                docs.append(doc)
    return docs


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (start retries if it is taken by then)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- certificates -------------------------------------------------------------------------


def _pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def write_pki(pki: Path) -> dict[str, Path]:
    """Create a CA, a serving certificate for loopback, and a service-account key pair."""
    pki.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    # Backdated so that a clock a little behind (VMs, containers) still accepts them.
    not_before = now - datetime.timedelta(hours=1)
    not_after = now + datetime.timedelta(days=7)

    # EC keys: generated in milliseconds, where RSA would add noticeable start-up time.
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "vcsat-test-ca")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    serving_key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.DNSName("kubernetes"),
        x509.DNSName("kubernetes.default"),
        x509.DNSName("kubernetes.default.svc"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("::1")),
    ]
    serving_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(serving_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    # RSA for the service-account key: RS256 is what every token consumer accepts.
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    paths = {
        "ca": pki / "ca.crt",
        "serving_cert": pki / "apiserver.crt",
        "serving_key": pki / "apiserver.key",
        "sa_key": pki / "sa.key",
        "sa_pub": pki / "sa.pub",
    }
    paths["ca"].write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths["serving_cert"].write_bytes(serving_cert.public_bytes(serialization.Encoding.PEM))
    paths["serving_key"].write_bytes(_pem_key(serving_key))
    paths["sa_key"].write_bytes(_pem_key(sa_key))
    paths["sa_pub"].write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    for key_path in (paths["serving_key"], paths["sa_key"]):
        key_path.chmod(0o600)
    return paths


def write_kubeconfig(path: Path, server: str, ca_file: Path, token: str) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "vcsat-test",
                "cluster": {"server": server, "certificate-authority": str(ca_file)},
            }
        ],
        "users": [{"name": ADMIN_USER, "user": {"token": token}}],
        "contexts": [
            {
                "name": "vcsat-test",
                "context": {"cluster": "vcsat-test", "user": ADMIN_USER, "namespace": "default"},
            }
        ],
        "current-context": "vcsat-test",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    path.chmod(0o600)


# --- processes ----------------------------------------------------------------------------


_PR_SET_PDEATHSIG = 1
_live_processes: set[subprocess.Popen[bytes]] = set()


def _die_with_parent() -> None:
    # Runs in the child before exec: if pytest is killed outright (no teardown, no atexit),
    # the kernel still takes etcd and kube-apiserver down with it.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _stop_process(proc: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT_S) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)
    _live_processes.discard(proc)


@atexit.register
def _stop_leftovers() -> None:
    for proc in list(_live_processes):
        with contextlib.suppress(Exception):
            _stop_process(proc, timeout=5.0)


@dataclass
class _Proc:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    log_fh: Any = field(repr=False)

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        self.log_fh.flush()
        text = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        try:
            _stop_process(self.proc)
        finally:
            self.log_fh.close()


def _spawn(name: str, argv: list[str], log: Path, env: dict[str, str] | None = None) -> _Proc:
    log_fh = log.open("wb")
    kwargs: dict[str, Any] = {}
    if env is not None:
        kwargs["env"] = env
    if sys.platform.startswith("linux"):
        kwargs["preexec_fn"] = _die_with_parent
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=log_fh,
        stderr=subprocess.STDOUT,
        **kwargs,
    )
    _live_processes.add(proc)
    return _Proc(name=name, proc=proc, log=log, log_fh=log_fh)


def _failure(reason: str, procs: Iterable[_Proc]) -> ControlPlaneError:
    parts = [reason]
    for p in procs:
        status = p.proc.poll()
        state = "running" if status is None else f"exited with {status}"
        parts.append(f"--- {p.name} ({state}), last lines of {p.log.name} ---\n{p.tail()}")
    parts.append("(the temporary directory is removed on exit; set VCSAT_CONTROLPLANE_KEEP_WORKDIR=1 to keep it)")
    return ControlPlaneError("\n".join(parts))


def _wait_until(check: Any, what: str, deadline: float, procs: list[_Proc], interval: float = 0.1) -> None:
    last_error = ""
    while True:
        for p in procs:
            if p.proc.poll() is not None:
                raise _failure(f"{p.name} exited while waiting for {what}", procs)
        try:
            if check():
                return
        except Exception as exc:
            last_error = f"{type(exc).__name__}: {exc}"
        if time.monotonic() > deadline:
            raise _failure(
                f"timed out after {START_TIMEOUT_S:.0f}s waiting for {what}"
                + (f" (last error: {last_error})" if last_error else ""),
                procs,
            )
        time.sleep(interval)


def _http_ok(url: str, *, token: str | None = None, ca_file: Path | None = None) -> bool:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    context = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as resp:
            status: int = resp.status
            return status == 200
    except urllib.error.HTTPError:
        return False


def _etcd_healthy(url: str) -> bool:
    with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
        health: object = json.load(resp).get("health")
        return health == "true"


def _start_etcd(bin_dir: Path, workdir: Path, deadline: float) -> tuple[_Proc, str]:
    client_url = f"http://127.0.0.1:{free_port()}"
    peer_url = f"http://127.0.0.1:{free_port()}"
    argv = [
        str(bin_dir / "etcd"),
        "--name=vcsat-test",
        f"--data-dir={workdir / 'etcd-data'}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=vcsat-test={peer_url}",
        "--initial-cluster-state=new",
        # Test data is thrown away anyway; skipping fsync makes every write far cheaper.
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]
    proc = _spawn("etcd", argv, workdir / "etcd.log")
    try:
        _wait_until(lambda: _etcd_healthy(client_url), "etcd /health", deadline, [proc])
    except BaseException:
        proc.stop()
        raise
    return proc, client_url


def _start_apiserver(
    bin_dir: Path,
    workdir: Path,
    etcd_url: str,
    pki: dict[str, Path],
    token: str,
    deadline: float,
    extra_args: tuple[str, ...] = (),
) -> tuple[_Proc, str]:
    port = free_port()
    server = f"https://127.0.0.1:{port}"
    token_file = workdir / "tokens.csv"
    token_file.write_text(f'{token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n', encoding="utf-8")
    token_file.chmod(0o600)
    argv = [
        str(bin_dir / "kube-apiserver"),
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={pki['serving_cert']}",
        f"--tls-private-key-file={pki['serving_key']}",
        f"--client-ca-file={pki['ca']}",
        f"--token-auth-file={token_file}",
        "--anonymous-auth=false",
        "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki['sa_pub']}",
        f"--service-account-signing-key-file={pki['sa_key']}",
        "--service-cluster-ip-range=10.0.0.0/24",
        # ServiceAccount: without a token controller pods would wait for a token forever.
        # TaintNodesByCondition: it would taint every new Node not-ready, and no kubelet ever
        # clears that, so test nodes would refuse every pod.
        "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
        # One etcd, one apiserver: these only cost start-up time and goroutines here.
        "--enable-priority-and-fairness=false",
        "--endpoint-reconciler-type=none",
        "--profiling=false",
        f"--cert-dir={workdir / 'apiserver-certs'}",
        *extra_args,
    ]
    proc = _spawn("kube-apiserver", argv, workdir / "kube-apiserver.log")
    return proc, server


def _apply_crds(cp: ControlPlane, deadline: float, procs: list[_Proc], crd_dir: Path = CRD_DIR) -> None:
    crd_files = sorted(crd_dir.glob("*.yaml"))
    if not crd_files:
        raise ControlPlaneError(f"no CRDs found in {crd_dir}")
    names: list[str] = []
    with cp.api_client() as api:
        ext = client.ApiextensionsV1Api(api)
        for path in crd_files:
            for doc in load_manifests(path):
                try:
                    ext.create_custom_resource_definition(body=doc)  # type: ignore[arg-type]
                except client.ApiException as exc:
                    raise _failure(f"the apiserver refused CRD {path.name}: {exc.body}", procs) from exc
                names.append(doc["metadata"]["name"])

        def established() -> bool:
            for name in names:
                crd = ext.read_custom_resource_definition(name)
                status = crd.status
                conditions = {c.type: c.status for c in (status.conditions if status else None) or []}
                if conditions.get("Established") != "True":
                    return False
            return True

        _wait_until(established, f"CRDs {', '.join(names)} to be Established", deadline, procs)


@contextlib.contextmanager
def start_control_plane(
    *,
    bin_dir: Path | None = None,
    install_crds: bool = True,
    attempts: int = 3,
    apiserver_args: tuple[str, ...] = (),
    crd_dir: Path = CRD_DIR,
) -> Iterator[ControlPlane]:
    """Run etcd and kube-apiserver for the duration of the with-block.

    With install_crds, every CRD in ``crd_dir`` (deploy/crds unless told) is created and
    Established, and the queue `default` (deploy/default-queue.yaml) exists, as after installing
    vcsat on a cluster.

    ``apiserver_args`` are appended to kube-apiserver's command line (a later flag wins).

    Ports are picked free; when one is taken before the process binds it, the whole start is
    retried (up to `attempts` times). On exit both processes are stopped (SIGTERM, then SIGKILL)
    and the temporary directory is removed.
    """
    bin_dir = bin_dir or locate_binaries()
    _remove_stale_workdirs()
    last_error: ControlPlaneError | None = None
    for _ in range(attempts):
        workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX))
        (workdir / OWNER_FILE).write_text(str(os.getpid()), encoding="utf-8")
        procs: list[_Proc] = []
        try:
            try:
                cp = _boot(bin_dir, workdir, procs, install_crds, apiserver_args, crd_dir)
            except ControlPlaneError as exc:
                last_error = exc
                if "address already in use" in str(exc):
                    continue
                raise
            yield cp
            return
        finally:
            for p in reversed(procs):
                with contextlib.suppress(Exception):
                    p.stop()
            if os.environ.get("VCSAT_CONTROLPLANE_KEEP_WORKDIR"):
                sys.stderr.write(f"control plane files kept in {workdir}\n")
            else:
                shutil.rmtree(workdir, ignore_errors=True)
    assert last_error is not None
    raise last_error


def _remove_stale_workdirs() -> None:
    # A session killed outright (SIGKILL, OOM) cannot clean up; its processes died with it
    # (PDEATHSIG), and its files, mostly etcd data, are removed by the next session here.
    for workdir in Path(tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}*"):
        try:
            owner = int((workdir / OWNER_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not _pid_alive(owner):
            shutil.rmtree(workdir, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _boot(
    bin_dir: Path,
    workdir: Path,
    procs: list[_Proc],
    install_crds: bool,
    apiserver_args: tuple[str, ...] = (),
    crd_dir: Path = CRD_DIR,
) -> ControlPlane:
    deadline = time.monotonic() + START_TIMEOUT_S
    pki = write_pki(workdir / "pki")
    token = secrets.token_urlsafe(32)
    etcd, etcd_url = _start_etcd(bin_dir, workdir, deadline)
    procs.append(etcd)
    apiserver, server = _start_apiserver(bin_dir, workdir, etcd_url, pki, token, deadline, apiserver_args)
    procs.append(apiserver)
    _wait_until(
        lambda: _http_ok(f"{server}/readyz", token=token, ca_file=pki["ca"]),
        f"kube-apiserver {server}/readyz",
        deadline,
        procs,
        interval=0.25,
    )
    kubeconfig = workdir / "kubeconfig"
    write_kubeconfig(kubeconfig, server, pki["ca"], token)
    cp = ControlPlane(
        server=server, token=token, ca_file=pki["ca"], kubeconfig=kubeconfig, workdir=workdir, bin_dir=bin_dir
    )
    if install_crds:
        _apply_crds(cp, deadline, procs, crd_dir)
        # A Volcano installation creates this queue too; what runs against a real cluster
        # expects it.
        cp.create_objects(DEFAULT_QUEUE_FILE)
    return cp


# --- kube-scheduler -------------------------------------------------------------------------

SCHEDULER_CANARY_LABEL = "vcsat-test/scheduler-canary"


@dataclass(frozen=True)
class KubeScheduler:
    """A running kube-scheduler (default profile, scheduler name ``default-scheduler``)."""

    config_file: Path
    """Its KubeSchedulerConfiguration."""
    log: Path
    """Its log file (klog, verbosity 2: every binding and every unschedulable pod is a line)."""


def write_scheduler_config(path: Path, kubeconfig: Path, *, backoff_s: int = 1) -> None:
    """A KubeSchedulerConfiguration: the default profile, no leader election, short backoffs.

    The backoffs (1 s, the least the API allows, where the defaults are 1 s and 10 s) bound how
    long a pod that failed once waits before kube-scheduler tries it again, so a test that waits
    for a retry waits seconds, not tens of seconds.
    """
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 500, "burst": 1000},
        "leaderElection": {"leaderElect": False},
        "podInitialBackoffSeconds": backoff_s,
        "podMaxBackoffSeconds": backoff_s,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


@contextlib.contextmanager
def start_kube_scheduler(cp: ControlPlane, *, bin_dir: Path | None = None) -> Iterator[KubeScheduler]:
    """Run the genuine kube-scheduler against ``cp`` for the duration of the with-block.

    It authenticates with a kubeconfig of its own (the control plane's admin token, written into
    a file beside its configuration), serves no HTTPS (``--secure-port=0``: nothing here probes
    it), and is known ready once it has bound a canary pod to a canary node, both removed again.
    """
    bin_dir = bin_dir or cp.bin_dir or locate_binaries(("kube-scheduler",))
    binary = bin_dir / "kube-scheduler"
    if not os.access(binary, os.X_OK):
        bin_dir = locate_binaries(("kube-scheduler",))
        binary = bin_dir / "kube-scheduler"
    workdir = Path(tempfile.mkdtemp(prefix="kube-scheduler-", dir=cp.workdir))
    kubeconfig = workdir / "kubeconfig"
    write_kubeconfig(kubeconfig, cp.server, cp.ca_file, cp.token)
    config_file = workdir / "config.yaml"
    write_scheduler_config(config_file, kubeconfig)
    log = workdir / "kube-scheduler.log"
    proc = _spawn("kube-scheduler", [str(binary), f"--config={config_file}", "--secure-port=0", "--v=2"], log)
    try:
        _wait_for_canary(cp, proc)
        yield KubeScheduler(config_file=config_file, log=log)
    finally:
        proc.stop()


def _wait_for_canary(cp: ControlPlane, proc: _Proc) -> None:
    tag = secrets.token_hex(4)
    name = f"scheduler-canary-{tag}"
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {SCHEDULER_CANARY_LABEL: tag}},
        "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "1"}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeSelector": {SCHEDULER_CANARY_LABEL: tag},
            "containers": [{"name": "c", "image": "registry.invalid/canary:1"}],
        },
    }
    with cp.api_client() as api:
        core = client.CoreV1Api(api)
        core.create_node(body=node)
        core.create_namespaced_pod(namespace="default", body=pod)
        try:
            _wait_until(
                lambda: core.read_namespaced_pod(name, "default").spec.node_name == name,
                "kube-scheduler to bind its canary pod",
                time.monotonic() + START_TIMEOUT_S,
                [proc],
                interval=0.05,
            )
        finally:
            with contextlib.suppress(client.ApiException):
                core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
            with contextlib.suppress(client.ApiException):
                core.delete_node(name)
