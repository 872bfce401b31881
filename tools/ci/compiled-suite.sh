#!/usr/bin/env bash
# The unit suite against the compiled build (VCSAT_COMPILE=1, docs/compiled-build.md): a copy of the
# tree gets the listed modules built in place as C extensions (Python imports an extension before
# the source beside it), every listed module is checked to load from its extension, then the unit
# tests (not the Kubernetes or end-to-end ones, which the pure run covers) run from the copy with
# PYTHONPATH pointing at it, so the CLI's subprocesses import the compiled modules too. Compiled
# code checks every annotated type at run time and binds calls within its group early, so a module
# that passes the pure suite can still fail here: this is what keeps the shipped image honest.
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

step() { printf '%s (%ss)\n' "$1" "$SECONDS"; }

step "copy the tree"
tar -C "$src" --exclude=./.git --exclude=./build --exclude='*.so' --exclude=__pycache__ \
  --exclude=.mypy_cache --exclude=.pytest_cache --exclude=.hypothesis -cf - . | tar -C "$work" -xf -
cd "$work"

step "build the compiled modules in place (mypyc)"
VCSAT_COMPILE=1 python3 setup.py -q build_ext --inplace >build.log 2>&1 || { cat build.log; exit 1; }

export PYTHONPATH="$work"
step "every listed module loads from its extension"
python3 - <<'PY'
import importlib
from pathlib import Path

listed = [line.strip() for line in Path("tools/build/compiled_modules.txt").read_text().splitlines()]
paths = [line for line in listed if line and not line.startswith("#")]
for path in paths:
    name = path.removesuffix(".py").replace("/", ".")
    module = importlib.import_module(name)
    if not str(module.__file__).endswith(".so"):
        raise SystemExit(f"{name} loads from {module.__file__}, not from a compiled extension")
print(f"  {len(paths)} modules compiled")
PY

step "unit tests against the compiled modules"
python3 -m pytest -q -p no:cacheprovider -m "not k8s and not e2e and not long and not pure_only"
step "compiled suite: ok"
