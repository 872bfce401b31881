"""What the long-running commands (``vcsat scheduler``, ``vcsat controller``) share.

Both run as a Deployment of two replicas: the same flags for leader election, metrics and logs,
the same SIGTERM handling, and the same rule for where the Lease lives. Kept in one place so the
two commands cannot drift apart in how an operator runs them.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

IN_CLUSTER_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
_F = TypeVar("_F", bound=Callable[..., Any])


def daemon_options(lease_name: str) -> Callable[[_F], _F]:
    """The flags of a long-running command: leader election, its Lease, metrics port and logging."""
    options = [
        click.option(
            "--leader-elect/--no-leader-elect", default=True, show_default=True, help="Act only while holding a Lease."
        ),
        click.option(
            "--lease-namespace",
            metavar="NS",
            help="Namespace of the Lease (default: our own in a pod, else kube-system).",
        ),
        click.option("--lease-name", default=lease_name, show_default=True, metavar="NAME"),
        click.option(
            "--metrics-port",
            type=click.IntRange(min=0, max=65535),
            default=8080,
            show_default=True,
            metavar="PORT",
            help="Serve /metrics, /healthz and /readyz here; 0 turns it off.",
        ),
        click.option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True),
        click.option(
            "--log-level",
            type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
            default="INFO",
            show_default=True,
        ),
    ]

    def apply(command: _F) -> _F:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


def stop_on_signals(log: logging.Logger, also: Callable[[], None] | None = None) -> threading.Event:
    """An event set by SIGTERM or SIGINT (``also`` runs too, to wake a waiting loop)."""
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("stopping", extra={"signal": signal.Signals(signum).name})
        stop.set()
        if also is not None:
            also()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stop


def default_lease_namespace() -> str:
    """Our own namespace in a pod (where the Deployment's Lease lives), else ``kube-system``."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        return IN_CLUSTER_NAMESPACE_FILE.read_text(encoding="utf-8").strip() or "kube-system"
    except OSError:
        return "kube-system"
