#!/usr/bin/env bash
# A plain install works: build the wheel from the same files the Dockerfile copies, install it with
# no extras into a fresh virtual environment (no system site packages, no PYTHONPATH, run from an
# empty directory so nothing is imported from the source tree), then run every command's --help,
# `vcsat solve` on the embedded default and on every file in instances/, and import every module of
# the package. An import-time dependency missing from pyproject.toml's `dependencies` fails here.
# The dependencies' wheels are kept in a wheelhouse ($VCSAT_WHEELHOUSE, default
# ~/.cache/vcsat/wheels; pip's own HTTP cache may not keep them): a run installs from it offline and
# downloads only when the dependencies changed, so repeated runs stay fast.
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
wheelhouse="${VCSAT_WHEELHOUSE:-$HOME/.cache/vcsat/wheels}"
mkdir -p "$wheelhouse"
trap 'rm -rf "$work"' EXIT
pip_quiet=(--disable-pip-version-check -q)
install_flags=(--no-compile)  # the venv is thrown away: compiling every dependency would only cost time

step() { printf '%s (%ss)\n' "$1" "$SECONDS"; }

step "build the wheel"
mkdir -p "$work/src"
(cd "$src" && cp -R pyproject.toml setup.py MANIFEST.in README.md vcsat model solver adapters "$work/src/")
mkdir -p "$work/src/tools" && cp -R "$src/tools/build" "$work/src/tools/"
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
python3 -m pip wheel "${pip_quiet[@]}" --no-deps --wheel-dir "$work/dist" "$work/src"

step "install it with no extras into a fresh venv"
python3 -m venv "$work/venv"
wheel=("$work"/dist/vcsat-*.whl)
if ! "$work/venv/bin/python" -m pip install "${pip_quiet[@]}" "${install_flags[@]}" --no-index --find-links "$wheelhouse" "${wheel[@]}" \
    2>/dev/null; then
  echo "  the wheelhouse lacks a dependency: downloading into $wheelhouse"
  python3 -m pip download "${pip_quiet[@]}" --dest "$wheelhouse" "${wheel[@]}"
  rm -f "$wheelhouse"/vcsat-*.whl  # only the dependencies are kept
  "$work/venv/bin/python" -m pip install "${pip_quiet[@]}" "${install_flags[@]}" --no-index --find-links "$wheelhouse" "${wheel[@]}"
fi
mkdir "$work/run"
cd "$work/run"
unset PYTHONPATH VIRTUAL_ENV
export PATH="$work/venv/bin:$PATH"
py="$work/venv/bin/python"
test "$(command -v vcsat)" = "$work/venv/bin/vcsat"

step "vcsat --version, --help and every subcommand's --help"
vcsat --version
vcsat --help >/dev/null
# In one process (each subcommand's module is still imported on its own, lazily, as the CLI does);
# a process per command would pay for Python's start and the imports thirty times over.
"$py" - <<'PY'
import sys

import click
from click.testing import CliRunner

from vcsat.adapters.cli.app import main

def paths(command: click.Command, prefix: list[str]) -> list[list[str]]:
    found = [prefix]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            found += paths(command.get_command(ctx, name), [*prefix, name])
    return found

helped = 0
for path in paths(main, [])[1:]:
    done = CliRunner().invoke(main, [*path, "--help"])
    if done.exit_code != 0:
        sys.exit(f"vcsat {' '.join(path)} --help: exit {done.exit_code}: {done.output.strip()} {done.exception!r}")
    helped += 1
print(f"  {helped} subcommands' --help")
PY

step "vcsat solve on the embedded default and on every instance"
vcsat solve >/dev/null
for instance in "$src"/instances/*.yaml; do
  vcsat solve "$instance" --output json >/dev/null
  echo "  vcsat solve instances/$(basename "$instance")"
done

step "import every module of the package"
"$py" - <<'PY'
import importlib
import pkgutil

import vcsat

def fail(name: str) -> None:
    raise SystemExit(f"cannot import {name}")

names = [info.name for info in pkgutil.walk_packages(vcsat.__path__, "vcsat.", onerror=fail)]
for name in names:
    importlib.import_module(name)
print(f"  {len(names)} modules imported")
PY
step "plain install: ok"
