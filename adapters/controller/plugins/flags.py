"""Plugin arguments, read the way Volcano's plugins read them: Go's ``flag`` package.

A Job lists each plugin's arguments as strings (``svc: ["--publish-not-ready-addresses"]``,
``pytorch: ["--master=master", "--port", "23456"]``). Volcano hands them to Go's ``flag`` parser,
so manifests use its grammar: one or two leading dashes, ``-name=value`` or ``-name value``, and
booleans as a bare ``-name`` or ``-name=false``. Volcano logs a bad argument and carries on with
the defaults; vcsat refuses it, naming the argument, because a silently ignored ``--port`` makes a
job that starts and then cannot connect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

FlagKind = Literal["bool", "int", "str"]

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


@dataclass(frozen=True)
class Flag:
    kind: FlagKind
    default: bool | int | str
    help: str = ""


class FlagError(ValueError):
    """An argument the plugin does not accept; the message says which and why."""


def parse_flags(args: Sequence[str], flags: Mapping[str, Flag]) -> dict[str, bool | int | str]:
    """Values of every flag (defaults for those not given), as Go's ``flag.Parse`` would set them.

    Parsing stops at the first argument that is not a flag, or after ``--``; anything left over is
    refused, since no Volcano plugin takes positional arguments.
    """
    values: dict[str, bool | int | str] = {name: flag.default for name, flag in flags.items()}
    position = 0
    while position < len(args):
        arg = args[position]
        position += 1
        if arg == "--":
            break
        if len(arg) < 2 or not arg.startswith("-"):
            raise FlagError(f"unexpected argument {arg!r} (arguments are flags such as --name=value)")
        body = arg[2:] if arg.startswith("--") else arg[1:]
        if not body or body.startswith(("-", "=")):
            raise FlagError(f"bad flag syntax: {arg}")
        name, has_value, value = body.partition("=")
        flag = flags.get(name)
        if flag is None:
            known = ", ".join(f"--{known}" for known in sorted(flags)) or "none"
            raise FlagError(f"flag provided but not defined: -{name} (accepted: {known})")
        if flag.kind == "bool":
            if not has_value or value in _TRUE:
                values[name] = True
            elif value in _FALSE:
                values[name] = False
            else:
                raise FlagError(f"invalid boolean value {value!r} for -{name}")
            continue
        if not has_value:
            if position >= len(args):
                raise FlagError(f"flag needs an argument: -{name}")
            value = args[position]
            position += 1
        if flag.kind == "int":
            try:
                if value.strip() != value:
                    raise ValueError(value)
                values[name] = int(value, 0)
            except ValueError:
                raise FlagError(f"invalid value {value!r} for -{name}: not an integer") from None
        else:
            values[name] = value
    if position < len(args):
        raise FlagError(f"unexpected argument {args[position]!r} after the flags")
    return values
