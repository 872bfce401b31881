"""The raw-JSON client's own HTTP/1.1 connections (adapters/kube/client.py ``_Connections``), against a
loopback server that answers with canned bytes: bodies by Content-Length, chunked or up to the
close, keep-alive reuse, and a connection the server closed while idle."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from vcsat.adapters.kube.client import ApiError, Kube


class _CannedServer:
    """Accepts connections; answers each request with the next canned response; records requests."""

    def __init__(self, responses: list[bytes], *, close_after_each: bool = False) -> None:
        self.responses = list(responses)
        self.close_after_each = close_after_each
        self.requests: list[bytes] = []
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while self.responses:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                buffer = b""
                while self.responses:
                    while b"\r\n\r\n" not in buffer:
                        data = conn.recv(65536)
                        if not data:
                            break
                        buffer += data
                    if b"\r\n\r\n" not in buffer:
                        break
                    head, _, buffer = buffer.partition(b"\r\n\r\n")
                    length = 0
                    for line in head.split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            length = int(value)
                    while len(buffer) < length:
                        buffer += conn.recv(65536)
                    self.requests.append(head + b"\r\n\r\n" + buffer[:length])
                    buffer = buffer[length:]
                    conn.sendall(self.responses.pop(0))
                    if self.close_after_each:
                        break

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def serve() -> Iterator[list[_CannedServer]]:
    servers: list[_CannedServer] = []
    yield servers
    for server in servers:
        server.close()


def _client(server: _CannedServer) -> Kube:
    from kubernetes.client import Configuration

    configuration = Configuration(host=f"http://127.0.0.1:{server.port}")
    return Kube(configuration, pool_size=2)


def _response(status: str, body: bytes, *headers: str) -> bytes:
    head = [f"HTTP/1.1 {status}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


BODY = json.dumps({"kind": "Status", "items": list(range(50))}).encode()


def _chunked(body: bytes, size: int) -> bytes:
    chunks = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks) + b"0\r\n\r\n"


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(_response("200 OK", BODY, f"Content-Length: {len(BODY)}"), id="content-length"),
        pytest.param(_response("200 OK", _chunked(BODY, 7), "Transfer-Encoding: chunked"), id="chunked"),
        pytest.param(
            _response("201 Created", _chunked(BODY, 4096), "Transfer-Encoding: chunked", "Connection: keep-alive"),
            id="one-chunk",
        ),
    ],
)
def test_bodies_are_read_whole_and_the_connection_is_kept(serve: list[_CannedServer], response: bytes) -> None:
    server = _CannedServer([response, response])
    serve.append(server)
    with _client(server) as kube:
        assert kube.post("/api/v1/things", {"a": 1}) == json.loads(BODY)
        assert kube.get("/api/v1/things") == json.loads(BODY)
    assert server.connections == 1
    first = server.requests[0]
    assert first.startswith(b"POST /api/v1/things HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nContent-Length: 7\r\n" in first and first.endswith(b'{"a":1}')
    assert server.requests[1].startswith(b"GET /api/v1/things HTTP/1.1\r\n")


def test_a_body_up_to_the_close_and_connection_close_open_a_new_connection(serve: list[_CannedServer]) -> None:
    responses = [
        _response("200 OK", BODY, f"Content-Length: {len(BODY)}", "Connection: close"),
        _response("200 OK", BODY),  # no length: the body ends when the server closes
        _response("200 OK", BODY, f"Content-Length: {len(BODY)}"),
    ]
    server = _CannedServer(responses, close_after_each=True)
    serve.append(server)
    with _client(server) as kube:
        for _ in range(3):
            assert kube.get("/x") == json.loads(BODY)
    assert server.connections == 3


def test_errors_carry_the_status_and_the_servers_message(serve: list[_CannedServer]) -> None:
    status = json.dumps({"kind": "Status", "reason": "Conflict", "message": "already bound"}).encode()
    server = _CannedServer([_response("409 Conflict", status, f"Content-Length: {len(status)}")])
    serve.append(server)
    with _client(server) as kube, pytest.raises(ApiError) as raised:
        kube.post("/x", {})
    assert (raised.value.status, raised.value.reason, raised.value.message) == (409, "Conflict", "already bound")


def test_a_server_that_hangs_up_mid_answer_is_no_answer(serve: list[_CannedServer]) -> None:
    server = _CannedServer([b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"], close_after_each=True)
    serve.append(server)
    with _client(server) as kube, pytest.raises(ApiError) as raised:
        kube.get("/x")
    assert raised.value.status == 0


def test_an_idle_connection_the_server_closed_is_not_reused(serve: list[_CannedServer]) -> None:
    response = _response("200 OK", BODY, f"Content-Length: {len(BODY)}")
    server = _CannedServer([response, response], close_after_each=True)  # hangs up after each answer
    serve.append(server)
    with _client(server) as kube:
        assert kube.get("/x") == json.loads(BODY)
        idle = kube._direct._idle if kube._direct is not None else []
        deadline = time.monotonic() + 10
        while idle and idle[0].still_open():  # the hang-up reaches us
            assert time.monotonic() < deadline, "the server's hang-up never arrived"
            time.sleep(0.01)
        assert kube.get("/x") == json.loads(BODY)
    assert server.connections == 2
