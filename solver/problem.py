"""The aggregated problem one cycle solves: gangs, pod classes, shapes and node room.

Design.md's rule is never one variable per (pod, node). Replicas of one task are interchangeable,
so a gang's pending pods collapse into *classes* (same task, requests and predicates) and the
solver decides how many of each class to place. Across gangs, classes with the same requests and
the same eligible nodes form a *shape*; capacity is decided as counts per (shape, node), and the
decode hands concrete pods to those slots after the solve.

Everything here is plain Python over the frozen snapshot; nothing knows about CP-SAT, so the greedy
baseline, the CP-SAT model, the decode and the explanations all read one structure.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain as chained

import numpy as np
from numpy.typing import NDArray

from vcsat.model import Node, Pod, PodGroup, Policy, Snapshot
from vcsat.model import resources as res
from vcsat.model.cluster import DEFAULT_QUEUE
from vcsat.model.gpu_topology import GpuTopology, gpu_topology, uniform_topology
from vcsat.model.gpus import FULL_GPU_MILLI
from vcsat.model.hypernodes import DomainTree, resolve_hypernodes
from vcsat.model.queue_rule import queue_in
from vcsat.solver import admission_memo, cycle, node_side
from vcsat.solver.no_node import NoNodeCounts
from vcsat.solver.node_fits import NodeFits
from vcsat.solver.rules import predicates, volumes
from vcsat.solver.rules import spread as spread_rules
from vcsat.solver.rules.attach import SharedAttach, shared_attach
from vcsat.solver.rules.interpod import INTERPOD, InterPod, Relations, relations
from vcsat.solver.rules.isolation import Isolation, isolation
from vcsat.solver.rules.preferences import PreferenceKey, any_prefer_no_schedule, node_scores, preference_key
from vcsat.solver.shares.deserved import cluster_total, fair_shares, queue_usage
from vcsat.solver.units import Units, units_for

UNLIMITED_VOLUMES = 1 << 30
"""Volume room of a node without a limit (no CSINode limit for a driver, a provisioner for a class)."""

VALUE_SCALE = 1000
"""A pod's value is its dominant share of the largest node, in thousandths (see ``pod_value``)."""


@dataclass(frozen=True)
class Shape:
    """Pods that are interchangeable for capacity: equal requests and equal eligible nodes."""

    index: int
    request: tuple[int, ...]
    """Per resource of :attr:`Problem.resources`."""
    gpus: int
    nodes: tuple[int, ...]
    """Indices into :attr:`Problem.nodes` where one pod of this shape fits now."""
    fits: NodeFits
    """Per eligible node: how many pods of this shape fit there on their own, as arrays (a node
    query reads these: :mod:`vcsat.solver.node_fits`)."""
    eligibility: predicates.EligibilityKey
    """Pods of this shape pass the predicates on the same nodes (see ``predicates.eligibility_key``)."""
    preference: dict[int, int] = field(default_factory=dict)
    """Per node where its pods are preferred (:mod:`vcsat.solver.rules.preferences`), each pod's score
    there above the least; empty for pods without preferences."""
    preference_key: PreferenceKey | None = None
    isolated: int | None = None
    """The one pod class of this shape when the class takes part in rules between pods
    (:mod:`vcsat.solver.rules.isolation`): its bucket then holds this shape alone."""
    volumes: frozenset[str] = frozenset()
    """Its pods' CSI volumes that other pods share (:mod:`vcsat.solver.rules.attach`): counted once
    per node, so the shape takes an exact bucket of its own."""
    anchor: tuple[int, str] | None = None
    """(tier, domain) its gang's running pods hold it to (:attr:`Gang.anchor`): :attr:`nodes` are
    that domain's, and its bucket holds no shape of another domain."""
    _upper: dict[int, int] | None = field(default=None, init=False, repr=False, compare=False)
    """:attr:`upper` once made. A field, not :func:`~vcsat.model.derived.derived`'s ``__dict__``
    entry: compiled (docs/compiled-build.md), this class has fixed slots and no ``__dict__``."""

    @property
    def upper(self) -> dict[int, int]:
        """:attr:`fits` as a dict by node (ascending), made when first read."""
        return _upper(self)


@dataclass(frozen=True)
class Bucket:
    """Shapes that differ only in divisible resources (cpu, memory, ...), for a smaller model.

    Real workloads have hundreds of distinct cpu/memory requests but few GPU counts; per-node
    variables per shape would be hundreds of thousands. A bucket merges shapes with the same GPU
    count, the same other extended resources and the same predicates, and takes the *smallest*
    member's request on each resource: a relaxation, so its optimum bounds the true optimum from
    above. The decode then hands real pods to the bucket's slots with their real requests; where a
    node cannot take them, the node is *refined* (solved with exact per-shape variables) and the
    search runs again. A decision is therefore always exact, and its bound honest.
    """

    index: int
    shapes: tuple[int, ...]
    request: tuple[int, ...]
    """Per resource, the least any member shape asks."""
    gpus: int
    nodes: tuple[int, ...]
    fits: NodeFits
    """Per node where some member fits: how many pods of the bucket fit there, relaxed."""
    _upper: dict[int, int] | None = field(default=None, init=False, repr=False, compare=False)
    """:attr:`upper` once made (a field: see :attr:`Shape._upper`)."""

    @property
    def upper(self) -> dict[int, int]:
        """:attr:`fits` as a dict by node, made when first read (a cycle that stops before the
        model is built never reads it)."""
        return _upper(self)

    @property
    def exact(self) -> bool:
        return len(self.shapes) == 1


def _upper(owner: Shape | Bucket) -> dict[int, int]:
    """``owner.fits`` as a dict by node, made on the first call and kept in ``owner._upper`` (the
    owner is frozen for its other fields; this one is a cache of them)."""
    # getattr: compiled, a native class leaves a field that ``init=False`` keeps out of __init__
    # undefined rather than at its default.
    upper: dict[int, int] | None = getattr(owner, "_upper", None)
    if upper is None:
        upper = owner.fits.as_dict()
        object.__setattr__(owner, "_upper", upper)
    return upper


@dataclass(frozen=True)
class PodClass:
    """Pending pods of one gang that are interchangeable: same task, requests and predicates."""

    index: int
    gang: int
    task: str
    shape: int
    pods: tuple[Pod, ...]
    """In placement order: oldest first, then by key."""
    value: int
    """Value of placing one pod, in :data:`VALUE_SCALE` units of dominant share."""


@dataclass
class Gang:
    """A unit of all-or-nothing placement: a PodGroup's pending pods, or a lone pod."""

    index: int
    key: str
    """The PodGroup key, or the pod key for a pod with no PodGroup."""
    group: PodGroup | None
    queue: str
    priority: int
    created: float
    classes: list[int] = field(default_factory=list)
    rank: int = 0
    """The priority the objective ranks it by: its priority, or 0 for all with the priority plugin off."""
    admitted: bool = False
    """Enqueued (Inqueue) this cycle or before: its pods may be placed."""
    need: int = 0
    """Pods that must be placed for the gang to run: minMember less the members already running."""
    task_need: dict[str, int] = field(default_factory=dict)
    """Per task, likewise for minTaskMember."""
    held: tuple[Pod, ...] = ()
    """Its pending pods that are never placed (scheduling gates, resource claims): in no class."""
    missing_group: str | None = None
    """The PodGroup its pods name when that PodGroup does not exist (they are then never placed)."""
    anchor: tuple[int, str] | None = None
    """(tier, domain): for a hard ``networkTopology``, the one domain of its tier that holds the
    PodGroup's running pods; its new pods go there too (:func:`running_domains`)."""


NO_DOMAIN = ""
"""The pseudo-domain of nodes that no HyperNode of a tier holds."""


@dataclass(frozen=True)
class Domains:
    """HyperNode tiers as the solver uses them: per node and tier, the domain holding it."""

    tree: DomainTree
    tiers: tuple[int, ...]
    """Ascending; the first is the finest (racks), the last the coarsest (spines, ...)."""
    of_node: tuple[dict[int, str], ...]
    """Per node index: per tier, its domain (:data:`NO_DOMAIN` when none holds it)."""
    members: dict[int, dict[str, list[int]]]
    """Per tier, per domain: its node indices, ascending."""

    def domains(self, tier: int) -> list[str]:
        return sorted(self.members[tier])

    def nodes_in(self, tier: int, domain: str) -> list[int]:
        return self.members[tier].get(domain, [])

    def parent(self, tier: int, domain: str, upper: int) -> str:
        """The tier-``upper`` domain holding a tier-``tier`` domain (their nodes agree)."""
        nodes = self.members[tier].get(domain)
        return self.of_node[nodes[0]][upper] if nodes else NO_DOMAIN


@dataclass(frozen=True)
class Blocked:
    """A gang left out before the solve, with the reason code and the message a user reads."""

    gang: int
    reason: str
    message: str


@dataclass
class Problem:
    snapshot: Snapshot
    policy: Policy
    resources: tuple[str, ...]
    """The resources any pending pod requests: the only ones capacity must watch."""
    nodes: tuple[Node, ...]
    free: list[list[int]]
    """Per node, per resource: allocatable less what bound pods hold (may be negative)."""
    free_gpu_ids: list[tuple[int, ...]]
    """Per node, the whole GPUs no bound pod holds."""
    shared_milli: list[dict[int, int]]
    """Per node, the thousandths in use on each GPU that holds shares."""
    gangs: list[Gang]
    classes: list[PodClass]
    shapes: list[Shape]
    buckets: list[Bucket]
    blocked: dict[int, Blocked]
    """Gangs that cannot be placed this cycle whatever the others do."""
    queue_room: dict[str, dict[str, int]]
    """Per queue with a capability: what it may still take, per capped resource."""
    units: Units
    """What the CP-SAT model divides each resource by (:mod:`vcsat.solver.units`); every amount
    above stays exact."""
    lineages: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per queue: itself, then its parent, and so on up (``parent``)."""
    total: dict[str, int] = field(default_factory=dict)
    """The room queues share (Ready nodes less other schedulers' pods), per resource."""
    queue_usage: dict[str, dict[str, int]] = field(default_factory=dict)
    """What each queue's pods hold now, per resource."""
    deserved: dict[str, dict[str, int]] = field(default_factory=dict)
    """Each queue's deserved share (proportion), per resource; empty with proportion off."""
    wanted: dict[str, dict[str, int]] = field(default_factory=dict)
    """Each queue's demand capped by its capability, per resource (what its share was cut from)."""
    node_index: predicates.NodeIndex | None = None
    topologies: dict[int, GpuTopology] = field(default_factory=dict)
    domains: Domains | None = None
    """HyperNode tiers, when the snapshot has HyperNodes and topology is on."""
    queue_tiers: dict[str, list[int]] | None = None
    """Per queue: its candidates' priorities, highest first (filled on first use)."""
    queue_priorities: dict[str, int] = field(default_factory=dict)
    """Per queue with a nonzero ``spec.priority`` (Volcano's queue priority): its priority. Queues of
    higher priority have their fair shares served first (:mod:`vcsat.solver.objectives.fairness`)."""
    fair_levels: list[tuple[int, int]] | None = None
    """(queue priority, tier) of each queue fair-share level, most important first (filled on first use)."""
    _candidates: list[Gang] | None = None
    _room_arrays: tuple[NDArray[np.int64], NDArray[np.int64]] | None = field(default=None, compare=False, repr=False)
    """Per node its free room, and per shape its request, in arrays (:meth:`room_left`), made once."""
    fair_terms: dict[int, list[tuple[str, str, int, int, list[int]]]] = field(default_factory=dict)
    """Per queue fair-share level: its terms (:func:`vcsat.solver.objectives.fairness.fair_terms`),
    filled on first use: the greedy, the LP bound, the model and every measure of a decision read
    the same list, so it is computed once per level and cycle. Read-only for its readers."""
    running_domains: dict[int, dict[int, frozenset[str]]] = field(default_factory=dict)
    """Per topology gang whose ``networkTopology`` PodGroup has pods running: per tier, the domains
    they are in. The locality levels count those as spanned already and the greedy tries them
    first, as Volcano's score prefers its allocated HyperNode (:func:`running_domains`)."""
    topology_gangs: tuple[int, ...] = ()
    """Candidate gangs whose placement is priced by the domains it spans: more GPUs than one node
    has, or a ``networkTopology`` of their own."""
    preferring: bool = False
    """Whether any pending pod prefers some node to another (else no preference level exists)."""
    isolation: Isolation = field(default_factory=lambda: Isolation(()))
    """Rules between pods active this cycle (:mod:`vcsat.solver.rules.isolation`)."""
    isolated: frozenset[int] = frozenset()
    """Classes that take part in rules between pods: each has a shape and a bucket of its own."""
    spread: list[spread_rules.Group] = field(default_factory=list)
    """The cycle's pod topology spread constraint groups (:mod:`vcsat.solver.rules.spread`)."""
    soft_spread: list[spread_rules.Group] = field(default_factory=list)
    """Likewise for ScheduleAnyway constraints: an objective level, never a constraint."""
    interpod: Relations | None = None
    """How isolated classes constrain each other by inter-pod affinity and host ports."""
    interpod_scores: dict[int, dict[int, int]] | None = None
    """Per isolated class, per node: its preferred inter-pod score (filled on first use)."""
    attach: SharedAttach | None = None
    """CSI volumes several pods share, counted once per node (:mod:`vcsat.solver.rules.attach`)."""

    def queue_priority(self, queue: str) -> int:
        """The queue's own ``spec.priority`` (0 when unset or unknown). In a hierarchy only the
        queue a job is in counts, as Volcano's QueueOrderFn compares the queues' own values."""
        return self.queue_priorities.get(queue, 0)

    def highest_tier(self, gang: Gang) -> int | None:
        """The tier a hard ``networkTopology`` keeps the gang within, if any."""
        return hard_tier(gang.group, self.domains)

    def lineage(self, queue: str) -> tuple[str, ...]:
        return self.lineages.get(queue, (queue,))

    def caps_of(self, queue: str) -> list[str]:
        """The capped queues whose capability a pod of ``queue`` counts against: its own and its
        ancestors'."""
        return [name for name in self.lineage(queue) if name in self.queue_room]

    def topology(self, node: int) -> GpuTopology:
        """The node's GPU interconnect (cached by annotation text), uniform without annotation."""
        found = self.topologies.get(node)
        if found is None:
            try:
                found = gpu_topology(self.nodes[node].gpu_topology, self.nodes[node].gpus)
            except ValueError:
                found = uniform_topology(self.nodes[node].gpus)
            self.topologies[node] = found
        return found

    def eligible_nodes(self, key: predicates.EligibilityKey) -> list[int]:
        """Indices of the nodes whose predicates a pod with this eligibility key passes."""
        index = self.node_index or predicates.NodeIndex(self.nodes)
        self.node_index = index
        return [int(i) for i in np.flatnonzero(_mask_array(index, index.mask(key)))]

    @property
    def candidates(self) -> list[Gang]:
        """Gangs the search may place (not blocked), computed once: blocked is final by then."""
        if self._candidates is None:
            self._candidates = [gang for gang in self.gangs if gang.index not in self.blocked]
        return self._candidates

    def resource_index(self, name: str) -> int:
        return self.resources.index(name)

    def room_left(self, shape_slots: Mapping[tuple[int, int], int]) -> list[list[int]]:
        """Per node, its free room (:attr:`free`) less what the resolved ``shape_slots`` take.

        In arrays, every slot at once: whole numbers (int64, no rounding), so the same sums as
        slot by slot, resource by resource. Why: the exchange's looks read the room a decision
        leaves once a look (thousands of slots at 1,000 nodes; benchmarks/RESULTS.md, session 34)."""
        size = len(shape_slots)
        if not size or not self.free:
            return [list(row) for row in self.free]
        if self._room_arrays is None:
            width = len(self.resources)
            rows = [shape.request for shape in self.shapes]
            self._room_arrays = (
                np.array(self.free, dtype=np.int64).reshape(len(self.free), width),
                np.array(rows, dtype=np.int64).reshape(len(rows), width),
            )
        free, requests = self._room_arrays
        slots = np.fromiter(chained.from_iterable(shape_slots), dtype=np.int64, count=2 * size).reshape(size, 2)
        counts = np.fromiter(shape_slots.values(), dtype=np.int64, count=size)
        room = free.copy()
        np.subtract.at(room, slots[:, 1], requests[slots[:, 0]] * counts[:, None])
        left: list[list[int]] = room.tolist()
        return left

    def preference(self, bucket: Bucket, node: int) -> int:
        """A bucket's pods' node-preference score on a node (its shapes share one preference key)."""
        return max((self.shapes[s].preference.get(node, 0) for s in bucket.shapes), default=0)


def pod_value(request: res.Resources, largest: res.Resources) -> int:
    """Dominant share of the largest node, in thousandths, at least 1.

    Measuring work by its dominant share makes "more work placed" mean the same on GPU and CPU
    clusters: an 8-GPU pod on an 8-GPU node is worth 1000, a 1-GPU pod 125, a 4-core pod on a
    96-core node 42. The pods count is not work and is left out.
    """
    share = 0
    for name, amount in request.items():
        if name == res.PODS or amount <= 0:
            continue
        # A GPU share is that part of one GPU of the largest node.
        cap = largest.get(res.GPU, 0) * FULL_GPU_MILLI if name == res.GPU_MILLI else largest.get(name, 0)
        if cap <= 0:
            continue
        share = max(share, -(-amount * VALUE_SCALE // cap))
    return max(1, share)


def hard_tier(group: PodGroup | None, domains: Domains | None) -> int | None:
    """The tier a hard ``networkTopology`` keeps ``group``'s pods within: the highest tier with
    HyperNodes not above ``highestTierAllowed`` (the finest when none is, or when it is unset)."""
    topology = group.network_topology if group is not None else None
    if topology is None or topology.mode != "hard" or domains is None:
        return None
    allowed = topology.highest_tier_allowed
    tiers = domains.tiers
    if allowed is None:
        return tiers[0]
    inside = [t for t in tiers if t <= allowed]
    return inside[-1] if inside else tiers[0]


def running_domains(snapshot: Snapshot, group: PodGroup, domains: Domains) -> dict[int, set[str]]:
    """Per tier, the domains holding ``group``'s pods that run now (bound, not finished, not
    terminating), :data:`NO_DOMAIN` for a node outside every domain of the tier; empty when none runs.

    Volcano keeps a hard ``networkTopology`` job's new pods with its allocated ones: a candidate
    HyperNode is one whose common ancestor with the job's allocated HyperNode is within the
    highest tier allowed. With nested tiers that is the one domain of that tier holding the
    running pods; when they already span several, no HyperNode qualifies and the job waits. Its
    node score prefers the allocated HyperNode in soft mode too: the locality levels count the
    running pods' domains as spanned already."""
    known = domains.tree.domains
    nodes = snapshot.node_by_name
    out: dict[int, set[str]] = {}
    for pod in snapshot.pods_of_group.get(group.key, ()):
        node = pod.node_name
        if node is None or not pod.bound or pod.terminating or node not in nodes:
            continue
        of_node = known.get(node, {})
        for tier in domains.tiers:
            out.setdefault(tier, set()).add(of_node.get(tier) or NO_DOMAIN)
    return out


def request_of(pod: Pod, resources: list[str] | tuple[str, ...]) -> tuple[int, ...]:
    """A pod's request per problem resource; a whole GPU also counts 1000 of the share room."""
    return tuple(
        pod.gpu_milli + FULL_GPU_MILLI * pod.gpus if name == res.GPU_MILLI else pod.requests.get(name, 0)
        for name in resources
    )


def _several_queues(gangs: list[Gang], snapshot: Snapshot) -> bool:
    """Whether the gangs and the bound pods are in more than one queue between them: the pods
    are read only until a second queue shows (with gangs of two queues, not at all)."""
    seen = {gang.queue for gang in gangs}
    if len(seen) > 1:
        return True
    groups = snapshot.podgroup_by_key
    for pod in snapshot.pods:
        if pod.bound and (queue := queue_in(pod, groups)):
            seen.add(queue)
            if len(seen) > 1:
                return True
    return False


def _gang_priority(group: PodGroup | None, pods: list[Pod]) -> int:
    if group is not None and group.priority_class:
        return group.priority
    return max(pod.priority for pod in pods)


def problem_resources(pending: Sequence[Pod], volume_resources: Iterable[str] = ()) -> list[str]:
    """The resources a problem over ``pending`` watches: what they request (GPU thousandths only
    when one shares a GPU), the pod count, and the volume counts they ask (sorted)."""
    sharing = any(pod.gpu_milli for pod in pending)
    # Each distinct requests dict read once (pods of one spec share theirs): a set, then sorted.
    distinct_requests = {id(pod.requests): pod.requests for pod in pending}.values()
    return sorted(
        {name for requests in distinct_requests for name in requests if name != res.GPU_MILLI}
        | {res.PODS}
        | ({res.GPU_MILLI} if sharing else set())
        | set(volume_resources)
    )


def build_problem(snapshot: Snapshot, policy: Policy) -> Problem:
    # A pod whose PodGroup is not (yet) there waits, its gang's rules unknown: it makes a gang of
    # its group's name that is never placed and says so (PodGroupNotFound).
    pending = [pod for pod in snapshot.pods if pod.pending and pod.managed]
    rules = volumes.VolumeRules(snapshot, pending) if any(pod.claims for pod in pending) else None
    # Volume counts that change as pods land (CSI attach limits, node-local volumes) are resources.
    volume_asked: dict[str, dict[str, int]] = {}
    if rules is not None:
        for pod in pending:
            asked = rules.requests(pod)
            if asked:
                volume_asked[pod.key] = asked
    volume_resources = sorted({name for asked in volume_asked.values() for name in asked})
    resources = problem_resources(pending, volume_resources)
    resource_index = {name: i for i, name in enumerate(resources)}

    nodes = snapshot.nodes
    # Nodes and bound pods unchanged since the last build keep their room (node_side).
    rooms = node_side.node_rooms(snapshot, resources)
    free: list[list[int]] = [list(room.free) for room in rooms]
    free_gpu_ids: list[tuple[int, ...]] = [room.free_gpu_ids for room in rooms]
    shared_milli: list[dict[int, int]] = [dict(room.shared_milli) for room in rooms]
    if volume_resources and rules is not None:
        for node, row in zip(nodes, free, strict=True):
            for name in volume_resources:
                row[resource_index[name]] = rules.room(node, name, UNLIMITED_VOLUMES)
    largest = node_side.largest_allocatable(nodes)
    values: dict[tuple[tuple[str, int], ...], int] = {}

    def value_of(request: res.Resources) -> int:
        """:func:`pod_value` against ``largest``, once per distinct request."""
        asked = tuple(request.items())
        value = values.get(asked)
        if value is None:
            value = values[asked] = pod_value(request, largest)
        return value

    # Gangs: PodGroups with pending pods, and lone pods. With gang scheduling off every pod is
    # its own gang, which is what pod-at-a-time schedulers do.
    by_gang: dict[str, list[Pod]] = {}
    first_created: dict[str, float] = {}
    """Per gang, its pods' earliest creation (what gangs are ordered by), kept while grouping."""
    # Model fields are read once each here (docs/compiled-build.md: each read is a generic lookup).
    gang_scheduling = policy.gang
    for pod in pending:
        group_key = pod.group
        key = group_key if (group_key is not None and gang_scheduling) else pod.key
        created = pod.created
        members = by_gang.get(key)
        if members is None:
            by_gang[key] = [pod]
            first_created[key] = created
        else:
            members.append(pod)
            if created < first_created[key]:
                first_created[key] = created

    gangs: list[Gang] = []
    classes: list[PodClass] = []
    shapes: list[Shape] = []
    shape_by_key: dict[tuple[Hashable, ...], int] = {}
    tainted = any_prefer_no_schedule(nodes)
    eligible_cache: dict[predicates.EligibilityKey, NDArray[np.bool_]] = {}
    preference_cache: dict[tuple[predicates.EligibilityKey, PreferenceKey], dict[int, int]] = {}
    fit_cache: dict[tuple[tuple[int, ...], predicates.EligibilityKey], tuple[NodeFits, tuple[int, ...]]] = {}
    shape_rows: list[NDArray[np.intp]] = []
    """Per shape, its nodes as an array: a bucket's nodes are their union (one mask, not a set of ints)."""
    node_index = predicates.node_index(nodes)
    free_array = np.array(free, dtype=np.int64).reshape(len(nodes), len(resources))
    fit_counts = FitCounts(free_array)
    blocked: dict[int, Blocked] = {}
    iso = isolation(snapshot, pending)
    isolated: set[int] = set()
    requests_made: dict[int, tuple[res.Resources, tuple[int, ...]]] = {}
    gang_gpus: list[int] = []
    """Per gang, the whole GPUs its classes' pods ask for together (which gangs topology prices)."""

    group_by_key = snapshot.podgroup_by_key
    pod_key = cycle.of(snapshot).keys.of
    domains = (
        node_side.reused("domains", (*snapshot.nodes, *snapshot.hypernodes), lambda: _domains(snapshot))
        if policy.topology and snapshot.hypernodes
        else None
    )
    running_of: dict[int, dict[int, set[str]]] = {}
    """Per gang whose networkTopology group has pods running: per tier, their domains."""
    spanned: dict[int, tuple[int, set[str]]] = {}
    """Hard-topology gangs whose running pods already span several domains of their tier."""
    anchor_masks: dict[tuple[int, str], NDArray[np.bool_]] = {}
    for key in sorted(by_gang, key=lambda k: (first_created[k], k)):
        every = by_gang[key]
        if len(every) > 1:  # most gangs are one pod
            every.sort(key=lambda p: (p.created, p.key))
        # Gated pods and pods with resource claims are never placed: they make no class, so no
        # count, greedy step or decode can place them, and they count for no minMember. One pass
        # sorts them out and finds a pod whose PodGroup is not there.
        pods: list[Pod] = []
        held: list[Pod] = []
        missing_group: str | None = None
        for pod in every:
            if pod.held:
                held.append(pod)
            else:
                pods.append(pod)
            if missing_group is None and (named := pod.group) is not None and named not in group_by_key:
                missing_group = named
        group = group_by_key.get(key) if gang_scheduling else None
        # A lone pod's queue is its annotation's; with gang scheduling off a pod of a PodGroup is
        # placed on its own, in its group's queue.
        if every[0].group is None:
            lone_queue = every[0].queue_name or DEFAULT_QUEUE
        else:
            its_group = group_by_key.get(every[0].group)
            lone_queue = its_group.queue if its_group is not None else DEFAULT_QUEUE
        gang = Gang(
            index=len(gangs),
            key=key,
            group=group,
            queue=group.queue if group is not None else lone_queue,
            priority=_gang_priority(group, every),
            created=group.created if group is not None else every[0].created,
        )
        gang.held = tuple(held)
        gang.missing_group = missing_group
        running = (
            running_domains(snapshot, group, domains)
            if group is not None and domains is not None and group.network_topology is not None
            else {}
        )
        if running:
            running_of[gang.index] = running
        tier = hard_tier(group, domains) if group is not None else None
        if tier is not None and running:
            earlier = running[tier]
            if len(earlier) == 1:
                gang.anchor = (tier, next(iter(earlier)))
            elif earlier:
                spanned[gang.index] = (tier, earlier)
        anchor = gang.anchor
        gang.rank = gang.priority if policy.priority else 0
        gangs.append(gang)
        gpus = 0

        by_class: dict[
            tuple[str, tuple[int, ...], predicates.EligibilityKey, PreferenceKey | None, Hashable, frozenset[str]],
            list[Pod],
        ] = {}
        for pod in pods:
            # Pods of one spec share their requests dict (the converter reads each spec once): the
            # request is made once per dict. The entry holds the dict, so its id is not reused.
            requests = pod.requests
            made = requests_made.get(id(requests))
            if made is None or made[0] is not requests:
                made = requests_made[id(requests)] = (requests, request_of(pod, resources))
            request = made[1]
            if pod.key in volume_asked:
                asked = volume_asked[pod.key]
                request = tuple(asked.get(name, amount) for name, amount in zip(resources, request, strict=True))
            restriction = rules.restriction(pod) if rules is not None else None
            class_key = (
                pod.task,
                request,
                # Admission asks for the same keys: made once here, looked up there (solver.cycle).
                pod_key(pod) if restriction is None else predicates.eligibility_key(pod, restriction),
                preference_key(pod, tainted),
                iso.signature(pod),
                rules.shared_volumes(pod) if rules is not None else frozenset(),
            )
            by_class.setdefault(class_key, []).append(pod)

        for (task, request, elig_key, pref_key, signature, shared), class_pods in by_class.items():
            own = len(classes) if signature is not None else None
            shape_key: tuple[Hashable, ...] = (
                (request, elig_key, pref_key) if own is None else (request, elig_key, pref_key, own)
            )
            if shared:
                shape_key = (*shape_key, shared)
            if anchor is not None:
                shape_key = (*shape_key, anchor)
            shape_index = shape_by_key.get(shape_key)
            if shape_index is None:
                eligible = eligible_cache.get(elig_key)
                if eligible is None:
                    eligible = _mask_array(node_index, node_index.mask(elig_key))
                    eligible_cache[elig_key] = eligible
                if anchor is not None and domains is not None:
                    # Only the domain its running pods are in (a copy: the cached mask is shared).
                    within = anchor_masks.get(anchor)
                    if within is None:
                        within = anchor_masks[anchor] = np.zeros(len(nodes), dtype=np.bool_)
                        within[domains.nodes_in(*anchor)] = True
                    eligible = eligible & within
                refused: Mapping[int, str] = {}
                if own is not None:
                    # Bound pods' terms and ports are static: they narrow the class's nodes.
                    refused = iso.refused(class_pods[0])
                    if refused:
                        eligible = eligible.copy()
                        eligible[list(refused)] = False
                    isolated.add(own)
                cached = not refused and anchor is None
                fitting = fit_cache.get((request, elig_key)) if cached else None
                if fitting is None:
                    counted = fit_counts.node_fits(request, eligible)
                    fitting = (counted, tuple(counted.rows.tolist()))  # ascending node order
                    if cached:
                        # Shapes of one request and eligibility (isolated classes with no node
                        # refused among them) have the same counts: one map, never changed, shared.
                        fit_cache[(request, elig_key)] = fitting
                fits, fit_nodes = fitting
                shape_rows.append(fits.rows)
                preference = {}
                if pref_key is not None:
                    scores = preference_cache.get((elig_key, pref_key))
                    if scores is None:
                        scores = node_scores(pref_key, nodes, [int(i) for i in np.flatnonzero(eligible)])
                        preference_cache[(elig_key, pref_key)] = scores
                    mask = fits.mask(len(nodes))
                    preference = {n: score for n, score in scores.items() if mask[n]}
                shape_index = len(shapes)
                shape_by_key[shape_key] = shape_index
                shapes.append(
                    Shape(
                        index=shape_index,
                        request=request,
                        gpus=class_pods[0].gpus,
                        nodes=fit_nodes,
                        fits=fits,
                        eligibility=elig_key,
                        preference=preference,
                        preference_key=pref_key,
                        isolated=own,
                        volumes=shared,
                        anchor=anchor,
                    )
                )
            pod_class = PodClass(
                index=len(classes),
                gang=gang.index,
                task=task,
                shape=shape_index,
                pods=tuple(class_pods),
                value=value_of(class_pods[0].requests),
            )
            classes.append(pod_class)
            gang.classes.append(pod_class.index)
            gpus += len(class_pods) * class_pods[0].gpus
        gang_gpus.append(gpus)

        _set_needs(gang, snapshot, every if group is None else pods)

    admissions = admission_memo.admissions(snapshot, policy, overcommit=policy.overcommit)
    no_node = NoNodeCounts(nodes)  # the reasons of the gangs no node takes now, counted once per kind
    for gang in gangs:
        admission = admissions.get(gang.key) if gang.group is not None else None
        if admission is not None and not admission.admitted:
            # Volcano's enqueue: a group that may not take its queue's or the cluster's room yet
            # waits Pending, and its pods are not placed.
            blocked[gang.index] = Blocked(gang.index, admission.reason, admission.message)
            continue
        gang.admitted = True
        reason = (
            _group_missing(gang)
            or _queue_missing(gang, snapshot)
            or _spanned(gang, spanned.get(gang.index))
            or _prefilter(gang, snapshot, classes, shapes, nodes, iso, no_node)
        )
        if gang.held and (reason.reason == "GangUnsatisfied" if reason is not None else not gang.classes):
            reason = _held_reason(gang)
        if reason is not None:
            blocked[gang.index] = reason

    buckets = initial_buckets(shapes, resources, free, room=free_array, shape_rows=shape_rows)
    spreading = iso.state(spread_rules.NAME) is not None
    spread_classes = [(c, classes[c].pods[0]) for c in sorted(isolated)] if spreading else []
    groups = spread_rules.build_groups(snapshot, nodes, spread_classes) if spreading else []
    soft_groups = spread_rules.build_groups(snapshot, nodes, spread_classes, hard=False) if spreading else []

    lineage = _lineages(snapshot)
    queue_room: dict[str, dict[str, int]] = {}
    podgroups = snapshot.podgroup_by_key
    for queue in snapshot.queues:
        if queue.capability is None:
            continue
        # A parent's capability caps its whole subtree (hierarchical queues).
        used = res.total(
            pod.requests
            for pod in snapshot.pods
            if pod.bound and (q := queue_in(pod, podgroups)) is not None and queue.name in lineage.get(q, (q,))
        )
        queue_room[queue.name] = {name: cap - used.get(name, 0) for name, cap in queue.capability.items()}

    total: dict[str, int] = {}
    usage: dict[str, dict[str, int]] = {}
    deserved: dict[str, dict[str, int]] = {}
    wanted: dict[str, dict[str, int]] = {}
    if policy.proportion and gangs and _several_queues(gangs, snapshot):
        total = cluster_total(snapshot)
        usage = queue_usage(snapshot)
        shares = fair_shares(snapshot)  # the same total, and the cache admission reads too
        deserved = {name: share.deserved for name, share in shares.items()}
        wanted = {name: share.capped_demand for name, share in shares.items()}

    topology_gangs: tuple[int, ...] = ()
    if domains is not None:
        widest = max((node.gpus for node in nodes), default=0)
        topology_gangs = tuple(
            gang.index
            for gang in gangs
            if gang.index not in blocked
            and (
                (gang.group is not None and gang.group.network_topology is not None)
                # Gangs that fit one node are kept on one node by the greedy and the decode;
                # the model prices those that must span nodes.
                or gang_gpus[gang.index] > widest
            )
        )

    interpod_state = iso.state(INTERPOD)
    interpod = None
    if isinstance(interpod_state, InterPod) and isolated:
        taking_part = {c: classes[c].pods[0] for c in sorted(isolated)}
        interpod = relations(
            interpod_state, {c: pod for c, pod in taking_part.items() if interpod_state.signature(pod) is not None}
        )

    return Problem(
        snapshot=snapshot,
        policy=policy,
        resources=tuple(resources),
        nodes=nodes,
        free=free,
        free_gpu_ids=free_gpu_ids,
        shared_milli=shared_milli,
        gangs=gangs,
        classes=classes,
        shapes=shapes,
        buckets=buckets,
        blocked=blocked,
        queue_room=queue_room,
        units=units_for(resources, (shape.request for shape in shapes)),
        lineages=lineage,
        total=total,
        queue_usage=usage,
        deserved=deserved,
        wanted=wanted,
        queue_priorities={queue.name: queue.priority for queue in snapshot.queues if queue.priority},
        node_index=node_index,
        domains=domains,
        topology_gangs=topology_gangs,
        running_domains={
            g: {tier: frozenset(names) for tier, names in running_of[g].items()}
            for g in topology_gangs
            if g in running_of
        },
        preferring=any(shape.preference for shape in shapes),
        isolation=iso,
        isolated=frozenset(isolated),
        spread=groups,
        soft_spread=soft_groups,
        interpod=interpod,
        attach=shared_attach(rules, nodes, resources) if rules is not None else None,
    )


def _lineages(snapshot: Snapshot) -> dict[str, tuple[str, ...]]:
    parents = {queue.name: queue.parent for queue in snapshot.queues}
    out: dict[str, tuple[str, ...]] = {}
    for name in parents:
        chain = [name]
        while (parent := parents.get(chain[-1])) is not None and parent not in chain:
            chain.append(parent)
        out[name] = tuple(chain)
    return out


def _domains(snapshot: Snapshot) -> Domains | None:
    try:
        tree = resolve_hypernodes(snapshot.hypernodes, snapshot.nodes)
    except ValueError:
        return None  # the converter refuses a bad graph in files; live, no topology beats a wrong one
    if not tree.tiers:
        return None
    tiers, by_node = tree.tiers, tree.domains
    nowhere: dict[int, str] = {}
    # ``tree.domain_of`` read as its table, once per node (not a call per node and tier).
    of_node = tuple(
        {tier: doms.get(tier) or NO_DOMAIN for tier in tiers}
        for doms in (by_node.get(node.name, nowhere) for node in snapshot.nodes)
    )
    members: dict[int, dict[str, list[int]]] = {tier: {} for tier in tree.tiers}
    for index, by_tier in enumerate(of_node):
        for tier, name in by_tier.items():
            members[tier].setdefault(name, []).append(index)
    return Domains(tree=tree, tiers=tree.tiers, of_node=of_node, members=members)


DIVISIBLE = frozenset({res.CPU, res.MEMORY, res.EPHEMERAL_STORAGE})
"""Resources whose amounts vary freely between pods and may be relaxed inside a bucket."""


def initial_buckets(
    shapes: list[Shape],
    resources: list[str],
    free: list[list[int]],
    *,
    room: NDArray[np.int64] | None = None,
    shape_rows: list[NDArray[np.intp]] | None = None,
) -> list[Bucket]:
    """One bucket per (GPU count and other indivisible requests, predicates, node preferences).

    ``room`` is ``free`` as an array and ``shape_rows`` each shape's nodes as an array, when the
    caller has them (the build): the same buckets, without making them again from the lists."""
    keep = [i for i, name in enumerate(resources) if name not in DIVISIBLE and not res.is_byte_resource(name)]
    groups: dict[tuple[object, ...], list[Shape]] = {}
    for shape in shapes:
        if shape.nodes:
            # Shapes with node preferences get exact buckets: at a relaxed request the preference
            # level would crowd the preferred nodes beyond their real room.
            exact = shape.index if shape.preference or shape.volumes else None
            request = tuple(shape.request[i] for i in keep)
            key = (request, shape.eligibility, shape.preference_key, exact, shape.isolated, shape.anchor)
            groups.setdefault(key, []).append(shape)
    buckets: list[Bucket] = []
    if room is None:
        room = np.array(free, dtype=np.int64).reshape(len(free), len(resources))
    for members in sorted(groups.values(), key=lambda m: m[0].index):
        buckets.append(_bucket(len(buckets), members, free, room, shape_rows))
    return buckets


def _bucket(
    index: int,
    members: list[Shape],
    free: list[list[int]],
    room: NDArray[np.int64] | None = None,
    shape_rows: list[NDArray[np.intp]] | None = None,
) -> Bucket:
    request = tuple(min(column) for column in zip(*(m.request for m in members), strict=True))
    if len(members) == 1 and members[0].isolated is not None:
        # An isolated class's own bucket: exactly its shape (the same counts, already computed).
        shape = members[0]
        return Bucket(index, (shape.index,), request, shape.gpus, shape.nodes, shape.fits)
    if shape_rows is not None and len(members) > 1:
        # The union of the members' nodes as one mask (tens of thousands of ints at 10,000 nodes).
        union = np.zeros(len(free), dtype=np.bool_)
        for m in members:
            union[shape_rows[m.index]] = True
        nodes = tuple(np.flatnonzero(union).tolist())
    else:
        nodes = tuple(sorted({node for m in members for node in m.nodes}))
    return Bucket(
        index=index,
        shapes=tuple(m.index for m in members),
        request=request,
        gpus=members[0].gpus,
        nodes=nodes,
        # One shape: its own fit counts (same request, same room) need no second pass.
        fits=members[0].fits
        if len(members) == 1
        else _node_fits_at(request, room, nodes)
        if room is not None
        else NodeFits.of({node: _fit_count(request, free[node]) for node in nodes}),
    )


def split_bucket(problem: Problem, buckets: list[Bucket], index: int) -> list[Bucket]:
    """Refine one bucket into its smaller and its larger half (by divisible request), in place of it.

    Each half's least request is closer to its members' real requests, so the relaxation tightens
    where the decode found it too loose. A bucket of one shape is exact and is not split.
    """
    bucket = buckets[index]
    if bucket.exact:
        return buckets
    largest = [
        max(1, max((node.allocatable.get(name, 0) for node in problem.nodes), default=1)) for name in problem.resources
    ]
    divisible = [i for i, name in enumerate(problem.resources) if name in DIVISIBLE or res.is_byte_resource(name)]
    members = sorted(
        (problem.shapes[s] for s in bucket.shapes),
        key=lambda shape: (sum(shape.request[i] / largest[i] for i in divisible), shape.index),
    )
    half = len(members) // 2
    out = [b for b in buckets if b.index != index]
    out.append(_bucket(0, members[:half], problem.free))
    out.append(_bucket(0, members[half:], problem.free))
    return [_renumber(b, i) for i, b in enumerate(out)]


def _renumber(bucket: Bucket, index: int) -> Bucket:
    if bucket.index == index:
        return bucket
    return Bucket(index, bucket.shapes, bucket.request, bucket.gpus, bucket.nodes, bucket.fits)


def _mask_array(index: predicates.NodeIndex, mask: int) -> NDArray[np.bool_]:
    """Bit ``i`` of a predicates mask as element ``i`` of a boolean array."""
    count = len(index.nodes)
    if count == 0:
        return np.zeros(0, dtype=np.bool_)
    bits = format(mask, f"0{count}b")[::-1].encode()
    eligible: NDArray[np.bool_] = np.frombuffer(bits, dtype=np.uint8) == ord("1")
    return eligible


class FitCounts:
    """Per eligible node where at least one pod of a request fits, how many fit there alone, for
    many shapes over one room: shapes that differ only in their eligible nodes share their
    request's per-node counts, worked out once from one column per resource."""

    def __init__(self, free: NDArray[np.int64]) -> None:
        self.nodes = free.shape[0]
        self.columns = [np.ascontiguousarray(free[:, r]) for r in range(free.shape[1])] if self.nodes else []
        self._fits: dict[tuple[int, ...], tuple[NDArray[np.int64], NDArray[np.bool_]]] = {}

    def _of_request(self, request: tuple[int, ...]) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        found = self._fits.get(request)
        if found is None:
            fits: NDArray[np.int64] | None = None
            for r, amount in enumerate(request):
                if amount > 0:
                    column = self.columns[r] // amount
                    fits = column if fits is None else np.minimum(fits, column)
            assert fits is not None
            found = self._fits[request] = (fits, fits > 0)
        return found

    def of(self, request: tuple[int, ...], eligible: NDArray[np.bool_]) -> dict[int, int]:
        """The counts by node, keys in ascending node order (the build takes them as the shape's nodes)."""
        return self.node_fits(request, eligible).as_dict()

    def node_fits(self, request: tuple[int, ...], eligible: NDArray[np.bool_]) -> NodeFits:
        """:meth:`of` as arrays (nodes ascending), no dict made."""
        if self.nodes == 0 or not any(amount > 0 for amount in request):
            where = np.flatnonzero(eligible)
            return NodeFits(where, np.full(where.size, 1 << 30, dtype=np.int64))
        fits, positive = self._of_request(request)
        where = np.flatnonzero(positive & eligible)
        return NodeFits(where, fits[where])


def _fit_counts_at(request: tuple[int, ...], free: NDArray[np.int64], nodes: tuple[int, ...]) -> dict[int, int]:
    """:func:`_fit_count` on each of ``nodes`` (rows of ``free``), as one array operation."""
    return _node_fits_at(request, free, nodes).as_dict()


def _node_fits_at(request: tuple[int, ...], free: NDArray[np.int64], nodes: tuple[int, ...]) -> NodeFits:
    """:func:`_fit_counts_at` as arrays, no dict made."""
    rows = np.array(nodes, dtype=np.intp)
    asked = [r for r, amount in enumerate(request) if amount > 0]
    if not asked or not nodes:
        return NodeFits(rows, np.zeros(len(nodes), dtype=np.int64))
    amounts = np.array([request[r] for r in asked], dtype=np.int64)
    fits = np.maximum(np.min(free[np.ix_(rows, np.array(asked, dtype=np.intp))] // amounts, axis=1), 0)
    return NodeFits(rows, fits)


def _fit_count(request: tuple[int, ...], free: list[int]) -> int:
    count: int | None = None
    for amount, room in zip(request, free, strict=True):
        if amount <= 0:
            continue
        if room < amount:
            return 0
        fit = room // amount
        count = fit if count is None else min(count, fit)
    return 0 if count is None else count


def _set_needs(gang: Gang, snapshot: Snapshot, pending: list[Pod]) -> None:
    group = gang.group
    if group is None:
        gang.need = len(pending)
        gang.task_need = {}
        return
    members = snapshot.pods_of_group.get(group.key, ())
    if not group.min_task_member:
        # The common case: only the count of running members is needed (a plain loop: most
        # groups have one or two pods, where a list or generator costs more than the count).
        ready = 0
        for member in members:
            if member.gang_ready:
                ready += 1
        gang.need = max(0, group.min_member - ready)
        return
    running = [p for p in members if p.gang_ready]
    gang.need = max(0, group.min_member - len(running))
    for task, minimum in sorted(group.min_task_member.items()):
        have = sum(1 for p in running if p.task == task)
        if minimum - have > 0:
            gang.task_need[task] = minimum - have


def _group_missing(gang: Gang) -> Blocked | None:
    """Pods naming a PodGroup that does not exist: the gang's rules are unknown, so they wait (with
    gang scheduling off too: the validator refuses placing a pod of an unknown PodGroup)."""
    if gang.missing_group is None:
        return None
    return Blocked(
        gang.index,
        "PodGroupNotFound",
        f"its pods name PodGroup {gang.missing_group}, which does not exist: not scheduled until it does",
    )


def _queue_missing(gang: Gang, snapshot: Snapshot) -> Blocked | None:
    """A gang whose queue no Queue object defines: Volcano's cache leaves such a job out of its
    session, so it is never scheduled; here it waits and says so (``QueueNotFound``)."""
    if gang.queue in snapshot.queue_by_name:
        return None
    where = (
        f"its PodGroup's spec.queue {gang.queue!r}"
        if gang.group is not None or getattr(snapshot.pod_by_key.get(gang.key), "group", None) is not None
        else f"its annotation scheduling.volcano.sh/queue-name {gang.queue!r}"
    )
    return Blocked(gang.index, "QueueNotFound", f"{where} names no Queue: not scheduled until the queue exists")


def _spanned(gang: Gang, spanned: tuple[int, set[str]] | None) -> Blocked | None:
    """A hard-topology gang whose running pods already span several domains of its tier: no
    domain holds them all, so none may take its new pods (Volcano finds no candidate HyperNode)."""
    if spanned is None:
        return None
    tier, names = spanned
    listed = ", ".join(sorted(name or "(no HyperNode)" for name in names))
    return Blocked(
        gang.index,
        "NetworkTopologyUnsatisfied",
        f"networkTopology hard: its running pods already span tier-{tier} HyperNodes {listed}; "
        "no HyperNode of that tier holds them all, so no more of its pods are placed",
    )


def _held_reason(gang: Gang) -> Blocked:
    """Why a gang whose other pods cannot make it waits on its held pods: kube-scheduler keeps a
    gated pod out of its queue (``SchedulingGated``) and Volcano's allocate skips it, so only the
    other pods count towards ``minMember``; a pod claiming devices through dynamic resource
    allocation (``spec.resourceClaims``) is not modelled by vcsat, so it is not placed rather than
    placed as if it claimed nothing (``Unschedulable``)."""
    gated = [pod for pod in gang.held if pod.scheduling_gates]
    if gated:
        names = sorted({gate for pod in gated for gate in pod.scheduling_gates})
        return Blocked(
            gang.index,
            "SchedulingGated",
            f"{len(gated)} pod(s) blocked by scheduling gates ({', '.join(names)}), e.g. pod {gated[0].key}: "
            "not placed until the gates are removed, and the other pending pods cannot make the gang",
        )
    pod = next(pod for pod in gang.held if pod.resource_claims)
    return Blocked(
        gang.index,
        "Unschedulable",
        f"pod {pod.key} has spec.resourceClaims ({', '.join(pod.resource_claims)}): dynamic resource "
        "allocation is not supported by vcsat, so the pod is not placed",
    )


def _prefilter(
    gang: Gang,
    snapshot: Snapshot,
    classes: list[PodClass],
    shapes: list[Shape],
    nodes: tuple[Node, ...],
    iso: Isolation,
    no_node: NoNodeCounts,
) -> Blocked | None:
    """Reasons that hold whatever else is placed: the typed outcome before any search."""
    my_classes = [classes[c] for c in gang.classes]
    pending = 0
    for pod_class in my_classes:
        pending += len(pod_class.pods)
        for pod in pod_class.pods:
            node = pod.nominated_node
            if node is not None and any(p.terminating for p in snapshot.pods_on_node.get(node, ())):
                return Blocked(
                    gang.index,
                    "WaitingForEviction",
                    f"pod {pod.key} is nominated to {node}, where evicted pods are still terminating",
                )
    queue = snapshot.queue_by_name.get(gang.queue)
    if queue is not None and not queue.open:
        return Blocked(gang.index, "QueueClosed", f"queue {gang.queue} is Closed: nothing new is placed")
    if pending < gang.need:
        minimum = gang.group.min_member if gang.group is not None else gang.need
        return Blocked(
            gang.index,
            "GangUnsatisfied",
            f"{pending} pending pods can never reach minMember {minimum} ({minimum - gang.need} already running)",
        )
    for task, need in gang.task_need.items():
        have = sum(len(c.pods) for c in my_classes if c.task == task)
        if have < need:
            return Blocked(
                gang.index,
                "GangUnsatisfied",
                f"task {task}: {have} pending pods can never reach minTaskMember {need}",
            )
    for pod_class in my_classes:
        shape = shapes[pod_class.shape]
        if shape.nodes:
            continue
        if gang.need == 0 and not gang.task_need:
            continue  # optional pods only; others of the gang may still go
        pod = pod_class.pods[0]
        if shape.anchor is not None:
            tier, domain = shape.anchor
            return Blocked(
                gang.index,
                "NetworkTopologyUnsatisfied",
                f"pod {pod.key}: networkTopology hard keeps it in tier-{tier} HyperNode "
                f"{domain or '(no HyperNode)'}, where its gang's running pods are, and no node there takes it now",
            )
        # The rules between pods refuse nodes to an isolated shape's pod in particular.
        refused = iso.refused(pod) if shape.isolated is not None else None
        could_ever, counts = no_node.why(shape.eligibility, _without_share(pod.requests), refused)
        code = "InsufficientResources" if could_ever else "Unschedulable"
        return Blocked(gang.index, code, f"pod {pod.key}: 0/{len(nodes)} nodes available: {counts}")
    return None


def _without_share(request: res.Resources) -> dict[str, int]:
    return {name: amount for name, amount in request.items() if name != res.GPU_MILLI}
