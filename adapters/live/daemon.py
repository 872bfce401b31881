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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

IN_CLUSTER_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass(frozen=True)
class LeaderTiming:
    """The three periods of leader election, in seconds (the defaults are kube-scheduler's).

    A standby takes over a dead leader's Lease ``lease_duration_s`` after it last saw it renewed;
    the leader steps down when no renewal succeeded for ``renew_deadline_s``, and renews (and a
    standby polls) every ``retry_period_s``. Shorter periods mean a faster takeover and more writes
    to the API server.
    """

    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0


def leader_timing(lease_duration_s: float, renew_deadline_s: float, retry_period_s: float) -> LeaderTiming:
    """The flags' values, if they keep a leader's step-down strictly before a rival's takeover.

    The leader must give up (renew deadline) before a standby may take over (lease duration), and
    must get to try a renewal (retry period) within its deadline; otherwise two replicas could act
    at once, or a healthy leader would lose its lease between two renewals. A bad combination is a
    usage error (one line, exit 2).
    """
    if not retry_period_s < renew_deadline_s < lease_duration_s:
        raise click.UsageError(
            "leader election needs --retry-period < --renew-deadline < --lease-duration, got "
            f"{retry_period_s:g}s, {renew_deadline_s:g}s, {lease_duration_s:g}s"
        )
    return LeaderTiming(lease_duration_s, renew_deadline_s, retry_period_s)


def _seconds_option(flag: str, dest: str, default: float, help_text: str) -> Callable[[_F], _F]:
    """A positive number of seconds of the leader election's timing."""
    return click.option(
        flag,
        dest,
        type=click.FloatRange(min=0, min_open=True),
        default=default,
        show_default=True,
        metavar="S",
        help=help_text,
    )


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
        _seconds_option(
            "--lease-duration",
            "lease_duration_s",
            LeaderTiming.lease_duration_s,
            "Seconds a standby waits, after it last saw the Lease renewed, before taking it over.",
        ),
        _seconds_option(
            "--renew-deadline",
            "renew_deadline_s",
            LeaderTiming.renew_deadline_s,
            "Seconds the leader keeps acting without a successful renewal; below --lease-duration.",
        ),
        _seconds_option(
            "--retry-period",
            "retry_period_s",
            LeaderTiming.retry_period_s,
            "Seconds between renewals (and a standby's attempts); below --renew-deadline.",
        ),
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
