"""A small Kubernetes API client that speaks raw JSON, built for the scheduler's hot paths.

Why not the generated ``kubernetes`` client for everything: the scheduler reads objects exactly as
``kubectl get -o json`` prints them (the one converter reads plain API dicts, contract §1), and
the generated client would turn them into typed models and back; and binding 10,000 pods needs
many concurrent requests over reused connections with as little Python per request as possible.
So this module keeps the official client only for what it does well (reading kubeconfig and
in-cluster credentials into a ``Configuration``) and does the HTTP itself: a bounded pool of
keep-alive HTTP/1.1 connections for requests (urllib3 when a proxy is configured), urllib3 for
long-running watches, JSON in and out as plain dicts.

Errors: a response that is no 2xx raises :class:`ApiError` carrying the HTTP status and the
server's ``Status`` reason and message; a connection that fails raises :class:`ApiError` with
status 0, so callers handle one exception type.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from vcsat.adapters.errors import InputError

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON = "application/json"
DEFAULT_POOL_SIZE = 32
"""Concurrent requests the client keeps connections for; the applier's thread pool matches it."""
AUTH_REFRESH_S = 60.0
"""How long an Authorization header is reused before the credential hook runs again."""


@dataclass(frozen=True)
class Resource:
    """One API resource: where it lives and how its objects are labelled in a v1 List."""

    kind: str
    api_version: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The URL path: the collection (all namespaces when ``namespace`` is None) or one object."""
        base = f"/api/{self.api_version}" if "/" not in self.api_version else f"/apis/{self.api_version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{_quote(namespace)}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{_quote(name)}"
            if subresource is not None:
                base += f"/{subresource}"
        return base


NODES = Resource("Node", "v1", "nodes", namespaced=False)
PODS = Resource("Pod", "v1", "pods", namespaced=True)
PODGROUPS = Resource("PodGroup", "scheduling.volcano.sh/v1beta1", "podgroups", namespaced=True)
QUEUES = Resource("Queue", "scheduling.volcano.sh/v1beta1", "queues", namespaced=False)
PRIORITY_CLASSES = Resource("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", namespaced=False)
HYPERNODES = Resource("HyperNode", "topology.volcano.sh/v1alpha1", "hypernodes", namespaced=False)
NAMESPACES = Resource("Namespace", "v1", "namespaces", namespaced=False)
EVENTS = Resource("Event", "v1", "events", namespaced=True)
PERSISTENT_VOLUMES = Resource("PersistentVolume", "v1", "persistentvolumes", namespaced=False)
PERSISTENT_VOLUME_CLAIMS = Resource("PersistentVolumeClaim", "v1", "persistentvolumeclaims", namespaced=True)
STORAGE_CLASSES = Resource("StorageClass", "storage.k8s.io/v1", "storageclasses", namespaced=False)
CSINODES = Resource("CSINode", "storage.k8s.io/v1", "csinodes", namespaced=False)
CSI_DRIVERS = Resource("CSIDriver", "storage.k8s.io/v1", "csidrivers", namespaced=False)
CSI_STORAGE_CAPACITIES = Resource("CSIStorageCapacity", "storage.k8s.io/v1", "csistoragecapacities", namespaced=True)
POD_DISRUPTION_BUDGETS = Resource("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", namespaced=True)

SCHEDULING_RESOURCES = (
    NODES,
    PODS,
    PODGROUPS,
    QUEUES,
    PRIORITY_CLASSES,
    HYPERNODES,
    NAMESPACES,
    PERSISTENT_VOLUMES,
    PERSISTENT_VOLUME_CLAIMS,
    STORAGE_CLASSES,
    CSINODES,
    CSI_DRIVERS,
    CSI_STORAGE_CAPACITIES,
    POD_DISRUPTION_BUDGETS,
)
"""What a scheduling cycle reads (contract §1), in the order a dump lists them."""


class ApiError(Exception):
    """A request the API server refused (``status`` is the HTTP code) or never answered (status 0)."""

    def __init__(self, status: int, reason: str, message: str, body: Mapping[str, Any] | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.body: Mapping[str, Any] = body or {}
        super().__init__(f"{status} {reason}: {message}" if status else f"connection failed: {message}")


def load_configuration(kubeconfig: str | None = None, context: str | None = None) -> k8s_client.Configuration:
    """Credentials as kubectl finds them: ``kubeconfig`` if given, else in-cluster, else ~/.kube/config.

    A kubeconfig that cannot be used is bad input (exit 2), named with the file.
    """
    configuration = k8s_client.Configuration()
    if kubeconfig is None:
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            return configuration
        except k8s_config.ConfigException:
            pass  # not in a pod: fall back to the kubeconfig, as kubectl does
    source = kubeconfig or "~/.kube/config"
    if kubeconfig is not None and not Path(kubeconfig).is_file():
        raise InputError("no such file", source=kubeconfig)
    try:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, context=context, client_configuration=configuration, persist_config=False
        )
    except (k8s_config.ConfigException, OSError, ValueError, TypeError, KeyError) as error:
        raise InputError(f"cannot use this kubeconfig: {' '.join(str(error).split())}", source=source) from None
    return configuration


class Kube:
    """Raw-JSON access to one API server over pooled keep-alive connections; thread-safe."""

    def __init__(
        self,
        configuration: k8s_client.Configuration,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        timeout_s: float = 30.0,
    ) -> None:
        self.configuration = configuration
        self.host = configuration.host.rstrip("/")
        self.pool_size = pool_size
        self.timeout = urllib3.Timeout(connect=10.0, read=timeout_s)
        pool_args: dict[str, Any] = {
            "cert_reqs": ssl.CERT_REQUIRED if configuration.verify_ssl else ssl.CERT_NONE,
            "ca_certs": configuration.ssl_ca_cert,
            "cert_file": configuration.cert_file,
            "key_file": configuration.key_file,
        }
        if getattr(configuration, "ca_cert_data", None):
            pool_args["ca_cert_data"] = configuration.ca_cert_data
        if configuration.assert_hostname is not None:
            pool_args["assert_hostname"] = configuration.assert_hostname
        if getattr(configuration, "tls_server_name", None):
            pool_args["server_hostname"] = configuration.tls_server_name
        # block=True: more concurrent callers than connections wait for one instead of opening
        # throwaway connections (a TLS handshake each) that the pool would then discard.
        self._requests = urllib3.PoolManager(num_pools=2, maxsize=pool_size, block=True, **pool_args)
        self._watches = urllib3.PoolManager(num_pools=2, maxsize=16, block=False, **pool_args)
        self._direct = _Connections.for_configuration(configuration, pool_size, timeout_s)
        self._auth_lock = threading.Lock()
        self._auth: str | None = None
        self._auth_at = 0.0

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None = None, *, pool_size: int = DEFAULT_POOL_SIZE) -> Kube:
        return cls(load_configuration(kubeconfig), pool_size=pool_size)

    @classmethod
    def from_api_client(cls, api_client: k8s_client.ApiClient, *, pool_size: int = DEFAULT_POOL_SIZE) -> Kube:
        """A client with the same server and credentials as a ``kubernetes`` ApiClient."""
        return cls(api_client.configuration, pool_size=pool_size)

    def close(self) -> None:
        self._requests.clear()
        self._watches.clear()
        if self._direct is not None:
            self._direct.close()

    def __enter__(self) -> Kube:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- requests -----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout_s: float | None = None,
    ) -> Any:
        """One request; the parsed JSON answer (None when empty). Raises :class:`ApiError`."""
        if params:
            path += "?" + urllib.parse.urlencode({k: _param(v) for k, v in params.items() if v is not None})
        headers = {"Accept": JSON, **self._auth_header()}
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = content_type
        if self._direct is not None:
            status, payload = self._direct.send(method, path, data, headers, timeout_s)
        else:
            timeout = self.timeout if timeout_s is None else urllib3.Timeout(connect=10.0, read=timeout_s)
            try:
                response = self._requests.urlopen(
                    method,
                    self.host + path,
                    body=data,
                    headers=headers,
                    timeout=timeout,
                    retries=_RETRIES,
                    redirect=False,
                )
            except urllib3.exceptions.HTTPError as error:
                raise ApiError(0, "ConnectionFailed", str(error)) from None
            status, payload = response.status, response.data
        if status == 401:
            self._forget_auth()
        if not 200 <= status < 300:
            raise _api_error(status, payload)
        if not payload:
            return None
        return json.loads(payload)

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any, **params: Any) -> Any:
        return self.request("POST", path, body=body, params=params)

    def patch(self, path: str, body: Any, *, content_type: str = MERGE_PATCH) -> Any:
        return self.request("PATCH", path, body=body, content_type=content_type)

    def delete(self, path: str, body: Any = None, **params: Any) -> Any:
        return self.request("DELETE", path, body=body, params=params)

    def list(self, resource: Resource, *, page_size: int = 500, **params: Any) -> tuple[list[dict[str, Any]], str]:
        """Every object of ``resource`` (all namespaces), with ``kind`` and ``apiVersion`` set on each,
        as kubectl prints them; and the list's resourceVersion, where a watch resumes."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = self.request("GET", resource.path(), params={**params, "limit": page_size, "continue": token})
            for item in page.get("items") or ():
                item["kind"] = resource.kind
                item["apiVersion"] = resource.api_version
                items.append(item)
            metadata = page.get("metadata") or {}
            token = metadata.get("continue") or None
            if token is None:
                return items, str(metadata.get("resourceVersion", ""))

    # --- watches ------------------------------------------------------------------------------

    def watch(self, resource: Resource, *, resource_version: str, timeout_s: int = 300, **params: Any) -> Watch:
        """A watch of ``resource`` from ``resource_version``, with bookmarks; iterate it for events.

        The server ends it after ``timeout_s``; :meth:`Watch.close` ends it early from any thread.
        """
        query = {
            **params,
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_s,
        }
        url = self.host + resource.path() + "?" + urllib.parse.urlencode({k: _param(v) for k, v in query.items()})
        headers = {"Accept": JSON, **self._auth_header()}
        try:
            response = self._watches.urlopen(
                "GET",
                url,
                headers=headers,
                preload_content=False,
                timeout=urllib3.Timeout(connect=10.0, read=timeout_s + 30.0),
                retries=_RETRIES,
                redirect=False,
            )
        except urllib3.exceptions.HTTPError as error:
            raise ApiError(0, "ConnectionFailed", str(error)) from None
        if response.status != 200:
            payload = response.data
            response.release_conn()
            if response.status == 401:
                self._forget_auth()
            raise _api_error(response.status, payload)
        return Watch(response, resource)

    # --- credentials --------------------------------------------------------------------------

    def _auth_header(self) -> dict[str, str]:
        now = time.monotonic()
        with self._auth_lock:
            if self._auth is None or now - self._auth_at > AUTH_REFRESH_S:
                # Runs the credential hook (in-cluster token rotation, exec plugins) when there is one.
                token = self.configuration.get_api_key_with_prefix("BearerToken", alias="authorization")
                if token is None and self.configuration.username:
                    token = self.configuration.get_basic_auth_token()
                self._auth = token or ""
                self._auth_at = now
            return {"Authorization": self._auth} if self._auth else {}

    def _forget_auth(self) -> None:
        with self._auth_lock:
            self._auth = None


class _Connections:
    """Keep-alive HTTP/1.1 connections on plain (TLS) sockets, one request at a time each.

    The hot paths (the scheduler's thousands of bindings, a bulk creator's pods) spend their
    Python time in the HTTP layer. The API server speaks plain HTTP/1.1 (Content-Length or chunked
    bodies, no trailers), so a request is one ``sendall`` of bytes built in one go and a response
    one split of its head; http.client would parse every response's headers through the email
    package, which costs more than all the rest of a request. Used whenever no proxy or TLS
    server name override is configured (urllib3 handles those).
    """

    def __init__(self, scheme: str, host: str, port: int, context: ssl.SSLContext | None, size: int, timeout_s: float):
        self._scheme = scheme
        self._host = host
        self._port = port
        self._context = context
        self._timeout_s = timeout_s
        default_port = 443 if scheme == "https" else 80
        self._host_header = host if port == default_port else f"{host}:{port}"
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    @classmethod
    def for_configuration(
        cls, configuration: k8s_client.Configuration, size: int, timeout_s: float
    ) -> _Connections | None:
        if configuration.proxy or getattr(configuration, "tls_server_name", None):
            return None
        url = urllib.parse.urlsplit(configuration.host)
        if url.scheme not in ("http", "https") or not url.hostname:
            return None
        context = None
        if url.scheme == "https":
            context = ssl.create_default_context()
            if configuration.ssl_ca_cert or getattr(configuration, "ca_cert_data", None):
                context = ssl.create_default_context(
                    cafile=configuration.ssl_ca_cert, cadata=getattr(configuration, "ca_cert_data", None)
                )
            if configuration.cert_file:
                context.load_cert_chain(configuration.cert_file, configuration.key_file)
            if not configuration.verify_ssl:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            elif configuration.assert_hostname is False:
                context.check_hostname = False
        port = url.port or (443 if url.scheme == "https" else 80)
        return cls(url.scheme, url.hostname, port, context, size, timeout_s)

    def send(
        self, method: str, path: str, body: bytes | None, headers: Mapping[str, str], timeout_s: float | None
    ) -> tuple[int, bytes]:
        head = [f"{method} {path} HTTP/1.1\r\nHost: {self._host_header}\r\n"]
        head.extend(f"{name}: {value}\r\n" for name, value in headers.items())
        if body is not None or method in ("POST", "PUT", "PATCH"):
            head.append(f"Content-Length: {len(body or b'')}\r\n")
        head.append("\r\n")
        request = "".join(head).encode("latin-1") + (body or b"")
        timeout = self._timeout_s if timeout_s is None else timeout_s
        with self._slots:
            connection = self._take()
            try:
                if connection.sock is None:
                    self._connect(connection)
                status, payload, keep = connection.exchange(request, timeout)
            except (OSError, ValueError) as error:
                connection.close()
                raise ApiError(0, "ConnectionFailed", f"{type(error).__name__}: {error}") from None
            if keep:
                with self._lock:
                    self._idle.append(connection)
            else:
                connection.close()
            return status, payload

    def _take(self) -> _Connection:
        with self._lock:
            while self._idle:
                connection = self._idle.pop()
                if connection.still_open():
                    return connection
                connection.close()
        return _Connection()

    def _connect(self, connection: _Connection) -> None:
        """Connect, retrying a refused or reset connect a few times: nothing was sent yet."""
        for attempt in range(3):
            try:
                sock = socket.create_connection((self._host, self._port), timeout=10.0)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if self._context is not None:
                    sock = self._context.wrap_socket(sock, server_hostname=self._host)
                connection.sock = sock
                return
            except OSError:
                if attempt == 2:
                    raise
                time.sleep(0.1 * (attempt + 1))

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


class _Connection:
    """One keep-alive connection: its socket and the bytes read past the response being parsed."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self._buffer = b""

    def exchange(self, request: bytes, timeout_s: float) -> tuple[int, bytes, bool]:
        """Send one request; the response's status and body, and whether the connection stays open."""
        assert self.sock is not None
        self.sock.settimeout(timeout_s)
        self.sock.sendall(request)
        end = self._fill_until(b"\r\n\r\n")
        head, self._buffer = self._buffer[:end], self._buffer[end + 4 :]
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise ValueError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
        status = int(parts[1])
        fields: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        keep = parts[0] == "HTTP/1.1" and fields.get("connection", "").lower() != "close"
        if "chunked" in fields.get("transfer-encoding", "").lower():
            return status, self._chunked(), keep
        if "content-length" in fields:
            return status, self._exactly(int(fields["content-length"])), keep
        if status in (204, 304) or 100 <= status < 200:
            return status, b"", keep
        return status, self._until_closed(), False

    def _recv(self) -> bytes:
        assert self.sock is not None
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionResetError("the server closed the connection")
        return data

    def _fill_until(self, marker: bytes) -> int:
        """Read until the buffer holds ``marker``; its offset."""
        start = 0
        while True:
            end = self._buffer.find(marker, start)
            if end >= 0:
                return end
            start = max(0, len(self._buffer) - len(marker) + 1)
            self._buffer += self._recv()

    def _exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            self._buffer += self._recv()
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def _chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            end = self._fill_until(b"\r\n")
            size = int(self._buffer[:end].split(b";", 1)[0], 16)
            self._buffer = self._buffer[end + 2 :]
            if size == 0:
                end = self._fill_until(b"\r\n")  # no trailers: the empty line that ends the body
                self._buffer = self._buffer[end + 2 :]
                return b"".join(parts)
            parts.append(self._exactly(size))
            self._exactly(2)  # the CRLF after the chunk

    def _until_closed(self) -> bytes:
        assert self.sock is not None
        data = [self._buffer]
        self._buffer = b""
        while chunk := self.sock.recv(65536):
            data.append(chunk)
        return b"".join(data)

    def still_open(self) -> bool:
        """Whether an idle connection can take a request: connected and the server has not closed
        it (readable now means EOF or junk)."""
        sock = self.sock
        if sock is None:
            return True  # not connected yet: it connects on use
        if self._buffer:
            return False
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def close(self) -> None:
        sock, self.sock = self.sock, None
        self._buffer = b""
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()


class Watch:
    """The events of one watch request, as plain dicts ``{"type": ..., "object": {...}}``."""

    def __init__(self, response: urllib3.BaseHTTPResponse, resource: Resource) -> None:
        self._response = response
        self._resource = resource
        self._closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        buffer = b""
        try:
            for chunk in self._response.stream(64 * 1024, decode_content=True):
                buffer += chunk
                start = 0  # lines are cut out by offset: no copy of the rest of the buffer per line
                while (end := buffer.find(b"\n", start)) >= 0:
                    line = buffer[start:end]
                    start = end + 1
                    if line.strip():
                        yield json.loads(line)
                buffer = buffer[start:]
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as error:
            if not self._closed:
                raise ApiError(0, "WatchBroken", str(error)) from None
        finally:
            self.close()

    def close(self) -> None:
        """Ends the watch; safe from another thread while one is iterating it."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):  # already closed or never read: nothing left to end
            self._response.shutdown()
        self._response.release_conn()


_RETRIES = urllib3.Retry(total=3, connect=3, read=0, redirect=0, status=0, other=0)
"""Retry only what never reached the server (connect errors); a request that may have been
processed is not repeated blindly (a bind is answered 409 the second time)."""


def _api_error(status: int, payload: bytes) -> ApiError:
    try:
        body = json.loads(payload) if payload else {}
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    message = str(body.get("message") or payload[:300].decode("utf-8", "replace"))
    return ApiError(status, str(body.get("reason") or ""), message, body)


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def now_rfc3339() -> str:
    """The current time as Kubernetes writes timestamps (seconds, UTC, ``Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` of a namespaced object, ``name`` of a cluster-scoped one."""
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = str(metadata.get("name", ""))
    return f"{namespace}/{name}" if namespace else name
