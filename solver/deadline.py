"""The cycle's wall deadline over its optional steps: a step starts only when it can end in time.

Why: ``Policy.time_limit_s`` is a wall-clock promise for the whole cycle (read, snapshot, solve,
validator). CP-SAT's solves stop at the deadline (:mod:`vcsat.solver.search.staged`), but the steps
around them run in Python for as long as the problem's size makes them, whatever time is left: the
greedy's second fill, building the CP-SAT model, each neighbourhood round (which builds its own
model), topping up a searched decision and the eviction phase's set-up. After the first greedy
(whose decision is always in hand), each of those is asked here first: its wall cost is predicted
from the problem's size, and it runs only when it would end before the deadline less the reserve
for what must follow it (decode, explanations, the validator, writing the decision). The eviction
phase comes last, after the decode and the explanations: only the validator and the output (the
:attr:`WallPlan.tail`) follow it.

The eviction phase runs in one of three ways, so that a short limit still gets evictions for the
most important waiting gangs when there is time for some: with its whole deterministic budget
when set-up, each model's stage minimum and that budget fit; otherwise on its stages' minimum
alone (``eviction_budget`` skipped: every stage of every run gets
:data:`vcsat.solver.preemption.preempt.MIN_STAGE_SECONDS` of deterministic time, the first stage,
the preemptors' work, still placing the highest-ranked gangs) when set-up and that minimum fit;
otherwise not at all (``evictions`` skipped). Both cuts are decided before the phase starts and
depend on no clock inside it, so a replay given the same names decides the same.

The exchange (:mod:`vcsat.solver.search.exchange`) is asked trade by trade (:meth:`WallPlan.
allows_trade`): its trades run in their fixed order while the next one ends in time (predicted at
:data:`TRADE_SECONDS` and :data:`TRADE_PER_NODE` for the first, then at the dearest of those this
cycle ran), and the first refused ends it. Each trade is kept only where it ranks strictly higher,
so every trade that runs can only help, and a short limit gets the first few instead of none. How
many ran is recorded as ``exchange_trades=N`` among the skipped steps (:func:`trades_cut`), and a
replay given it runs the same N trades, whatever its clock, so it trades as the live cycle did.
The exchange's looks between trades (:meth:`WallPlan.not_a_trade`: the chain and move looks, which
read the decision and may find nothing) are asked too (:meth:`WallPlan.allows_look`): a look starts
only where it ends before the deadline less the reserve, predicted at the dearest look this cycle
ran (:data:`LOOK_SECONDS` and :data:`LOOK_PER_NODE` for the first), and the first refused ends the
exchange as a refused trade does, recorded the same way; so the exchange overruns the deadline by
at most one look, where looks between trades were asked nothing and a cycle whose deadline passed
during them ran them all before the next trade's question. A look changes no decision, so a
replay of N trades decides the same whatever its looks. (The names of the exchange's three kinds
of trades, :data:`EXCHANGE`, :data:`EXCHANGE_ACROSS` and :data:`EXCHANGE_FAIR`, stay steps: a dump
of an older cycle that skipped one whole replays it so.)
When the warm start is outside the tolerance and has trades to try, the steps before the
exchange (the search, its top-up, the neighbourhood rounds, and the search's own wall deadline;
not the greedy's second fill, which often brings the warm start within the tolerance) also keep
back the exchange's first step's predicted cost (:attr:`WallPlan.ahead`): on a short limit they
would otherwise take every second up to the deadline, and the exchange, which in a few trades
places what no search on a short budget finds, would never start.

The prediction is a conservative constant per unit of size (node, model slot, eviction run and
its preemptor gangs, exchange trade, the first greedy's own time), in CPU seconds as measured on an
idle machine (the exchange's and the eviction runs' on the shared one under load, which only errs
high), times how much slower than its
CPU time this cycle's solve has run on the wall clock so far: a machine busy with other work slows every
step alike, and a prediction read off the idle machine alone would overrun there.

A skipped step leaves the best decision in hand and says so: its name is recorded
(``SolverStats.skipped``), the run counts as wall-stopped when the clock skipped it, and a replay given the same names
(``solve(..., skip=...)``, e.g. from a dump) skips them too, so it decides as the live cycle did.
With ``wall=False`` nothing is skipped for time: the deterministic budgets alone decide.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

SECOND_FILL = "second_fill"
THIRD_FILL = "third_fill"
"""The greedy's third fill (:func:`vcsat.solver.greedy.greedy_largest_first`), asked after the second."""
WHOLE_FILL = "whole_fill"
"""The greedy's fill keeping wholly free nodes whole (:func:`vcsat.solver.greedy.greedy_keeping_whole`),
asked after the third."""
EXCHANGE = "exchange"
"""The exchange's trades of each queue's own gangs (:mod:`vcsat.solver.search.exchange`)."""
EXCHANGE_ACROSS = "exchange_across"
"""The exchange's trades across queues, per rank of waiting gangs, asked after the queues' own."""
EXCHANGE_FAIR = "exchange_fair"
"""The exchange's fair trades, per fair-share tier a queue below its share waits at, asked last
(and the relocation trades, :mod:`vcsat.solver.search.relocation`, which run on the same tiers)."""
EXCHANGE_TRADES = "exchange_trades"
"""Recorded as ``exchange_trades=N`` among the skipped steps (:func:`trades_cut`): the cycle's clock
ended the exchange after its first N trades, the rest skipped; a replay runs the same N."""
SEARCH = "search"
TOP_UP = "top_up"
NEIGHBOURHOOD = "neighbourhood"
WHOLE_BOUND = "whole_bound"
"""The placed-work bound over whole numbers (:mod:`vcsat.solver.search.whole_bound`), asked once the
decision stands and only where the LP's gap is over the tolerance: it changes no decision, only
the bound and so the gap and status reported."""
EVICTIONS = "evictions"
EVICTION_BUDGET = "eviction_budget"
"""The eviction phase's deterministic budget beyond its stages' minimum (asked once the phase runs)."""
STEPS = (
    SECOND_FILL,
    THIRD_FILL,
    WHOLE_FILL,
    SEARCH,
    TOP_UP,
    NEIGHBOURHOOD,
    EXCHANGE,
    EXCHANGE_ACROSS,
    EXCHANGE_FAIR,
    WHOLE_BOUND,
    EVICTIONS,
    EVICTION_BUDGET,
)
"""The optional steps, in the order a cycle meets them."""

FILL_PER_GREEDY = 1.3
"""A top-up of a searched decision costs at most this many times the first greedy's CPU time: both
walk the same gangs over the same nodes."""
SECOND_FILL_PER_GREEDY = 1.0
"""The greedy's second fill (:func:`vcsat.solver.greedy.greedy_by_gain`) costs at most this many
times the first greedy's CPU time: it walks the same gangs over the same nodes, but starts from what
the first fill learnt of the problem alone (each gang's class plan, the rankings kept), so it costs
less than the first. Measured 0.33-0.81 times the first on the 1,000- and 10,000-node shapes at
load 1-2 (0.33-0.54 on the contended ones, where the second fill is asked most), up to 1.29 in a
few runs at load 2-5 where the two short timings drift apart (benchmarks/fill_ratio.py;
benchmarks/RESULTS.md, session 37). A prediction above what the fill costs skips it where it fits:
on 1 s cycles at 1,000 nodes about a third of those that skipped it at 1.3 times the first had
0.08-0.19 s left at its question, about the first greedy's time."""
FILL_PER_NODE = 6e-4
"""CPU seconds per node of a greedy fill, when the first greedy ran before this solve (prepared)."""
BUILD_PER_SLOT = 3e-6
"""CPU seconds per (bucket, node) slot to build a CP-SAT model of the whole problem (variables,
capacity, topology and the rest) before its first solve; a neighbourhood's model is built over
every slot too (the slots outside it are fixed, not left out)."""
BUILD_PER_GANG = 3e-4
"""CPU seconds per gang to place, besides the slots, to build a CP-SAT model of the whole problem:
its variables, gang and fair-share constraints and the warm start's hint grow with the gangs.
Measured 0.45-0.80 CPU-s for 1,830-1,950 gangs over 7,000-13,000 slots (the 1,000-node shapes),
where the slots alone predicted 0.02-0.04 and the search ran past the deadline it was asked for."""
FIRST_SOLUTION_SECONDS = 0.1
"""CPU seconds a built model needs at least to reach a first solution worth having."""
EVICTIONS_PER_NODE = 6e-5
"""CPU seconds per node of the eviction phase's set-up shared by its runs (room, usage, victims,
rules between pods, the nominations' decode)."""
EVICTION_RUN_SECONDS = 0.01
"""CPU seconds of one eviction run that grow with neither the cluster nor its model (its solver,
its stages' bookkeeping)."""
EVICTION_RUN_PER_NODE = 1e-5
"""CPU seconds per node of one eviction run besides: its room over every node, the scans of the
nodes its preemptors' classes may use, its victims picked out of the phase's."""
EVICTION_RUN_PER_GANG = 0.003
"""CPU seconds per preemptor gang of one run to build its model: the gang's cells on its likeliest
nodes, the victims there and the constraints between them."""
EVICTION_FULL_RUN = 16
"""The preemptor gangs of a full eviction model (:data:`vcsat.solver.preemption.preempt.MAX_PREEMPTORS`):
a model of fewer is smaller in proportion, and CP-SAT solves it in proportion sooner."""
EVICTION_STAGES = 2
"""CP-SAT solves of one eviction run, at most: the preemptors' work, then the victims' levels."""
EVICTION_STAGE_SECONDS = 0.02
"""Deterministic seconds of one such solve on its minimum
(:data:`vcsat.solver.preemption.preempt.MIN_STAGE_SECONDS`)."""
EVICTION_SOLVE_SECONDS = 0.06
"""CPU seconds of one CP-SAT solve of a full eviction model besides its search: the model loaded
and presolved afresh at every stage, whatever its deterministic limit."""
EVICTION_CPU_PER_DETERMINISTIC = 3.5
"""CPU seconds CP-SAT takes per deterministic second of its search on the eviction models (its
deterministic time counts less than its work there): a budget of deterministic seconds costs this
many times as much CPU time."""
TRADE_SECONDS = 0.005
"""CPU seconds of one exchange trade that do not grow with the cluster: choosing the gangs to take
out, the top-ups' walks over the gangs left out, the objective's first levels (:data:`TRADE_PER_NODE`
for the rest)."""
TRADE_PER_NODE = 4e-5
"""CPU seconds per node of one exchange trade besides :data:`TRADE_SECONDS`: the decision without
the gangs taken out, the room it leaves rebuilt (one node at a time), the top-ups' node scans. The
prediction is the first trade's (later ones are predicted at the dearest that ran); the two
constants give 0.045 s at 1,000 nodes and 0.405 s at 10,000. The first trade that runs is a chain
or step trade where the exchange finds one (those cost 13-41 ms at 1,000 nodes even on a loaded
machine), else a slope trade (up to about 70 ms there); at 10,000 nodes a trade takes 0.28-0.35 s
(benchmarks/RESULTS.md, sessions 30 and 37). A first trade dearer than predicted overruns the
deadline less the reserve by the difference, which the reserve's margin over what follows covers;
a prediction above what the first trade costs refuses it where it fits, and on a 1 s cycle at
1,000 nodes the time left for the exchange after the second fill is often that first trade's and
no more. A constant per node alone, made to cover 1,000 nodes, kept back three times what a trade
takes at 10,000."""
LOOK_SECONDS = 0.01
"""CPU seconds of one exchange look (:meth:`WallPlan.allows_look`) that do not grow with the cluster."""
LOOK_PER_NODE = 1.5e-5
"""CPU seconds per node of one exchange look besides :data:`LOOK_SECONDS`: a chain look (both looks
of a queue) reads the decision's layout and the waiting gangs' pools. The prediction is the first
look's (later ones are predicted at the dearest that ran); the two constants give 0.025 s at 1,000
nodes and 0.16 s at 10,000, about what the dearest look takes there on the contended and
over-served shapes (benchmarks/RESULTS.md, session 35)."""
WHOLE_LEVEL_SECONDS = 0.2
"""Predicted CPU seconds of the whole-number bound's CP-SAT solve of one placed-work level,
presolve included (:mod:`vcsat.solver.search.whole_bound`), besides its share per node: a level
whose budget runs out (its search not closed) takes about this at 1,000 nodes."""
WHOLE_LEVEL_PER_NODE = 5e-5
"""CPU seconds per node of the same, besides :data:`WHOLE_LEVEL_SECONDS` (its model grows with
the pod shapes and node sets a larger cluster has)."""
RESERVE_PER_NODE = 2e-4
"""CPU seconds per node kept back for what follows every optional step: decode, explanations,
the validator and writing the decision out. About one and a half to two times what those steps
were measured to take at 1,000 and 10,000 nodes (benchmarks/RESULTS.md, session 25): a reserve
far above them leaves the time before the deadline unused, and on a short limit that is the time
a second greedy fill needs."""
TAIL_PER_NODE = 1.5e-4
"""CPU seconds per node kept back for what follows the eviction phase: the validator and writing
the decision out (about twice what they were measured to take; less than the reserve, which
covers the decode and the explanations too)."""
MIN_SAMPLE_CPU = 0.05
"""Below this much CPU time spent in the solve so far, its wall/CPU ratio is not trusted (1)."""


def trades_cut(ran: int) -> str:
    """The skipped-steps entry saying the exchange ended after ``ran`` trades (:data:`EXCHANGE_TRADES`)."""
    return f"{EXCHANGE_TRADES}={ran}"


def replayed_trades(skip: Iterable[str]) -> int | None:
    """The trades a cycle that recorded :func:`trades_cut` among ``skip`` ran (None: it recorded none)."""
    for name in skip:
        head, _, count = name.partition("=")
        if head == EXCHANGE_TRADES and count.isdigit():
            return int(count)
    return None


def known_step(name: str) -> bool:
    """Whether ``name`` is a skipped-steps entry a replay understands: one of :data:`STEPS`, or
    :func:`trades_cut`'s."""
    return name in STEPS or replayed_trades([name]) is not None


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
    ahead: float = 0.0
    """CPU seconds kept back, besides the reserve, for a later optional step the cycle means to
    reach (the exchange, when the warm start has trades to try): the steps before it are asked
    whether they end before the deadline less this too."""
    trades: int = 0
    """The exchange's trades :meth:`allows_trade` let start so far."""
    trade_cpu: float = 0.0
    """The CPU seconds of the dearest of those trades so far (0 before the first has ended)."""
    look_cpu: float = 0.0
    """The CPU seconds of the dearest exchange look (:meth:`not_a_trade`) so far (0 before the first)."""
    _wall_start: float = 0.0
    _cpu_start: float = 0.0
    _trade_started: float | None = None

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
        """Predicted CPU seconds of one more greedy fill over a decision (a top-up)."""
        if self.greedy_cpu is not None:
            return FILL_PER_GREEDY * self.greedy_cpu
        return FILL_PER_NODE * self.nodes

    def second_fill_cost(self) -> float:
        """Predicted CPU seconds of the greedy's second fill (:data:`SECOND_FILL_PER_GREEDY` times
        the first greedy's, which it follows in the same solve; :meth:`fill_cost` without it)."""
        if self.greedy_cpu is not None:
            return SECOND_FILL_PER_GREEDY * self.greedy_cpu
        return self.fill_cost()

    def exchange_cost(self, trades: int) -> float:
        """Predicted CPU seconds of ``trades`` exchange trades (:data:`TRADE_SECONDS` and
        :data:`TRADE_PER_NODE` each)."""
        return (TRADE_SECONDS + TRADE_PER_NODE * self.nodes) * trades

    def whole_bound_cost(self, levels: int) -> float:
        """Predicted CPU seconds of the whole-number bound on ``levels`` placed-work levels."""
        return (WHOLE_LEVEL_SECONDS + WHOLE_LEVEL_PER_NODE * self.nodes) * levels

    @staticmethod
    def model_cost(slots: int, gangs: int = 0) -> float:
        """Predicted CPU seconds to build a model of ``slots`` slots placing ``gangs`` gangs and
        reach a first solution."""
        return BUILD_PER_SLOT * slots + BUILD_PER_GANG * gangs + FIRST_SOLUTION_SECONDS

    @property
    def tail(self) -> float:
        """Wall seconds kept back after the eviction phase, the last optional step: the validator
        and the output (the decode and the explanations are done by then)."""
        return TAIL_PER_NODE * self.nodes * self.slowdown()

    def evictions_cost(self, runs: Sequence[int], budget: float = 0.0) -> float:
        """Predicted CPU seconds of the eviction phase: its set-up and one run per entry of ``runs``
        (each the preemptor gangs its model may hold), their stages on their minimum or ``budget``
        deterministic seconds of CP-SAT where that is more. A run's solves cost in proportion to
        how full its model is (:data:`EVICTION_FULL_RUN`): a model of a few gangs is solved long
        before its stage's limit, a full one uses it; the budget, shared by the runs, is used in
        proportion to the full models there are to use it, whole by one."""
        gangs = [min(EVICTION_FULL_RUN, max(0, count)) for count in runs]
        full = sum(gangs) / EVICTION_FULL_RUN
        searched = max(EVICTION_STAGES * EVICTION_STAGE_SECONDS * full, min(budget, budget * full))
        return (
            EVICTIONS_PER_NODE * self.nodes
            + sum(
                EVICTION_RUN_SECONDS
                + EVICTION_RUN_PER_NODE * self.nodes
                + EVICTION_RUN_PER_GANG * count
                + EVICTION_STAGES * EVICTION_SOLVE_SECONDS * count / EVICTION_FULL_RUN
                for count in gangs
            )
            + EVICTION_CPU_PER_DETERMINISTIC * searched
        )

    def left(self, last: bool = False) -> float | None:
        """Wall seconds until the deadline less the reserve and what is kept :attr:`ahead`, or only
        the :attr:`tail` for the ``last`` step (None without a deadline)."""
        if self.deadline is None:
            return None
        if last:
            return self.deadline - self.now() - self.tail
        return self.deadline - self.now() - self.reserve - self.ahead * self.slowdown()

    def replays(self, step: str) -> bool:
        """Whether :attr:`skip` names ``step`` (a replay of a cycle that skipped it whole), recorded
        as skipped when it does; the clock is not asked."""
        if step not in self.skip:
            return False
        if step not in self.skipped:
            self.skipped.append(step)
        return True

    def allows_trade(self) -> bool:
        """Whether the exchange's next trade may start: not past the count a replayed cycle ran
        (:func:`replayed_trades` of :attr:`skip`), and (with a deadline) ending before it less the
        reserve at this cycle's pace, predicted at the dearest trade this cycle ran so far
        (:meth:`exchange_cost` of one before the first). The first refused is recorded as
        :func:`trades_cut` of the trades that ran; the exchange asks no more after it."""
        if self._trade_started is not None:
            self.trade_cpu = max(self.trade_cpu, self.cpu() - self._trade_started)
            self._trade_started = None
        limit = replayed_trades(self.skip)
        if limit is None or self.trades < limit:
            left = self.left()
            cost = self.trade_cpu or self.exchange_cost(1)
            if left is None or cost * self.slowdown() <= left:
                self.trades += 1
                self._trade_started = self.cpu()
                return True
            self.out_of_time = True
        self.skipped.append(trades_cut(self.trades))
        return False

    def look_cost(self) -> float:
        """Predicted CPU seconds of the exchange's first look (:data:`LOOK_SECONDS` and
        :data:`LOOK_PER_NODE`)."""
        return LOOK_SECONDS + LOOK_PER_NODE * self.nodes

    def allows_look(self) -> bool:
        """Whether the exchange's next look (work between trades that is not a trade:
        :meth:`not_a_trade`) may start: (with a deadline) ending before it less the reserve at this
        cycle's pace, predicted at the dearest look this cycle ran so far (:meth:`look_cost` before
        the first). So a look never starts past the deadline, and the cycle overruns it by at most
        one look, the one dearer than any before it. The first refused ends the exchange as a
        refused trade does (recorded as :func:`trades_cut` of the trades that ran): a look's only
        use is the trade after it, and that trade, dearer than a look, would not end in time either.
        Not asked of a replay's count: a look changes no decision, so a replay of N trades decides
        as the cycle that ran N and then ran out of time looking. Without a deadline, always."""
        left = self.left()
        cost = self.look_cpu or self.look_cost()
        if left is None or cost * self.slowdown() <= left:
            return True
        self.out_of_time = True
        self.skipped.append(trades_cut(self.trades))
        return False

    @contextmanager
    def not_a_trade(self) -> Iterator[None]:
        """Work between two trades that is not a trade (a look for trades that may find none, done
        once per decision, not once per trade) left out of the running trade's measured cost: the
        pace predicts each next trade at the dearest one so far, and a one-off look counted in one
        would make every later trade look dearer and fewer start. Its seconds still pass on the
        clock, which the next trade's question reads, and set the looks' own pace (:attr:`look_cpu`,
        which :meth:`allows_look` reads)."""
        started = self.cpu()
        try:
            yield
        finally:
            spent = self.cpu() - started
            self.look_cpu = max(self.look_cpu, spent)
            if self._trade_started is not None:
                self._trade_started += spent

    def set_aside(self, wall: float, cpu: float) -> None:
        """Leave out of this cycle ``wall`` and ``cpu`` seconds just spent on what is not its own
        work (loading CP-SAT's module, :mod:`vcsat.solver.search.cp_sat`): the deadline moves by the
        wall seconds and the pace (:meth:`slowdown`) is measured without either."""
        if self.deadline is not None:
            self.deadline += wall
        self._wall_start += wall
        self._cpu_start += cpu

    def allows(self, step: str, cpu_cost: float, *, last: bool = False, decides: bool = True) -> bool:
        """Whether ``step``, predicted to cost ``cpu_cost`` CPU seconds, may start: not in
        :attr:`skip`, and (with a deadline) ending before it less the reserve (the :attr:`tail`
        when it is the ``last`` optional step) at this cycle's pace. A step refused is recorded in
        :attr:`skipped`; refused for time, it makes the cycle wall-stopped unless it changes no
        decision (``decides`` false: the whole-number bound, which only tightens the gap)."""
        if step not in self.skip:
            left = self.left(last)
            if left is None or cpu_cost * self.slowdown() <= left:
                return True
            self.out_of_time = self.out_of_time or decides
        if step not in self.skipped:
            self.skipped.append(step)
        return False
