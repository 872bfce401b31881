"""Each queue's deserved share of the cluster: weighted water-filling per resource, down the queue tree.

Why: fairness across queues is the first level of the objective (design.md), and reclaim and the
``QueueOverused`` explanation compare what a queue holds with what it deserves. The deserved share
must therefore be one exact number per (queue, resource) that the model, the validator and a user
asking "why does my job wait" all read alike. It is computed here, before the solve, from the
snapshot alone, in the exact integer units of :mod:`vcsat.model.resources`.

The algorithm, exactly. Each resource ``r`` is shared on its own (the shares of cpu and memory do
not interact). Per queue ``q``:

- own demand ``D(q)``: what q's pods hold now plus what its pending pods ask; a Closed queue's
  pending pods ask nothing, since nothing new is placed for it;
- capability ``cap(q)``: ``q.capability[r]``, unbounded when unset;
- capped demand ``C(q) = min(cap(q), D(q) + Σ C(child))``: what the subtree can use at all;
- guarantee ``G(q) = min(cap(q), max(q.guarantee[r], Σ G(child)))``: a parent holds at least what
  its children are guaranteed; nobody is guaranteed more than it may ever hold;
- explicit share ``E(q) = q.deserved[r]`` when the queue sets it (Volcano's capacity plugin);
- weight ``w(q) = max(1, q.weight)`` (the Queue CRD's minimum is 1).

The cluster total (:func:`cluster_total`) is split among the top-level queues, and each queue's
share among its children, recursively, by :func:`split`:

0. if the siblings' guarantees exceed the amount, the guarantees themselves are water-filled (caps
   ``G``) and that is all (an overcommitted configuration still gets ``Σ shares ≤ amount``);
1. siblings with an explicit share come first: each gets ``base = max(G, min(E, C))``; if that does
   not fit beside the other siblings' guarantees, they water-fill that room instead;
2. the other siblings water-fill what remains: ``d = max(G, min(C, w·λ))`` with the level ``λ``
   as high as the room allows (every sibling at ``max(G, C)`` when the room suffices);
3. room still left goes to explicit siblings whose capped demand exceeds their base, by weight.

An inner queue whose own pods exist (Volcano allows jobs in leaf queues only) competes for its
share as one more child of weight 1. A queue's deserved share is what its whole subtree received.
The level ``λ`` is an exact fraction; shares round down to whole grains (:func:`share_grain`: a
millicore, one, or for bytes a common divisor of the amounts up to a MiB) and the few grains left
over go one each to the siblings with the largest fractional part, ties by name, so every split
hands out exactly ``min(amount, Σ max(G, C))``.

Invariants (tested in tests/test_deserved.py), per resource:

- (I1) conservation: at every parent, and at the top against the total,
  ``Σ children's shares = min(amount, Σ max(G, C))``: work-conserving, never more than there is.
  In particular, if some queue wants more than it deserves (``d < C``), the shares of its siblings
  and itself add up to the whole amount, and at the top to ``min(total, Σ max(G, C))``;
- (I2) ``d(q) ≤ max(G(q), C(q))``: no queue deserves more than it can use unless guaranteed;
- (I3) ``d(q) ≥ G(q)`` whenever the siblings' guarantees fit in the amount;
- (I4) weighted max-min among weighted siblings: if ``i`` wants more (``d_i < max(G_i, C_i)``) and
  ``j`` holds more than its guarantee, then ``(d_j − 1)/w_j < (d_i + 1)/w_i`` (one grain of rounding).

Where it follows Volcano's proportion plugin: water-filling by weight over ``min(request,
capability)`` where request is what a queue's pods hold plus what its pending pods ask, the
result raised to ``guarantee``, and what a queue cannot use flows to the others. A queue's
``spec.priority`` plays no part here, as in Volcano (it only orders queues: who is served first,
see :mod:`vcsat.solver.objectives.fairness`). Where it differs, and why:

- Volcano iterates in rounds and stops when the float remainder stops changing; this is the
  fixed point of that iteration, computed exactly, so the same snapshot gives the same integers.
- Volcano adds each round's split on top of the guarantee-raised value, so a guaranteed queue's
  guarantee absorbs only the first round; here the guarantee is a floor and the level above it is
  common to all (``max(G, min(C, w·λ))``): the share no longer depends on the number of rounds.
- Volcano caps each queue at ``total − Σ guarantees + its guarantee``; here the same effect comes
  from the guarantees being floors in one split, which also handles guarantees exceeding the
  total (step 0) instead of handing out more than exists.
- Volcano's proportion plugin has no hierarchy and no explicit ``deserved``; its capacity plugin
  has both but takes ``deserved`` as given, not capped by demand, and leaves idle room unassigned.
  Here an explicit share is honoured up to what the queue can use and the rest is redistributed,
  so the whole stays work-conserving. A resource missing from an explicit ``deserved`` falls back
  to weighted sharing (Volcano would read it as zero).
- The total leaves out what pods of other schedulers hold (no queue can use that room) and nodes
  that are not Ready; Volcano counts every node's allocatable.
- ``pods`` (a per-node limit, not a shared good) and ``vcsat.io/gpu-milli`` (a share of one device,
  not a node resource) are not shared (:data:`FAIR_EXCLUDED`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from math import gcd

from vcsat.model import Pod, Queue, Snapshot
from vcsat.model import resources as res
from vcsat.solver import pod_sums
from vcsat.solver.shares.water import water_fill

FAIR_EXCLUDED = frozenset({res.PODS, res.GPU_MILLI})
"""Resources that are not shared out: the pods limit, and GPU shares (not a node resource)."""

ROOT_QUEUE = "root"
"""When a queue of this name exists, it is the top of the tree (Volcano's hierarchical queues)."""

OWN_PODS_WEIGHT = 1
"""Weight of an inner queue's own pods when they compete with its children."""


@dataclass(frozen=True)
class QueueShare:
    """One queue's place in the split, per resource; every vector covers the queue's whole subtree."""

    name: str
    deserved: dict[str, int]
    """The share it deserves (the answer of :func:`deserved_shares`)."""
    usage: dict[str, int]
    """What its pods hold now."""
    demand: dict[str, int]
    """What its pods hold plus what its pending pods ask (Closed queues: what they hold)."""
    capped_demand: dict[str, int]
    """``C``: the demand capped by capability, level by level."""
    guarantee: dict[str, int]
    """``G``: the guarantee it is held to, capped by capability."""

    @property
    def entitled(self) -> dict[str, int]:
        """The part of the deserved share the queue can use now: ``min(deserved, capped demand)``.

        A guarantee above demand is reserved but idle; the rest of the cluster may borrow it, and
        reclaim takes it back when the queue's demand returns."""
        return {name: min(amount, self.capped_demand.get(name, 0)) for name, amount in self.deserved.items()}


# --- who belongs where ------------------------------------------------------------------------


def queue_of(pod: Pod, snapshot: Snapshot) -> str | None:
    """The queue a pod counts against, by the model's one rule (:meth:`Snapshot.queue_of`): its
    PodGroup's queue; ``default`` for a pod of ours without a PodGroup; None for pods of other
    schedulers and for pods whose PodGroup is not in the snapshot."""
    return snapshot.queue_of(pod)


def queue_usage(snapshot: Snapshot, *, subtree: bool = False) -> dict[str, dict[str, int]]:
    """What each queue's pods hold now (bound and not finished, terminating included), per
    resource; with ``subtree``, each queue's descendants' pods count for it too. Every queue of
    the snapshot has an entry; a queue named only by a PodGroup appears when it holds something."""
    own = _copy(_own_sums(snapshot)[0])
    return _subtree_sums(snapshot, own) if subtree else own


def queue_demand(snapshot: Snapshot, *, subtree: bool = False) -> dict[str, dict[str, int]]:
    """What each queue's pods hold plus what its pending pods ask; a Closed queue's pending pods ask
    nothing (nothing new is placed for it). ``subtree`` as in :func:`queue_usage`."""
    own = _copy(_own_sums(snapshot)[1])
    return _subtree_sums(snapshot, own) if subtree else own


def cluster_total(snapshot: Snapshot) -> dict[str, int]:
    """The room queues share: the allocatable of Ready nodes less what pods of other schedulers
    hold there (no queue can use that room), never below zero."""
    total, _, foreign = pod_sums.ready_room(snapshot)
    return {name: max(0, amount - foreign.get(name, 0)) for name, amount in total.items()}


_Sums = tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]
_SUMS: dict[int, tuple[Snapshot, _Sums]] = {}


def _own_sums(snapshot: Snapshot) -> _Sums:
    """Per queue, what its own pods hold (bound) and hold or ask (bound, or pending outside a
    Closed queue), carried over from the last snapshot for the pods that did not change
    (:mod:`vcsat.solver.pod_sums`), and remembered for the last few snapshots like
    :func:`fair_shares` (the model builder, admission and the shares all ask). Read-only."""
    found = _SUMS.get(id(snapshot))
    if found is not None and found[0] is snapshot:
        return found[1]
    sums = pod_sums.queue_sums(snapshot)
    if len(_SUMS) >= _SHARES_KEPT:
        del _SUMS[next(iter(_SUMS))]
    _SUMS[id(snapshot)] = (snapshot, sums)
    return sums


def _copy(sums: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    return {name: dict(vector) for name, vector in sums.items()}


def _subtree_sums(snapshot: Snapshot, own: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    tree = QueueTree.of(snapshot)
    out = {name: dict(vector) for name, vector in own.items()}
    for name in tree.bottom_up():
        parent = tree.parent.get(name)
        if parent is not None:
            out[parent] = res.add(out.get(parent, {}), out.get(name, {}))
    return out


# --- the queue tree ---------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueTree:
    """The queues' parent links as the split reads them.

    A parent that is not a queue of the snapshot, and every queue on a cycle of parents, is read
    as top-level (the converter reports such input; here the split must still be total). When a
    queue ``root`` exists, every other parentless queue is its child, as in Volcano.
    """

    parent: dict[str, str | None]
    children: dict[str | None, list[str]] = field(default_factory=dict)
    """Per parent (None: the top), its children sorted by name."""

    @staticmethod
    def of(snapshot: Snapshot) -> QueueTree:
        names = {queue.name for queue in snapshot.queues}
        declared: dict[str, str | None] = {}
        for queue in snapshot.queues:
            parent = queue.parent if queue.parent in names and queue.parent != queue.name else None
            if parent is None and ROOT_QUEUE in names and queue.name != ROOT_QUEUE:
                parent = ROOT_QUEUE
            declared[queue.name] = parent
        on_cycle: set[str] = set()
        for start in declared:
            path: list[str] = []
            seen: set[str] = set()
            node: str | None = start
            while node is not None and node not in seen and node not in on_cycle:
                seen.add(node)
                path.append(node)
                node = declared[node]
            if node is not None and node in seen:
                on_cycle.update(path[path.index(node) :])
        parent_of = {name: (None if name in on_cycle else parent) for name, parent in declared.items()}
        children: dict[str | None, list[str]] = {}
        for name in sorted(parent_of):
            children.setdefault(parent_of[name], []).append(name)
        return QueueTree(parent=parent_of, children=children)

    def bottom_up(self) -> list[str]:
        """Every queue after all of its descendants."""
        order: list[str] = []
        stack: list[tuple[str, bool]] = [(name, False) for name in reversed(self.children.get(None, []))]
        while stack:
            name, expanded = stack.pop()
            if expanded:
                order.append(name)
                continue
            stack.append((name, True))
            stack.extend((child, False) for child in reversed(self.children.get(name, [])))
        return order


# --- the split ----------------------------------------------------------------------------------

_UNBOUNDED = None


@dataclass(frozen=True)
class Claim:
    """One sibling in a split: a queue (its subtree), or an inner queue's own pods."""

    name: str
    weight: int
    capped_demand: int
    guarantee: int
    explicit: int | None


def share_grain(resource: str, room: int, demand: Mapping[str, Mapping[str, int]], queues: Iterable[Queue]) -> int:
    """The grain shares of ``resource`` are handed out in: for bytes the greatest common divisor of a
    MiB and every amount the split reads (room, demands, capabilities, guarantees, explicit
    shares), else 1 (millicores and counts). The split's rounding falls on whole grains; on a
    cluster of whole MiB these are MiB, so the shares are those the model computed when it counted
    MiB, and finer amounts refine the grain as far as they need. Every input is a whole number of
    grains, so nothing is rounded to make them so."""
    if not res.is_byte_resource(resource):
        return 1
    unit = gcd(res.MIB, room)
    for vector in demand.values():
        unit = gcd(unit, vector.get(resource, 0))
    for queue in queues:
        for quota in (queue.capability, queue.deserved, queue.guarantee):
            if quota is not None:
                unit = gcd(unit, quota.get(resource, 0))
    return unit


def split_in_grains(amount: int, claims: Sequence[Claim], unit: int) -> list[int]:
    """:func:`split` with every amount a whole number of ``unit`` (see :func:`share_grain`)."""
    if unit == 1:
        return split(amount, claims)
    grains = [
        Claim(
            claim.name,
            claim.weight,
            claim.capped_demand // unit,
            claim.guarantee // unit,
            None if claim.explicit is None else claim.explicit // unit,
        )
        for claim in claims
    ]
    return [share * unit for share in split(amount // unit, grains)]


def split(amount: int, claims: Sequence[Claim]) -> list[int]:
    """One level of the tree: ``amount`` shared among sibling claims (steps 0 to 3 above)."""
    if not claims:
        return []
    weights = [claim.weight for claim in claims]
    floors = [claim.guarantee for claim in claims]
    if sum(floors) > amount:
        return water_fill(amount, weights, [0] * len(claims), floors)

    explicit = [i for i, claim in enumerate(claims) if claim.explicit is not None]
    weighted = [i for i, claim in enumerate(claims) if claim.explicit is None]
    shares = [0] * len(claims)
    base = {i: max(claims[i].guarantee, min(claims[i].explicit or 0, claims[i].capped_demand)) for i in explicit}
    room_for_explicit = amount - sum(floors[i] for i in weighted)
    if sum(base.values()) > room_for_explicit:
        filled = water_fill(
            room_for_explicit,
            [weights[i] for i in explicit],
            [floors[i] for i in explicit],
            [base[i] for i in explicit],
        )
        for i, share in zip(explicit, filled, strict=True):
            shares[i] = share
        for i in weighted:
            shares[i] = floors[i]
        return shares

    for i in explicit:
        shares[i] = base[i]
    remaining = amount - sum(base.values())
    filled = water_fill(
        remaining,
        [weights[i] for i in weighted],
        [floors[i] for i in weighted],
        [max(floors[i], claims[i].capped_demand) for i in weighted],
    )
    for i, share in zip(weighted, filled, strict=True):
        shares[i] = share
    left = remaining - sum(filled)
    if left > 0 and explicit:
        extra = water_fill(
            left,
            [weights[i] for i in explicit],
            [0] * len(explicit),
            [max(0, claims[i].capped_demand - base[i]) for i in explicit],
        )
        for i, more in zip(explicit, extra, strict=True):
            shares[i] += more
    return shares


_SHARES: dict[tuple[int, tuple[tuple[str, int], ...] | None], tuple[Snapshot, dict[str, QueueShare]]] = {}
_SHARES_KEPT = 4


def fair_shares(snapshot: Snapshot, total: res.Resources | None = None) -> dict[str, QueueShare]:
    """:func:`compute_fair_shares`, remembered for the last few snapshots: one cycle asks for the
    same shares from the model builder, admission and reclaim. The entry keeps the snapshot
    itself, so the identity it is keyed by cannot be reused while it lives."""
    key = (id(snapshot), None if total is None else tuple(sorted(total.items())))
    found = _SHARES.get(key)
    if found is not None and found[0] is snapshot:
        return found[1]
    shares = compute_fair_shares(snapshot, total)
    if len(_SHARES) >= _SHARES_KEPT:
        del _SHARES[next(iter(_SHARES))]
    _SHARES[key] = (snapshot, shares)
    return shares


def compute_fair_shares(snapshot: Snapshot, total: res.Resources | None = None) -> dict[str, QueueShare]:
    """Every queue's deserved share with the quantities it came from (see the module docstring).

    ``total`` is the room to share, per resource; :func:`cluster_total` when None. Resources in
    :data:`FAIR_EXCLUDED` are left out; every other resource named by the total, a demand, a
    guarantee or an explicit share gets a value for every queue.
    """
    room = dict(cluster_total(snapshot) if total is None else total)
    tree = QueueTree.of(snapshot)
    queues = {queue.name: queue for queue in snapshot.queues}
    own_demand = queue_demand(snapshot)
    usage = queue_usage(snapshot, subtree=True)
    demand = queue_demand(snapshot, subtree=True)

    names: set[str] = set(room)
    for name in queues:
        names.update(own_demand.get(name, {}))
        names.update(queues[name].guarantee)
        names.update(queues[name].deserved or {})
    resources = sorted(names - FAIR_EXCLUDED)

    order = tree.bottom_up()
    deserved: dict[str, dict[str, int]] = {name: {} for name in queues}
    capped: dict[str, dict[str, int]] = {name: {} for name in queues}
    guaranteed: dict[str, dict[str, int]] = {name: {} for name in queues}
    for resource in resources:
        capped_r: dict[str, int] = {}
        guarantee_r: dict[str, int] = {}
        for name in order:
            queue = queues[name]
            children = tree.children.get(name, [])
            cap = _capability(queue, resource)
            usable = own_demand.get(name, {}).get(resource, 0) + sum(capped_r[c] for c in children)
            held = max(queue.guarantee.get(resource, 0), sum(guarantee_r[c] for c in children))
            capped_r[name] = usable if cap is _UNBOUNDED else min(cap, usable)
            guarantee_r[name] = held if cap is _UNBOUNDED else min(cap, held)

        unit = share_grain(resource, room.get(resource, 0), own_demand, queues.values())
        share_r: dict[str, int] = {}
        pending: list[tuple[str | None, int]] = [(None, room.get(resource, 0))]
        while pending:
            parent, amount = pending.pop()
            children = tree.children.get(parent, [])
            claims = [_claim(queues[c], resource, capped_r[c], guarantee_r[c]) for c in children]
            if parent is not None and children:
                own = own_demand.get(parent, {}).get(resource, 0)
                cap = _capability(queues[parent], resource)
                if own > 0:
                    usable = own if cap is _UNBOUNDED else min(cap, own)
                    claims.append(Claim("", OWN_PODS_WEIGHT, usable, 0, None))
            for claim, share in zip(claims, split_in_grains(amount, claims, unit), strict=True):
                if claim.name:
                    share_r[claim.name] = share
                    pending.append((claim.name, share))
        for name in queues:
            deserved[name][resource] = share_r.get(name, 0)
            capped[name][resource] = capped_r[name]
            guaranteed[name][resource] = guarantee_r[name]

    return {
        name: QueueShare(
            name=name,
            deserved=deserved[name],
            usage={r: usage.get(name, {}).get(r, 0) for r in resources},
            demand={r: demand.get(name, {}).get(r, 0) for r in resources},
            capped_demand=capped[name],
            guarantee=guaranteed[name],
        )
        for name in sorted(queues)
    }


def deserved_shares(snapshot: Snapshot, total: res.Resources | None = None) -> dict[str, dict[str, int]]:
    """Each queue's deserved share per resource, in model units (its whole subtree's share)."""
    return {name: share.deserved for name, share in fair_shares(snapshot, total).items()}


def _capability(queue: Queue, resource: str) -> int | None:
    if queue.capability is None:
        return _UNBOUNDED
    return queue.capability.get(resource, _UNBOUNDED)


def _claim(queue: Queue, resource: str, capped_demand: int, guarantee: int) -> Claim:
    explicit = None if queue.deserved is None else queue.deserved.get(resource)
    return Claim(queue.name, max(1, queue.weight), capped_demand, guarantee, explicit)
