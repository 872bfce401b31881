"""The ``vcsat`` command: one group, ``solve``, and what every subcommand shares.

Contract §4 fixes the exit status: 0 done, 2 bad input or usage (one line on stderr naming the
file, the object and the field, never a traceback), 1 anything else. That policy lives here, in
:class:`VcsatGroup`, once for every subcommand. Other subcommands (scheduler, controller,
simulate, bench, job, queue) live in their own modules and are listed in ``LAZY_COMMANDS``; they are
imported only when run, so ``vcsat solve`` never pays for the Kubernetes client.
"""

from __future__ import annotations

import importlib
import importlib.resources
import os
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click
import pydantic

from vcsat import __version__
from vcsat.adapters.cli import one_shot
from vcsat.adapters.cli.build_kind import describe
from vcsat.adapters.convert.clock import SKIPPED_ANNOTATION
from vcsat.adapters.convert.instance_file import read_cycle, read_objects, read_snapshot, read_yaml_mapping
from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.errors import InputError
from vcsat.model import Decision, Policy, Snapshot

if TYPE_CHECKING:
    from rich.console import Console

OutputFormat = Literal["table", "json", "yaml"]

LAZY_COMMANDS: dict[str, str] = {
    # "name": "module:attribute" of a click command, e.g. "scheduler": "vcsat.adapters.live:scheduler"
    "generate": "vcsat.adapters.generate.command:generate_cmd",
    "simulate": "vcsat.adapters.sim.commands:simulate_command",
    "bench": "vcsat.adapters.sim.commands:bench",
    "scheduler": "vcsat.adapters.live.scheduler:scheduler_cmd",
    "dump": "vcsat.adapters.convert.dump:dump_cmd",
    "explain": "vcsat.adapters.cli.explain:explain_command",
    "controller": "vcsat.adapters.controller.controller:controller_command",
    "job": "vcsat.adapters.controller.cli:job_group",
    "queue": "vcsat.adapters.controller.cli:queue_group",
}
"""Subcommands defined elsewhere, imported on first use; adding one is one line here."""

DEMO_INSTANCE = "data/demo.yaml"
"""The instance ``vcsat solve`` uses when given none, inside the package ``vcsat.adapters``."""


class _NeverRaised(click.UsageError):
    """Stands in for click's NoArgsIsHelpError on click < 8.2, which has none."""


_NO_ARGS_IS_HELP: type[click.UsageError] = getattr(click.exceptions, "NoArgsIsHelpError", _NeverRaised)


class VcsatGroup(click.Group):
    """A click group that keeps contract §4's exit statuses and loads subcommands lazily."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in LAZY_COMMANDS:
            module_name, _, attribute = LAZY_COMMANDS[cmd_name].partition(":")
            command = getattr(importlib.import_module(module_name), attribute)
        return command

    def main(  # type: ignore[override]
        self, args: list[str] | None = None, prog_name: str | None = None, **extra: Any
    ) -> Any:
        if extra.pop("standalone_mode", True) is False:
            return super().main(args, prog_name, standalone_mode=False, **extra)
        if args is None:  # the console script: the command line is the process's own
            one_shot.mark_process()
        try:
            result = super().main(args, prog_name or "vcsat", standalone_mode=False, **extra)
        except _NO_ARGS_IS_HELP as error:  # a bare "vcsat": the help, then the usage status
            click.echo(error.format_message(), err=True)
            sys.exit(error.exit_code)
        except click.UsageError as error:
            where = error.ctx.command_path if error.ctx is not None else "vcsat"
            _fail(f"{where}: {error.format_message()} (see '{where} --help')", error.exit_code)
        except click.ClickException as error:
            _fail(f"vcsat: {error.format_message()}", error.exit_code)
        except click.Abort:
            _fail("vcsat: aborted", 1)
        except InputError as error:
            _fail(f"vcsat: {error}", 2)
        except Exception as error:  # the contract's exit 1: one line unless asked for the traceback
            if os.environ.get("VCSAT_DEBUG") == "1":
                traceback.print_exc()
            _fail(f"vcsat: internal error: {type(error).__name__}: {error}", 1)
        sys.exit(result if isinstance(result, int) else 0)


def _fail(message: str, code: int) -> None:
    click.echo(one_line(message), err=True)
    sys.exit(code)


def one_line(text: str) -> str:
    return " ".join(str(text).split())


@click.group(cls=VcsatGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="vcsat", message=f"%(prog)s %(version)s ({describe()})")
def main() -> None:
    """vcsat: a Volcano-compatible batch scheduler that solves every cycle with CP-SAT.

    Instance and decision formats, hard rules and exit statuses: docs/contract.md in the repository.
    """


@main.command("solve")
@click.argument("instance", required=False, metavar="[INSTANCE]")
@click.option(
    "--output",
    "-o",
    type=click.Choice(["table", "json", "yaml"]),
    default="table",
    show_default=True,
    help="table for people; json or yaml print the decision of docs/contract.md §2.",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    metavar="S",
    help="Wall seconds for the cycle, counted from the start of reading the file (overrides the policy's "
    "time_limit_s). A step that can be skipped (a search, evictions) runs only when it ends in time, the "
    "check and the printing included. The process may overrun it by its start-up and imports (before the "
    "clock), CP-SAT's loading when a model is built, and what the steps that cannot be skipped (reading, "
    "building, the first greedy, the check) take beyond it on a large file or a busy machine "
    "(docs/contract.md §2, the time limit).",
)
@click.option(
    "--policy",
    "policy_file",
    metavar="FILE",
    help="A YAML policy file (see vcsat.model.Policy), or a Volcano volcano-scheduler.conf (bare or in its "
    "ConfigMap), mapped onto the policy (docs/volcano-config.md).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    metavar="N",
    help="CP-SAT search workers (overrides the policy's num_workers; default: the cores available less one, "
    "1 to 8). A decision is reproduced with the workers it records (solver.workers).",
)
@click.option(
    "--relative-gap",
    type=click.FloatRange(min=0),
    metavar="G",
    help="Stop the search once the decision is proven within this relative gap of its bound (overrides "
    "the policy's relative_gap; 0 asks for the full search). A greedy decision already within it is "
    "kept without a search (solver.status WITHIN_GAP).",
)
@click.option(
    "--full-search",
    is_flag=True,
    help="On the dump of an early cycle (vcsat.io/cycle: early), run the full cycle instead of "
    "replaying the greedy's sure placements the scheduler bound.",
)
def solve_command(
    instance: str | None,
    output: OutputFormat,
    time_limit: float | None,
    policy_file: str | None,
    workers: int | None,
    relative_gap: float | None,
    full_search: bool,
) -> None:
    """Solve one scheduling cycle on INSTANCE, a dumped cluster (kubectl get ... -o yaml).

    Without INSTANCE it solves a small built-in demo cluster.
    """
    policy = load_policy(policy_file, time_limit_s=time_limit, num_workers=workers, relative_gap=relative_gap)
    one_shot.collector_off()  # nothing this command makes outlives it (see one_shot)
    # Before the clock: loading OR-Tools takes seconds of wall time on a busy machine, which the
    # search's budget must not lose (the decision would then depend on the load).
    from vcsat.solver import check, solve

    started = time.monotonic()  # the time limit covers reading the file too
    skipped: list[str] = []
    snapshot, early = load_cycle(instance, scheduler_name=policy.scheduler_name, skipped=skipped)
    skip = replayed_skips(instance, skipped)
    for notice in snapshot.notices:
        # What a cluster dump's lenient reading tolerated: said as the live scheduler logs it.
        click.echo(f"vcsat: warning: {one_line(str(notice))}", err=True)

    decision = replay_early(snapshot, policy, started) if early and not full_search else None
    if decision is None:
        decision = solve(snapshot, policy, started=started, skip=skip)
    violations = check(snapshot, decision, policy)
    if violations:
        click.echo(
            f"vcsat: internal error: the decision breaks {len(violations)} hard rule(s); this is a bug:",
            err=True,
        )
        for violation in violations:
            click.echo(f"  {one_line(str(violation))}", err=True)
        click.get_current_context().exit(1)
    emit_decision(decision, snapshot, output)
    one_shot.leave(0)  # the process ends here, its heap not torn down object by object


def load_policy(path: str | None, **overrides: Any) -> Policy:
    """The policy in ``path`` (defaults without one), with command-line options on top.

    A Volcano scheduler configuration (``actions``/``tiers``, or a ConfigMap holding
    ``volcano-scheduler.conf``) is read as such; what has no meaning for an exact solver is said on
    stderr, one line each."""
    data: dict[str, Any] = read_yaml_mapping(path) if path is not None else {}
    if path is not None and _is_volcano_conf(data):
        from vcsat.adapters.convert.volcano_conf import parse_volcano_conf

        conf = parse_volcano_conf(data, source=path)
        for warning in conf.warnings:
            click.echo(f"vcsat: {path}: {one_line(warning)}", err=True)
        data = conf.policy.model_dump()
    data.update({key: value for key, value in overrides.items() if value is not None})
    try:
        return Policy.model_validate(data)
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        raise InputError(one_line(first["msg"]), source=path, obj="Policy", field=field) from None


def _is_volcano_conf(data: dict[str, Any]) -> bool:
    if "actions" in data or "tiers" in data:
        return True
    payload = data.get("data")
    return data.get("kind") == "ConfigMap" and isinstance(payload, dict) and "volcano-scheduler.conf" in payload


def replay_early(snapshot: Snapshot, policy: Policy, started: float) -> Decision | None:
    """An early cycle's decision, as the live scheduler took it: the greedy's sure placements.
    None (said on stderr) when they are not sure on this snapshot and policy, e.g. an edited dump
    or another policy: the full cycle decides then, as the scheduler would have."""
    from vcsat.solver.sure import prepare, sure_decision

    sure = sure_decision(prepare(snapshot, policy), started=started)
    if sure is None or not sure.bindings:
        click.echo(
            "vcsat: warning: the dump is of an early cycle, but the greedy places no sure work here; "
            "solving the full cycle",
            err=True,
        )
        return None
    return sure


def replayed_skips(path: str | None, skipped: list[str]) -> frozenset[str]:
    """The optional steps a dumped cycle skipped for time (``vcsat.io/skipped``), which the replay
    skips too so that it decides as the scheduler did (said on stderr); an unknown name is bad input."""
    from vcsat.solver.deadline import EXCHANGE_TRADES, STEPS, known_step

    unknown = sorted(name for name in set(skipped) if not known_step(name))
    if unknown:
        raise InputError(
            f"unknown step {unknown[0]!r} (expected some of {', '.join(STEPS)}, or {EXCHANGE_TRADES}=N)",
            source=path,
            obj="List",
            field=f'metadata.annotations["{SKIPPED_ANNOTATION}"]',
        )
    if skipped:
        click.echo(f"vcsat: the dumped cycle skipped {', '.join(skipped)} for time: skipped here too", err=True)
    return frozenset(skipped)


def load_cycle(path: str | None, *, scheduler_name: str, skipped: list[str] | None = None) -> tuple[Snapshot, bool]:
    """:func:`load_instance`, and whether the file is an early cycle's dump; ``skipped`` receives
    the steps the dumped cycle skipped for time."""
    if path is not None:
        return read_cycle(path, scheduler_name=scheduler_name, skipped=skipped)
    return load_instance(None, scheduler_name=scheduler_name), False


def load_instance(path: str | None, *, scheduler_name: str) -> Snapshot:
    """The snapshot of an instance file, or of the built-in demo when ``path`` is None."""
    if path is not None:
        return read_snapshot(path, scheduler_name=scheduler_name)
    demo = importlib.resources.files("vcsat.adapters").joinpath(DEMO_INSTANCE)
    with importlib.resources.as_file(demo) as demo_path:
        objects = read_objects(Path(demo_path))
    return snapshot_from_objects(objects, scheduler_name=scheduler_name, source=f"built-in {DEMO_INSTANCE}")


def emit_decision(decision: Decision, snapshot: Snapshot, output: OutputFormat) -> None:
    """Print a decision on stdout: JSON and YAML exactly as contract §2, or the human table."""
    if output == "json":
        click.echo(decision.model_dump_json(indent=2))
    elif output == "yaml":
        import yaml  # here: JSON output and input, what large clusters use, never need PyYAML

        click.echo(yaml.safe_dump(decision.model_dump(mode="json"), sort_keys=False), nl=False)
    else:
        # The table's modules (rich) are read only for it: JSON and YAML, what scripts and the
        # benchmarks ask for, never need them.
        from vcsat.adapters.cli.render import render_decision

        render_decision(decision, snapshot, make_console())


def make_console() -> Console:
    """A console on stdout: colour only on a terminal, and no line wrapping into a pipe or file."""
    from rich.console import Console

    stream = sys.stdout
    terminal = stream.isatty()
    return Console(
        file=stream,
        no_color=not terminal,
        color_system="auto" if terminal else None,
        highlight=False,
        width=None if terminal else 200,
    )
