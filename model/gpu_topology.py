"""How fast the GPUs of one node talk to each other: the ``vcsat.io/gpu-topology`` graph.

A multi-GPU pod runs at the speed of its slowest link, so choosing GPU indices needs, for every
pair of GPUs on a node, the bandwidth one can actually get between them. The node annotation
describes the machine as a networkx node-link graph (contract §1): GPU vertices (``"kind":
"gpu"``, ``"index": i``), switches, CPUs and NICs, and links with ``bandwidth`` in GB/s per
direction. This module turns it (or a named preset) into a frozen :class:`GpuTopology` holding
the graph and the pairwise bandwidth matrix, and refuses a bad annotation with a ``ValueError``
whose message says exactly what is wrong (the converter names the node and the annotation).

Pair bandwidth is the widest path's bottleneck (the maximin path), with one rule that matters:
**a GPU is an endpoint, never a relay.** NVLink peer traffic is not routed through a third GPU by
the hardware, so a path between two GPUs may pass switches, CPUs and NICs but no other GPU.
Without that rule the DGX-1's NV2 links, which form one ring through all eight GPUs, would make
every pair 50 GB/s and hide the cube-mesh entirely. The matrix is computed exactly with a
max-min Floyd–Warshall whose intermediate vertices are the non-GPU vertices only.

GPU pairs with no such path (a graph listing only the NVLink pairs, as ``nvidia-smi topo -m``
shows them) are not refused: they talk through the host at :data:`HOST_FLOOR`.

Parallel links add up: in a multigraph (``"multigraph": true``) two 25 GB/s edges between the
same vertices are one 50 GB/s link, as NVLink bricks are. Directed graphs are refused: a link's
bandwidth is given once, per direction, for both directions.

Presets (``vcsat.io/gpu-topology: preset:<name>``), all numbers GB/s per direction:

``hgx-h100-8``
    8× H100 SXM5 on an HGX H100 8-GPU board: every GPU has 18 fourth-generation NVLinks
    (900 GB/s bidirectional, i.e. 450 GB/s per direction; NVIDIA H100 datasheet and the
    "NVIDIA H100 Tensor Core GPU Architecture" whitepaper) into four third-generation NVSwitch
    chips that form one non-blocking fabric. Modelled as one ``nvswitch`` vertex with a 450 GB/s
    edge per GPU (a widest path does not add parallel paths through four chips, so the fabric is
    one vertex): every pair 450 GB/s, the same as ``nvidia-smi topo -m`` shows (NV18 everywhere).
``dgx1-v100``
    DGX-1 with 8× V100 SXM2, the hybrid cube-mesh ("NVIDIA DGX-1 With Tesla V100 System
    Architecture" whitepaper: six NVLink 2.0 links per GPU at 25 GB/s per direction each). The
    per-pair link counts are those ``nvidia-smi topo -m`` prints on a DGX-1V (and NCCL's topology
    dump shows, e.g. NVIDIA/nccl issue #671): NV2 (50 GB/s) for 0-3, 0-4, 1-2, 1-5, 2-3, 4-7,
    5-6, 6-7; NV1 (25 GB/s) for 0-1, 0-2, 1-3, 2-6, 3-7, 4-5, 4-6, 5-7; the quads {0,1,2,3} and
    {4,5,6,7} are fully NVLinked. The other twelve pairs are ``SYS`` (no NVLink, different
    sockets): GPUs 0-1, 2-3, 4-5, 6-7 sit in pairs behind four PLX PEX8764 PCIe gen3 switches,
    two per CPU. PCIe gen3 x16 is 8 GT/s × 16 lanes × 128/130 = 15.75 GB/s, taken as 16 GB/s for
    the GPU-switch and switch-CPU links. Between the two Xeon sockets (QPI) GPU peer-to-peer DMA
    is not supported on these Intel platforms, so such copies are staged through host memory and
    land well below one PCIe link: we take 10 GB/s, an assumed effective figure (not a
    measurement). So SYS pairs get 10 GB/s.
``pcie-2x4``
    A PCIe-only 2-socket server of 8 GPUs: GPUs 0-3 behind one PCIe gen3 switch under CPU 0,
    GPUs 4-7 behind another under CPU 1; the same link figures as the DGX-1's PCIe side
    (16 GB/s per x16 link, 10 GB/s effective across the sockets). Pairs under one switch get
    16 GB/s, pairs across the switches 10 GB/s.

Without an annotation all GPUs of a node count as equally connected: :func:`uniform_topology`
joins them through one switch at :data:`UNIFORM_BANDWIDTH`, a nominal PCIe gen3 x16 figure so
that reports and prices have a number; no choice of GPUs depends on it, since all pairs are equal.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:  # imported where a graph is built (networkx is slow to import; reading a file needs none)
    import networkx as nx

ANNOTATION = "vcsat.io/gpu-topology"
PRESET_PREFIX = "preset:"
GPU_KIND = "gpu"
VERTEX_KINDS = ("gpu", "nvswitch", "pcie-switch", "cpu", "nic")
"""Vertex kinds an annotation may use; only ``gpu`` vertices are endpoints."""

VertexId = str | int
"""A vertex's ``id`` in node-link data."""

UNIFORM_BANDWIDTH = 16.0
"""GB/s between any two GPUs of a node without an annotation (nominal PCIe gen3 x16)."""

NVLINK2 = 25.0
"""One NVLink 2.0 link (V100), GB/s per direction."""
NVLINK4_H100 = 450.0
"""An H100 SXM5's 18 NVLink 4 links together, GB/s per direction."""
PCIE_GEN3_X16 = 16.0
"""PCIe gen3 x16: 15.75 GB/s per direction, rounded."""
CROSS_SOCKET = 10.0
"""Assumed effective GPU-to-GPU throughput across the CPU sockets (staged through host memory)."""
HOST_FLOOR = CROSS_SOCKET
"""GB/s between two GPUs the graph joins by no path free of other GPUs. Every GPU of a node hangs
off the host's PCIe tree, so any two can always exchange data through host memory; a graph that
lists only NVLink pairs (what ``nvidia-smi topo -m`` shows as NV1/NV2) simply leaves that path
out. The slowest such path on a real machine is a copy staged through host memory across the CPU
sockets, which the presets already take as 10 GB/s (:data:`CROSS_SOCKET`, below one PCIe gen3 x16
link): a floor, so that a pair the graph leaves out is never preferred to one it describes with a
PCIe or NVLink path, and is never refused."""


@dataclass(frozen=True, eq=False)
class GpuTopology:
    """The GPUs of one node and the bandwidth between every pair of them.

    Two topologies are equal when their bandwidth matrices are: that is all a GPU choice reads,
    so nodes of the same machine type share one cache entry (:attr:`key`).
    """

    source: str
    """``uniform``, ``preset:<name>`` or ``annotation``."""
    bandwidths: tuple[tuple[float, ...], ...]
    """``bandwidths[a][b]``: GB/s between GPU ``a`` and GPU ``b``; ``inf`` on the diagonal."""
    key: str
    """A digest of :attr:`bandwidths`: equal matrices, equal keys."""
    built_graph: nx.Graph | None = field(default=None, repr=False)
    """The graph, once built (a uniform topology builds it only when asked: every cycle makes
    uniform topologies and reads only their bandwidths, and networkx is slow to import)."""

    @property
    def graph(self) -> nx.Graph:
        """The interconnect, frozen: vertices carry ``kind`` (and ``index`` for GPUs), edges
        ``bandwidth`` (parallel links already summed)."""
        if self.built_graph is None:
            object.__setattr__(self, "built_graph", _uniform_graph(self.gpu_count))
        assert self.built_graph is not None
        return self.built_graph

    @property
    def gpu_count(self) -> int:
        return len(self.bandwidths)

    @property
    def described(self) -> bool:
        """Whether the bandwidths come from a real description (annotation or preset)."""
        return self.source != "uniform"

    def bandwidth(self, a: int, b: int) -> float:
        """GB/s per direction between GPUs ``a`` and ``b`` (``inf`` when ``a == b``)."""
        return self.bandwidths[a][b]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GpuTopology) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


def preset_names() -> tuple[str, ...]:
    return tuple(sorted(_PRESETS))


def gpu_topology(annotation: str | None, gpus: int) -> GpuTopology:
    """The topology of a node with ``gpus`` allocatable GPUs and this annotation (or none).

    The annotation must describe at least the allocatable GPUs (indices ``0..gpus-1``); it may
    describe more (a GPU the device plugin withholds as unhealthy).
    """
    if gpus < 0:
        raise ValueError(f"GPU count must not be negative, not {gpus}")
    if annotation is None:
        return uniform_topology(gpus)
    topology = parse_gpu_topology(annotation)
    if topology.gpu_count < gpus:
        raise ValueError(f"describes {topology.gpu_count} GPU(s) but the node has {gpus} allocatable nvidia.com/gpu")
    return topology


@lru_cache(maxsize=256)
def parse_gpu_topology(annotation: str) -> GpuTopology:
    """Parse ``preset:<name>`` or node-link JSON; ``ValueError`` with the precise reason if bad.

    Cached by text: a thousand nodes with the same annotation share one frozen object.
    """
    text = annotation.strip()
    if text.startswith(PRESET_PREFIX):
        return preset(text[len(PRESET_PREFIX) :])
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"neither {PRESET_PREFIX}<name> nor JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    return from_node_link(data, source="annotation")


def preset(name: str) -> GpuTopology:
    builder = _PRESETS.get(name)
    if builder is None:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(preset_names())}")
    return _preset(name)


@cache
def _preset(name: str) -> GpuTopology:
    return from_node_link(_PRESETS[name](), source=PRESET_PREFIX + name)


@lru_cache(maxsize=64)
def uniform_topology(gpus: int) -> GpuTopology:
    """``gpus`` GPUs all equally connected: one switch, :data:`UNIFORM_BANDWIDTH` to each, so
    :data:`UNIFORM_BANDWIDTH` between every two (the widest path through the switch); the graph
    itself is built only if asked for."""
    matrix = tuple(tuple(math.inf if a == b else UNIFORM_BANDWIDTH for b in range(gpus)) for a in range(gpus))
    return GpuTopology(source="uniform", bandwidths=matrix, key=_digest(matrix))


def uniform_node_link(gpus: int) -> dict[str, Any]:
    """The node-link description of :func:`uniform_topology`'s machine."""
    vertices: list[dict[str, Any]] = [{"id": f"gpu{i}", "kind": GPU_KIND, "index": i} for i in range(gpus)]
    edges: list[dict[str, Any]] = []
    if gpus > 1:
        vertices.append({"id": "switch", "kind": "pcie-switch"})
        edges = [{"source": f"gpu{i}", "target": "switch", "bandwidth": UNIFORM_BANDWIDTH} for i in range(gpus)]
    return {"nodes": vertices, "edges": edges}


def _uniform_graph(gpus: int) -> nx.Graph:
    return from_node_link(uniform_node_link(gpus), source="uniform").graph


def to_annotation(topology: GpuTopology) -> str:
    """The topology as annotation JSON (node-link, edges under ``edges``), e.g. to write a preset out."""
    graph = topology.graph
    vertices = [{"id": vertex, **dict(graph.nodes[vertex])} for vertex in graph.nodes]
    edges = [{"source": a, "target": b, "bandwidth": data["bandwidth"]} for a, b, data in graph.edges(data=True)]
    return json.dumps(
        {"directed": False, "multigraph": False, "graph": {}, "nodes": vertices, "edges": edges},
        separators=(",", ":"),
    )


def from_node_link(data: object, *, source: str) -> GpuTopology:
    """Validate node-link data and build the topology; ``ValueError`` names the first problem."""
    if not isinstance(data, dict):
        raise ValueError("must be a JSON object in networkx node-link form (keys nodes and edges)")
    if data.get("directed", False) not in (False, None):
        raise ValueError("directed graphs are not supported: give each link once, with its per-direction bandwidth")
    multigraph = data.get("multigraph", False)
    if not isinstance(multigraph, bool):
        raise ValueError(f"multigraph must be true or false, not {multigraph!r}")
    vertices = data.get("nodes")
    if not isinstance(vertices, list):
        raise ValueError("nodes: missing or not a list")
    if "edges" in data and "links" in data:
        raise ValueError("has both edges and links: give the edge list once")
    edge_key = "links" if "links" in data else "edges"
    edges = data.get(edge_key, [])
    if not isinstance(edges, list):
        raise ValueError(f"{edge_key}: not a list")

    import networkx as nx

    graph = nx.Graph()
    gpu_of_index: dict[int, VertexId] = {}
    for position, vertex in enumerate(vertices):
        where = f"nodes[{position}]"
        if not isinstance(vertex, dict):
            raise ValueError(f"{where}: not an object")
        vertex_id = vertex.get("id")
        if not _is_vertex_id(vertex_id):
            raise ValueError(f"{where}.id: missing or not a string or integer")
        if graph.has_node(vertex_id):
            raise ValueError(f"{where}.id: vertex {vertex_id!r} appears twice")
        kind = vertex.get("kind")
        if kind not in VERTEX_KINDS:
            raise ValueError(f"{where}.kind: must be one of {', '.join(VERTEX_KINDS)}, not {kind!r}")
        attributes: dict[str, Any] = {"kind": kind}
        if kind == GPU_KIND:
            index = vertex.get("index")
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                raise ValueError(f"{where}.index: a GPU needs its device index (an integer ≥ 0), not {index!r}")
            if index in gpu_of_index:
                raise ValueError(
                    f"{where}.index: GPU index {index} appears twice "
                    f"(vertices {gpu_of_index[index]!r} and {vertex_id!r})"
                )
            gpu_of_index[index] = vertex_id
            attributes["index"] = index
        graph.add_node(vertex_id, **attributes)

    for position, edge in enumerate(edges):
        where = f"{edge_key}[{position}]"
        if not isinstance(edge, dict):
            raise ValueError(f"{where}: not an object")
        ends = []
        for end in ("source", "target"):
            vertex_id = edge.get(end)
            if not _is_vertex_id(vertex_id) or not graph.has_node(vertex_id):
                raise ValueError(f"{where}.{end}: {vertex_id!r} is not a vertex")
            ends.append(vertex_id)
        a, b = ends
        if a == b:
            raise ValueError(f"{where}: a link from {a!r} to itself")
        bandwidth = edge.get("bandwidth")
        if (
            isinstance(bandwidth, bool)
            or not isinstance(bandwidth, int | float)
            or not math.isfinite(bandwidth)
            or bandwidth <= 0
        ):
            raise ValueError(f"{where}.bandwidth: must be a positive number of GB/s, not {bandwidth!r}")
        if graph.has_edge(a, b):
            if not multigraph:
                raise ValueError(f"{where}: repeats the link {a!r}–{b!r}; set multigraph: true for parallel links")
            graph.edges[a, b]["bandwidth"] += float(bandwidth)
        else:
            graph.add_edge(a, b, bandwidth=float(bandwidth))

    count = len(gpu_of_index)
    missing = sorted(set(range(count)) - set(gpu_of_index))
    if missing:
        raise ValueError(f"GPU indices must be 0..{count - 1} without gaps; missing {', '.join(map(str, missing))}")
    order = [gpu_of_index[i] for i in range(count)]
    bandwidths = _pair_bandwidths(graph, order)
    for a in range(count):
        for b in range(a + 1, count):
            if bandwidths[a][b] <= 0:
                # Not described: they still talk through the host (see HOST_FLOOR).
                bandwidths[a][b] = bandwidths[b][a] = HOST_FLOOR
    matrix = tuple(tuple(row) for row in bandwidths)
    return GpuTopology(source=source, bandwidths=matrix, key=_digest(matrix), built_graph=nx.freeze(graph))


def _is_vertex_id(value: object) -> TypeGuard[VertexId]:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _pair_bandwidths(graph: nx.Graph, gpus: Sequence[VertexId]) -> list[list[float]]:
    """Widest-path bottleneck between every two GPUs, with only non-GPU vertices as relays.

    Max-min Floyd–Warshall: after relaxing through relay ``k``, ``width[i][j]`` is the widest
    path whose intermediate vertices are among the relays seen so far. Restricting ``k`` to
    non-GPU vertices is exactly the "a GPU never relays" rule. Exact, and tiny for real machines.
    """
    vertices = list(graph.nodes)
    position = {vertex: i for i, vertex in enumerate(vertices)}
    size = len(vertices)
    width = [[0.0] * size for _ in range(size)]
    for i in range(size):
        width[i][i] = math.inf
    for a, b, data in graph.edges(data=True):
        i, j = position[a], position[b]
        width[i][j] = width[j][i] = float(data["bandwidth"])
    relays = [position[v] for v in vertices if graph.nodes[v]["kind"] != GPU_KIND]
    for k in relays:
        through = width[k]
        for i in range(size):
            to_k = width[i][k]
            if to_k <= 0:
                continue
            row = width[i]
            for j in range(size):
                candidate = min(to_k, through[j])
                if candidate > row[j]:
                    row[j] = candidate
    index = [position[g] for g in gpus]
    return [[width[i][j] for j in index] for i in index]


def _digest(matrix: tuple[tuple[float, ...], ...]) -> str:
    text = json.dumps([[repr(value) for value in row] for row in matrix])
    return f"{len(matrix)}:{hashlib.sha256(text.encode()).hexdigest()[:16]}"


# --- presets --------------------------------------------------------------------------------------


def _graph_data(gpus: int, others: Mapping[str, str], links: Iterable[tuple[str, str, float]]) -> dict[str, Any]:
    vertices: list[dict[str, Any]] = [{"id": f"gpu{i}", "kind": GPU_KIND, "index": i} for i in range(gpus)]
    vertices += [{"id": vertex, "kind": kind} for vertex, kind in others.items()]
    edges = [{"source": a, "target": b, "bandwidth": bandwidth} for a, b, bandwidth in links]
    return {"directed": False, "multigraph": False, "graph": {}, "nodes": vertices, "edges": edges}


def _hgx_h100_8() -> dict[str, Any]:
    return _graph_data(8, {"nvswitch": "nvswitch"}, [(f"gpu{i}", "nvswitch", NVLINK4_H100) for i in range(8)])


DGX1_NVLINKS = {
    (0, 1): 1, (0, 2): 1, (0, 3): 2, (0, 4): 2,
    (1, 2): 2, (1, 3): 1, (1, 5): 2,
    (2, 3): 2, (2, 6): 1,
    (3, 7): 1,
    (4, 5): 1, (4, 6): 1, (4, 7): 2,
    (5, 6): 2, (5, 7): 1,
    (6, 7): 2,
}  # fmt: skip
"""NVLink 2.0 links per GPU pair on a DGX-1V, as ``nvidia-smi topo -m`` shows (NV1/NV2)."""


def _dgx1_v100() -> dict[str, Any]:
    links = [(f"gpu{a}", f"gpu{b}", count * NVLINK2) for (a, b), count in DGX1_NVLINKS.items()]
    others = {f"plx{s}": "pcie-switch" for s in range(4)} | {"cpu0": "cpu", "cpu1": "cpu"}
    links += [(f"gpu{i}", f"plx{i // 2}", PCIE_GEN3_X16) for i in range(8)]
    links += [(f"plx{s}", f"cpu{s // 2}", PCIE_GEN3_X16) for s in range(4)]
    links.append(("cpu0", "cpu1", CROSS_SOCKET))
    return _graph_data(8, others, links)


def _pcie_2x4() -> dict[str, Any]:
    others = {"switch0": "pcie-switch", "switch1": "pcie-switch", "cpu0": "cpu", "cpu1": "cpu"}
    links = [(f"gpu{i}", f"switch{i // 4}", PCIE_GEN3_X16) for i in range(8)]
    links += [("switch0", "cpu0", PCIE_GEN3_X16), ("switch1", "cpu1", PCIE_GEN3_X16)]
    links.append(("cpu0", "cpu1", CROSS_SOCKET))
    return _graph_data(8, others, links)


_PRESETS = {
    "dgx1-v100": _dgx1_v100,
    "hgx-h100-8": _hgx_h100_8,
    "pcie-2x4": _pcie_2x4,
}
