"""benchmarks/shapes.py's clusters at test sizes, made as the script makes them, and their problem
built for allocation alone (no preemption, no reclaim): the tests of the LP bound, the exchange, the
rooms and the replay scripts take their clusters from here, so that each is made one way."""

from __future__ import annotations

from pathlib import Path

from scripts import load_script

from vcsat.adapters.convert import instance_file
from vcsat.model import Policy
from vcsat.solver.problem import Problem, build_problem

shapes = load_script("benchmarks/shapes.py", "shapes")

ALLOCATE = Policy(preempt=False, reclaim=False, time_limit_s=10)
"""Allocation alone: the eviction phase off, the rest as by default."""


def shape_file(directory: Path, shape: str, nodes: int, seed: int) -> Path:
    """The ``shape`` cluster of ``nodes`` nodes and this ``seed``, written into ``directory``."""
    path = directory / f"{shape}-{nodes}-s{seed}.json"
    shapes.main.main([shape, "--nodes", str(nodes), "--seed", str(seed), "-o", str(path)], standalone_mode=False)
    return path


def shape_problem(directory: Path, shape: str, nodes: int, seed: int) -> Problem:
    """:func:`shape_file`'s cluster read and built for :data:`ALLOCATE`."""
    return build_problem(instance_file.read_snapshot(shape_file(directory, shape, nodes, seed)), ALLOCATE)
