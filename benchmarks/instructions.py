"""Instructions a Python command executes, counted by valgrind: an A/B measure that load does not move.

This box's CPU seconds move by a quarter from one run to the next when other work shares it, so a
cut of a few percent cannot be told from noise by timing. The number of machine instructions a
process executes does not depend on what else runs: valgrind's cachegrind counts them (``I refs``)
with its cache simulation off, about fifteen times slower than the plain run. Hash randomisation is
pinned (``PYTHONHASHSEED``) so that two runs of one tree execute the same path; what is left varies
by about 0.1%.

    python benchmarks/instructions.py -- benchmarks/phases.py 1k.json --time-limit 1 --cpu-clock
    python benchmarks/instructions.py --tree ../before --tree . --repeat 2 -- benchmarks/phases.py 1k.json

``--tree DIR`` puts a source tree first on ``PYTHONPATH`` (a worktree, or ``git archive`` of another
commit), so a change and its baseline are counted alike, one line each. Counts include the
interpreter's start and the imports: compare differences, not shares. Instructions are not seconds
(memory stalls are not counted); time the final change too, idle, before saying how fast it is.

A deadline that reads the clock sees a process fifteen times slower: give the command a budget that
does not bind, or one it meets as the plain run does (a cycle proved within its gap by the greedy).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click

_I_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def count(command: list[str], tree: Path | None = None, hash_seed: str = "0") -> int:
    """The instructions ``python COMMAND`` executes (this interpreter, under cachegrind)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise click.ClickException("valgrind is not installed (apt-get install valgrind)")
    # Bytecode is never written by the counted run: the run that writes it would count the
    # compiler and the write, and every later run would not.
    # OpenBLAS (numpy's) starts worker threads that spin while idle: valgrind counts their
    # instructions too, tens of millions that move from run to run. One thread keeps them out.
    env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONDONTWRITEBYTECODE="1", OPENBLAS_NUM_THREADS="1")
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree.resolve()), env.get("PYTHONPATH")]))
    # sys.executable, not a launcher script (pyenv's shim is a shell script: valgrind would count
    # the shell and not follow it into Python).
    argv = [valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    result = subprocess.run(
        [*argv, os.path.realpath(sys.executable), *command], env=env, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise click.ClickException(f"the command failed (exit {result.returncode}): " + " | ".join(tail))
    found = _I_REFS.findall(result.stderr)
    if not found:
        raise click.ClickException("valgrind printed no instruction count")
    return int(found[-1].replace(",", ""))


@click.command(context_settings={"ignore_unknown_options": True})
@click.option(
    "--tree",
    "trees",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Source tree put first on PYTHONPATH; repeat to compare trees (counted in turn).",
)
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(1), help="Rounds over the trees.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def main(trees: tuple[Path, ...], repeat: int, command: tuple[str, ...]) -> None:
    """Count the instructions of `python COMMAND`, once per tree and round; one line each."""
    for _ in range(repeat):
        for tree in trees or (None,):
            click.echo(f"{count(list(command), tree):,}\t{tree if tree is not None else '(as installed)'}")


if __name__ == "__main__":
    main()
