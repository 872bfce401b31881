"""Exchange a queue's lower-priority gangs for its own waiting higher-priority ones.

The greedy fills the fair-share levels first: a queue below its deserved share gets its gangs in
priority order until the queue is served, often its small low-priority pods scattered over many
nodes; the same queue's large higher-priority gangs, which add nothing to any fair-share level
once the queue is above its deserved share, come later and find no node with room left. Placed
work is ranked by priority, so a decision that drops such a queue's lower-priority gangs and
places its waiting higher-priority ones instead ranks higher, and no search on a short budget
finds it: it takes many pods moving at once, on nodes the neighbourhood does not free.

Here, queue by queue (those with a waiting gang ranked above some of their placed ones), the
decision's gangs of that queue ranked below its best waiting gang are taken out, their pods off
the nodes with the most room left first (so that whole nodes come free), together with every
gang holding a pod smaller than the waiting gangs' largest on a node that had room for that pod
before the cycle; the queue's waiting gangs of that rank are placed first into the room this
leaves, then every gang the decision now leaves out as the greedy would
(:mod:`vcsat.solver.search.top_up`), those taken out included, which go where they fit best: into
the holes, not onto the whole nodes. The result is kept only when the objective's first levels
(queue fair shares tier by tier, then placed work by priority, compared as one tuple) rank it
strictly higher: a trade that lowers any queue's fair share or a higher priority's placed work is
not made. Where the top-up cannot account for the room exactly (rules between pods, topology
spread, shared CSI volumes, GPU shares) the decision is returned as it is.

The same room is often held by other queues' lower-priority work: a queue above its deserved share
keeps low-priority pods that count in no fair-share level, or small pods sit on the whole nodes a
waiting multi-node gang of 8-GPU pods needs. So, after the queues' own trades, two trades across
queues per rank of waiting gangs (highest first), each kept on the same terms: the gangs ranked
below it that no queue's fair share needs (taken out together, each queue still holds its deserved
share at every level they count in), and the gangs ranked below it with a pod smaller than the
rank's largest waiting pod on a node that had room for that pod before the cycle; the waiting
gangs of that rank or above are placed first into the room this leaves, then the rest as the
greedy would.

A fair-share tier is often short the same way: a queue below its deserved share waits with large
pods (8-GPU ones) while the whole nodes they need hold other queues' small pods, of its rank or
lower, that the queues' shares gain less from (a queue nearer its share is on a flatter piece of
the concave utility, or above its share and counted in no tier). So, last, per fair-share tier
(:func:`trading_tiers`) and per queue the tier can still raise with its waiting gangs: the placed
gangs with a pod smaller than the queue's largest waiting pod on a node that had room for that
pod before the cycle are taken out, first those ranked no higher than the queue's best waiting
gang, then those of any rank; the queue's waiting gangs of that rank are placed first, then the
rest as the greedy would, which serves each tier's queues towards their shares again. Kept on the
same terms: the tiers above stay, this one rises, or it stays and placed work ranks higher.

Then the slope trades once more (below), on the decision the others leave: where room has moved,
one the first pass could not make may now be possible. Where the fair or slope trades changed the
decision, the queues' trades and those across ranks run once more on it: the room has moved, and
with it what waits above what.

Last, when every trade above is done and the cycle has time left, the relocation trades
(:mod:`vcsat.solver.search.relocation`) on the tiers that can still rise: per waiting gang, only
the pods that must move for it, into room elsewhere; kept on the same terms. They come last
because the others, on the generated clusters, rank higher within the few trades a short cycle
fits (benchmarks/RESULTS.md, session 29), and run only with the fair trades (a replay that skips
``exchange_fair`` skips them too).

After the relocation trades, last of all, the re-pack trades
(:mod:`vcsat.solver.search.repack_trade`): per fair-share tier that can still rise and per queue it
can raise, the work on the pool the queue's waiting pods may use that may also run elsewhere moved
off it, the work no tier that important counts cleared from where it may go, the queue's waiting
gangs placed first, then the moved work, then the rest as the greedy would; kept on the same terms.
They come last because on the generated clusters they are kept only where the others have left the
tier short, and before them they take trades the others would have kept (benchmarks/RESULTS.md,
session 39). Looking for them is not a trade; each tried is.

Right after the first slope trades, the move trades (:mod:`vcsat.solver.search.relocation`): for
the waiting gangs of the highest rank whose queue no tier can raise, the smaller pods on the nodes
they need moved elsewhere, none lost; kept on the same terms. They change no tier and raise placed
work only, so they come after the first slope trades (a kept move before them can take the room a
slope trade raises a tier with) and before the rest, within the few trades a 1 s cycle fits
(benchmarks/RESULTS.md, session 32). Where the chain and spare-only step trades change nothing,
they come before the clearing and slope trades instead: there the tiers those raise are seldom
raised, and the refused pool and slope trades took the first trades of a short cycle before the
moves (benchmarks/RESULTS.md, session 44). Looking for them is not a trade; each tried is.

Before all of these, per fair-share tier and per queue it can raise, the slope trades
(:mod:`vcsat.solver.search.slope_trade`): room taken from the queues at the tier whose next GPU
gains it less (flatter on the concave utility) as well as from the small pods on the nodes the
queue's waiting pods may use, the queue's waiting pods placed first, then the rest as the greedy
would; kept on the same terms. They go first because they raise the fair-share tiers, which rank
above all placed work, and a short cycle has room for only a few trades: on the generated
clusters where trades run at 1 s, this order ranks higher than the others more often than not
(benchmarks/RESULTS.md, session 27).

Around the first slope trades, the step trades (:mod:`vcsat.solver.search.step_trade`): a tier
counts each queue's share in whole thousandths, rounded down, so per tier a queue a GPU or two
short of its next thousandth takes the room of another queue's smallest counted gangs on nodes its
waiting pods may use, where the other loses less at the tier than it gains and nothing at a more
important one; its waiting gangs of that size are placed first, then the rest as the greedy would;
kept on the same terms. Before the slope trades only those whose giving queue loses nothing (GPUs
its share does not count); then all of them as soon as a slope trade is refused, the slope trades
going on after them, and once more after the slope trades on the decision they leave. A step trade,
where one is offered, is kept far more often than a slope trade, so a short cycle should not spend
its few trades on refused slope trades first; all of them before the first slope trade can leave a
slope trade that would have been kept a point short (benchmarks/RESULTS.md, sessions 36 and 38).
Looking for them is not a trade; each tried is.

Between the spare-only step trades and the slope trades, the clearing trades
(:mod:`vcsat.solver.search.clearing_trade`): per fair-share tier and per queue it can raise with a
waiting gang on a narrow pool, the work no tier that important counts taken out of the pool and of
the nodes where the pool's counted smaller pods may go, the queue's waiting gangs counted there
placed first, then those pods, then the rest as the greedy would; kept on the same terms. The
chain trades free a node by moving its occupants into room already there or freed one victim at a
time; where the pool's counted pods are many small ones, only clearing both sides at once frees
whole nodes (benchmarks/RESULTS.md, session 37). Looking for them is not a trade; each tried is.

Before the slope trades, first of all, the chain trades (:mod:`vcsat.solver.search.chain`): per
fair-share tier and per queue it can raise, the whole-node pods and small pods on the narrow pool
its large waiting pods need moved to their other nodes or taken out (lower-ranked ones no level
that important needs, and the queue's own lower-ranked smaller gangs), found in a copy of
the room, tried only where every mover finds a place and the tier would rise; where none is
found, a second look that may also take the flatter queues' work at the tier (of the waiting
gang's rank or below; the tier read with their loss); where neither finds one, a third that may
take the work of the queues at their share where their own waiting gangs make it up (any rank:
a queue at its share trading its whole-node pods for its small ones); where none of the three
does, a fourth with the second's victims that carries its gangs on past a step read as no rise
and counts the victims that fit back into the room left; kept on the same terms. They go first
because on the contended clusters the slope trades before them take the few trades a 1 s cycle
fits without reaching the tier they raise (benchmarks/RESULTS.md, session 33). Looking for them
is not a trade; each tried is.

Where the early move trades run and change nothing, right after them, the swap trades
(:mod:`vcsat.solver.search.swap_trade`): per waiting gang of the highest rank any gang waits at,
oldest first, the fewest lower-ranked placed gangs whose GPUs suffice taken out (whether a level
needs them or not: their queue's own waiting work refills its share where it finds room), the
waiting gang placed first, then the rest as the greedy would; kept on the same terms. On a
saturated cluster the free room is a GPU or two on many nodes, every GPU held below the top rank
is needed by a fair-share level, and no pod can move: the move trades find nothing there and the
trades across ranks take out far more than the waiting gang needs, which the refill over such room
does not win back. First among them, the slack swaps: victims of one queue that it can lose with
every fair-share tier the same (a tier counts whole thousandths of a share, and a thousandth of a
large share is several GPUs), so the trade is kept wherever the waiting gang lands; the others take
the fewest GPUs that suffice and lose a tier where the refill finds no room (benchmarks/RESULTS.md,
session 51). Looking for them is not a trade; each tried is.

Every kept trade, of whatever kind, then puts back what it lost: a trade that raises a tier often
loses, in its refill, placed gangs of a queue above its share (no tier counts them, so the trade is
kept and placed work at their priority falls), while gangs ranked below them that no fair-share
level needs hold the room they would take. Within the same trade (no count of its own, so a 1 s
cycle and a replay make the same trades), those lower gangs are taken out, the lost gangs of the
highest rank placed first, then the rest as the greedy would; the result replaces the trade's where
every such lost gang is back and it ranks strictly higher (:func:`_repaired`). Without it the later
move and rank trades win that work back one trade at a time, after the few trades a short cycle
fits (benchmarks/RESULTS.md, session 43).

Each trade is asked first whether it may start (``go``, the cycle's deadline in
:func:`vcsat.solver.solve.solve`): the trades run one at a time, in a fixed order, until one is
refused, and none after it; each chain and move look likewise (``may_look``), the first refused
ending the exchange too (a look's only use is the trade after it); how many ran is what a replay
needs to make the same trades (each trade is kept or not on the ranks alone, so the same trades on
the same decision decide the same).
A trade's cost is mostly its top-ups' fill (the waiting gangs tried in the room the drop leaves);
what is made once per standing decision rather than per trade (the raisable queues, the charges
the first room starts from: :meth:`_Run.charges`) is kept in :class:`_Run` while it stands.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager, nullcontext

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.greedy import KeptRankings, shares_gpu
from vcsat.solver.objectives.fairness import fair_ranks, fair_terms, placed_amount
from vcsat.solver.problem import Gang, Problem
from vcsat.solver.search.chain import Layout, chains, queued, waiting_counted
from vcsat.solver.search.clearing_trade import PoolTrade, clearing_trade
from vcsat.solver.search.relocation import Relocation, moves, relocations
from vcsat.solver.search.repack_trade import repack_trade
from vcsat.solver.search.slope_trade import slope_trades
from vcsat.solver.search.step_trade import step_trades
from vcsat.solver.search.swap_trade import slack_swaps, swaps
from vcsat.solver.search.top_up import Charges, charges, top_up_in

Rank = Callable[[Problem, Assignment], tuple[int, ...]]
FindPoolTrade = Callable[[Problem, Assignment, int, str, dict[str, list[Gang]] | None], PoolTrade | None]
"""A trade that takes gangs off a queue's pool for a tier (the clearing or the re-pack trade)."""
Ranked = tuple[Assignment, tuple[int, ...]]
"""A decision and its rank (the objective's first levels, :data:`Rank`)."""
Less = tuple[Charges, dict[int, int]]
"""A standing decision's charges and the classes a trade's drop takes out of its count, with their
counts there (:func:`vcsat.solver.search.top_up.charged_less`)."""


def _always() -> bool:
    return True


class _Run:
    """One exchange's trades: asks ``go`` before each until it refuses one (every trade after that
    is refused too, without asking, so the trades that ran are a prefix of the order: module
    docstring), and carries the rankings its trades' rooms make from each room to the next (the
    same decisions for less work: :class:`vcsat.solver.greedy.KeptRankings`).

    The rankings are made by the first trade's rooms, not kept from the greedy's: the greedy runs
    every cycle and the trades in few (at 1 s on 1,000 nodes, none), so the greedy pays nothing
    for them (benchmarks/RESULTS.md, session 20)."""

    def __init__(
        self,
        problem: Problem,
        go: Callable[[], bool],
        look: Callable[[], AbstractContextManager[object]] = nullcontext,
        may_look: Callable[[], bool] = _always,
    ) -> None:
        self.problem = problem
        self.go = go
        self.look = look
        """Wraps work between trades that is not a trade (``exchange``'s ``look``)."""
        self.may_look = may_look
        """Asked before each look (``exchange``'s ``may_look``): the first refused ends the run."""
        self.stopped = False
        self._rankings: KeptRankings | None = None
        self._raisable: tuple[Assignment, dict[int, list[tuple[str, int, set[int], int]]]] | None = None
        self._charges: tuple[Assignment, Charges] | None = None
        self._queued: dict[str, list[Gang]] | None = None

    @property
    def queued(self) -> dict[str, list[Gang]]:
        """:func:`vcsat.solver.search.chain.queued` of the problem, made when a look first asks: every
        waiting gangs' walk of this exchange reads a queue's own gangs off it."""
        if self._queued is None:
            self._queued = queued(self.problem)
        return self._queued

    @property
    def rankings(self) -> KeptRankings:
        """The rankings carried between this exchange's rooms, made when the first trade asks."""
        if self._rankings is None:
            self._rankings = KeptRankings(self.problem)
        return self._rankings

    def raisable(self, assignment: Assignment, tier: int) -> list[tuple[str, int, set[int], int]]:
        """:func:`_raisable` of the decision that stands, made once per tier while it stands: the
        slope trades' two passes and the fair trades ask for the same ones (a decision is never
        changed in place; a kept trade is a new one). Callers only read it."""
        kept = self._raisable
        if kept is None or kept[0] is not assignment:
            kept = self._raisable = (assignment, {})
        found = kept[1].get(tier)
        if found is None:
            found = kept[1][tier] = _raisable(self.problem, assignment, tier, self.queued)
        return found

    def charges(self, assignment: Assignment) -> Charges:
        """:func:`vcsat.solver.search.top_up.charges` of the decision that stands, made once while
        it stands: each trade's first top-up starts from it less the gangs the trade drops
        (:func:`vcsat.solver.search.top_up.charged_less`)."""
        kept = self._charges
        if kept is None or kept[0] is not assignment:
            kept = self._charges = (assignment, charges(self.problem, assignment, self.rankings))
        return kept[1]

    def __call__(self) -> bool:
        if not self.stopped and not self.go():
            self.stopped = True
        return not self.stopped

    def looks(self) -> bool:
        """Whether the next look may start: not after a refused trade or look, and ``may_look``
        allows it; the first refused ends the run, as a refused trade does (a look's only use is
        the trade after it)."""
        if not self.stopped and not self.may_look():
            self.stopped = True
        return not self.stopped


def trading_queues(problem: Problem, assignment: Assignment) -> list[tuple[str, int]]:
    """The queues an exchange may help, each with the rank of its best waiting gang: those with a
    gang left out (with pods to place) ranked above one of their gangs ``assignment`` places; none
    where the top-up cannot account for the room exactly (module docstring)."""
    if not _exact(problem, assignment):
        return []
    waiting: dict[str, int] = {}
    lowest: dict[str, int] = {}
    for gang in problem.candidates:
        if gang.index in assignment.placed:
            lowest[gang.queue] = min(lowest.get(gang.queue, gang.rank), gang.rank)
        elif any(problem.classes[c].pods for c in gang.classes):
            waiting[gang.queue] = max(waiting.get(gang.queue, gang.rank), gang.rank)
    return [(queue, rank) for queue, rank in sorted(waiting.items()) if queue in lowest and lowest[queue] < rank]


def trading_ranks(problem: Problem, assignment: Assignment) -> list[int]:
    """The ranks of the gangs ``assignment`` leaves out (with pods to place) above the rank of some
    gang it places, of any queue, highest first: those the trades across queues try; none where the
    top-up cannot account for the room exactly (module docstring)."""
    if not _exact(problem, assignment) or not assignment.placed:
        return []
    lowest = min(problem.gangs[g].rank for g in assignment.placed)
    waiting = {
        gang.rank
        for gang in problem.candidates
        if gang.index not in assignment.placed and any(problem.classes[c].pods for c in gang.classes)
    }
    return sorted((r for r in waiting if r > lowest), reverse=True)


def trading_tiers(problem: Problem, assignment: Assignment) -> list[int]:
    """The fair-share tiers (:func:`vcsat.solver.objectives.fairness.fair_ranks`) with a queue below
    its deserved share there and a gang of its, counted there, waiting with a pod that asks the
    GPUs the tier measures: those the fair trades try, most important first; none where the
    top-up cannot account for the room exactly (module docstring)."""
    if not _exact(problem, assignment) or not assignment.placed:
        return []
    return [tier for tier in fair_ranks(problem) if _raisable(problem, assignment, tier)]


def _tiers_still(problem: Problem, assignment: Assignment, run: _Run) -> list[int]:
    """:func:`trading_tiers` of the decision that stands, read off the run's kept :func:`_raisable`
    (the trades before asked for the same tiers of the same decision)."""
    if not _exact(problem, assignment) or not assignment.placed:
        return []
    return [tier for tier in fair_ranks(problem) if run.raisable(assignment, tier)]


def _raisable(
    problem: Problem, assignment: Assignment, tier: int, of_queue: dict[str, list[Gang]] | None = None
) -> list[tuple[str, int, set[int], int]]:
    """Per queue the fair-share ``tier`` can still raise: (queue, the rank of its best waiting gang
    counted there, its waiting gangs of that rank, the most GPUs one pod of its waiting gangs
    counted there asks), for the queues below their deserved share on GPUs with such a gang
    waiting; ``of_queue``: :func:`vcsat.solver.search.chain.queued` of the problem, when kept."""
    if res.GPU not in problem.resources:
        return []
    gpu = problem.resource_index(res.GPU)
    out: list[tuple[str, int, set[int], int]] = []
    for queue, name, deserved, held, asked in fair_terms(problem, tier):
        if name != res.GPU:
            continue
        counted = set(asked)
        added = placed_amount(problem, assignment, asked, gpu)
        if held + added >= deserved:
            continue
        waiting = waiting_counted(problem, assignment, queue, counted, of_queue)
        if not waiting:
            continue
        top = max(gang.rank for gang in waiting)
        first = {gang.index for gang in waiting if gang.rank == top}
        # The largest pod it waits with at this tier, of any rank: the room a whole node frees
        # for it frees room for its smaller pods as well.
        largest = max(
            problem.shapes[problem.classes[c].shape].request[gpu]
            for gang in waiting
            for c in gang.classes
            if c in counted and problem.classes[c].pods
        )
        if largest > 0:
            out.append((queue, top, first, largest))
    return out


def _exact(problem: Problem, assignment: Assignment) -> bool:
    """Whether the top-up accounts for the room ``assignment`` leaves exactly (module docstring)."""
    if problem.interpod is not None or problem.spread or problem.attach is not None:
        return False
    return not any(
        k > 0 and shares_gpu(problem, problem.shapes[s].request) for (s, _), k in assignment.shape_slots.items()
    )


def exchange(
    problem: Problem,
    assignment: Assignment,
    rank: Rank,
    queues: list[tuple[str, int]],
    ranks: list[int] | None = None,
    tiers: list[int] | None = None,
    go: Callable[[], bool] = _always,
    look: Callable[[], AbstractContextManager[object]] = nullcontext,
    may_look: Callable[[], bool] = _always,
) -> Assignment:
    """``assignment`` with, when ``tiers`` were given, the chain trades, then, for each of ``tiers``
    (:func:`trading_tiers`), the slope trades of each
    queue that tier can raise, then, when ``ranks`` were given, the move trades (before the slope
    trades where the chain and spare-only step trades changed nothing), then, for each of
    ``queues`` (:func:`trading_queues`, made again when a slope or move trade changed the decision)
    in turn, its gangs ranked below the queue's best waiting gang traded for the queue's waiting
    gangs of that rank, then, for each of ``ranks``
    (:func:`trading_ranks`, likewise), the two trades across queues, then, for each of ``tiers``,
    the fair trades then the slope trades once more of each queue that tier can raise, and, when
    those changed it, the queues' trades and those across ranks once more, and last, when
    ``tiers`` were given, the relocation trades then the re-pack trades on the tiers that can still
    rise; each where ``rank``
    puts the result strictly higher (module docstring); ``assignment`` itself when no trade does.
    ``go`` is asked before each trade: the first it refuses ends the exchange; ``look`` wraps the
    looks for move trades, work between trades that is not one (the cycle leaves its time out of
    the trades' pace: :meth:`vcsat.solver.deadline.WallPlan.not_a_trade`); ``may_look`` is asked
    before each look, the first it refuses ending the exchange too (the cycle's deadline:
    :meth:`vcsat.solver.deadline.WallPlan.allows_look`). The trades' rooms
    carry their rankings from one to the next (the same trades, for less work: :class:`_Run`)."""
    run = _Run(problem, go, look, may_look)
    start, start_rank = assignment, rank(problem, assignment)
    # The chain trades first: on the contended clusters the slope trades take every trade a 1 s
    # cycle fits without reaching the tier the chain raises (benchmarks/RESULTS.md, session 33).
    if tiers:
        start, start_rank = _chain_trades(problem, rank, start, start_rank, run)
    # Then the slope trades: they raise the fair-share tiers, which rank above all placed work,
    # where the greedy's fill order left them short, and a short cycle has room for a few trades.
    # Then the step trades whose giving queue loses nothing: GPUs a queue's share does not count
    # given to one a GPU or two short of its next step, which moves no other queue's utility and
    # so leaves the slope trades their room (benchmarks/RESULTS.md, session 36).
    start, start_rank = _step_trades(problem, rank, start, start_rank, tiers or [], run, spare_only=True)
    # Where the chain and spare-only step trades changed nothing, the move trades come here, before
    # the clearing and slope trades: on those clusters the pool and slope trades that follow were
    # refused, each spending one of the few trades a short cycle fits, before the moves that raise
    # placed work (held40 weighted s261: 1.72% -> 0.30% at 2 trades). Where the chain or step
    # trades did raise a tier, a kept move first can take the room a slope trade would have raised
    # a tier with (benchmarks/RESULTS.md, sessions 32 and 44), so there they stay after them.
    moved_on: Assignment | None = None  # the decision the early move trades left, where they ran
    if ranks and start is assignment:
        start, start_rank = _move_trades(problem, rank, start, start_rank, run)
        moved_on = start
        if start is assignment:
            # No move either: on a saturated cluster nothing can move, and the top-rank gangs wait
            # for GPUs that lower-ranked gangs hold; the swap trades give them those, before the
            # pool and slope trades spend the few trades a short cycle fits.
            start, start_rank = _swap_trades(problem, rank, start, start_rank, run)
    # Then the clearing trades: a queue's pool cleared of the work no tier that important counts,
    # its counted smaller pods moved into the room that work leaves elsewhere, where the chain
    # finds no node to free (benchmarks/RESULTS.md, session 37). After the step trades that take
    # only GPUs no share counts: those are one trade each and raise a tier where they are offered.
    if tiers:
        start, start_rank = _clearing_trades(problem, rank, start, start_rank, tiers, run)
    stepped: list[Assignment] = []  # the decision every step trade was last tried on

    def steps(best: Assignment, best_rank: tuple[int, ...]) -> Ranked:
        """Every step trade on ``best``, once per decision: the same trades on the same decision
        are refused the same way."""
        if stepped and stepped[0] is best:
            return best, best_rank
        best, best_rank = _step_trades(problem, rank, best, best_rank, tiers or [], run)
        stepped[:] = [best]
        return best, best_rank

    # Every step trade as soon as a slope trade is refused, the slope trades going on after them:
    # a step trade, where one is offered, is kept far more often than a slope trade, and a short
    # cycle fits a few trades; all of them before the first slope trade can leave a slope trade
    # that would have been kept first a point short (benchmarks/RESULTS.md, sessions 36 and 38).
    sloped, sloped_rank = _slope_trades(problem, rank, start, start_rank, tiers or [], run, between=steps)
    sloped, sloped_rank = steps(sloped, sloped_rank)
    # Then the move trades, which change no tier: before them, a kept move can leave the room a
    # slope trade would have raised a tier with taken (benchmarks/RESULTS.md, session 32). They run
    # with the trades across ranks (a replay that skips ``exchange_across`` skips them too). Not
    # again on the decision the early move trades left: they are tried on it already.
    if ranks and sloped is not moved_on:
        sloped, sloped_rank = _move_trades(problem, rank, sloped, sloped_rank, run)
    if run.stopped:
        # Refused: no trade after it runs, so nothing after it is read either.
        return sloped
    if sloped is not assignment:
        queues, ranks = trading_queues(problem, sloped), trading_ranks(problem, sloped)
    best, best_rank = _queue_trades(problem, rank, sloped, sloped_rank, queues, run)
    best, best_rank = _rank_trades(problem, rank, best, best_rank, ranks or [], run)
    fair, fair_rank = _tier_trades(problem, rank, best, best_rank, tiers or [], run)
    # Once more after the others, on the decision they leave: where room has moved, a slope trade
    # the first pass could not make may now be possible.
    fair, fair_rank = _slope_trades(problem, rank, fair, fair_rank, tiers or [], run)
    if fair is not best and not run.stopped:
        # The fair trades moved room between queues: the queues' trades and those across ranks once
        # more, on the decision they leave (what waits and what is placed below it has changed).
        fair, fair_rank = _queue_trades(problem, rank, fair, fair_rank, trading_queues(problem, fair), run)
        fair, fair_rank = _rank_trades(problem, rank, fair, fair_rank, trading_ranks(problem, fair), run)
    # Last, where time is left when the others are done: the relocation trades, on the tiers that
    # can still rise on the decision they leave.
    still = _tiers_still(problem, fair, run) if tiers and not run.stopped else []
    moved, moved_rank = _relocation_trades(problem, rank, fair, fair_rank, still, run)
    # Then the re-pack trades: other queues' work moved off a below-share queue's pool to the
    # pools it may also use, where every trade before has left the tier short.
    if tiers and not run.stopped:
        moved, _ = _repack_trades(problem, rank, moved, moved_rank, _tiers_still(problem, moved, run), run)
    return moved


def _queue_trades(
    problem: Problem,
    rank: Rank,
    best: Assignment,
    best_rank: tuple[int, ...],
    queues: list[tuple[str, int]],
    run: _Run,
) -> Ranked:
    """Each queue's gangs ranked below its best waiting gang traded for its waiting gangs of that rank."""
    for queue, above in queues:
        if run.stopped:
            break
        out = {g for g in best.placed if problem.gangs[g].queue == queue and problem.gangs[g].rank < above}
        if not out:
            continue
        drop = sorted(out | _small_on_whole(problem, best, queue, above))
        # The queue's waiting gangs of that rank first, into the room the drop leaves; then the
        # rest as the greedy would, those taken out included.
        first = {
            g.index for g in problem.candidates if g.queue == queue and g.rank == above and g.index not in best.placed
        }
        best, best_rank = _kept(problem, rank, best, best_rank, drop, first, run)
    return best, best_rank


def _rank_trades(
    problem: Problem, rank: Rank, best: Assignment, best_rank: tuple[int, ...], ranks: list[int], run: _Run
) -> Ranked:
    """Per rank of waiting gangs, the two trades across queues."""
    for above in ranks:
        for pick in (_not_needed, _below_on_whole):
            if run.stopped:
                return best, best_rank
            out = pick(problem, best, above)
            if not out:
                continue
            first = {g.index for g in problem.candidates if g.rank >= above and g.index not in best.placed}
            best, best_rank = _kept(problem, rank, best, best_rank, sorted(out), first, run)
    return best, best_rank


def _tier_trades(
    problem: Problem, rank: Rank, best: Assignment, best_rank: tuple[int, ...], tiers: list[int], run: _Run
) -> Ranked:
    """Per fair-share tier, the fair trades of each queue it can raise."""
    for tier in tiers:
        if run.stopped:
            break
        # The same trade on the same decision gives the same result: tried once while it stands.
        tried: set[tuple[frozenset[int], frozenset[int]]] = set()
        for _queue, top, first, largest in run.raisable(best, tier):
            for below in (top + 1, None):  # those ranked no higher than the waiting gangs, then any
                if run.stopped:
                    return best, best_rank
                out = _on_whole(problem, best, largest, below)
                if not out or (frozenset(out), frozenset(first)) in tried:
                    continue
                tried.add((frozenset(out), frozenset(first)))
                kept, best_rank = _kept(problem, rank, best, best_rank, sorted(out), first, run)
                if kept is not best:
                    best, tried = kept, set()
    return best, best_rank


def _slope_trades(
    problem: Problem,
    rank: Rank,
    best: Assignment,
    best_rank: tuple[int, ...],
    tiers: list[int],
    run: _Run,
    between: Callable[[Assignment, tuple[int, ...]], Ranked] | None = None,
) -> Ranked:
    """Per fair-share tier, the slope trades (:mod:`vcsat.solver.search.slope_trade`) of each queue
    it can raise, one per GPU size of its waiting pods, largest first, then the second forms (a
    size's only where its first placed none of the waiting gangs), then the third forms (a size's
    only where its second was refused); after one is kept, those of the
    sizes left are made again on the decision it leaves. A trade already tried on the decision that
    stands (the tiers of one queue priority often name the same) is not tried again. ``between``,
    when given, runs after each refused slope trade on the decision that stands (other trades, kept
    on the same terms); where it changes the decision, the slope trades of the sizes left are made
    again on the one it leaves, as after a kept slope trade."""
    tried: set[tuple[frozenset[int], frozenset[int]]] = set()
    # The first forms tried on the decision that stands that placed a waiting gang, by size and
    # waiting gangs (its second form names the same): their second forms are not tried.
    placed_some: set[tuple[int, frozenset[int]]] = set()
    # The second forms refused on the decision that stands, likewise: only their third forms are
    # tried (where a second form was kept, or not tried, the third has nothing to add).
    refused: set[tuple[int, frozenset[int]]] = set()
    for tier in tiers:
        if run.stopped:
            break
        for queue, top, first, _largest in run.raisable(best, tier):
            if run.stopped:
                break
            done: set[int] = set()
            trades = slope_trades(problem, best, tier, queue, top, first)
            while trades:
                trade = trades.pop(0)
                done.add(trade.size)
                if (
                    (trade.drop, trade.first) in tried
                    or (trade.whole_nodes and (trade.size, trade.first) in placed_some)
                    or (trade.swap and (trade.size, trade.first) not in refused)
                ):
                    continue
                if run.stopped:
                    return best, best_rank
                tried.add((trade.drop, trade.first))
                trials: list[Assignment] = []
                kept, best_rank = _kept(
                    problem, rank, best, best_rank, sorted(trade.drop), set(trade.first), run, trials=trials
                )
                if not trade.whole_nodes and trials and trade.first & trials[0].placed:
                    placed_some.add((trade.size, trade.first))
                if trade.whole_nodes and not trade.swap and kept is best:
                    refused.add((trade.size, trade.first))
                if kept is best and between is not None:
                    kept, best_rank = between(best, best_rank)
                if kept is not best:
                    best, tried, placed_some, refused = kept, set(), set(), set()
                    if run.stopped:
                        # Kept, then refused (in ``between``, or by the next ``go``): no trade after
                        # it runs, so the sizes left are not made again either.
                        return best, best_rank
                    trades = [t for t in slope_trades(problem, best, tier, queue, top, first) if t.size not in done]
    return best, best_rank


def _clearing_trades(
    problem: Problem, rank: Rank, best: Assignment, best_rank: tuple[int, ...], tiers: list[int], run: _Run
) -> Ranked:
    """The clearing trades (:func:`_pool_trades` of :func:`vcsat.solver.search.clearing_trade.clearing_trade`)."""
    return _pool_trades(problem, rank, best, best_rank, tiers, run, clearing_trade)


def _repack_trades(
    problem: Problem, rank: Rank, best: Assignment, best_rank: tuple[int, ...], tiers: list[int], run: _Run
) -> Ranked:
    """The re-pack trades (:func:`_pool_trades` of :func:`vcsat.solver.search.repack_trade.repack_trade`)."""
    return _pool_trades(problem, rank, best, best_rank, tiers, run, repack_trade)


def _pool_trades(
    problem: Problem,
    rank: Rank,
    best: Assignment,
    best_rank: tuple[int, ...],
    tiers: list[int],
    run: _Run,
    find: FindPoolTrade,
) -> Ranked:
    """Per fair-share tier, most important first, and per queue it can still raise, the trade
    ``find`` makes: the clearing trade (:mod:`vcsat.solver.search.clearing_trade`) or the re-pack
    trade (:mod:`vcsat.solver.search.repack_trade`), both gangs taken off a pool, the queue's waiting
    gangs placed first, then the movers; after one is kept, those of the decision it leaves, from
    the first tier again. Looking for one is not a trade (its time is left out of the trades' pace,
    ``run.look``); each one tried is. A (tier, queue) already tried on the decision that stands is
    not tried again."""
    if not _exact(problem, best):
        return best, best_rank
    tried: set[tuple[int, str]] = set()
    changed = True
    while changed and not run.stopped:
        changed = False
        for tier in tiers:
            if run.stopped:
                # Refused: the next tier's queues are not read for a trade that cannot run.
                return best, best_rank
            for queue, *_ in run.raisable(best, tier):
                if (tier, queue) in tried:
                    continue
                if not run.looks():
                    return best, best_rank
                tried.add((tier, queue))
                with run.look():
                    trade = find(problem, best, tier, queue, run.queued)
                if trade is None:
                    continue
                kept, best_rank = _kept(
                    problem, rank, best, best_rank, sorted(trade.drop), set(trade.first), run, then=trade.movers
                )
                if kept is not best:
                    best, tried, changed = kept, set(), True
                    break
            if changed:
                break
    return best, best_rank


def _step_trades(
    problem: Problem,
    rank: Rank,
    best: Assignment,
    best_rank: tuple[int, ...],
    tiers: list[int],
    run: _Run,
    *,
    spare_only: bool = False,
) -> Ranked:
    """Per fair-share tier, most important first, the step trades
    (:mod:`vcsat.solver.search.step_trade`; ``spare_only``: those whose giving queue loses nothing),
    the most expected rise first; after one is kept, those of the decision it leaves, from the
    first tier again. Looking for them is not a trade (its time
    is left out of the trades' pace, ``run.look``); each one tried is. A trade already tried on the
    decision that stands (tiers counting the same work name the same) is not tried again."""
    if not tiers or not _exact(problem, best):
        return best, best_rank
    ranks = fair_ranks(problem)
    tried: set[tuple[frozenset[int], frozenset[int]]] = set()
    changed = True
    while changed and not run.stopped:
        changed = False
        for tier in tiers:
            if not run.looks():
                return best, best_rank
            with run.look():
                trades = step_trades(problem, best, tier, ranks[: ranks.index(tier)], run.queued, spare_only)
            for trade in trades:
                if (trade.drop, trade.first) in tried:
                    continue
                if run.stopped:
                    return best, best_rank
                tried.add((trade.drop, trade.first))
                kept, best_rank = _kept(problem, rank, best, best_rank, sorted(trade.drop), set(trade.first), run)
                if kept is not best:
                    best, tried, changed = kept, set(), True
                    break
            if changed:
                break
    return best, best_rank


def _move_trades(problem: Problem, rank: Rank, best: Assignment, best_rank: tuple[int, ...], run: _Run) -> Ranked:
    """The move trades (:mod:`vcsat.solver.search.relocation`) for the waiting gangs of the highest
    rank whose queue no fair-share tier can raise (those of a queue it can raise have the slope,
    fair and relocation trades); after one is kept, those of the decision it leaves. Looking for
    them is not a trade (a look that finds none changes nothing; its time is left out of the
    trades' pace, ``run.look``); each one tried is."""
    if not _exact(problem, best):
        return best, best_rank
    tried: set[tuple[object, ...]] = set()
    changed = True
    while changed and run.looks():
        changed = False
        with run.look():
            trades = _move_looks(problem, best, tried, run)
            trade = next(trades, None)
        while trade is not None and not run.stopped:
            kept, best_rank = _kept(problem, rank, best, best_rank, trade.drop, {trade.gang}, run, then=trade.movers)
            if kept is not best:
                best, tried, changed = kept, set(), True
                break
            if not run.looks():
                break
            with run.look():
                trade = next(trades, None)
    return best, best_rank


def _swap_trades(problem: Problem, rank: Rank, best: Assignment, best_rank: tuple[int, ...], run: _Run) -> Ranked:
    """The swap trades (:mod:`vcsat.solver.search.swap_trade`) for the waiting gangs of the highest
    rank; after one is kept, those of the decision it leaves. Looking for them is not a trade (its
    time is left out of the trades' pace, ``run.look``); each one tried is."""
    if not _exact(problem, best):
        return best, best_rank
    tried: set[tuple[object, ...]] = set()
    changed = True
    while changed and run.looks():
        changed = False
        with run.look():
            # Those whose victims' queue keeps every tier first: kept wherever the waiting gang
            # finds the room, where the others lower a tier on a saturated cluster.
            trades = [*slack_swaps(problem, best, tried, _stepping(problem, best, run)), *swaps(problem, best, tried)]
        for gang, drop in trades:
            if run.stopped:
                break
            kept, best_rank = _kept(problem, rank, best, best_rank, drop, {gang}, run)
            if kept is not best:
                best, tried, changed = kept, set(), True
                break
    return best, best_rank


def _stepping(problem: Problem, best: Assignment, run: _Run) -> set[str]:
    """The queues the step trades on ``best`` would give GPUs to or take them from, at any tier that
    can still rise: the slack swaps leave them their GPUs (a tier ranks above placed work)."""
    ranks = fair_ranks(problem)
    out: set[str] = set()
    for tier in _tiers_still(problem, best, run):
        for trade in step_trades(problem, best, tier, ranks[: ranks.index(tier)], run.queued):
            out.update((trade.queue, trade.donor))
    return out


def _chain_trades(problem: Problem, rank: Rank, best: Assignment, best_rank: tuple[int, ...], run: _Run) -> Ranked:
    """The chain trades (:mod:`vcsat.solver.search.chain`) per fair-share tier, most important
    first, and per queue it can still raise; after one is kept, those of the decision it leaves.
    Looking for them is not a trade (its time is left out of the trades' pace, ``run.look``);
    each one tried is."""
    if not _exact(problem, best):
        return best, best_rank
    tried: set[tuple[int, str, frozenset[int]]] = set()
    made: list[tuple[Assignment, Layout]] = []  # the layout of the decision it was made of

    def layout() -> Layout:
        """``best``'s layout, made when a look first needs it and read by every look on ``best``."""
        if not made or made[0][0] is not best:
            made[:] = [(best, Layout.of(problem, best, run.queued))]
        return made[0][1]

    changed = True
    while changed and not run.stopped:
        changed = False
        for tier in fair_ranks(problem):
            if not run.looks():
                return best, best_rank
            with run.look():
                raisable = run.raisable(best, tier)
            spare: set[int] | None = None  # the same for every queue of the tier while ``best`` stands
            for queue, *_ in raisable:
                if not run.looks():
                    return best, best_rank
                with run.look():
                    if spare is None:
                        spare = _not_needed(problem, best, max(g.rank for g in problem.gangs) + 1, upto=tier)
                    trade = next(chains(problem, best, tier, queue, spare, layout=layout), None)
                    passed: list[int] = []  # the second look's gangs left out for the tier as read
                    if trade is None:
                        # None without them: the flatter queues' work at the tier may go too.
                        trade = next(
                            chains(problem, best, tier, queue, spare, flatter=True, layout=layout, passed=passed), None
                        )
                if trade is None:
                    # Nor with them: a queue at its share may give up its work where its own
                    # waiting gangs take its place (the dearest look: asked of the clock apart).
                    if not run.looks():
                        return best, best_rank
                    with run.look():
                        trade = next(chains(problem, best, tier, queue, spare, swap=True, layout=layout), None)
                if trade is None and passed:
                    # Nor so: the flatter look's gangs carried on past a step that does not raise
                    # the tier, their victims' gangs that fit back counted (a look of its own; where
                    # the second look left no gang out for the tier, it would find what that did).
                    if not run.looks():
                        return best, best_rank
                    with run.look():
                        trade = next(
                            chains(problem, best, tier, queue, spare, flatter=True, patient=True, layout=layout), None
                        )
                if trade is None or (tier, queue, trade.first) in tried:
                    continue
                tried.add((tier, queue, trade.first))
                kept, best_rank = _kept(
                    problem, rank, best, best_rank, trade.drop, set(trade.first), run, then=trade.movers
                )
                if kept is not best:
                    best, tried, changed = kept, set(), True
                    break
            if changed:
                break
    return best, best_rank


def _move_looks(problem: Problem, best: Assignment, tried: set[tuple[object, ...]], run: _Run) -> Iterator[Relocation]:
    """The move trades to try on ``best``, in order (none where no gang with pods waits)."""
    waiting = [
        g.rank
        for g in problem.candidates
        if g.index not in best.placed and any(problem.classes[c].pods for c in g.classes)
    ]
    if not waiting:
        return iter(())
    # Victims ranked below the gangs moved for only, and only where no fair-share level needs them.
    raisable = {queue for tier in fair_ranks(problem) for queue, *_ in run.raisable(best, tier)}
    spare = _not_needed(problem, best, max(waiting))
    return moves(problem, best, spare, tried, raisable)


def _relocation_trades(
    problem: Problem, rank: Rank, best: Assignment, best_rank: tuple[int, ...], tiers: list[int], run: _Run
) -> Ranked:
    """The relocation trades (:mod:`vcsat.solver.search.relocation`) for the waiting gangs of
    ``tiers``; after one is kept, those of the decision it leaves. Looking for them on a decision
    (reading the room around each waiting gang's nodes, about as long as a trade at 1,000 nodes)
    is asked of ``run`` as a trade of its own, so the deadline and a replay's count cover it."""
    if not tiers:
        return best, best_rank
    tried: set[tuple[object, ...]] = set()
    changed = True
    while changed and run():
        changed = False
        spare = _not_needed(problem, best, max(g.rank for g in problem.gangs) + 1)
        for trade in relocations(problem, best, tiers, spare, tried):
            if run.stopped:
                break
            kept, best_rank = _kept(problem, rank, best, best_rank, trade.drop, {trade.gang}, run, then=trade.movers)
            if kept is not best:
                best, tried, changed = kept, set(), True
                break
            if run.stopped:
                break  # before the next relocation is looked for
    return best, best_rank


def _kept(
    problem: Problem,
    rank: Rank,
    best: Assignment,
    best_rank: tuple[int, ...],
    drop: list[int],
    first: set[int],
    run: _Run,
    then: Collection[int] = (),
    trials: list[Assignment] | None = None,
) -> Ranked:
    """One trade: ``best`` without ``drop``, the gangs ``first`` placed into the room that leaves,
    then those of ``then`` (gangs moved, when the trade names them: their room comes before any
    other's), then the rest as the greedy would; kept (with its rank) only where it ranks strictly
    higher, then with the gangs it lost put back where that ranks higher still (:func:`_repaired`).
    Not made (``best`` handed back) where ``run`` refuses it. ``trials``, when given, receives the
    decision the trade made, kept or not (what it placed tells the caller which trade to try next)."""
    if not run():
        return best, best_rank
    trial = _trial(problem, best, drop, first, run, then)
    if trial is None:
        return best, best_rank
    if trials is not None:
        trials.append(trial)
    trial_rank = rank(problem, trial)
    if trial_rank <= best_rank:
        return best, best_rank
    return _repaired(problem, rank, best, trial, trial_rank, run)


def _repaired(
    problem: Problem, rank: Rank, best: Assignment, trial: Assignment, trial_rank: tuple[int, ...], run: _Run
) -> Ranked:
    """A kept trade's ``trial`` with the placed gangs it lost (those ``best`` placed, of the
    highest rank among them) put back first into the room the gangs ranked below them that no
    fair-share level needs leave, those then as the greedy would: where every one of them is back
    and that ranks higher, as part of the same trade (no count of its own). A put-back of some of
    them, or one that ranks higher by placing other waiting gangs instead, is not taken: it ranks
    higher at the trade, but it changes the decision the later trades start from, and on the
    generated clusters it ranked lower a few trades later (benchmarks/RESULTS.md, session 43)."""
    lost = best.placed - trial.placed
    if not lost:
        return trial, trial_rank
    top = max(problem.gangs[g].rank for g in lost)
    spare = _not_needed(problem, trial, top)
    if not spare:
        return trial, trial_rank
    back = {g for g in lost if problem.gangs[g].rank == top}
    again = _trial(problem, trial, sorted(spare), back, run)
    if again is None or not back <= again.placed:
        return trial, trial_rank
    again_rank = rank(problem, again)
    return (again, again_rank) if again_rank > trial_rank else (trial, trial_rank)


def _trial(
    problem: Problem, best: Assignment, drop: list[int], first: Collection[int], run: _Run, then: Collection[int] = ()
) -> Assignment | None:
    """``best`` without ``drop``, ``first`` placed into the room that leaves, then ``then``, then
    the rest as the greedy would; None where the slots do not account for the drop."""
    rest = without(problem, best, drop)
    if rest is None:
        return None
    kept = run.rankings
    # The top-ups fill on in one room where that is the same (:func:`top_up_in`): a room less to
    # make a top-up, and the rankings the first read need not be carried into the next.
    # The queues' room and held work the first room starts from: the decision's, counted once
    # while it stands, less the dropped gangs' classes (``without`` takes them out of the count).
    count = best.count
    less = (run.charges(best), {c: count[c] for g in drop for c in problem.gangs[g].classes if c in count})
    trial, filled = top_up_in(problem, rest, only=first, kept=kept, less=less)
    if then:
        trial, filled = top_up_in(problem, trial, only=then, kept=kept, filled=filled, less=_still(less, trial, rest))
    trial, filled = top_up_in(problem, trial, kept=kept, filled=filled, less=_still(less, trial, rest))
    if filled is not None:
        filled.room.keep_rankings()
    return trial


def _still(less: Less, trial: Assignment, rest: Assignment) -> Less | None:
    """``less`` while it is still true of ``trial`` (a top-up that placed nothing hands back its
    input: the decision without the drop), else None (its pods are counted afresh)."""
    return less if trial is rest else None


def _not_needed(problem: Problem, assignment: Assignment, above: int, upto: int | None = None) -> set[int]:
    """Placed gangs ranked below ``above``, lowest rank first, that no fair-share level needs (no
    level as important as ``upto`` or more, when given): taken out together, each queue still holds
    at least its deserved share on the level's resource at every such level they count in (where
    the share is capped, so the level's value stays)."""
    slack: dict[tuple[str, int], tuple[int, set[int], int]] = {}
    of_queue: dict[str, list[tuple[str, int]]] = {}
    for level in fair_ranks(problem):
        if upto is not None and level > upto:
            break
        for queue, name, deserved, held, asked in fair_terms(problem, level):
            r = problem.resource_index(name)
            added = placed_amount(problem, assignment, asked, r)
            slack[(queue, level)] = (r, set(asked), held + added - deserved)
            of_queue.setdefault(queue, []).append((queue, level))
    out: set[int] = set()
    below = sorted(
        (problem.gangs[g] for g in assignment.placed if problem.gangs[g].rank < above), key=lambda g: (g.rank, g.index)
    )
    for gang in below:
        taken: dict[tuple[str, int], int] = {}
        for key in of_queue.get(gang.queue, ()):
            r, counted, left = slack[key]
            amount = sum(
                assignment.count.get(c, 0) * problem.shapes[problem.classes[c].shape].request[r]
                for c in gang.classes
                if c in counted
            )
            if amount > 0:
                if amount > left:
                    break
                taken[key] = amount
        else:
            for key, amount in taken.items():
                r, counted, left = slack[key]
                slack[key] = (r, counted, left - amount)
            out.add(gang.index)
    return out


def _largest_waiting(
    problem: Problem, assignment: Assignment, above: int, gpu: int, *, queue: str | None = None, with_pods: bool = False
) -> int:
    """The most GPUs one pod asks among the waiting gangs ranked ``above`` (of ``queue`` only, when
    given; counting only classes with pods, when ``with_pods``); 0 when none asks any."""
    return max(
        (
            problem.shapes[problem.classes[c].shape].request[gpu]
            for gang in problem.candidates
            if gang.rank == above and gang.index not in assignment.placed and queue in (None, gang.queue)
            for c in gang.classes
            if problem.classes[c].pods or not with_pods
        ),
        default=0,
    )


def _below_on_whole(problem: Problem, assignment: Assignment, above: int) -> set[int]:
    """Placed gangs ranked below ``above``, of any queue, with pods of a shape ``assignment`` puts,
    smaller than the largest pod of the waiting gangs ranked ``above``, on a node that had room
    for that pod before the cycle: taken out, the top-up puts them back into the holes, which can
    free whole nodes for the waiting gangs (read off ``shape_slots``, so it holds for a searched
    decision, whose slots name no gang, too)."""
    if res.GPU not in problem.resources:
        return set()
    gpu = problem.resource_index(res.GPU)
    largest = _largest_waiting(problem, assignment, above, gpu, with_pods=True)
    if largest <= 0:
        return set()
    return _on_whole(problem, assignment, largest, above)


def _on_whole(problem: Problem, assignment: Assignment, largest: int, below: int | None) -> set[int]:
    """Placed gangs (ranked below ``below``, when given) with pods of a shape ``assignment`` puts,
    asking fewer GPUs than ``largest``, on a node that had room for ``largest`` GPUs before the
    cycle (read off ``shape_slots``, so it holds for a searched decision too)."""
    gpu = problem.resource_index(res.GPU)
    shapes = {
        s
        for (s, node), k in assignment.shape_slots.items()
        if k > 0 and problem.free[node][gpu] >= largest and problem.shapes[s].request[gpu] < largest
    }
    return {
        g
        for g in assignment.placed
        if (below is None or problem.gangs[g].rank < below)
        and any(assignment.count.get(c, 0) and problem.classes[c].shape in shapes for c in problem.gangs[g].classes)
    }


def _small_on_whole(problem: Problem, assignment: Assignment, queue: str, above: int) -> set[int]:
    """The placed gangs, of any queue, with a pod on a node that had room before the cycle for the
    largest pod of ``queue``'s waiting gangs ranked ``above``, smaller than that pod: taken out with
    the queue's own lower-priority gangs, the top-up puts them back where they fit best (into the
    room those leave), which can free whole nodes for the waiting gangs."""
    if res.GPU not in problem.resources:
        return set()
    gpu = problem.resource_index(res.GPU)
    largest = _largest_waiting(problem, assignment, above, gpu, queue=queue)
    if largest <= 0:
        return set()
    return {
        g
        for (g, s, node), k in assignment.gang_slots.items()
        if k > 0 and problem.free[node][gpu] >= largest and problem.shapes[s].request[gpu] < largest
    }


def without(problem: Problem, assignment: Assignment, gangs: list[int]) -> Assignment | None:
    """``assignment`` (resolved: ``shape_slots``) without ``gangs``. A gang's pods the decode hands
    out by ``gang_slots`` leave those slots; the rest leave slots of their shape that no other
    gang's ``gang_slots`` pin, on the nodes with the most GPUs (then room of any kind) left first.
    None when a pod has no such slot (the slots do not account for the counts)."""
    dropped = set(gangs)
    shape_slots = dict(assignment.shape_slots)
    gang_slots = {key: k for key, k in assignment.gang_slots.items() if key[0] not in dropped}
    # One walk over the dropped gangs' slots only (a decision holds thousands, a trade drops a few
    # hundred): what they leave of each shape's slots, and per (gang, shape) how many they held.
    by_gang: dict[tuple[int, int], int] = {}
    for (g, s, node), k in assignment.gang_slots.items():
        if g in dropped:
            shape_slots[(s, node)] -= k
            by_gang[(g, s)] = by_gang.get((g, s), 0) + k
    gpu = problem.resource_index(res.GPU) if res.GPU in problem.resources else None
    # What only a dropped pod that no gang slot holds reads, made when first needed (a decision
    # the greedy or a trade made pins every pod to its gang's slots, and needs none of them): per
    # (shape, node) the pods the other gangs' slots pin there; the room left per node, which
    # orders the unpinned slots a pod leaves; and per shape, the nodes with slots of it (a dropped
    # pod's candidates are read from its shape's nodes, not from every slot of the decision: tens
    # of thousands at 10,000 nodes, once per dropped class). The slots' keys are all made above
    # and only their counts shrink below, so each list is the same whenever it is made.
    pinned: dict[tuple[int, int], int] | None = None
    left: list[list[int]] | None = None
    of_shape: dict[int, list[int]] = {}
    count = dict(assignment.count)
    for g in sorted(dropped):
        for c in problem.gangs[g].classes:
            k = count.pop(c, 0)
            s = problem.classes[c].shape
            taken = min(k, by_gang.get((g, s), 0))
            by_gang[(g, s)] = by_gang.get((g, s), 0) - taken
            k -= taken
            if k <= 0:
                continue
            if pinned is None:
                pinned = {}
                for (_g, s_, node_), k_ in gang_slots.items():
                    pinned[(s_, node_)] = pinned.get((s_, node_), 0) + k_
                for s_, node_ in shape_slots:
                    of_shape.setdefault(s_, []).append(node_)
            nodes = [node for node in of_shape.get(s, ()) if shape_slots[(s, node)] > pinned.get((s, node), 0)]
            if left is None:
                left = problem.room_left(shape_slots)  # what the frees below added, already in
            room = left
            nodes.sort(key=lambda node: (-(room[node][gpu] if gpu is not None else 0), -sum(room[node]), node))
            for node in nodes:
                if k <= 0:
                    break
                free = min(k, shape_slots[(s, node)] - pinned.get((s, node), 0))
                shape_slots[(s, node)] -= free
                for r, amount in enumerate(problem.shapes[s].request):
                    room[node][r] += free * amount
                k -= free
            if k > 0:
                return None  # slots and counts disagree: no trade rather than a guess
    return Assignment(
        placed=set(assignment.placed) - dropped,
        count=count,
        shape_slots={key: k for key, k in shape_slots.items() if k > 0},
        gang_slots=gang_slots,
        domain_counts={key: k for key, k in assignment.domain_counts.items() if key[0] not in dropped},
    )
