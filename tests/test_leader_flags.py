"""``--lease-duration``, ``--renew-deadline``, ``--retry-period`` of ``vcsat scheduler`` and ``vcsat controller``.

Good values reach the leader elector as given; a combination that would let a rival take over
before the leader steps down (or a leader lose its lease between two renewals) is refused in one
line with exit 2, before any connection is made. The elector is replaced by a stand-in that
records its arguments and returns at once, so nothing here talks to an API server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner, Result
from daemon_support import RecordingElector, logging_restored  # noqa: F401 (an autouse fixture)
from hypothesis import given
from hypothesis import strategies as st

from vcsat.adapters.cli import app as cli
from vcsat.adapters.kube import leader
from vcsat.adapters.live import daemon

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""

COMMANDS = ["scheduler", "controller"]


@pytest.fixture
def elector(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    made: ClassVar[list[dict[str, Any]]] = []
    monkeypatch.setattr(RecordingElector, "made", made)
    monkeypatch.setattr(leader, "LeaderElector", RecordingElector)
    return made


def run(tmp_path: Path, command: str, *flags: str) -> Result:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG, encoding="utf-8")
    args = [command, f"--kubeconfig={kubeconfig}", "--metrics-port=0", "--lease-namespace=ns", *flags]
    return CliRunner().invoke(cli.main, args, prog_name="vcsat")


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        pytest.param((), (15.0, 10.0, 2.0), id="defaults-as-kube-scheduler"),
        pytest.param(("--lease-duration=6", "--renew-deadline=4", "--retry-period=1"), (6.0, 4.0, 1.0), id="faster"),
        pytest.param(("--lease-duration=60", "--renew-deadline=40"), (60.0, 40.0, 2.0), id="slower"),
        pytest.param(("--retry-period=0.5",), (15.0, 10.0, 0.5), id="fractions"),
    ],
)
def test_good_timings_reach_the_elector(
    tmp_path: Path, elector: list[dict[str, Any]], command: str, flags: tuple[str, ...], expected: tuple[float, ...]
) -> None:
    done = run(tmp_path, command, *flags)
    assert done.exit_code == 0, done.output
    (made,) = elector
    assert (made["lease_duration_s"], made["renew_deadline_s"], made["retry_period_s"]) == expected
    assert made["namespace"] == "ns"


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(
            ("--renew-deadline=15",),
            "leader election needs --retry-period < --renew-deadline < --lease-duration, got 2s, 15s, 15s",
            id="renew-equals-lease",
        ),
        pytest.param(
            ("--lease-duration=8",),
            "leader election needs --retry-period < --renew-deadline < --lease-duration, got 2s, 10s, 8s",
            id="lease-below-renew",
        ),
        pytest.param(
            ("--retry-period=10",),
            "leader election needs --retry-period < --renew-deadline < --lease-duration, got 10s, 10s, 15s",
            id="retry-equals-renew",
        ),
        pytest.param(
            ("--retry-period=0",), "Invalid value for '--retry-period': 0.0 is not in the range x>0.", id="zero"
        ),
        pytest.param(
            ("--lease-duration=-1",),
            "Invalid value for '--lease-duration': -1.0 is not in the range x>0.",
            id="negative",
        ),
        pytest.param(
            ("--renew-deadline=soon",),
            "Invalid value for '--renew-deadline': 'soon' is not a valid float range.",
            id="text",
        ),
    ],
)
def test_bad_timings_are_one_line_and_exit_2(
    tmp_path: Path, elector: list[dict[str, Any]], command: str, flags: tuple[str, ...], message: str
) -> None:
    done = run(tmp_path, command, *flags)
    assert done.exit_code == 2
    assert done.stderr == f"vcsat {command}: {message} (see 'vcsat {command} --help')\n"
    assert elector == []


positive = st.floats(min_value=0.001, max_value=1e6, allow_nan=False)


@given(lease=positive, renew=positive, retry=positive)
def test_leader_timing_accepts_exactly_the_ordered_triples(lease: float, renew: float, retry: float) -> None:
    if retry < renew < lease:
        assert daemon.leader_timing(lease, renew, retry) == daemon.LeaderTiming(lease, renew, retry)
    else:
        with pytest.raises(Exception, match="--retry-period < --renew-deadline < --lease-duration"):
            daemon.leader_timing(lease, renew, retry)


def test_the_defaults_are_the_electors_own() -> None:
    """The flags' defaults and LeaderElector's keyword defaults must not drift apart."""
    import inspect

    parameters = inspect.signature(leader.LeaderElector.__init__).parameters
    timing = daemon.LeaderTiming()
    assert parameters["lease_duration_s"].default == timing.lease_duration_s
    assert parameters["renew_deadline_s"].default == timing.renew_deadline_s
    assert parameters["retry_period_s"].default == timing.retry_period_s
