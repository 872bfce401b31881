"""The dashboard's HTTP server: GET and HEAD only, on a port of its own.

Why the standard library's ``http.server``: the pages are a handful of server-rendered documents
read by people, a few requests a minute; the metrics and probes are already served the same way,
and a web framework would be a new dependency for nothing these pages need. Every other method is
refused (405): the dashboard changes nothing in the cluster or the scheduler. Responses forbid
scripts, framing and caching (``Content-Security-Policy``), so that even a value that slipped past
escaping could not run.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from vcsat.adapters.dashboard import pages
from vcsat.adapters.dashboard.state import DashboardState

log = logging.getLogger(__name__)

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
SECTIONS = ("queues", "podgroups", "nodes", "cycles")


def render(state: DashboardState, target: str) -> tuple[int, str]:
    """The status and HTML for a request path (query ignored)."""
    path = urlsplit(target).path
    parts = [unquote(part) for part in path.split("/") if part]
    seen = state.seen()
    if not parts:
        return 200, pages.overview(seen)
    if len(parts) == 1 and parts[0] in SECTIONS:
        return 200, pages.section_page(seen, parts[0])
    if len(parts) == 3 and parts[0] == "jobs":
        return pages.job_page(seen, f"{parts[1]}/{parts[2]}")
    return 404, pages.document("Not found", "<p>No such page.</p>")


class Dashboard:
    """The state the scheduler feeds and the server that shows it."""

    def __init__(self) -> None:
        self.state = DashboardState()
        self._server: ThreadingHTTPServer | None = None
        self.port: int | None = None

    def observe(self, result: Any) -> None:
        """Hand one cycle's result over (``Scheduler(observers=...)``)."""
        self.state.observe(result)

    def set_leading(self, leading: bool) -> None:
        self.state.set_leading(leading)

    def serve(self, port: int, host: str = "0.0.0.0") -> None:
        """Serve the pages on ``port`` (0: any free one) in a daemon thread; ``self.port`` once bound."""
        if self._server is not None:
            raise RuntimeError(f"already serving on port {self.port}")
        server = ThreadingHTTPServer((host, port), _handler_for(self.state))
        server.daemon_threads = True
        self._server = server
        self.port = int(server.server_address[1])
        threading.Thread(target=server.serve_forever, name=f"dashboard-{self.port}", daemon=True).start()
        log.info("serving the dashboard", extra={"port": self.port})

    def shutdown(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


def _handler_for(state: DashboardState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "vcsat-dashboard"

        def do_GET(self) -> None:
            self._page(body=True)

        def do_HEAD(self) -> None:
            self._page(body=False)

        def _refuse(self) -> None:
            data = b"read-only: GET and HEAD only\n"
            self.send_response(405)
            self.send_header("Allow", "GET, HEAD")
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

        def _page(self, *, body: bool) -> None:
            try:
                status, text = render(state, self.path)
            except Exception:
                log.exception("dashboard page failed", extra={"path": self.path})
                status, text = 500, pages.document("Error", "<p>This page failed; the scheduler log has why.</p>")
            data = text.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in SECURITY_HEADERS.items():
                self.send_header(name, value)
            self.end_headers()
            if body:
                self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("dashboard request", extra={"request": format % args})

    return Handler
