"""The cycle's wall deadline over its optional steps: a step starts only when it can end in time.

Why: ``Policy.time_limit_s`` is a wall-clock promise for the whole cycle (read, snapshot, solve,
validator). CP-SAT's solves stop at the deadline (:mod:`vcsat.solver.search.staged`), but the steps
around them run in Python for as long as the problem's size makes them, whatever time is left: the
greedy's second fill, building the CP-SAT model, each neighbourhood round (which builds its own
model), topping up a searched decision and the eviction phase's set-up. After the first greedy
(whose decision is always in hand), each of those is asked here first: its wall cost is predicted
from the problem's size, and it runs only when it would end before the deadline less the reserve
for what must follow it (decode, explanations, the validator, writing the decision).

The prediction is a conservative constant per unit of size (node, model slot, the first greedy's
own time), in CPU seconds as measured on an idle machine, times how much slower than its CPU time
this cycle's solve has run on the wall clock so far: a machine busy with other work slows every
step alike, and a prediction read off the idle machine alone would overrun there.

A skipped step leaves the best decision in hand and says so: its name is recorded
(``SolverStats.skipped``), the run counts as wall-stopped when the clock skipped it, and a replay given the same names
(``solve(..., skip=...)``, e.g. from a dump) skips them too, so it decides as the live cycle did.
With ``wall=False`` nothing is skipped for time: the deterministic budgets alone decide.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

SECOND_FILL = "second_fill"
SEARCH = "search"
TOP_UP = "top_up"
NEIGHBOURHOOD = "neighbourhood"
EVICTIONS = "evictions"
STEPS = (SECOND_FILL, SEARCH, TOP_UP, NEIGHBOURHOOD, EVICTIONS)
"""The optional steps, in the order a cycle meets them."""

FILL_PER_GREEDY = 1.3
"""A second greedy fill (or a top-up) costs at most this many times the first greedy's CPU time:
both walk the same gangs over the same nodes."""
FILL_PER_NODE = 6e-4
"""CPU seconds per node of a greedy fill, when the first greedy ran before this solve (prepared)."""
BUILD_PER_SLOT = 3e-6
"""CPU seconds per (bucket, node) slot to build a CP-SAT model of the whole problem (variables,
capacity, topology and the rest) before its first solve; a neighbourhood's model is built over
every slot too (the slots outside it are fixed, not left out)."""
FIRST_SOLUTION_SECONDS = 0.1
"""CPU seconds a built model needs at least to reach a first solution worth having."""
EVICTIONS_PER_NODE = 2.5e-4
"""CPU seconds per node of the eviction phase's set-up (room, usage, its models) outside CP-SAT."""
RESERVE_PER_NODE = 4e-4
"""CPU seconds per node kept back for what follows every optional step: decode, explanations,
the validator and writing the decision out."""
MIN_SAMPLE_CPU = 0.05
"""Below this much CPU time spent in the solve so far, its wall/CPU ratio is not trusted (1)."""


@dataclass
class WallPlan:
    """One cycle's deadline over its optional steps, and which of them it skipped."""

    deadline: float | None
    """``time.monotonic()`` by which the cycle must be done; None: no wall limit (``wall=False``)."""
    nodes: int
    skip: frozenset[str] = frozenset()
    """Steps skipped whatever the clock says (a replay of a cycle that skipped them for time)."""
    now: Callable[[], float] = time.monotonic
    cpu: Callable[[], float] = time.process_time
    skipped: list[str] = field(default_factory=list)
    """The steps skipped so far, in order, each once."""
    out_of_time: bool = False
    """Some step was skipped for time (not only because :attr:`skip` named it)."""
    greedy_cpu: float | None = None
    """The first greedy's CPU seconds, when it ran in this solve."""
    _wall_start: float = 0.0
    _cpu_start: float = 0.0

    def __post_init__(self) -> None:
        self._wall_start, self._cpu_start = self.now(), self.cpu()

    @property
    def reserve(self) -> float:
        """Wall seconds kept back for decode, explanations, the validator and the output."""
        return RESERVE_PER_NODE * self.nodes * self.slowdown()

    def slowdown(self) -> float:
        """How much slower than its CPU time this solve has run on the wall clock so far (≥ 1)."""
        cpu = self.cpu() - self._cpu_start
        if cpu < MIN_SAMPLE_CPU:
            return 1.0
        return max(1.0, (self.now() - self._wall_start) / cpu)

    def fill_cost(self) -> float:
        """Predicted CPU seconds of one more greedy fill."""
        if self.greedy_cpu is not None:
            return FILL_PER_GREEDY * self.greedy_cpu
        return FILL_PER_NODE * self.nodes

    @staticmethod
    def model_cost(slots: int) -> float:
        """Predicted CPU seconds to build a model of ``slots`` slots and reach a first solution."""
        return BUILD_PER_SLOT * slots + FIRST_SOLUTION_SECONDS

    def evictions_cost(self) -> float:
        return EVICTIONS_PER_NODE * self.nodes

    def left(self) -> float | None:
        """Wall seconds until the deadline less the reserve (None without a deadline)."""
        if self.deadline is None:
            return None
        return self.deadline - self.now() - self.reserve

    def allows(self, step: str, cpu_cost: float) -> bool:
        """Whether ``step``, predicted to cost ``cpu_cost`` CPU seconds, may start: not in
        :attr:`skip`, and (with a deadline) ending before it less the reserve at this cycle's
        pace. A step refused is recorded in :attr:`skipped`."""
        if step not in self.skip:
            left = self.left()
            if left is None or cpu_cost * self.slowdown() <= left:
                return True
            self.out_of_time = True
        if step not in self.skipped:
            self.skipped.append(step)
        return False
