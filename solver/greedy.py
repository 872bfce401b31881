"""The greedy decision: CP-SAT's warm start and the fallback when the search finds nothing better.

It places gangs one at a time in the order Volcano's allocate action would (priority, then age),
each pod on its most preferred node (:mod:`vcsat.solver.rules.preferences`) if it has preferences, else
the best-fitting one (fewest free GPUs that still fit, so whole nodes stay free), and
commits a gang only when all of it fits. It is fast and always feasible, which is what a hint and a
fallback need; it is not optimal, which is why CP-SAT runs after it.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from operator import methodcaller

import numpy as np
from numpy.typing import NDArray

from vcsat.model import resources as res
from vcsat.model.gpus import FULL_GPU_MILLI
from vcsat.solver.assignment import Assignment
from vcsat.solver.nearest_trials import nearest_first
from vcsat.solver.node_fits import NodeFits
from vcsat.solver.node_rows import NodeRows
from vcsat.solver.objectives.fairness import (
    DRF_PIECES,
    SHARE_SCALE,
    fair_ranks,
    fair_terms,
    tier_threshold,
    utility_pieces,
)
from vcsat.solver.pricing import scarcity
from vcsat.solver.pricing.fragmentation import greedy_chooser
from vcsat.solver.problem import Domains, Gang, PodClass, Problem, Shape
from vcsat.solver.room_classes import NodeClasses
from vcsat.solver.room_classes import fullest_with as fullest_in_classes
from vcsat.solver.room_taken import Requests, take_all
from vcsat.solver.rules.attach import AttachTracker
from vcsat.solver.rules.interpod_tracker import Tracker
from vcsat.solver.rules.spread import SpreadState
from vcsat.solver.shares.level_targets import LevelClaim, level_targets
from vcsat.solver.shares.ratio import Ratio

Allow = Callable[[int], bool]
"""Whether one more pod may go to a node under the rules between pods."""
Eligible = dict[int, int] | NodeFits
"""A shape's nodes: its ``fits`` (what the greedy passes: no dict is made) or its ``upper``."""


def gang_order(gang: Gang) -> tuple[int, float, str]:
    """Volcano's job order without fairness: higher priority first, then older, then by name."""
    return (-gang.rank, gang.created, gang.key)


SMALL_SCAN = 24
"""Node lists up to this long are scanned in Python; longer ones through the numpy mirrors."""
FEW_ELIGIBLE = 4
"""A pod eligible on fewer than one node in this many is placed by a lookup among its nodes."""


class Room:
    """Free room per node, indexed so that a query costs array operations, not a Python loop over
    nodes: nodes bucketed by free GPUs (best fit without a scan), numpy mirrors of the free room
    (best fit inside a topology domain, the fullest node with room for a whole gang), and free GPUs
    per topology domain kept up to date as pods come and go. Every query answers what a scan over
    the nodes in index order would (tests/greedy_reference.py is that scan).

    GPU shares are placed exactly: onto the shared GPU they fit best, else onto a fresh GPU,
    which whole-GPU pods then no longer get (contract §1)."""

    def __init__(
        self,
        problem: Problem,
        taken: Mapping[tuple[int, int], int] | None = None,
        kept: KeptRankings | None = None,
        memos: FillMemos | None = None,
    ) -> None:
        """The free room of ``problem``, less ``taken`` when given: pods per (shape, node), none
        asking a GPU share, as :meth:`take` would take them one by one in that order (the room and
        each free-GPU bucket's order come out the same), at once. ``kept``: the scarce-pool rankings
        an earlier room of the same problem left (:class:`KeptRankings`), carried into this one.
        ``memos``: what earlier rooms of the same problem learnt of it alone (:class:`FillMemos`),
        without ``kept``."""
        if memos is not None and (kept is not None or memos.problem is not problem):
            raise ValueError("fill memos are for a room of their own problem, without kept rankings")
        self.gpu = problem.resources.index(res.GPU) if res.GPU in problem.resources else None
        self.milli = problem.resources.index(res.GPU_MILLI) if res.GPU_MILLI in problem.resources else None
        count = len(problem.free)
        moved: dict[int, None] = {}
        self.free: list[list[int]]
        self.whole: list[int]
        if taken:
            # The decision's pods at once, in arrays (:mod:`vcsat.solver.room_taken`): the same
            # room, and the same order of bucket changes, as taking them slot by slot.
            start = (kept if kept is not None else memos) or ProblemMemos(problem)
            snapshot, whole_gpus, requests = start.snapshot_room()
            free_array = snapshot.copy()
            whole_array = whole_gpus.copy()
            moved = dict.fromkeys(take_all(free_array, whole_array, taken, requests, self.gpu))
            self.free = free_array.tolist()
            self.whole = whole_array.tolist()
        else:
            self.free = [list(row) for row in problem.free]
            self.whole = [len(ids) for ids in problem.free_gpu_ids]
            free_array = np.array(self.free, dtype=np.int64).reshape(count, len(problem.resources))
            whole_array = np.array(self.whole, dtype=np.int64).reshape(count)
        self.shared = [dict(used) for used in problem.shared_milli]
        self.opened: list[list[tuple[int, bool]]] = [[] for _ in problem.free]
        """Per node, the shares placed: (GPU, whether it was opened for them), newest last."""
        # Each node's free-GPU bucket (:meth:`_level`), read once for the indexes below.
        gpu = self.gpu
        level = [0] * len(self.free) if gpu is None else [max(0, row[gpu]) for row in self.free]
        self.levels: dict[int, dict[int, None]] = {}
        for node, at in enumerate(level):
            if node not in moved:
                self.levels.setdefault(at, {})[node] = None
        for node in moved:  # each joined its bucket when it last changed bucket
            self.levels.setdefault(level[node], {})[node] = None
        self.negative = np.any(free_array < 0, axis=1)
        """Per node, whether some resource is overcommitted (then nothing fits there)."""
        self.count = count
        self.whole_array = whole_array
        self.level_array = np.array(level, dtype=np.int64).reshape(count)
        self.level_rank = self.level_array * count + np.arange(count, dtype=np.int64)
        """Per node, (free GPUs, node) as one number: an unpriced pod's rank (:class:`_Ranking`), kept
        with :attr:`level_array` so that a ranking reads it in one gather."""
        self.level_classes = NodeClasses(list(zip(level, self.whole, strict=True)))
        """Nodes in classes of equal (free GPUs, free whole GPU devices), kept up to date
        (:meth:`fullest_with` reads the classes, not the nodes)."""
        # Most nodes share no GPU: their values (-1, 0) without a call each.
        self.share_room = np.array([_share_room(used) if used else -1 for used in self.shared], dtype=np.int64)
        self.share_room = self.share_room.reshape(count)
        self.share_free = np.array([_share_free(used) if used else 0 for used in self.shared], dtype=np.int64)
        self.share_free = self.share_free.reshape(count)
        """Per node, the thousandths its shared GPUs have left, summed (the scarce-pool price reads it)."""
        # What earlier rooms of the problem learnt of it alone (:class:`ProblemMemos`), either kind.
        learnt: ProblemMemos | None = kept if kept is not None else memos
        needs = learnt.needs if learnt is not None and learnt.problem is problem else None
        self.rows = NodeRows(free_array, self.whole_array, self.share_free, self.share_room, self.level_rank, needs)
        """The mirrors above again, one row per node: what a test of a few scattered nodes gathers."""
        self.free_cols = self.rows.rows[:, : len(problem.resources)].T
        """The free room again, one row per resource (a query reads only the resources it asks): a
        view of :attr:`rows`, so kept equal to :attr:`free` by the rows' one write a change. Few
        queries read it (whole-cluster fits, the holder's pod counts), against a write a change."""
        self.arrival = np.arange(count, dtype=np.int64)
        """Per node, when it joined its bucket of :attr:`levels` (a bucket's order, oldest first)."""
        for position, node in enumerate(moved):
            self.arrival[node] = count + position
        self._arrivals = count + len(moved)
        """Per node, the most thousandths any one of its shared GPUs has left (-1: none is shared)."""
        self.domains = problem.domains
        # The topology tables depend on the problem alone: made once and shared by the rooms that
        # share their memos (read only), else made for this room.
        learnt_early: ProblemMemos | None = kept if kept is not None else memos
        tables = learnt_early.domain_tables() if learnt_early is not None else DomainTables.of(problem)
        self.tier_names: dict[int, list[str]] = tables.tier_names
        """Per tier, its named topology domains in name order."""
        self.tier_nodes: dict[int, list[list[int]]] = tables.tier_nodes
        self.domain_of: list[list[tuple[int, int]]] = tables.domain_of
        """Per node, (tier, position in :attr:`tier_names`) of each domain holding it."""
        self.tier_position: dict[int, dict[str, int]] = tables.tier_position
        self.tier_slot: dict[int, NDArray[np.int64]] = tables.tier_slot
        """Per tier, per node the position of its named domain (the number of domains when none holds it)."""
        self.domain_at: dict[int, tuple[int, int]] = tables.domain_at
        """Per node list of :attr:`tier_nodes` (by ``id``), its (tier, position)."""
        self.tier_free: dict[int, NDArray[np.int64]] = {}
        """Per tier, the free whole GPUs of each domain (as :attr:`tier_names`), kept up to date."""
        if self.tier_nodes:
            # Each node's free whole GPUs (at least 0) summed per domain in one pass a tier: a
            # node is in at most one domain of a tier, and nodes in none go to the last slot.
            counted = np.maximum(whole_array, 0)
            for tier, lists in self.tier_nodes.items():
                per_domain = np.zeros(len(lists) + 1, dtype=np.int64)
                np.add.at(per_domain, self.tier_slot[tier], counted)
                self.tier_free[tier] = per_domain[: len(lists)].copy()
        self._order_read: bool | None = None
        self.topology_gangs = frozenset(problem.topology_gangs)
        self._masks: dict[int, tuple[object, NDArray[np.bool_]]] = {}
        self._arrays: dict[int, tuple[object, NDArray[np.int64]]] = {}
        self._score_arrays: dict[int, tuple[object, NDArray[np.int64]]] = {}
        self.spread = SpreadState(problem.spread) if problem.spread else None
        """Topology spread counts of what is placed so far (None without spread constraints)."""
        self.interpod = Tracker(problem, problem.interpod) if problem.interpod is not None else None
        """Rules between pods, pod by pod (None when no class is isolated)."""
        self.attach = (
            AttachTracker(problem.attach, [shape.volumes for shape in problem.shapes])
            if problem.attach is not None
            else None
        )
        """Shared CSI volumes placed so far, per node (None when no pod shares one)."""
        self.full: set[Hashable] = set()
        """Queries (:meth:`query_key`) known to find no node where one pod fits (whatever rules
        between pods allow): room a gang keeps only shrinks, so such a query stays empty until room
        is given back outside a gang's trial (then this is forgotten)."""
        self._trial: list[Hashable] | None = None
        """While a gang is tried (:meth:`open_trial`): the empty queries made after it took some
        room, which stay known only if the gang keeps what it took."""
        self._taken_in_trial = 0
        self._trial_start = 0
        """How long :attr:`changes` was when the open trial began."""
        self._ranked_in_trial = False
        """Whether a ranking read the room after the open trial took some."""
        self.changes = np.zeros(max(16, count), dtype=np.int64)
        """The node of each change of room (a take or a give), oldest first, in its first
        :attr:`changed` entries: what a kept ranking (:meth:`cheapest_fit`) must price again is
        what changed since it read the room."""
        self.changed = 0
        self._ranked: dict[int, _Ranking] = {}
        self._choosers: tuple[Callable[[Room, Shape], int | None] | None, scarcity.Scarcity | None] | None = None
        self._priced: dict[int, bool] = {}
        self.gang_sizes: dict[int, tuple[int, int]] = {}
        """Per gang tried, (GPUs its minimum asks, pods): what its topology attempts need."""
        self._asked: dict[tuple[int, ...], tuple[int, int, tuple[int, ...]]] = {}
        """Per request taken, its whole GPUs, share thousandths and the room it takes (negated)."""
        self.class_plans: dict[int, ClassPlan] = {}
        """Per gang tried, its pod classes in trial order (:func:`_class_plan`)."""
        self.plain_keys: dict[int, tuple[Hashable, ...]] = {}
        """Per gang asked, its classes' node query keys anywhere (:func:`_plain_keys`)."""
        self.packing: dict[int, tuple[int, bool, float, str]] = {}
        """Per gang ordered, its :func:`_packing_order`."""
        self.gang_asks: dict[tuple[int, str], int] = {}
        """Per (gang, resource name) asked, what the whole gang asks of it (:func:`_asks`)."""
        self.caps_of: dict[str, list[str]] = {}
        """Per queue placed for, the capped queues of its lineage (:meth:`Problem.caps_of`)."""
        self.shape_asks: dict[int, dict[str, int]] = {}
        """Per shape, what one pod asks per resource name (the resources it asks some of), read only."""
        self.shape_queries: dict[int, NodeQuery] = {}
        """Per shape, its pods' node query without rules or a domain (:func:`_node_query`)."""
        if kept is not None and kept.problem is not problem:
            raise ValueError("rankings kept for another problem")
        if learnt is not None:
            # What a room learns of its problem alone, whatever its free room: learnt once for all.
            self.gang_sizes, self._asked, self.class_plans = learnt.gang_sizes, learnt.asked, learnt.class_plans
            self.shape_asks, self._priced, self.plain_keys = learnt.shape_asks, learnt.priced, learnt.plain_keys
            self.gang_asks, self.caps_of = learnt.gang_asks, learnt.caps_of
        if kept is not None:
            self.packing = kept.packing
        if memos is not None:
            self.shape_queries = memos.shape_queries
        self.kept = kept
        """The memos and rankings this room shares with the other rooms of its problem, if any."""
        self.keep_whole = False
        """Whether a gang of several pods skips its all-on-one-node trial where that node's GPUs
        are all free (:func:`greedy_keeping_whole`)."""
        self.learnt = learnt
        """The memos of the problem alone this room shares (``kept``'s or ``memos``), if any."""
        self._rank_base = kept.rank_base if kept is not None else int(self.level_array.max(initial=0)) + 1
        """More than any node's free GPUs (room never grows beyond the snapshot's); the problem's
        when rankings are carried between rooms (:class:`KeptRankings`), so that they rank alike."""
        if kept is not None:
            self.full.update(kept.still_full(self))

    def choosers(self, problem: Problem) -> tuple[Callable[[Room, Shape], int | None] | None, scarcity.Scarcity | None]:
        """FGD's choice of node (GPU-sharing workloads, :func:`greedy_chooser`) and the scarce
        pools (:func:`scarcity.for_problem`) of this room's problem, looked up once."""
        if self._choosers is None:
            self._choosers = (greedy_chooser(problem), scarcity.for_problem(problem))
        return self._choosers

    def priced(self, problem: Problem, scarce: scarcity.Scarcity, shape: Shape) -> bool:
        """Whether pods of ``shape`` go to the cheapest node (:meth:`scarcity.Scarcity.applies`), per shape once."""
        known = self._priced.get(shape.index)
        if known is None:
            known = scarce.applies(shape.eligibility, scarcity.shape_milli(problem, shape) > 0)
            self._priced[shape.index] = known
        return known

    def query_key(self, request: tuple[int, ...], eligible: Eligible, within: list[int] | None) -> Hashable:
        """What decides whether a query for one pod finds a node it fits: the request, the
        eligible nodes (a shape's ``fits``, kept by the problem) and the nodes looked at (every
        eligible one, one node, or a topology domain list kept by this room)."""
        where: Hashable = -1 if within is None else ("node", within[0]) if len(within) == 1 else id(within)
        return (request, id(eligible), where)

    def note_full(self, key: Hashable) -> None:
        """Record that a query found no node where a pod fits."""
        if self._trial is None or not self._taken_in_trial:
            self.full.add(key)  # the room as a kept gang leaves it, or less
        else:
            self._trial.append(key)

    def open_trial(self) -> None:
        """A gang's pods are about to be taken, and given back unless the gang is whole."""
        self._trial = []
        self._taken_in_trial = 0
        self._trial_start = self.changed
        self._ranked_in_trial = False

    def close_trial(self, kept: bool) -> None:
        """The gang's trial is over (given back already unless ``kept``). Given back, each node's
        room is as before the trial: unless a ranking read it meanwhile, its changes are forgotten."""
        if kept and self._trial:
            self.full.update(self._trial)
        if not kept and not self._ranked_in_trial:
            self.changed = self._trial_start
        self._trial = None

    def _level(self, row: list[int]) -> int:
        return max(0, row[self.gpu]) if self.gpu is not None else 0

    def parts(self, request: tuple[int, ...]) -> tuple[int, int]:
        """(whole GPUs, share thousandths) of a request."""
        whole = request[self.gpu] if self.gpu is not None else 0
        share = request[self.milli] - FULL_GPU_MILLI * whole if self.milli is not None else 0
        return whole, share

    def _shift(self, node: int, change: list[int]) -> None:
        if self.changed == self.changes.size:
            self.changes = np.concatenate([self.changes, np.zeros_like(self.changes)])
        self.changes[self.changed] = node
        self.changed += 1
        row = self.free[node]
        gpu = self.gpu
        before = max(0, row[gpu]) if gpu is not None else 0  # self._level, inline (a call a change)
        for i, amount in enumerate(change):
            if amount:
                row[i] += amount
        self.negative[node] = min(row, default=0) < 0
        after = max(0, row[gpu]) if gpu is not None else 0
        if after != before:
            del self.levels[before][node]
            self.levels.setdefault(after, {})[node] = None
            self.level_array[node] = after
            self.level_rank[node] = after * self.count + node
            self.arrival[node] = self._arrivals
            self._arrivals += 1
        whole = self.whole[node]
        # The node's whole row at once (its free GPU devices and shares too: every change of them,
        # by a take or a give, ends here), one write rather than one per part.
        self.rows.set_row(
            node, row, whole, int(self.share_free[node]), int(self.share_room[node]), after * self.count + node
        )
        self.level_classes.move(node, (after, whole))

    def _add_whole(self, node: int, delta: int) -> None:
        if not delta:  # a pod asking no whole GPU: nothing here changes (shares write their own)
            return
        before = self.whole[node]
        after = before + delta
        self.whole[node] = after
        self.whole_array[node] = after  # and the rows', when the change ends (:meth:`_shift`)
        counted = max(0, after) - max(0, before)
        if counted:
            for tier, position in self.domain_of[node]:
                self.tier_free[tier][position] += counted

    def take(self, node: int, request: tuple[int, ...]) -> None:
        self._taken_in_trial += 1
        asked = self._asked.get(request)
        if asked is None:
            asked = self._asked[request] = (*self.parts(request), tuple(-amount for amount in request))
        whole, share, taken = asked
        change = list(taken)
        self._add_whole(node, -whole)
        if share > 0:
            fits = [
                (FULL_GPU_MILLI - used, gpu)
                for gpu, used in self.shared[node].items()
                if used + share <= FULL_GPU_MILLI
            ]
            if fits:
                gpu = min(fits)[1]
                self.opened[node].append((gpu, False))
            else:
                gpu = max([*self.shared[node], -1]) + 1 + len(self.opened[node])  # a fresh one
                self._add_whole(node, -1)
                if self.gpu is not None:
                    change[self.gpu] -= 1
                self.opened[node].append((gpu, True))
            self.shared[node][gpu] = self.shared[node].get(gpu, 0) + share
            self._shares_changed(node)
        self._shift(node, change)

    def give(self, node: int, request: tuple[int, ...]) -> None:
        """Undo the newest ``take`` of this request on this node."""
        if self._trial is None:
            self.full.clear()  # room grows beyond what a kept gang left: what was full may not be
        whole, share = self.parts(request)
        change = list(request)
        self._add_whole(node, whole)
        if share > 0:
            gpu, opened = self.opened[node].pop()
            self.shared[node][gpu] -= share
            if opened:
                del self.shared[node][gpu]
                self._add_whole(node, 1)
                if self.gpu is not None:
                    change[self.gpu] += 1
            self._shares_changed(node)
        self._shift(node, change)

    def attach_slots(self, node: int, slots: dict[int, int]) -> None:
        """Shared CSI volumes' attach slots taken on the node (negative: given back), per resource."""
        if not slots:
            return
        if self._trial is None and any(count < 0 for count in slots.values()):
            self.full.clear()  # as in give: room grows outside a trial
        change = [0] * len(self.free[node])
        for r, count in slots.items():
            change[r] = -count
        self._shift(node, change)

    def _shares_changed(self, node: int) -> None:
        # the rows' copies when the change ends (:meth:`_shift`)
        self.share_room[node] = _share_room(self.shared[node])
        self.share_free[node] = _share_free(self.shared[node])

    def fits(self, node: int, request: tuple[int, ...]) -> bool:
        # A plain loop, not all() over a generator: this test runs per node scanned per pod.
        for amount, room in zip(request, self.free[node], strict=True):
            if amount > room:
                return False
        whole, share = self.parts(request)
        if whole > self.whole[node]:
            return False
        if share <= 0:
            return True
        if any(used + share <= FULL_GPU_MILLI for used in self.shared[node].values()):
            return True
        return self.whole[node] - whole >= 1

    def fitting(self, nodes: NDArray[np.int64], request: tuple[int, ...]) -> NDArray[np.int64]:
        """Those of ``nodes`` where one pod of this request fits now (:meth:`fits`, vectorised): no
        resource overcommitted, and room for each resource it asks. ``nodes`` holds distinct nodes;
        when it holds them all, the answer is in node order."""
        whole, share = self.parts(request)
        if nodes.size == self.count:  # every node: whole rows, no gathering
            ok = ~self.negative
            for r, amount in enumerate(request):
                if amount > 0:
                    ok &= self.free_cols[r] >= amount
            ok &= self.whole_array >= whole
            if share > 0:
                ok &= (self.share_room >= share) | (self.whole_array - whole >= 1)
            fitting: NDArray[np.int64] = np.flatnonzero(ok)
            return fitting
        chosen: NDArray[np.int64] = nodes[self._fit_mask(nodes, request)]
        return chosen

    def _fit_mask(self, nodes: NDArray[np.int64], request: tuple[int, ...]) -> NDArray[np.bool_]:
        """Per node of ``nodes``, whether one pod of this request fits there now (:meth:`fitting`)."""
        whole, share = self.parts(request)
        ok, rows = self.rows.fit(nodes, self.rows.need(request, whole))
        if share > 0:
            ok &= (rows[:, self.rows.share_room_col] >= share) | (rows[:, self.rows.whole_col] - whole >= 1)
        return ok

    def free_total(self, r: int) -> int:
        """The free amount of resource ``r`` summed over the nodes where nothing is overcommitted
        (what a fair-share level's targets share out, :func:`_targets`)."""
        return int(np.maximum(self.free_cols[r][~self.negative], 0).sum())

    def free_gpus_in(self, domains: Domains, tier: int, name: str) -> int:
        """Free whole GPUs in a topology domain (kept per domain as nodes change)."""
        position = self.tier_position.get(tier, {}).get(name)
        if position is None:
            return sum(max(0, self.whole[n]) for n in domains.nodes_in(tier, name))
        return int(self.tier_free[tier][position])

    def roomy_domains(self, domains: Domains, tier: int, needed: int) -> list[list[int]]:
        """The nodes of each named domain of a tier with at least ``needed`` free GPUs, the fullest
        first (fewest free GPUs, then name)."""
        return self.domain_lists(tier, self.roomy(tier, needed))

    def roomy(self, tier: int, needed: int) -> NDArray[np.int64]:
        """:meth:`roomy_domains` as positions in :attr:`tier_names` (what a holder's answers index)."""
        free = self.tier_free.get(tier)
        if free is None:
            return np.zeros(0, dtype=np.int64)
        roomy = np.flatnonzero(free >= needed)
        ordered: NDArray[np.int64] = roomy[np.argsort(free[roomy], kind="stable")]
        return ordered

    def domain_lists(self, tier: int, positions: NDArray[np.int64]) -> list[list[int]]:
        """The node lists of a tier's domains at these positions of :attr:`tier_names`, in that order."""
        nodes = self.tier_nodes.get(tier, [])
        return [nodes[i] for i in positions.tolist()]

    def fullest_with(self, gpus: int) -> int | None:
        """A node with at least ``gpus`` free GPUs (and free whole devices) and the fewest such
        (lowest index on ties), found among the classes of :attr:`level_classes`."""
        return fullest_in_classes(self.level_classes, gpus)

    def pod_counts(self, shape: Shape, most: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The shape's eligible nodes, and per node of them at most how many pods of ``shape`` fit
        there from the room now, and at most ``most``: each asked resource's free room over the
        ask, and the free whole GPUs over the whole GPUs asked (0 where a resource is
        overcommitted). An upper bound (a share may need a fresh GPU besides), node by node: while
        a gang is tried, room only shrinks, so no trial places more on a node. Every other node
        holds none: only the eligible ones are read (a few of the nodes, for a shape confined to
        one GPU model), not every node."""
        rows = self._node_array(shape.fits)
        counts: NDArray[np.int64] = np.where(self.negative[rows], 0, most)
        for r, amount in enumerate(shape.request):
            if amount > 0:
                np.minimum(counts, self.free_cols[r][rows] // amount, out=counts)
        whole, _ = self.parts(shape.request)
        if whole > 0:
            np.minimum(counts, self.whole_array[rows] // whole, out=counts)
        return rows, np.maximum(counts, 0, out=counts)

    def order_read(self, problem: Problem) -> bool:
        """Whether a pod of this problem may be placed by :meth:`best_fit`, the one query that
        reads the order in which nodes entered their free-GPU bucket. Once per problem where the
        rooms share their memos (it reads the problem alone)."""
        if self._order_read is None and self.learnt is not None:
            self._order_read = self.learnt.order_read
        if self._order_read is None:
            least_fragmenting, scarce = self.choosers(problem)
            spread = self.spread.of_class if self.spread is not None else {}
            self._order_read = any(
                not shape.preference
                and (least_fragmenting is None or c.index in problem.isolated or c.index in spread)
                and (scarce is None or not self.priced(problem, scarce, shape))
                for c in problem.classes
                for shape in (problem.shapes[c.shape],)
            )
        if self.learnt is not None:
            self.learnt.order_read = self._order_read
        return self._order_read

    def holder(self, problem: Problem, gang: Gang) -> _Holder | None:
        """For the trials of ``gang`` from the room now: whether a trial on a node list (one node,
        or a topology domain of :attr:`tier_nodes`) may make it whole, judged from per-node pod
        counts (:meth:`pod_counts`, summed per domain) instead of placing pods. False only when
        the trial would fail and leave nothing behind; every trial of the gang gives back all
        it took until one keeps it, so the counts hold for each.

        A failed trial leaves the nodes it touched last in their free-GPU buckets: when a pod
        of this problem may be placed by :meth:`best_fit` (:meth:`order_read`), only trials that
        would take nothing are skipped. None when every trial must be made: a class of the gang
        under rules between pods or topology spread records its trials pod by pod."""
        spread = self.spread.of_class if self.spread is not None else {}
        if any(c in spread or (self.interpod is not None and c in problem.isolated) for c in gang.classes):
            return None
        return _Holder(self, problem, gang, self.order_read(problem))

    def _eligible_mask(self, eligible: Eligible) -> NDArray[np.bool_]:
        """The nodes of an eligibility map (a shape's ``fits`` or ``upper``) as a boolean array, made once."""
        if isinstance(eligible, NodeFits):
            return eligible.mask(len(self.free))
        kept = self._masks.get(id(eligible))
        if kept is None or kept[0] is not eligible:
            mask = np.zeros(len(self.free), dtype=np.bool_)
            mask[np.fromiter(eligible, dtype=np.int64, count=len(eligible))] = True
            kept = (eligible, mask)
            self._masks[id(eligible)] = kept
        return kept[1]

    def _node_array(self, nodes: list[int] | Eligible) -> NDArray[np.int64]:
        """A node list (a topology domain) or the nodes of an eligibility map as an array, made once."""
        if isinstance(nodes, NodeFits):
            return nodes.rows.astype(np.int64, copy=False)
        kept = self._arrays.get(id(nodes))
        if kept is None or kept[0] is not nodes:
            kept = (nodes, np.fromiter(nodes, dtype=np.int64, count=len(nodes)))
            self._arrays[id(nodes)] = kept
        return kept[1]

    def _member(self, eligible: Eligible) -> Callable[[int], bool]:
        """Whether a node is one of an eligibility map's, as a lookup: the dict's own, or a shape's
        ``fits`` flags per node (no dict of its counts is made)."""
        if isinstance(eligible, NodeFits):
            return eligible.flags(len(self.free)).__getitem__
        return eligible.__contains__

    def _scores(self, preference: dict[int, int]) -> NDArray[np.int64]:
        """A shape's preference scores as an array over nodes (0 where it names none), made once."""
        kept = self._score_arrays.get(id(preference))
        if kept is None or kept[0] is not preference:
            scores = np.zeros(len(self.free), dtype=np.int64)
            if preference:
                scores[np.fromiter(preference, dtype=np.int64, count=len(preference))] = list(preference.values())
            kept = (preference, scores)
            self._score_arrays[id(preference)] = kept
        return kept[1]

    def _first_allowed(self, candidates: NDArray[np.int64], order: NDArray[np.intp], allow: Allow | None) -> int | None:
        for i in order:
            node = int(candidates[i])
            if allow is None or allow(node):
                return node
        return None

    def best_fit_in(
        self, request: tuple[int, ...], eligible: Eligible, nodes: list[int], allow: Allow | None = None
    ) -> int | None:
        """Best fit among the given nodes only (a topology domain): fewest free GPUs, then index."""
        if len(nodes) <= SMALL_SCAN:
            member = self._member(eligible)
            fitting = [n for n in nodes if member(n) and self.fits(n, request) and (allow is None or allow(n))]
            return min(fitting, key=lambda n: (self._level(self.free[n]), n)) if fitting else None
        candidates = self._node_array(nodes)
        candidates = candidates[self._eligible_mask(eligible)[candidates]]
        if candidates.size:
            candidates = self.fitting(candidates, request)
        if not candidates.size:
            return None
        return self._first_allowed(candidates, np.lexsort((candidates, self.level_array[candidates])), allow)

    def preferred_fit(self, shape: Shape, allow: Allow | None = None) -> int | None:
        """The node a pod with node preferences goes to: the highest preference score among those
        it fits (kube-scheduler's choice), then best fit (fewest free GPUs), then node order."""
        if len(shape.nodes) <= SMALL_SCAN:
            fitting = [n for n in shape.nodes if self.fits(n, shape.request) and (allow is None or allow(n))]
            if not fitting:
                return None
            return min(fitting, key=lambda n: (-shape.preference.get(n, 0), self._level(self.free[n]), n))
        candidates = self.fitting(self._node_array(shape.fits), shape.request)
        if not candidates.size:
            return None
        scores = self._scores(shape.preference)[candidates]
        return self._first_allowed(candidates, np.lexsort((candidates, self.level_array[candidates], -scores)), allow)

    def cheapest_fit(self, scarce: scarcity.Scarcity, shape: Shape, allow: Allow | None = None) -> int | None:
        """:func:`vcsat.solver.pricing.scarcity.cheapest_fit`'s choice (cheapest, then fewest free GPUs, then
        node order), every candidate priced at once with numpy (:func:`scarcity.room_taken` over arrays).

        Without rules between pods, the shape's ranking of every node is kept and only the nodes
        whose room changed since it was last read are priced again (:class:`_Ranking`)."""
        if allow is None:
            if self._taken_in_trial:
                self._ranked_in_trial = True
            return self._ranking(scarce, shape).best(self)
        candidates = self.fitting(self._node_array(shape.fits), shape.request)
        if not candidates.size:
            return None
        cost, levels = self._price(scarce, shape, candidates)
        if allow is None:  # (price, free GPUs, node) as one number: an argmin, not a sort
            ranked = (cost * (int(levels.max()) + 1) + levels) * self.count + candidates
            return int(candidates[int(np.argmin(ranked))])
        return self._first_allowed(candidates, np.lexsort((candidates, levels, cost)), allow)

    def _ranking(self, scarce: scarcity.Scarcity, shape: Shape) -> _Ranking:
        kept = self._ranked.get(id(shape))
        if kept is None or kept.shape is not shape or kept.scarce is not scarce:
            carried = self.kept.carry(self, scarce, shape) if self.kept is not None else None
            kept = carried if carried is not None else _Ranking(self, scarce, shape)
            self._ranked[id(shape)] = kept
        return kept

    def keep_rankings(self) -> None:
        """Hand this room's rankings to its :class:`KeptRankings` (when made with one), for the next
        room of the problem; this room asks no more of them."""
        if self.kept is not None:
            self.kept.keep(self, list(self._ranked.values()))

    def _price(
        self, scarce: scarcity.Scarcity, shape: Shape, candidates: NDArray[np.int64]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Per node of ``candidates`` (where one pod of ``shape`` fits): the scarce-pool price of
        the room the pod takes there (its GPUs, or the GPU room its cpu or memory strands, by the
        pool's rate), and the node's free GPUs, the tie-break after the price."""
        levels = (
            np.maximum(self.free_cols[self.gpu][candidates], 0) if self.gpu is not None else np.zeros_like(candidates)
        )
        milli = shape.request[self.milli] if self.milli is not None else shape.gpus * FULL_GPU_MILLI
        rates = scarce.rates(shape.eligibility, milli > 0)[candidates]
        priced = rates > 0
        cost = np.zeros(candidates.size, dtype=np.int64)
        if priced.any():
            nodes = candidates[priced]
            free_gpu = self.whole_array[nodes] * FULL_GPU_MILLI + self.share_free[nodes]
            fraction = np.zeros(nodes.size, dtype=np.float64)
            for r in (scarce.cpu, scarce.memory):
                asked = shape.request[r] if r is not None else 0
                if asked > 0:
                    free = self.free_cols[r][nodes]
                    part = np.minimum(1.0, asked / np.where(free > 0, free, 1))
                    fraction = np.maximum(fraction, np.where(free > 0, part, 1.0))
            taken = np.maximum(milli, np.rint(free_gpu * fraction))
            cost[priced] = np.rint(rates[priced] * taken).astype(np.int64)
        return cost, levels

    def price_rank(self, scarce: scarcity.Scarcity, shape: Shape, node: int, rates: NDArray[np.float64]) -> int:
        """:meth:`_Ranking.rank` of one eligible node, in Python (the same arithmetic, element by element)."""
        request = shape.request
        if not self.fits(node, request):
            return UNFIT
        row = self.free[node]
        level = max(0, row[self.gpu]) if self.gpu is not None else 0
        cost = 0
        rate = float(rates[node])
        if rate > 0:
            milli = request[self.milli] if self.milli is not None else shape.gpus * FULL_GPU_MILLI
            free_gpu = self.whole[node] * FULL_GPU_MILLI + int(self.share_free[node])
            fraction = 0.0
            for r in (scarce.cpu, scarce.memory):
                asked = request[r] if r is not None else 0
                if r is not None and asked > 0:
                    free = row[r]
                    fraction = max(fraction, min(1.0, asked / free) if free > 0 else 1.0)
            cost = round(rate * max(milli, round(free_gpu * fraction)))
        return (cost * self._rank_base + level) * self.count + node

    def best_fit(
        self, request: tuple[int, ...], gpus: int, eligible: Eligible, allow: Allow | None = None
    ) -> int | None:
        """Best fit: the fewest free GPUs, then the node longest in that bucket. A pod eligible on
        few nodes is looked up among those (numpy); one eligible almost anywhere walks the buckets,
        where the first node it meets usually fits."""
        if len(eligible) > SMALL_SCAN and len(eligible) * FEW_ELIGIBLE < len(self.free):
            candidates = self._node_array(eligible)
            candidates = self.fitting(candidates[self.level_array[candidates] >= gpus], request)
            if not candidates.size:
                return None
            order = np.lexsort((self.arrival[candidates], self.level_array[candidates]))
            return self._first_allowed(candidates, order, allow)
        member = self._member(eligible)
        for level in sorted(lvl for lvl in self.levels if lvl >= gpus):
            for node in self.levels[level]:
                if member(node) and self.fits(node, request) and (allow is None or allow(node)):
                    return node
        return None


class _Holder:
    """:meth:`Room.holder`'s answers for one gang: per class, its pods and per-node counts, and
    per tier the answer for every domain at once, made when first asked."""

    def __init__(self, room: Room, problem: Problem, gang: Gang, any_take: bool) -> None:
        self.room = room
        self.gang = gang
        self.any_take = any_take
        """Whether a trial counts as worth making as soon as it would take a pod."""
        self.classes = [problem.classes[c] for c in gang.classes]
        self.counts = [room.pod_counts(problem.shapes[pc.shape], len(pc.pods)) for pc in self.classes]
        """Per class, its eligible nodes and the most pods of it each holds (:meth:`Room.pod_counts`)."""
        self.holds: dict[int, NDArray[np.bool_]] = {}
        """Per tier, per domain (as :attr:`Room.tier_nodes`): whether a trial there may make the gang whole."""

    def may_hold(self, nodes: list[int]) -> bool:
        if len(nodes) == 1:
            node = nodes[0]
            return self._enough([int(counts[rows == node].sum()) for rows, counts in self.counts])
        where = self.room.domain_at.get(id(nodes))
        if where is None:
            return True
        tier, position = where
        return bool(self.tier_holds(tier)[position])

    def tier_holds(self, tier: int) -> NDArray[np.bool_]:
        """Per domain of the tier (as :attr:`Room.tier_nodes`, then one for no domain): whether a
        trial there may make the gang whole, made when first asked."""
        holds = self.holds.get(tier)
        if holds is None:
            holds = self.holds[tier] = self._tier_holds(tier)
        return holds

    def _enough(self, held: list[int]) -> bool:
        """Whether these pods per class (at most its pods) may make the gang whole."""
        if self.any_take:
            return any(held)
        gang = self.gang
        if sum(held) < max(1, gang.need):
            return False
        per_task: dict[str, int] = {}
        for pc, k in zip(self.classes, held, strict=True):
            per_task[pc.task] = per_task.get(pc.task, 0) + k
        return all(per_task.get(task, 0) >= need for task, need in gang.task_need.items())

    def _tier_holds(self, tier: int) -> NDArray[np.bool_]:
        """:meth:`_enough` of every domain of a tier at once: per class, its pods' counts summed per
        domain (at most its pods), then the same tests over arrays."""
        slot = self.room.tier_slot[tier]
        size = len(self.room.tier_nodes[tier]) + 1
        held = [
            np.minimum(np.bincount(slot[rows], weights=counts, minlength=size).astype(np.int64), len(pc.pods))
            for pc, (rows, counts) in zip(self.classes, self.counts, strict=True)
        ]
        if not held:
            return np.zeros(size, dtype=np.bool_)
        if self.any_take:
            some: NDArray[np.bool_] = np.logical_or.reduce([h > 0 for h in held])
            return some
        gang = self.gang
        ok: NDArray[np.bool_] = np.sum(held, axis=0) >= max(1, gang.need)
        for task, need in gang.task_need.items():
            per_task = np.zeros(size, dtype=np.int64)
            for pc, h in zip(self.classes, held, strict=True):
                if pc.task == task:
                    per_task += h
            ok &= per_task >= need
        return ok


UNFIT = np.iinfo(np.int64).max
"""The rank of a node where the pod does not fit (or may not go)."""

FEW_CHANGED = 16
"""A kept ranking re-prices up to this many changed nodes in Python, more with numpy."""
MANY_CHANGED = 8
"""Changes to price again beyond one in this many nodes are told apart by marking every node."""
FIT_BLOCK = 1 << 20
"""At most this many compares at once when known-empty queries are tested on grown nodes
(:meth:`KeptRankings.still_full`): the queries go in blocks, so memory stays small at 10,000 nodes."""


class _Ranking:
    """One shape's :meth:`Room.cheapest_fit` ranks over the nodes (:data:`UNFIT` where it is not
    eligible), kept up to date by pricing again only the nodes whose room changed since it was
    read (:attr:`Room.changes`): the choice is then an argmin, not a pricing of every candidate."""

    def __init__(self, room: Room, scarce: scarcity.Scarcity, shape: Shape) -> None:
        self.shape = shape
        self.scarce = scarce
        self.mask = room._eligible_mask(shape.fits)
        request = shape.request
        self.milli = request[room.milli] if room.milli is not None else shape.gpus * FULL_GPU_MILLI
        self.rates = scarce.rates(shape.eligibility, self.milli > 0)
        self.whole, self.share = room.parts(request)
        self.need = room.rows.need(request, self.whole)
        """What the fit test asks of a node's row (:meth:`NodeRows.need`), looked up once."""
        self.strands = [(r, request[r]) for r in (scarce.cpu, scarce.memory) if r is not None and request[r] > 0]
        """(column, amount) of cpu and memory when asked: what a pod strands of a node's GPUs."""
        self.unit = room._rank_base * room.count
        """One unit of price in rank units (a price outranks the free GPUs and the node)."""
        eligible_rates = self.rates[self.mask] > 0
        self.priced = bool(eligible_rates.any())
        """Whether some eligible node has a price (else every cost is 0)."""
        self.all_priced = bool(eligible_rates.all())
        """Whether every eligible node has a price (then no node needs telling apart)."""
        self.ranks = np.full(room.count, UNFIT, dtype=np.int64)
        self.rank(room, self.mask.nonzero()[0])
        self.top = int(self.ranks.argmin()) if self.ranks.size else -1
        """The node of the lowest rank (the first such when all are :data:`UNFIT`)."""
        self.seen = room.changed
        """How many of :attr:`Room.changes` the ranks reflect."""

    def rank(self, room: Room, nodes: NDArray[np.int64]) -> None:
        """Set :attr:`ranks` of ``nodes`` (eligible ones): (price, free GPUs, node) of one pod of the
        shape as one number (:data:`UNFIT` where it does not fit): :meth:`Room._fit_mask` then
        :meth:`Room._price`, the same arithmetic on the nodes' rows (:class:`NodeRows`) gathered once."""
        columns = room.rows
        ok, rows = columns.fit(nodes, self.need)
        if self.share > 0:
            ok &= (rows[:, columns.share_room_col] >= self.share) | (rows[:, columns.whole_col] - self.whole >= 1)
        if not ok.size or not ok[ok.argmax()]:  # ok.any(), without its Python wrapper (a call per re-ranking)
            # Most re-rankings in the exchange's rooms find no node where the pod fits (the room the
            # trade freed is taken before the shape is asked again): nothing to price.
            self.ranks[nodes] = UNFIT
            return
        # Every node is ranked as if it fitted and the unfit ones then set apart (one `where`):
        # fewer calls than gathering the fitting rows first. An unfit row's price is finite
        # (a free amount is divided by at least 0.5) and is never read.
        rank = rows[:, columns.level_rank_col]
        if self.all_priced:
            rank = rank + self._costs(columns, rows, self.rates.take(nodes))
        elif self.priced:
            rates = self.rates.take(nodes)
            priced = rates > 0
            if priced.any():
                rank = rank.copy()
                rank[priced] += self._costs(columns, rows.compress(priced, axis=0), rates[priced])
        self.ranks[nodes] = np.where(ok, rank, UNFIT)

    def _costs(self, columns: NodeRows, rows: NDArray[np.int64], rates: NDArray[np.float64]) -> NDArray[np.int64]:
        """The price of one pod at each node of ``rows`` (priced ones, where it fits), in rank units."""
        fraction: NDArray[np.float64] | None = None
        for column, asked in self.strands:
            # asked / free, and 1 where nothing is free: a free amount is a whole number, so at
            # least 0.5 leaves every positive one as it is
            part = np.maximum(rows[:, column], 0.5)
            np.divide(asked, part, out=part)
            fraction = part if fraction is None else np.maximum(fraction, part, out=fraction)
        taken: NDArray[np.float64] | int = self.milli
        if fraction is not None:
            # min(1, the largest of them), which is the largest of each one's min(1, ...): one
            # minimum for both; then max(milli, rint(free GPU thousandths × fraction)), in place
            np.minimum(fraction, 1.0, out=fraction)
            np.multiply(rows[:, columns.gpu_milli_col], fraction, out=fraction)
            taken = np.maximum(np.rint(fraction, out=fraction), self.milli, out=fraction)
            np.multiply(rates, taken, out=taken)
            cost: NDArray[np.int64] = np.rint(taken, out=taken).astype(np.int64)
        else:
            cost = np.rint(rates * taken).astype(np.int64)
        np.multiply(cost, self.unit, out=cost)
        return cost

    def best(self, room: Room) -> int | None:
        if not self.ranks.size:
            return None
        if self.seen < room.changed:
            changed = room.changes[self.seen : room.changed]
            self.seen = room.changed
            # The lowest rank stays where it was unless that node changed, or a changed one now ranks lower.
            top = self.top
            if changed.size <= FEW_CHANGED:
                nodes = set(changed.tolist())
                moved = top < 0 or top in nodes
                for node in nodes:
                    if self.mask[node]:
                        rank = room.price_rank(self.scarce, self.shape, node, self.rates)
                        self.ranks[node] = rank
                        if not moved and rank < self.ranks[top]:
                            top = node
                self.top = int(self.ranks.argmin()) if moved else top
            else:
                if changed.size * MANY_CHANGED > room.count:  # each node once
                    marks = np.zeros(room.count, dtype=np.bool_)
                    marks[changed] = True
                    stale = (marks & self.mask).nonzero()[0]
                else:  # a node changed twice is priced twice, alike
                    stale = changed[self.mask[changed]]
                self.rank(room, stale)
                # Finite ranks differ (each ends with its node), so one argmin finds the lowest: the
                # pod went to the top node most often, and telling whether it did costs more calls.
                self.top = int(self.ranks.argmin())
        return None if self.ranks[self.top] == UNFIT else self.top


@dataclass(frozen=True)
class DomainTables:
    """A problem's topology domains as a room reads them, per tier: the named domains in name
    order, their node lists (the problem's own), each node's (tier, position) pairs, each name's
    position, each node's position (the number of domains when none holds it), and each node
    list's (tier, position) by ``id``. They depend on the problem alone; read only."""

    tier_names: dict[int, list[str]]
    tier_nodes: dict[int, list[list[int]]]
    domain_of: list[list[tuple[int, int]]]
    tier_position: dict[int, dict[str, int]]
    tier_slot: dict[int, NDArray[np.int64]]
    domain_at: dict[int, tuple[int, int]]

    @staticmethod
    def of(problem: Problem) -> DomainTables:
        count = len(problem.free)
        tier_names: dict[int, list[str]] = {}
        tier_nodes: dict[int, list[list[int]]] = {}
        domain_of: list[list[tuple[int, int]]] = [[] for _ in range(count)]
        domains = problem.domains
        if domains is not None:
            for tier in domains.tiers:
                names = [name for name in domains.domains(tier) if name]
                tier_names[tier] = names
                tier_nodes[tier] = [domains.nodes_in(tier, name) for name in names]
                for position, nodes in enumerate(tier_nodes[tier]):
                    for n in nodes:
                        domain_of[n].append((tier, position))
        tier_position = {tier: {name: i for i, name in enumerate(names)} for tier, names in tier_names.items()}
        tier_slot: dict[int, NDArray[np.int64]] = {}
        domain_at: dict[int, tuple[int, int]] = {}
        for tier, lists in tier_nodes.items():
            slot = np.full(count, len(lists), dtype=np.int64)
            for position, nodes in enumerate(lists):
                slot[nodes] = position
                domain_at[id(nodes)] = (tier, position)
            tier_slot[tier] = slot
        return DomainTables(tier_names, tier_nodes, domain_of, tier_position, tier_slot, domain_at)


class ProblemMemos:
    """What a room learns of its problem alone, whatever its free room, kept to be shared by the
    rooms of one problem: each gang's class plan, sizes and asks, each shape's asks and whether it
    is priced, the plain keys, the queues' cap lineages, the fit layouts (:meth:`NodeRows.need`)
    and :meth:`Room.order_read`. The rooms' own memos of the same names, shared: the same values,
    so the same choices. :class:`KeptRankings` (the exchange's rooms) and :class:`FillMemos` (the
    greedy's two fills) add what each carries besides."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.gang_sizes: dict[int, tuple[int, int]] = {}
        self.asked: dict[tuple[int, ...], tuple[int, int, tuple[int, ...]]] = {}
        self.class_plans: dict[int, ClassPlan] = {}
        self.shape_asks: dict[int, dict[str, int]] = {}
        self.priced: dict[int, bool] = {}
        self.plain_keys: dict[int, tuple[Hashable, ...]] = {}
        self.gang_asks: dict[tuple[int, str], int] = {}
        self.caps_of: dict[str, list[str]] = {}
        self.needs: dict[tuple[int, ...], NDArray[np.int64]] = {}
        """The rooms' :class:`NodeRows` layouts of what a request asks (:meth:`NodeRows.need`),
        shared: every room of the problem has the same nodes and resources."""
        self.order_read: bool | None = None
        """:meth:`Room.order_read` of the problem, once known."""
        self._domain_tables: DomainTables | None = None
        self._snapshot_room: tuple[NDArray[np.int64], NDArray[np.int64], Requests] | None = None

    def domain_tables(self) -> DomainTables:
        """The problem's topology tables (:class:`DomainTables`), made once."""
        if self._domain_tables is None:
            self._domain_tables = DomainTables.of(self.problem)
        return self._domain_tables

    def snapshot_room(self) -> tuple[NDArray[np.int64], NDArray[np.int64], Requests]:
        """The snapshot's free room (a row per node) and free whole GPUs per node, in arrays, and
        the shapes' requests (:class:`vcsat.solver.room_taken.Requests`): what a room made with
        pods taken starts from (:func:`vcsat.solver.room_taken.take_all`); made once, read only."""
        if self._snapshot_room is None:
            problem = self.problem
            count, width = len(problem.free), len(problem.resources)
            free = np.array(problem.free, dtype=np.int64).reshape(count, width)
            whole = np.array([len(ids) for ids in problem.free_gpu_ids], dtype=np.int64).reshape(count)
            gpu = problem.resources.index(res.GPU) if res.GPU in problem.resources else None
            milli = problem.resources.index(res.GPU_MILLI) if res.GPU_MILLI in problem.resources else None
            shapes = problem.shapes
            amounts = np.array([shape.request for shape in shapes], dtype=np.int64).reshape(len(shapes), width)
            wholes = amounts[:, gpu] if gpu is not None else np.zeros(len(shapes), dtype=np.int64)
            shares = (
                amounts[:, milli] - FULL_GPU_MILLI * wholes > 0
                if milli is not None
                else np.zeros(len(shapes), dtype=np.bool_)
            )
            self._snapshot_room = (free, whole, Requests(amounts, wholes.copy(), shares))
        return self._snapshot_room


class KeptRankings(ProblemMemos):
    """The scarce-pool rankings (:class:`_Ranking`) of one problem's rooms, carried from one room to
    the next one made from the same problem.

    Why: the exchange (:mod:`vcsat.solver.search.exchange`) makes two rooms per trade, each from
    a decision that differs from the last one's on a few hundred nodes, and most of a room's fill
    time went to ranking every node afresh for each shape it meets (~150 shapes a room at 1,000
    nodes). A node's rank is a function of its row of the room (:class:`NodeRows`) and the shape
    alone (given one :attr:`rank_base`), so a ranking carried into a new room is made exact by
    ranking again the nodes whose row differs from the one it was last true for: the same ranks,
    hence the same choices, as a ranking made afresh. The rooms also share what they learn of the
    problem alone (each gang's class plan and sizes, each shape's asks and whether it is priced)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem)
        gpu = problem.resources.index(res.GPU) if res.GPU in problem.resources else None
        self.rank_base = 1 + max((max(0, row[gpu]) for row in problem.free), default=0) if gpu is not None else 1
        """More than any node's free GPUs in any room of the problem (:attr:`Room._rank_base`)."""
        self.packing: dict[int, tuple[int, bool, float, str]] = {}
        self.class_keys = class_keys(problem)
        """Per pod class, its gang's queue and its shape (:func:`class_keys`), once."""
        self.candidate_set = frozenset(gang.index for gang in problem.candidates)
        """The problem's candidates' indices (:attr:`Problem.candidates`), as a set once."""
        self.sharing = sharing_shapes(problem)
        """The shapes whose pods ask a GPU share (:func:`sharing_shapes`), looked up once."""
        self._kept: dict[int, tuple[_Ranking, int, int]] = {}
        """Per shape, its ranking, the number of the room it was kept from (:attr:`_rows`), and how
        many of that room's :attr:`Room.changes` it had read."""
        self._rows: dict[int, tuple[NDArray[np.int64], NDArray[np.int64]]] = {}
        """Per room a ranking is kept from, by its number (in the order they were kept): its rows
        (:attr:`NodeRows.rows`) as it ended, and per node the place of its last change in the
        room's :attr:`Room.changes` (-1: none), which tells a ranking the nodes changed since it
        read the room, in one array per room rather than one list of changes per ranking."""
        self._rooms = 0
        """How many rooms rankings were kept from so far (the next one's number)."""
        self._room: Room | None = None
        self._full: tuple[NDArray[np.int64], list[tuple[tuple[int, ...], int]]] | None = None
        """The rows of the room kept last, as it ended, and its :attr:`Room.full` queries anywhere
        (each as its request and its eligible nodes' ``id``)."""
        self._eligible = {id(shape.fits): shape.fits for shape in problem.shapes}
        """Per query key's eligible nodes (a shape's ``fits``, by ``id``: :meth:`Room.query_key`), the nodes."""
        self._tests: dict[tuple[tuple[int, ...], int], tuple[NDArray[np.int64], NDArray[np.bool_], int, int]] = {}
        """Per query anywhere, what :meth:`still_full` tests of it (:meth:`_query_test`)."""
        self._differ: dict[int, tuple[NDArray[np.bool_], int]] = {}
        """Per room kept from, the nodes whose row :attr:`_room` had different, and how many of its
        :attr:`Room.changes` had been made then: a ranking carried later adds the changes since
        (the rows of every other node are as they were), instead of comparing every row again."""

    def keep(self, room: Room, rankings: list[_Ranking]) -> None:
        """Keep ``room``'s ``rankings`` as they stand (the room asks no more of them), and the node
        queries anywhere it knows find no node (:meth:`still_full`)."""
        kept_from = self._rooms
        self._rooms += 1
        for ranking in rankings:
            self._kept[ranking.shape.index] = (ranking, kept_from, ranking.seen)
        last = np.full(room.count, -1, dtype=np.int64)
        np.maximum.at(last, room.changes[: room.changed], np.arange(room.changed, dtype=np.int64))
        rows = room.rows.rows.copy()
        self._rows[kept_from] = (rows, last)
        # Only queries anywhere: a topology domain's key names a list of that room alone (by id).
        self._full = (rows, [(key[0], key[1]) for key in room.full if isinstance(key, tuple) and key[2] == -1])
        held = {entry[1] for entry in self._kept.values()}
        self._rows = {number: rows for number, rows in self._rows.items() if number in held}

    def still_full(self, room: Room) -> list[Hashable]:
        """Of the node queries anywhere that the room kept last knew to find no node, those that
        find none in ``room`` as it is made: where none of a query's eligible nodes on which some
        column of the rows (:class:`NodeRows`) grew between the two rooms has room for one pod.

        Why it is exact: a query's answer reads only its eligible nodes' rows (the room, the free
        whole GPUs, the shared GPUs' room), each pod's chooser finds no node only when none fits
        (:meth:`Room.note_full`), and every test of a fit is a floor on a column (none where a
        resource is overcommitted): on the nodes where no column grew, none fits as none did. Why:
        the exchange's rooms differ from the last one on few nodes, and most of the waiting gangs
        they try fail: known here, each such query's first trial in the room is not made
        (:func:`_known_not_to_fit`)."""
        if self._full is None or not self._full[1]:
            return []
        rows, keys = self._full
        now = room.rows.rows
        if rows.shape != now.shape:
            return []
        # Room that only shrank makes no query find a node (every test is a floor on a column):
        # only the nodes where some column grew are looked at, for every query at once.
        grown = np.flatnonzero(np.any(now > rows, axis=1))
        found = [key for key in keys if key[1] in self._eligible]
        if grown.size:
            sub = now[grown]
            width = sub.shape[1]
            step = max(1, FIT_BLOCK // (grown.size * width))
            fits = np.empty(len(found), dtype=np.bool_)
            for start in range(0, len(found), step):
                block = [self._query_test(room, key) for key in found[start : start + step]]
                needs = np.stack([need for need, _, _, _ in block])
                ok = np.all(sub[None, :, :] >= needs[:, None, :], axis=2)
                ok &= np.stack([mask for _, mask, _, _ in block])[:, grown]
                for row, (_, _, whole, share) in enumerate(block):
                    if share > 0:
                        rooms = sub[:, room.rows.share_room_col] >= share
                        ok[row] &= rooms | (sub[:, room.rows.whole_col] - whole >= 1)
                fits[start : start + len(block)] = ok.any(axis=1)
            found = [key for key, fit in zip(found, fits.tolist(), strict=True) if not fit]
        return [room.query_key(request, self._eligible[eligible_id], None) for request, eligible_id in found]

    def _query_test(
        self, room: Room, key: tuple[tuple[int, ...], int]
    ) -> tuple[NDArray[np.int64], NDArray[np.bool_], int, int]:
        """What :meth:`still_full` tests of a query anywhere (its request and its eligible nodes'
        ``id``): the request's fit layout for one row, its eligible nodes as a mask, its whole GPUs
        and its share thousandths; per query once (they depend on the problem alone), where each
        room asked them again (~150 queries a room)."""
        test = self._tests.get(key)
        if test is None:
            request, eligible_id = key
            whole, share = room.parts(request)
            need = room.rows.need(request, whole)[: room.rows.width]
            test = self._tests[key] = (need, self._eligible[eligible_id].mask(room.count), whole, share)
        return test

    def carry(self, room: Room, scarce: scarcity.Scarcity, shape: Shape) -> _Ranking | None:
        """The kept ranking of ``shape``, made true for ``room`` (which takes it over); None when
        there is none to carry."""
        entry = self._kept.pop(shape.index, None)
        if entry is None:
            return None
        ranking, kept_from, seen = entry
        if ranking.shape is not shape or ranking.scarce is not scarce or ranking.unit != room._rank_base * room.count:
            return None
        if room is not self._room:
            self._room, self._differ = room, {}
        differ = self._differ.get(kept_from)
        if differ is None:
            stale = np.any(room.rows.rows != self._rows[kept_from][0], axis=1)
            self._differ[kept_from] = (stale.copy(), room.changed)
        else:
            # Room taken in a gang's trial and given back is rewound out of the changes only
            # where no ranking read the room meanwhile (:meth:`Room.close_trial`), so the changes
            # made since the rows were compared are still all there.
            stale = differ[0].copy()
            stale[room.changes[differ[1] : room.changed]] = True
        stale |= self._rows[kept_from][1] >= seen  # changed there after the ranking last read it
        nodes = np.flatnonzero(stale & ranking.mask)
        if nodes.size:
            ranking.rank(room, nodes)
        ranking.top = int(ranking.ranks.argmin()) if ranking.ranks.size else -1
        ranking.seen = room.changed
        return ranking


class FillMemos(ProblemMemos):
    """What the greedy's rooms learn of their problem alone, whatever their free room: each gang's
    class plan, sizes and asks, the candidates' packing order, each shape's asks, node query and whether it is
    priced, the fit layouts (:meth:`NodeRows.need`), and :meth:`Room.order_read`; shared by the
    rooms of one problem (:meth:`of`).

    Why: a cycle whose first fill is not within its tolerance fills again by gain
    (:func:`greedy_by_gain`), from a room of the same problem, and learnt all of it again. These are
    the memos :class:`KeptRankings` shares between the exchange's rooms, without its rankings (a
    greedy room's end is far from the next room's start): the same values, so the same choices."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem)
        self.shape_queries: dict[int, NodeQuery] = {}
        self.order: list[Gang] | None = None
        """The problem's candidates in packing order (:func:`_packing_order`), once sorted."""

    @staticmethod
    def of(problem: Problem) -> FillMemos:
        """The memos of ``problem``: the last ones made when they are its (the cycle's two fills),
        else new ones, kept in their place (one problem's at a time, as the pricing measures)."""
        global _last_memos
        memos = _last_memos
        if memos is None or memos.problem is not problem:
            memos = _last_memos = FillMemos(problem)
        return memos


_last_memos: FillMemos | None = None


def _share_room(shared: dict[int, int]) -> int:
    """The most thousandths one of these shared GPUs has left, or -1 when there is none."""
    return max((FULL_GPU_MILLI - used for used in shared.values()), default=-1)


def _share_free(shared: dict[int, int]) -> int:
    """The thousandths these shared GPUs have left, summed."""
    return scarcity.free_room(0, shared.values())


def greedy(problem: Problem) -> Assignment:
    """Volcano's allocate, greedily, in the order of the objective's levels (:mod:`objectives`):
    first each queue fair-share level (:func:`_fill_tier`: per queue priority, highest first, as
    Volcano's QueueOrderFn, and per tier of each queue's own priorities, queues filled towards
    their deserved shares, the least filled first, as Volcano's proportion plugin orders them,
    each first only up to its target, the level's best split of the free room), then everything
    left by priority then age into whatever room remains (lending).

    Following the levels matters: a queue's low-priority work placed before another queue's
    high-priority work takes room that the first fair-share level would give the latter, and the
    search then starts far from the optimum (it cannot undo whole gangs quickly).

    Its room keeps no rankings for later rooms (:class:`KeptRankings`): it runs every cycle, and
    the exchange, whose trades would use them, runs in few."""
    return _greedy(problem, by_gain=False)


def greedy_by_gain(problem: Problem) -> Assignment | None:
    """The same greedy with each fair-share level filled the other way: first the queue whose next
    gang raises the level most per unit of the resource it takes (:func:`_fill_tier`); None when
    no level has two queues to order.

    Neither way is better on every cluster: the first aims for the same split of the room where
    it is short (its targets) but keeps the least filled queue first, which places big gangs
    while the room is whole; this one can still win where packing favours its order. The cycle
    tries it only when the first decision is not already within its tolerance of the bound
    (:func:`vcsat.solver.solve`), and keeps whichever the objective's first levels rank higher."""
    if len(problem.deserved) < 2 or not fair_ranks(problem):
        return None
    return _greedy(problem, by_gain=True)


def greedy_largest_first(problem: Problem) -> Assignment | None:
    """The greedy (filled equally) with each queue's work at a fair-share level tried largest
    first (:func:`_fill_tier`); None when there is no fair-share level.

    In job order a queue below its share places its small gangs first, best fit, into the few GPUs
    left on busy nodes and the nodes with more room alike, and its 4- to 32-GPU gangs, tried after
    them, find no node or set of nodes with their room left: the level stays short, and the queues
    filled after it (whose next unit gains the level less) take the room in small pieces that the
    exchange's trades must then clear, one trade per gang. Largest first, the big gangs take the
    whole room while it is whole and the small ones fill what is left, as first-fit decreasing
    packs bins. Neither order is better on every cluster (on some, the big gangs taken first leave
    room a later level needed), and the exchange's trades from this decision often end lower than
    from the first fills' (benchmarks/RESULTS.md, session 45): the cycle keeps it aside and ends
    with it only where its own decision ranks lower (:func:`vcsat.solver.solve.warm_start`)."""
    if not fair_ranks(problem):
        return None
    return _greedy(problem, by_gain=False, largest_first=True)


def greedy_keeping_whole(problem: Problem) -> Assignment:
    """The greedy (filled equally, in job order) with a gang of several pods never tried all on one
    node whose GPUs are all free: it goes anywhere, best fit pod by pod, as a gang does whose
    one-node trial failed (:func:`_domain_attempts`).

    On a saturated cluster the fullest node with room for a whole gang is often a wholly free one:
    every node with some GPUs taken has fewer left than the gang asks. Those few wholly free nodes
    are the only room for the pending pods that ask a whole node (8-GPU pods, confined to the nodes
    of their kind); the fills' small multi-pod gangs (three 2-GPU pods, five 1-GPU pods), of every
    queue and level, each break one before a queue below its fair share tries its whole-node pods at
    a later level, and the exchange's chain trades must then move them off, one trade per node. Pod
    by pod they fit into the GPUs left on the nodes already in use. Started from, this decision's
    trades move differently and end lower on some clusters, as the third fill's did: the cycle
    keeps it aside like the third fill's (:func:`vcsat.solver.solve.warm_start`)."""
    return _greedy(problem, by_gain=False, keep_whole=True)


def fill(
    problem: Problem,
    gangs: Iterable[Gang],
    room: Room,
    queue_room: dict[str, dict[str, int]],
    assignment: Assignment,
    held: dict[str, dict[str, int]],
    *,
    by_gain: bool = False,
    in_order: bool = False,
    largest_first: bool = False,
) -> list[Gang]:
    """Place ``gangs`` into ``room`` as the greedy does, adding to ``assignment``: the fair-share
    levels first (:func:`_fill_tier`), then the rest in packing order, which it returns. Also what
    tops up a searched decision with the gangs its room still takes
    (:mod:`vcsat.solver.search.top_up`). ``in_order``: ``gangs`` is a list in packing order already.
    ``largest_first``: each queue's work at a fair-share level is tried largest first
    (:func:`greedy_largest_first`)."""
    packing = room.packing

    def order_key(gang: Gang) -> tuple[int, bool, float, str]:
        key = packing.get(gang.index)
        if key is None:
            key = packing[gang.index] = _packing_order(problem, gang)
        return key

    # Rooms that share their memos (the exchange's top-ups) order the same gangs again and again:
    # each gang's key made once. A room of its own (the greedy's) orders each gang once.
    shared = room.kept is not None
    if in_order and isinstance(gangs, list):
        order = gangs
    else:
        order = sorted(gangs, key=order_key if shared else partial(_packing_order, problem))
    tried: set[int] = set()
    for tier in fair_ranks(problem):
        _fill_tier(
            problem,
            tier,
            order,
            tried,
            room,
            queue_room,
            assignment,
            held,
            by_gain=by_gain,
            largest_first=largest_first,
        )
    for gang in order:
        if gang.index not in tried:
            _place(problem, gang, room, queue_room, assignment, held)
    return order


def _greedy(problem: Problem, *, by_gain: bool, largest_first: bool = False, keep_whole: bool = False) -> Assignment:
    memos = FillMemos.of(problem)
    room = Room(problem, memos=memos)
    room.keep_whole = keep_whole
    queue_room = {name: dict(caps) for name, caps in problem.queue_room.items()}
    assignment = Assignment()
    held = {queue: dict(usage) for queue, usage in problem.queue_usage.items()}
    if memos.order is None:
        memos.order = sorted(problem.candidates, key=partial(_packing_order, problem))
    order = fill(
        problem,
        memos.order,
        room,
        queue_room,
        assignment,
        held,
        by_gain=by_gain,
        in_order=True,
        largest_first=largest_first,
    )
    if problem.interpod is not None and any(need.justifiers for need in problem.interpod.affinity.values()):
        # A gang whose affinity needs another gang of this cycle may have come before it: once
        # more, now that the others are placed (kube-scheduler would retry it likewise).
        for gang in order:
            if gang.index not in assignment.placed and any(c in problem.isolated for c in gang.classes):
                _place(problem, gang, room, queue_room, assignment, held)
    return assignment


def _packing_order(problem: Problem, gang: Gang) -> tuple[int, bool, float, str]:
    """Job order, except that within one priority the gangs confined to one topology domain go
    first: they need whole nodes side by side, which the smaller gangs placed before them would
    break up; the others fit into what is left (first-fit decreasing)."""
    return (-gang.rank, problem.highest_tier(gang) is None, gang.created, gang.key)


def _fill_tier(
    problem: Problem,
    tier: int,
    order: list[Gang],
    tried: set[int],
    room: Room,
    queue_room: dict[str, dict[str, int]],
    assignment: Assignment,
    held: dict[str, dict[str, int]],
    *,
    by_gain: bool,
    largest_first: bool = False,
) -> None:
    """One queue fair-share level: the queues it can raise, the least filled first (on the
    resource the level measures; each first up to its target, :func:`_targets`, then on) or,
    ``by_gain``, the one whose next gang adds the most to the level per unit of that resource it
    takes first (the least filled among equals), each with its work of this tier's priorities in
    job order, until each is at its deserved share or out of work. Room only shrinks, so a gang
    that failed once is not tried again. ``largest_first``: each queue's gangs of the level are
    tried by what they ask of the level's resource, most first, then in job order."""
    share: dict[str, tuple[str, int]] = {}
    for queue, name, deserved, _held, _asked in fair_terms(problem, tier):
        share[queue] = (name, deserved)
    waiting: dict[str, deque[Gang]] = {}
    thresholds = {queue: tier_threshold(problem, queue, tier) for queue in share}
    for gang in order:  # every waiting gang, once per level: no deque made per gang (setdefault's)
        threshold = thresholds.get(gang.queue)
        if threshold is not None and gang.rank >= threshold and gang.index not in tried:
            queued = waiting.get(gang.queue)
            if queued is None:
                queued = waiting[gang.queue] = deque()
            queued.append(gang)
    if largest_first:
        for queue in waiting:
            waiting[queue] = _largest_first(problem, room, waiting[queue], share[queue][0])

    # Filled equally, each queue first goes up to its target, the level's best split of the free
    # room (:mod:`vcsat.solver.shares.level_targets`), in the same order: one queue reaching its
    # target waits until the others have reached theirs, then all go on towards their shares.
    targets = {} if by_gain else _targets(problem, room, share, held, waiting)
    tier_keys = _TierKeys(problem, room, share, held, waiting, targets, by_gain)
    scale = tier_keys.scale
    key = tier_keys.key
    # Each queue's order key and its name (ties go by name). The key ends with the queue's fill.
    # Filled equally, a queue's key changes only when a gang was placed for it; filled by gain, it
    # also depends on the queue's next gang, so it is made again after every gang.
    keys: dict[str, tuple[tuple[int, int] | tuple[Ratio, int], str]] = {}
    for queue in waiting:
        keys[queue] = key(queue)
    # The queue to serve next is found again only when some key changed or it ran out of work:
    # a gang that does not fit changes no key (filled equally), and most of an exchange's top-ups'
    # gangs do not fit, so the same queue is served again without comparing the others.
    first: str | None = None
    while waiting:
        queue = first if first is not None else min(waiting, key=keys.__getitem__)
        if keys[queue][0][-1] >= scale:
            break  # every queue left is at its share: no queue gains more at this level
        gang = waiting[queue].popleft()
        first = queue
        if not waiting[queue]:
            del waiting[queue]
            first = None
        tried.add(gang.index)
        if _place(problem, gang, room, queue_room, assignment, held) or by_gain:
            first = None
            if queue in waiting:
                keys[queue] = key(queue)


def _largest_first(problem: Problem, room: Room, gangs: deque[Gang], name: str) -> deque[Gang]:
    """``gangs`` (in job order) by what they ask of resource ``name``, most first; ties in job order."""
    sized: list[tuple[int, int, Gang]] = []
    for position, gang in enumerate(gangs):
        sized.append((-_gang_asks(problem, room, gang, name), position, gang))
    sized.sort(key=_size_and_position)
    return deque(gang for _asks, _position, gang in sized)


def _size_and_position(item: tuple[int, int, Gang]) -> tuple[int, int]:
    return item[0], item[1]


class _TierKeys:
    """The order keys of one fair-share level's queues (:func:`_fill_tier`).

    A class rather than functions nested in the fill: compiled (docs/compiled-build.md), nested
    functions share an environment object that refers to them, a reference cycle that would keep
    the fill's room alive until the collector's next full pass.
    """

    def __init__(
        self,
        problem: Problem,
        room: Room,
        share: dict[str, tuple[str, int]],
        held: dict[str, dict[str, int]],
        waiting: dict[str, deque[Gang]],
        targets: dict[str, int],
        by_gain: bool,
    ) -> None:
        self.problem = problem
        self.room = room
        self.share = share
        self.held = held
        self.waiting = waiting
        self.targets = targets
        self.by_gain = by_gain
        # The keys are fractions over a queue's deserved amount, each scaled by one common
        # multiple of them all: whole numbers that compare as the fractions do, exactly, and cheaply.
        self.scale = math.lcm(*(deserved for _name, deserved in share.values()))

    def fill(self, queue: str) -> int:
        name, deserved = self.share[queue]
        return self.held.get(queue, {}).get(name, 0) * (self.scale // deserved)

    def gain(self, queue: str) -> Ratio:
        # The level sums each queue's concave utility of its filled share, so a gang adds the
        # utility's rise over the share it takes, divided by what it takes: a queue that deserves
        # less gains more per unit on the same slope, which filling every queue to equal shares
        # gives up, and a steeper slope (a less filled queue) weighs more. The rise is taken over
        # the queue's next gang whole, not its next unit: a big gang that crosses into flatter
        # pieces, or past the queue's share, gains less per unit than the slope where the queue
        # stands says, and a fill that believed the slope would spend room on it that the other
        # queues' gangs raise the level more with.
        name, deserved = self.share[queue]
        now = min(self.held.get(queue, {}).get(name, 0), deserved)
        # Work that takes none of the resource is ranked by the slope where the queue stands.
        taken = max(1, _gang_asks(self.problem, self.room, self.waiting[queue][0], name))
        rise = _scaled_utility(min(now + taken, deserved), deserved) - _scaled_utility(now, deserved)
        return Ratio(-rise, taken * deserved)  # negated: the highest gain orders first

    def past_target(self, queue: str) -> int:
        name, _deserved = self.share[queue]
        return int(self.held.get(queue, {}).get(name, 0) >= self.targets[queue])

    def key(self, queue: str) -> tuple[tuple[int, int] | tuple[Ratio, int], str]:
        if self.by_gain:
            return (self.gain(queue), self.fill(queue)), queue
        return (self.past_target(queue), self.fill(queue)), queue


def _targets(
    problem: Problem,
    room: Room,
    share: dict[str, tuple[str, int]],
    held: dict[str, dict[str, int]],
    waiting: dict[str, deque[Gang]],
) -> dict[str, int]:
    """Per waiting queue, its target at the level (:func:`level_targets`), the queues measured on
    one resource sharing its free room (on nodes where nothing is overcommitted)."""
    by_name: dict[str, list[str]] = {}
    for queue in waiting:
        by_name.setdefault(share[queue][0], []).append(queue)
    targets: dict[str, int] = {}
    for name, queues in by_name.items():
        r = problem.resource_index(name)
        free = room.free_total(r)
        claims = [
            LevelClaim(
                deserved=share[queue][1],
                held=held.get(queue, {}).get(name, 0),
                asks=_waiting_asks(problem, room, waiting[queue], name),
            )
            for queue in queues
        ]
        targets.update(zip(queues, level_targets(claims, free, DRF_PIECES), strict=True))
    return targets


def _waiting_asks(problem: Problem, room: Room, gangs: Iterable[Gang], name: str) -> int:
    """What ``gangs`` ask of resource ``name`` together (:func:`_gang_asks` of each, summed): read
    off the memo in a loop, each level of every fill sums every waiting gang's asks."""
    memo = room.gang_asks
    total = 0
    for gang in gangs:
        asks = memo.get((gang.index, name))
        total += asks if asks is not None else _gang_asks(problem, room, gang, name)
    return total


def _asks(problem: Problem, gang: Gang, name: str) -> int:
    """What all of the gang's pods ask of resource ``name``: what placing it whole takes."""
    r = problem.resource_index(name)
    return sum(len(problem.classes[c].pods) * problem.shapes[problem.classes[c].shape].request[r] for c in gang.classes)


def _gang_asks(problem: Problem, room: Room, gang: Gang, name: str) -> int:
    """:func:`_asks`, per gang and resource once for the rooms that share the memo (:class:`KeptRankings`)."""
    asks = room.gang_asks.get((gang.index, name))
    if asks is None:
        asks = room.gang_asks[(gang.index, name)] = _asks(problem, gang, name)
    return asks


def _scaled_utility(amount: int, deserved: int) -> int:
    """The concave utility of holding ``amount`` of a share of ``deserved`` (at most all of it),
    times ``deserved``: exact in whole numbers, where the share in thousandths is a fraction."""
    # A loop, not min() over a generator: the fill by gain asks twice for every gang it ranks.
    lowest = _SCALED_PIECES[0][0] * amount + _SCALED_PIECES[0][1] * deserved
    for scaled_slope, offset in _SCALED_PIECES:
        value = scaled_slope * amount + offset * deserved
        if value < lowest:
            lowest = value
    return lowest


_PIECES = tuple(utility_pieces())
"""The utility's pieces, made once (the fill by gain reads them for every gang it ranks)."""
_SCALED_PIECES = tuple((slope * SHARE_SCALE, offset) for slope, offset in _PIECES)
"""The pieces with each slope times :data:`SHARE_SCALE` (whole numbers: the same products)."""


def _place(
    problem: Problem,
    gang: Gang,
    room: Room,
    queue_room: dict[str, dict[str, int]],
    assignment: Assignment,
    held: dict[str, dict[str, int]],
) -> bool:
    one = _one_pod(problem, gang, room)
    if one is None and _known_not_to_fit(problem, gang, room):
        return False
    lineage = room.caps_of.get(gang.queue)
    if lineage is None:
        lineage = room.caps_of[gang.queue] = problem.caps_of(gang.queue)
    lineage_caps = [queue_room[q] for q in lineage]
    if one is not None:
        node = _fit_one(problem, gang, room, lineage_caps, one)
        if node is None:
            return False
        _placed_one(problem, gang, assignment, held, lineage_caps, one, node)
        return True
    taken = fit_topology_first(problem, gang, room, lineage_caps)
    if taken is None:
        return False
    assignment.placed.add(gang.index)
    usage = held.setdefault(gang.queue, {})
    count, shape_slots, gang_slots = assignment.count, assignment.shape_slots, assignment.gang_slots
    per_shape: dict[int, int] = {}
    for class_index, shape_index, node in taken:
        count[class_index] = count.get(class_index, 0) + 1
        key = (shape_index, node)
        shape_slots[key] = shape_slots.get(key, 0) + 1
        slot = (gang.index, shape_index, node)
        gang_slots[slot] = gang_slots.get(slot, 0) + 1
        per_shape[shape_index] = per_shape.get(shape_index, 0) + 1
    for shape_index, pods in per_shape.items():  # whole numbers: k pods charged at once as one by one
        charge(problem, problem.shapes[shape_index].request, pods, usage, lineage_caps)
    return True


def _one_pod(problem: Problem, gang: Gang, room: Room) -> PodClass | None:
    """The gang's one pod class when the gang is one pod that alone makes it whole, with no
    topology and no rule between pods (pod affinity, spread, volume attach limits): most gangs,
    whose placement is one node query (:func:`_fit_one`); None for every other gang."""
    classes = gang.classes
    if len(classes) != 1 or gang.need > 1 or gang.index in room.topology_gangs:
        return None
    pod_class = problem.classes[classes[0]]
    if len(pod_class.pods) != 1 or pod_class.index in problem.isolated:
        return None
    if room.spread is not None and pod_class.index in room.spread.of_class:
        return None
    if problem.shapes[pod_class.shape].volumes:
        return None
    task = pod_class.task
    for name, need in gang.task_need.items():
        if need > (1 if name == task else 0):
            return None
    return pod_class


def _fit_one(problem: Problem, gang: Gang, room: Room, caps: list[dict[str, int]], pod_class: PodClass) -> int | None:
    """The node :func:`fit_topology_first` gives a gang of one pod (:func:`_one_pod`), the pod
    taken there; None when it has none (the room as it was).

    Why it is the same: such a gang has one trial, anywhere (:func:`_domain_attempts`), of one pod;
    the trial's bookkeeping (:meth:`Room.open_trial`) only tells a kept gang's room from one given
    back, and one pod either is taken and kept or takes nothing. Its query's key is
    :func:`_plain_key`'s (what :func:`_known_not_to_fit` looks up), asked first as there; then the
    capabilities (the pod fits under one of ``amount`` > 0 when ``cap // amount`` >= 1, ``cap`` >=
    ``amount``); then the node query, noted when it finds nothing, as a trial that took nothing notes it.

    Why: most gangs are one pod, and the trial's general steps (the holder, the trial, the per-class
    capability counts, the rule checks, the wholeness test) cost more than its one node query."""
    _pod_class, shape, asks = _class_plan(problem, gang, room)[0]
    found = room.shape_queries.get(shape.index)
    if found is None:
        found = room.shape_queries[shape.index] = _node_query(problem, room, shape, None, None)
    query, choose, exact = found
    full = room.full
    if query in full:
        return None
    for limits in caps:
        for name, cap in limits.items():
            amount = asks.get(name, 0)
            if amount > 0 and cap < amount:
                return None
    node = choose(room)
    if node is None:
        if exact:
            room.note_full(query)
        return None
    room.take(node, shape.request)
    return node


def _placed_one(
    problem: Problem,
    gang: Gang,
    assignment: Assignment,
    held: dict[str, dict[str, int]],
    lineage_caps: list[dict[str, int]],
    pod_class: PodClass,
    node: int,
) -> None:
    """Count a gang of one pod placed on ``node`` (:func:`_fit_one`) as :func:`_place` counts a gang."""
    assignment.placed.add(gang.index)
    usage = held.setdefault(gang.queue, {})
    count = assignment.count
    count[pod_class.index] = count.get(pod_class.index, 0) + 1
    shape_index = pod_class.shape
    shape_slots, gang_slots = assignment.shape_slots, assignment.gang_slots
    key = (shape_index, node)
    shape_slots[key] = shape_slots.get(key, 0) + 1
    slot = (gang.index, shape_index, node)
    gang_slots[slot] = gang_slots.get(slot, 0) + 1
    charge(problem, problem.shapes[shape_index].request, 1, usage, lineage_caps)


def _known_not_to_fit(problem: Problem, gang: Gang, room: Room) -> bool:
    """Whether the gang, with no topology and no class under a rule, has every pod class (with
    pods) whose node query anywhere the room already knows finds no node (:attr:`Room.full`): its
    trials would take nothing and leave the room as it was (no node chosen, no ranking read), so
    they are not made.

    Why it is the same: such a gang's trials are at most two (all on the fullest node, then
    anywhere: :func:`_domain_attempts`), and in each every class's pods stop at their first query.
    Anywhere, that query is the one known to find nothing; on one node, its query looks at an
    eligible node among those the known-empty query looks at, in a room no larger (room a kept gang
    leaves only shrinks, and a trial only takes), so it finds nothing too. A class with no pods
    asks nothing and is passed over by both.

    Why: the exchange's top-ups try most waiting gangs again in every room, most of them failing,
    and most of the trials that take nothing are such gangs, of one pod or several
    (benchmarks/RESULTS.md, sessions 20 and 28); each trial costs the gang's capabilities, plan
    and trial bookkeeping, many times this look-up. Gangs with a topology, or under a rule (pod
    affinity, spread, volume attach limits) are tried as before."""
    if gang.index in room.topology_gangs:
        return False
    classes = gang.classes
    if len(classes) == 1 and room.kept is None:
        # most of the greedy's gangs, each asked about once: their one key, unmemoised (a look-up
        # costs as much); the exchange's rooms share the memo and ask again in every room
        pod_class = problem.classes[classes[0]]
        key = _plain_key(problem, pod_class, room)
        return key is not None and bool(pod_class.pods) and key in room.full
    keys = room.plain_keys.get(gang.index)
    if keys is None:
        keys = room.plain_keys[gang.index] = _plain_keys(problem, gang, room)
    if not keys:
        return False
    full = room.full
    if len(keys) == 1:
        return keys[0] in full
    return all(key in full for key in keys)


def _plain_keys(problem: Problem, gang: Gang, room: Room) -> tuple[Hashable, ...]:
    """The gang's node query keys anywhere (:meth:`Room.query_key`), one per pod class with pods;
    none when a class is under a rule (pod affinity, spread, volume attach limits) or none has pods."""
    keys: list[Hashable] = []
    for c in gang.classes:
        pod_class = problem.classes[c]
        key = _plain_key(problem, pod_class, room)
        if key is None:
            return ()
        if pod_class.pods:
            keys.append(key)
    return tuple(keys)


def _plain_key(problem: Problem, pod_class: PodClass, room: Room) -> Hashable | None:
    """The class's node query key anywhere (:meth:`Room.query_key`); None when the class is under
    a rule (pod affinity, spread, volume attach limits), whose queries are asked otherwise."""
    shape = problem.shapes[pod_class.shape]
    if pod_class.index in problem.isolated or shape.volumes:
        return None
    if room.spread is not None and pod_class.index in room.spread.of_class:
        return None
    return room.query_key(shape.request, shape.fits, None)


def class_keys(problem: Problem) -> list[tuple[str, int]]:
    """Per pod class of ``problem``, (its gang's queue, its shape): what a decision's pods are
    counted by against the queues (:func:`vcsat.solver.search.top_up.charged`)."""
    return [(problem.gangs[pod_class.gang].queue, pod_class.shape) for pod_class in problem.classes]


def sharing_shapes(problem: Problem) -> frozenset[int]:
    """The shapes whose pods ask a GPU share (:func:`shares_gpu`)."""
    if res.GPU_MILLI not in problem.resources:
        return frozenset()
    return frozenset(shape.index for shape in problem.shapes if shares_gpu(problem, shape.request))


def shares_gpu(problem: Problem, request: tuple[int, ...]) -> bool:
    """Whether a pod of ``request`` asks a GPU share (thousandths beyond its whole GPUs): what
    :meth:`Room.take` places device by device."""
    if res.GPU_MILLI not in problem.resources:
        return False
    whole = request[problem.resources.index(res.GPU)] if res.GPU in problem.resources else 0
    return request[problem.resources.index(res.GPU_MILLI)] - FULL_GPU_MILLI * whole > 0


def charge(
    problem: Problem, request: tuple[int, ...], count: int, usage: dict[str, int], lineage_caps: list[dict[str, int]]
) -> None:
    """Count ``count`` pods of ``request`` in a queue's ``usage`` and against every capability of
    its lineage (``lineage_caps``: the queue's and its ancestors' room left)."""
    for r, name in enumerate(problem.resources):
        usage[name] = usage.get(name, 0) + count * request[r]
    for caps in lineage_caps:
        for name in caps:
            if name in problem.resources:
                caps[name] -= count * request[problem.resource_index(name)]


def fit_topology_first(problem: Problem, gang: Gang, room: Room, caps: list[dict[str, int]]) -> Taken | None:
    """A topology gang tries each domain of the finest tier, then of coarser tiers (the fullest
    domain that fits first, to keep roomy ones whole), then anywhere unless its networkTopology is
    hard; other gangs go anywhere."""
    classes = gang.classes
    if len(classes) == 1 and len(problem.classes[classes[0]].pods) == 1 and gang.index not in room.topology_gangs:
        return fit_gang(problem, gang, room, caps)  # one pod, no topology: anywhere, its one trial (_domain_attempts)
    for nodes in _domain_attempts(problem, gang, room):
        taken = fit_gang(problem, gang, room, caps, nodes)
        if taken is not None:
            return taken
    return None


FEW_ATTEMPTS = 2
"""A gang with more trials than this to make has the hopeless ones skipped (:meth:`Room.holder`)."""


def _domain_attempts(problem: Problem, gang: Gang, room: Room) -> Iterator[list[int] | None]:
    """The node lists a gang's trials are made on, in order (None: anywhere). A gang with more
    than :data:`FEW_ATTEMPTS` of them has those its holder (:meth:`Room.holder`) calls hopeless
    left out: per topology tier, all domains at once from the holder's answers, before any list of
    nodes is made (most domains of a tier are hopeless for a gang that fits in few)."""
    classes = gang.classes
    if len(classes) == 1 and len(problem.classes[classes[0]].pods) == 1 and gang.index not in room.topology_gangs:
        yield None  # one pod, no topology: anywhere (most gangs; what follows would say the same)
        return
    sizes = room.gang_sizes.get(gang.index)
    if sizes is None:
        sizes = (
            sum(
                problem.shapes[problem.classes[c].shape].gpus * min(len(problem.classes[c].pods), max(1, gang.need))
                for c in gang.classes
            ),
            sum(len(problem.classes[c].pods) for c in gang.classes),
        )
        room.gang_sizes[gang.index] = sizes
    needed, pods = sizes
    head: list[list[int]] = []
    if pods > 1 and needed > 0:
        # All on one node first (NVLink beats any network): the fullest node that has the GPUs.
        fullest = room.fullest_with(needed)
        if fullest is not None and not (room.keep_whole and _wholly_free(problem, room, fullest)):
            head.append([fullest])
    domains = problem.domains
    if domains is None or gang.index not in room.topology_gangs:
        yield from head  # at most two trials: none is judged beforehand
        yield None
        return
    hard = problem.highest_tier(gang)
    tiers: list[tuple[int, NDArray[np.int64]]] = []
    for tier in domains.tiers:
        if hard is not None and tier > hard:
            break
        tiers.append((tier, room.roomy(tier, needed)))  # fewer free GPUs than needed cannot hold it
    anywhere = hard is None
    attempts = len(head) + sum(len(positions) for _, positions in tiers) + anywhere
    holder = room.holder(problem, gang) if attempts > FEW_ATTEMPTS else None
    # Skipped trials are those that would fail and leave nothing behind (Room.holder): the same
    # trials are made, in the same order, as without the holder, less those.
    near = problem.running_domains.get(gang.index)
    if near:
        # Its PodGroup has pods running: the trials nearest them first (:mod:`nearest_trials`).
        kept = [nodes for nodes in head if holder is None or holder.may_hold(nodes)]
        if holder is not None:
            tiers = [(tier, positions[holder.tier_holds(tier)[positions]]) for tier, positions in tiers]
        yield from nearest_first(domains, near, kept, tiers, room.tier_names, room.tier_nodes)
        if anywhere:
            yield None
        return
    for nodes in head:
        if holder is None or holder.may_hold(nodes):
            yield nodes
    for tier, positions in tiers:
        if holder is not None:
            positions = positions[holder.tier_holds(tier)[positions]]
        yield from room.domain_lists(tier, positions)
    if anywhere:
        yield None


def _wholly_free(problem: Problem, room: Room, node: int) -> bool:
    """Whether every GPU of ``node`` is free in ``room`` (a node without GPUs never is)."""
    gpu = room.gpu
    total = problem.nodes[node].gpus
    return gpu is not None and total > 0 and room.free[node][gpu] >= total


Taken = list[tuple[int, int, int]]
"""(pod class, shape, node) per placed pod."""


def fit_gang(
    problem: Problem, gang: Gang, room: Room, caps: list[dict[str, int]], within: list[int] | None = None
) -> Taken | None:
    """Best-fit the gang's pods into ``room`` (only onto ``within`` when given); keep them there if
    the gang is whole, else undo.

    Every pending pod is tried (an elastic gang takes what fits beyond its minimum).
    """
    room.open_trial()
    taken = _try_gang(problem, gang, room, caps, within)
    whole = _whole(problem, gang, taken)
    if not whole:
        undo(problem, room, taken)
    room.close_trial(kept=whole)
    return taken if whole else None


def _whole(problem: Problem, gang: Gang, taken: Taken) -> bool:
    """Whether these pods make the gang whole (its minimum, and each task's)."""
    if len(taken) < max(1, gang.need):
        return False
    if not gang.task_need:
        return True
    per_task: dict[str, int] = {}
    for class_index, _, _ in taken:
        task = problem.classes[class_index].task
        per_task[task] = per_task.get(task, 0) + 1
    return all(per_task.get(task, 0) >= need for task, need in gang.task_need.items())


def _try_gang(problem: Problem, gang: Gang, room: Room, caps: list[dict[str, int]], within: list[int] | None) -> Taken:
    """Each of the gang's pods onto its node while one fits, in :func:`fit_gang`'s order."""
    taken: Taken = []
    used: dict[str, int] = {}
    for pod_class, shape, asks in _class_plan(problem, gang, room):
        request = shape.request
        # The capabilities stay as they are during the trial and each pod of the class adds the
        # same amounts: how many pods they still take is one division per capped resource (the
        # first pod j with used + (j + 1) × amount > cap is pod (cap − used) // amount).
        most = len(pod_class.pods)
        counted: dict[str, int] = {}
        for limits in caps:
            for name, cap in limits.items():
                amount = asks.get(name, 0)
                if amount > 0:
                    counted[name] = amount
                    most = min(most, (cap - used.get(name, 0)) // amount)
        tracker = room.interpod if pod_class.index in problem.isolated else None
        spread = room.spread if room.spread is not None and pod_class.index in room.spread.of_class else None
        attach = room.attach if shape.volumes else None
        allow: Allow | None = None
        if tracker is not None or spread is not None or attach is not None:  # most classes: no rule
            allow = _both(
                partial(tracker.allows, pod_class.index) if tracker is not None else None,
                partial(spread.allows, pod_class.index) if spread is not None else None,
            )
            if attach is not None:
                allow = _both(allow, partial(_attach_allows, attach, shape, room))
        # The node query of every pod of the class, chosen once (it depends on the class alone),
        # and without rules or a domain once per shape for the whole fill.
        plain = within is None and allow is None
        found = room.shape_queries.get(shape.index) if plain else None
        if found is None:
            found = _node_query(problem, room, shape, within, allow)
            if plain:
                room.shape_queries[shape.index] = found
        query, choose, exact = found
        placed = 0
        for _ in range(most):
            if tracker is not None:
                tracker.begin()
            if query in room.full:
                node = None
                if allow is None:
                    room.note_full(query)
            else:
                node = choose(room)
                if node is None and exact and allow is None:
                    room.note_full(query)
            if node is None:
                if tracker is not None:
                    tracker.stuck = True
                break
            room.take(node, request)
            if tracker is not None:
                tracker.place(pod_class.index, node)
            if spread is not None:
                spread.add(pod_class.index, node, 1)
            if attach is not None:
                room.attach_slots(node, attach.add(shape.index, node, 1))
            taken.append((pod_class.index, shape.index, node))
            placed += 1
        for name, amount in counted.items():
            used[name] = used.get(name, 0) + placed * amount
    return taken


NodeQuery = tuple[Hashable, Callable[["Room"], "int | None"], bool]
"""What finds one pod's node: the query's key (:meth:`Room.query_key`), the query (asked of the
room), and whether it finds no node only when none fits. The query is given the room rather than
holding it: the room keeps its queries (:attr:`Room.shape_queries`), and a query holding the room
would make every room a reference cycle, freed only by a full collection (in a cycle, whose
collector is paused, never), with all it holds."""


def _node_query(problem: Problem, room: Room, shape: Shape, within: list[int] | None, allow: Allow | None) -> NodeQuery:
    """The node query of one pod of ``shape`` (onto ``within`` when given, under ``allow``)."""
    least_fragmenting, scarce = room.choosers(problem)
    request = shape.request
    query = room.query_key(request, shape.fits, within)
    if within is not None:
        return query, methodcaller("best_fit_in", request, shape.fits, within, allow), True
    if shape.preference:
        return query, methodcaller("preferred_fit", shape, allow), True
    if least_fragmenting is not None and allow is None:
        fragmenting = least_fragmenting
        return query, lambda asked: fragmenting(asked, shape), False
    if scarce is not None and room.priced(problem, scarce, shape):
        # scarce GPU pools priced (vcsat.solver.pricing.scarcity): cheapest, then best fit
        return query, methodcaller("cheapest_fit", scarce, shape, allow), True
    return query, methodcaller("best_fit", request, shape.gpus, shape.fits, allow), True


ClassPlan = list[tuple[PodClass, Shape, dict[str, int]]]
"""A gang's pod classes in the order its pods are tried, each with its shape and what one pod asks
per resource name (the resources it asks some of)."""


def _class_plan(problem: Problem, gang: Gang, room: Room) -> ClassPlan:
    """The gang's :data:`ClassPlan`, made on its first trial in this room (a gang is tried once per
    topology attempt, and the plan is the same for each)."""
    plan = room.class_plans.get(gang.index)
    if plan is None:
        classes = [problem.classes[c] for c in gang.classes]
        if len(classes) > 1:
            classes.sort(key=lambda pc: (-problem.shapes[pc.shape].gpus, pc.index))
        plan = []
        for pod_class in classes:
            shape = problem.shapes[pod_class.shape]
            asks = room.shape_asks.get(shape.index)
            if asks is None:  # per shape once: many gangs' classes share a shape
                pairs = zip(problem.resources, shape.request, strict=True)
                asks = {name: amount for name, amount in pairs if amount > 0}
                room.shape_asks[shape.index] = asks
            plan.append((pod_class, shape, asks))
        room.class_plans[gang.index] = plan
    return plan


def _attach_allows(attach: AttachTracker, shape: Shape, room: Room, node: int) -> bool:
    return attach.allows(shape.index, shape.request, room.free[node], node)


def _both(first: Allow | None, second: Allow | None) -> Allow | None:
    """Both rules' node tests (inter-pod rules and topology spread), or the one there is."""
    if first is None or second is None:
        return first or second
    return lambda node: first(node) and second(node)


def undo(problem: Problem, room: Room, taken: Taken) -> None:
    for class_index, shape_index, node in reversed(taken):
        room.give(node, problem.shapes[shape_index].request)
        if room.interpod is not None:
            room.interpod.remove(class_index, node)
        if room.spread is not None:
            room.spread.add(class_index, node, -1)
        if room.attach is not None:
            room.attach_slots(node, room.attach.add(shape_index, node, -1))
