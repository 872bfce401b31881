"""The step trade: a few GPUs moved between the queues of a fair-share tier onto the steps of their shares.

A tier's value sums each queue's concave utility of its share counted in whole thousandths of its
deserved GPUs, rounded down (the model's ``fill`` and the measure of a decision alike,
:mod:`vcsat.solver.objectives.fairness`). So a queue holds, beyond its last whole thousandth, GPUs
that count nothing at the tier (up to a thousandth of its deserved share: two or three GPUs on the
generated clusters), and a queue at its share holds any GPU beyond its deserved share for nothing;
while another queue may be one or two GPUs short of its next thousandth. On the contended clusters
that is what keeps a tier one to three points below the best a long search finds once the other
trades are done (benchmarks/RESULTS.md, session 36): the search gives the short queue those GPUs,
its small pods on wide pools in the room of another queue's small pods, and no other trade reads
it: the slope trades compare the queues' slopes per GPU (on one piece of the utility, nearly equal
between queues) and take all of a flatter queue's work; the chain trades read narrow pools.

So, per fair-share tier, in whole numbers as the tier counts them: for each queue Q below its share
there with gangs waiting that the tier counts, the fewest GPUs of one such gang that lift Q's share
by a thousandth or more (the **gain**, what Q's utility rises), and for each other queue D of the
tier, D's placed gangs counted there, smallest first, lowest rank first, whose pods sit only on
nodes Q's waiting pods of that size may use, taken out until they free as many GPUs as Q's gang
asks, while what D's utility falls there (the **loss**: nothing while the GPUs taken are ones its
share does not count) stays below the gain and D's utility at every more important tier does not
fall. The trade takes out those gangs of D and places Q's waiting gangs of that size first, then
the rest as the greedy would (:func:`vcsat.solver.search.exchange`); trades with the most
expected (gain less loss) first. The exchange keeps it only where the objective's first levels
rank it strictly higher; the arithmetic here only chooses which to try.

The exchange asks for them twice: right after the chain trades, only those whose giving queue loses
nothing (``spare_only``: GPUs its share does not count), which change no queue's utility but the
raised one's and so leave the room the slope trades then raise a tier with; and after the first
slope trades, all of them. Tried before the slope trades, a trade whose giving queue loses a step
can leave the slope trade that follows a point lower than it reaches without it (a path effect:
benchmarks/RESULTS.md, session 36).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from vcsat.model import resources as res
from vcsat.solver.assignment import Assignment
from vcsat.solver.objectives.fairness import SHARE_SCALE, fair_terms, placed_amount, share_utility
from vcsat.solver.problem import Gang, Problem
from vcsat.solver.search.chain import waiting_counted

MAX_STEPS = 4
"""Per queue and tier, the gang sizes looked at: the smallest at which the queue's utility rises,
and each next larger one at which it rises more, up to this many (a share's thousandth is two or
three GPUs on the generated clusters: a few steps cover what a few small gangs can give)."""


@dataclass(frozen=True)
class StepTrade:
    """One trade: the queue raised, the queue giving up GPUs, the tier's expected rise (gain less
    loss), the gangs taken out, and the waiting gangs placed first."""

    queue: str
    donor: str
    rise: int
    drop: frozenset[int]
    first: frozenset[int]


@dataclass
class _Term:
    """A queue's GPU term at one tier: its deserved GPUs, what it holds with the decision, and the
    classes the tier counts of it."""

    deserved: int
    now: int
    counted: set[int]

    def utility(self, delta: int = 0) -> int:
        """The term's utility with ``delta`` more GPUs (fewer where negative)."""
        return share_utility(min(SHARE_SCALE, SHARE_SCALE * max(0, self.now + delta) // self.deserved))


def _terms(problem: Problem, assignment: Assignment, tier: int, gpu: int) -> dict[str, _Term]:
    """Per queue measured on GPUs at ``tier``, its term there."""
    out: dict[str, _Term] = {}
    for queue, name, deserved, held, asked in fair_terms(problem, tier):
        if name == res.GPU and deserved > 0:
            out[queue] = _Term(deserved, held + placed_amount(problem, assignment, asked, gpu), set(asked))
    return out


def _gpus(problem: Problem, gang: Gang, counted: Collection[int], gpu: int, count: dict[int, int] | None) -> int:
    """The GPUs ``gang``'s classes counted at a tier ask: placed (``count``, the decision's), or
    every pod's when waiting (None)."""
    total = 0
    for c in gang.classes:
        if c in counted:
            pod_class = problem.classes[c]
            k = count.get(c, 0) if count is not None else len(pod_class.pods)
            total += k * problem.shapes[pod_class.shape].request[gpu]
    return total


def step_trades(
    problem: Problem,
    assignment: Assignment,
    tier: int,
    more_important: list[int],
    of_queue: dict[str, list[Gang]] | None = None,
    spare_only: bool = False,
) -> list[StepTrade]:
    """The step trades (module docstring) at fair-share ``tier``, the most expected rise first;
    ``more_important``: the fair-share tiers ranked above it, whose every queue's utility a trade
    must leave as it is; ``of_queue``: :func:`vcsat.solver.search.chain.queued` of the problem, when
    kept; ``spare_only``: only GPUs the giving queue's share does not count (its loss nothing)."""
    if res.GPU not in problem.resources:
        return []
    gpu = problem.resource_index(res.GPU)
    terms = _terms(problem, assignment, tier, gpu)
    if len(terms) < 2:
        return []
    above = [_terms(problem, assignment, t, gpu) for t in more_important]
    count = assignment.count
    # The nodes each placed gang of the tier's queues holds pods on, read once.
    nodes_of: dict[int, set[int]] = {}
    for (g, _s, node), k in assignment.gang_slots.items():
        if k > 0 and problem.gangs[g].queue in terms:
            nodes_of.setdefault(g, set()).add(node)
    # Per queue, its placed gangs the tier counts with their GPUs there, smallest, lowest rank first.
    placed: dict[str, list[tuple[int, int]]] = {}
    for g in nodes_of:
        gang = problem.gangs[g]
        size = _gpus(problem, gang, terms[gang.queue].counted, gpu, count)
        if size > 0:
            placed.setdefault(gang.queue, []).append((size, g))
    for gangs in placed.values():
        gangs.sort(key=lambda sg: (sg[0], problem.gangs[sg[1]].rank, sg[1]))
    trades: list[StepTrade] = []
    for queue, term in sorted(terms.items()):
        if term.utility() >= share_utility(SHARE_SCALE):
            continue
        # The queue's waiting gangs counted here, by the GPUs they ask, where those raise its utility.
        sized: dict[int, list[Gang]] = {}
        for gang in waiting_counted(problem, assignment, queue, term.counted, of_queue):
            size = _gpus(problem, gang, term.counted, gpu, None)
            if size > 0 and term.utility(size) > term.utility():
                sized.setdefault(size, []).append(gang)
        # The sizes at which the gain grows (a larger gang that gains no more is no better).
        steps: list[tuple[int, int]] = []
        for size in sorted(sized):
            gain = term.utility(size) - term.utility()
            if not steps or gain > steps[-1][1]:
                steps.append((size, gain))
        eligible = {size: _eligible(problem, sized[size], gpu) for size, _gain in steps[:MAX_STEPS]}
        for donor, given in sorted(terms.items()):
            if donor == queue:
                continue
            best: StepTrade | None = None
            for size, gain in steps[:MAX_STEPS]:
                trade = _donation(
                    problem,
                    assignment,
                    donor,
                    given,
                    placed.get(donor, []),
                    nodes_of,
                    eligible[size],
                    size,
                    gain,
                    above,
                    spare_only,
                )
                if trade is not None and (best is None or trade[1] > best.rise):
                    first = frozenset(g.index for g in sized[size])
                    best = StepTrade(queue, donor, trade[1], frozenset(trade[0]), first)
            if best is not None:
                trades.append(best)
    trades.sort(key=lambda t: (-t.rise, t.queue, t.donor))
    return trades


def _eligible(problem: Problem, gangs: list[Gang], gpu: int) -> set[int]:
    """The nodes the GPU pods of ``gangs`` may use."""
    out: set[int] = set()
    for gang in gangs:
        for c in gang.classes:
            shape = problem.shapes[problem.classes[c].shape]
            if problem.classes[c].pods and shape.request[gpu] > 0:
                out.update(shape.nodes)
    return out


def _donation(
    problem: Problem,
    assignment: Assignment,
    donor: str,
    given: _Term,
    gangs: list[tuple[int, int]],
    nodes_of: dict[int, set[int]],
    eligible: set[int],
    size: int,
    gain: int,
    above: list[dict[str, _Term]],
    spare_only: bool,
) -> tuple[list[int], int] | None:
    """``donor``'s gangs (of ``gangs``, in order) on ``eligible`` nodes taken out until they free
    ``size`` GPUs, each only while the donor's loss at the tier stays below ``gain`` (nothing, with
    ``spare_only``) and its utility at every tier of ``above`` stays; with the tier's expected rise.
    None where they do not reach ``size``."""
    gpu = problem.resource_index(res.GPU)
    drop: list[int] = []
    freed = 0
    lost_above = [0] * len(above)
    for gpus, g in gangs:
        if not nodes_of[g] <= eligible:
            continue
        loss = given.utility() - given.utility(-(freed + gpus))
        if loss >= gain or (spare_only and loss > 0):
            break  # the gangs come smallest first: a larger one loses as much or more
        gang = problem.gangs[g]
        more = []
        for k, terms in enumerate(above):
            term = terms.get(donor)
            counted = _gpus(problem, gang, term.counted, gpu, assignment.count) if term is not None else 0
            more.append(counted)
            if term is not None and counted and term.utility(-(lost_above[k] + counted)) < term.utility():
                break
        else:
            drop.append(g)
            freed += gpus
            lost_above = [a + b for a, b in zip(lost_above, more, strict=True)]
            if freed >= size:
                return drop, gain - loss
    return None
