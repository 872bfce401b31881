"""The GPU interconnect annotation: presets, widest paths, networkx compatibility, clear errors."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcsat.model.gpu_topology import (
    DGX1_NVLINKS,
    HOST_FLOOR,
    PCIE_GEN3_X16,
    UNIFORM_BANDWIDTH,
    GpuTopology,
    from_node_link,
    gpu_topology,
    parse_gpu_topology,
    preset,
    preset_names,
    to_annotation,
    uniform_node_link,
    uniform_topology,
)


def annotation(vertices: list[dict[str, Any]], edges: list[tuple[Any, Any, float]], **extra: Any) -> str:
    data = {
        "nodes": vertices,
        "edges": [{"source": a, "target": b, "bandwidth": w} for a, b, w in edges],
        **extra,
    }
    return json.dumps(data)


def gpu(name: str, index: int) -> dict[str, Any]:
    return {"id": name, "kind": "gpu", "index": index}


def switch(name: str, kind: str = "pcie-switch") -> dict[str, Any]:
    return {"id": name, "kind": kind}


# --- presets ------------------------------------------------------------------------------------


def test_preset_names() -> None:
    assert preset_names() == ("dgx1-v100", "hgx-h100-8", "pcie-2x4")


@pytest.mark.parametrize(
    ("name", "a", "b", "expected"),
    [
        ("hgx-h100-8", 0, 7, 450.0),
        ("hgx-h100-8", 3, 4, 450.0),
        ("dgx1-v100", 0, 3, 50.0),  # NV2
        ("dgx1-v100", 0, 4, 50.0),  # NV2 across the quads
        ("dgx1-v100", 0, 1, 25.0),  # NV1 (not 50 via GPU 3 and 2: a GPU never relays)
        ("dgx1-v100", 2, 6, 25.0),  # NV1
        ("dgx1-v100", 0, 5, 10.0),  # SYS: PCIe switch, QPI, PCIe switch
        ("dgx1-v100", 3, 4, 10.0),
        ("pcie-2x4", 0, 3, 16.0),  # same PCIe switch
        ("pcie-2x4", 4, 7, 16.0),
        ("pcie-2x4", 3, 4, 10.0),  # across the sockets
    ],
)
def test_preset_pair_bandwidths(name: str, a: int, b: int, expected: float) -> None:
    topology = parse_gpu_topology(f"preset:{name}")
    assert topology.bandwidth(a, b) == expected
    assert topology.bandwidth(b, a) == expected
    assert topology.gpu_count == 8
    assert topology.described


def test_dgx1_is_the_hybrid_cube_mesh() -> None:
    # Six NVLink 2.0 links per V100; 8 NV2 and 8 NV1 pairs; both quads fully NVLinked.
    for g in range(8):
        assert sum(count for pair, count in DGX1_NVLINKS.items() if g in pair) == 6
    assert sorted(DGX1_NVLINKS.values()).count(2) == 8
    assert sorted(DGX1_NVLINKS.values()).count(1) == 8
    for quad in ((0, 1, 2, 3), (4, 5, 6, 7)):
        assert all(pair in DGX1_NVLINKS for pair in itertools.combinations(quad, 2))
    dgx1 = preset("dgx1-v100")
    sys_pairs = [(a, b) for a, b in itertools.combinations(range(8), 2) if (a, b) not in DGX1_NVLINKS]
    assert len(sys_pairs) == 12
    assert {dgx1.bandwidth(a, b) for a, b in sys_pairs} == {10.0}


def test_uniform_without_annotation() -> None:
    topology = gpu_topology(None, 4)
    assert not topology.described
    assert topology.gpu_count == 4
    assert {topology.bandwidth(a, b) for a, b in itertools.permutations(range(4), 2)} == {UNIFORM_BANDWIDTH}
    assert gpu_topology(None, 0).gpu_count == 0
    assert topology == uniform_topology(4)


@pytest.mark.parametrize("gpus", [0, 1, 2, 3, 8, 16])
def test_uniform_matrix_is_what_its_graph_gives(gpus: int) -> None:
    """The uniform topology writes its matrix down without building a graph (no networkx import
    in a cycle of unannotated nodes); the widest paths of its graph give the same matrix."""
    direct = uniform_topology(gpus)
    from_graph = from_node_link(uniform_node_link(gpus), source="uniform")
    assert direct.bandwidths == from_graph.bandwidths
    assert direct.key == from_graph.key
    assert direct == from_graph
    assert sorted(direct.graph.nodes) == sorted(from_graph.graph.nodes)
    assert to_annotation(direct) == to_annotation(from_graph)


def test_same_text_gives_the_same_object_and_equal_matrices_are_equal() -> None:
    assert parse_gpu_topology("preset:pcie-2x4") is parse_gpu_topology("preset:pcie-2x4")
    written = to_annotation(preset("dgx1-v100"))
    again = parse_gpu_topology(written)
    assert again == preset("dgx1-v100")
    assert hash(again) == hash(preset("dgx1-v100"))
    assert again.source == "annotation"
    assert preset("dgx1-v100") != preset("pcie-2x4")


def test_annotation_may_describe_more_gpus_than_allocatable() -> None:
    assert gpu_topology("preset:hgx-h100-8", 7).gpu_count == 8


# --- widest paths ---------------------------------------------------------------------------------


def test_widest_path_through_switches_takes_the_best_bottleneck() -> None:
    text = annotation(
        [gpu("g0", 0), gpu("g1", 1), switch("a"), switch("b"), switch("c", "nvswitch"), switch("cpu", "cpu")],
        [
            ("g0", "a", 30),
            ("a", "b", 10),  # the short way is narrow
            ("a", "c", 20),
            ("c", "b", 25),  # the long way is wider: bottleneck 20
            ("b", "g1", 40),
            ("a", "cpu", 5),
            ("cpu", "b", 5),
        ],
    )
    assert parse_gpu_topology(text).bandwidth(0, 1) == 20.0


def test_a_gpu_is_never_a_relay() -> None:
    text = annotation(
        [gpu("g0", 0), gpu("g1", 1), gpu("g2", 2), switch("sw")],
        [("g0", "g2", 100), ("g2", "g1", 100), ("g0", "sw", 5), ("sw", "g1", 5), ("g2", "sw", 5)],
    )
    topology = parse_gpu_topology(text)
    assert topology.bandwidth(0, 1) == 5.0
    assert topology.bandwidth(0, 2) == 100.0


def test_direct_link_and_switch_path_take_the_wider() -> None:
    text = annotation(
        [gpu("g0", 0), gpu("g1", 1), switch("sw", "nvswitch")],
        [("g0", "g1", 25), ("g0", "sw", 300), ("sw", "g1", 300)],
    )
    assert parse_gpu_topology(text).bandwidth(0, 1) == 300.0


@pytest.mark.parametrize("edge_key", ["edges", "links"])
def test_networkx_node_link_data_is_read_as_written(edge_key: str) -> None:
    graph = nx.Graph()
    for i in range(4):
        graph.add_node(f"GPU{i}", kind="gpu", index=i)
    graph.add_node(0, kind="pcie-switch")  # integer ids are fine too
    graph.add_node("nic0", kind="nic")
    graph.add_edge("GPU0", "GPU1", bandwidth=50)
    graph.add_edge("GPU2", "GPU3", bandwidth=50)
    for i in range(4):
        graph.add_edge(f"GPU{i}", 0, bandwidth=16)
    graph.add_edge(0, "nic0", bandwidth=25)
    data = nx.node_link_data(graph, edges=edge_key)
    topology = parse_gpu_topology(json.dumps(data))
    assert topology.bandwidth(0, 1) == 50.0
    assert topology.bandwidth(1, 2) == 16.0
    assert topology.graph.nodes["nic0"]["kind"] == "nic"


def test_parallel_links_of_a_multigraph_add_up() -> None:
    graph = nx.MultiGraph()
    graph.add_node("a", kind="gpu", index=0)
    graph.add_node("b", kind="gpu", index=1)
    graph.add_edge("a", "b", bandwidth=25)
    graph.add_edge("a", "b", bandwidth=25)  # NV2: two bricks
    topology = parse_gpu_topology(json.dumps(nx.node_link_data(graph, edges="edges")))
    assert topology.bandwidth(0, 1) == 50.0


def test_the_stored_graph_is_frozen() -> None:
    with pytest.raises(nx.NetworkXError):
        preset("pcie-2x4").graph.add_node("x")


# --- bad annotations --------------------------------------------------------------------------------

G0, G1 = gpu("g0", 0), gpu("g1", 1)
LINK = [("g0", "g1", 25)]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{nodes: []}", "neither preset:<name> nor JSON (Expecting property name enclosed in double quotes"),
        ("preset:dgx2", "unknown preset 'dgx2'; known: dgx1-v100, hgx-h100-8, pcie-2x4"),
        ("[1, 2]", "must be a JSON object in networkx node-link form"),
        (json.dumps({"directed": True, "nodes": []}), "directed graphs are not supported"),
        (json.dumps({"multigraph": "yes", "nodes": []}), "multigraph must be true or false, not 'yes'"),
        (json.dumps({"edges": []}), "nodes: missing or not a list"),
        (json.dumps({"nodes": [], "edges": [], "links": []}), "has both edges and links"),
        (json.dumps({"nodes": [], "links": {}}), "links: not a list"),
        (json.dumps({"nodes": ["g0"]}), "nodes[0]: not an object"),
        (json.dumps({"nodes": [{"kind": "gpu", "index": 0}]}), "nodes[0].id: missing or not a string"),
        (annotation([G0, gpu("g0", 1)], []), "nodes[1].id: vertex 'g0' appears twice"),
        (annotation([{"id": "g0", "kind": "GPU", "index": 0}], []), "nodes[0].kind: must be one of gpu,"),
        (annotation([{"id": "s"}], []), "pcie-switch, cpu, nic, not None"),
        (annotation([{"id": "g0", "kind": "gpu"}], []), "nodes[0].index: a GPU needs its device index"),
        (annotation([{"id": "g0", "kind": "gpu", "index": -1}], []), "not -1"),
        (annotation([{"id": "g0", "kind": "gpu", "index": True}], []), "not True"),
        (annotation([G0, gpu("g1", 0)], []), "index 0 appears twice (vertices 'g0' and 'g1')"),
        (annotation([G0, G1], [("g0", "g9", 25)]), "edges[0].target: 'g9' is not a vertex"),
        (annotation([G0, G1], [("g0", "g0", 25)]), "edges[0]: a link from 'g0' to itself"),
        (annotation([G0, G1], [("g0", "g1", 0)]), "edges[0].bandwidth: must be a positive"),
        (annotation([G0, G1], [("g0", "g1", "fast")]), "not 'fast'"),
        (json.dumps({"nodes": [G0, G1], "edges": [{"source": "g0", "target": "g1"}]}), "not None"),
        (annotation([G0, G1], [*LINK, ("g1", "g0", 25)]), "edges[1]: repeats the link 'g1'–'g0'"),
        (annotation([G0, gpu("g2", 2)], []), "GPU indices must be 0..1 without gaps; missing 1"),
    ],
)
def test_bad_annotation_says_why(text: str, reason: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_gpu_topology(text)
    assert reason in str(raised.value)


def test_gpus_without_a_described_path_talk_through_the_host() -> None:
    """A graph of only the NVLink pairs, as ``nvidia-smi topo -m`` lists NV1/NV2 (here GPUs 0-1
    and 2-3 paired, nothing else): the undescribed pairs get the host floor, not an error, and the
    described pairs keep their NVLink figure."""
    gpus = [gpu(f"g{i}", i) for i in range(4)]
    topology = parse_gpu_topology(annotation(gpus, [("g0", "g1", 50), ("g2", "g3", 25)]))
    assert topology.bandwidth(0, 1) == 50 and topology.bandwidth(2, 3) == 25
    assert all(topology.bandwidth(a, b) == HOST_FLOOR for a in (0, 1) for b in (2, 3))
    # No path free of other GPUs (only through GPU 2), and a GPU with no link at all.
    relay = parse_gpu_topology(annotation([G0, G1, gpu("g2", 2)], [("g0", "g2", 50), ("g2", "g1", 50)]))
    assert relay.bandwidth(0, 1) == HOST_FLOOR
    alone = parse_gpu_topology(annotation([G0, G1, switch("sw")], [("g0", "sw", 16)]))
    assert alone.bandwidth(0, 1) == HOST_FLOOR


def test_the_host_floor_is_below_every_described_pcie_path() -> None:
    assert HOST_FLOOR < PCIE_GEN3_X16 <= UNIFORM_BANDWIDTH


def test_annotation_with_fewer_gpus_than_allocatable_is_refused() -> None:
    with pytest.raises(ValueError, match=r"describes 8 GPU\(s\) but the node has 16 allocatable"):
        gpu_topology("preset:dgx1-v100", 16)


# --- property: the matrix is the exact widest path -------------------------------------------------


@st.composite
def small_graphs(draw: st.DrawFn) -> tuple[str, nx.Graph]:
    gpus = draw(st.integers(min_value=2, max_value=4))
    relays = draw(st.integers(min_value=0, max_value=3))
    names = [f"g{i}" for i in range(gpus)] + [f"s{i}" for i in range(relays)]
    graph = nx.Graph()
    for i in range(gpus):
        graph.add_node(f"g{i}", kind="gpu", index=i)
    for i in range(relays):
        graph.add_node(f"s{i}", kind="pcie-switch")
    for a, b in itertools.combinations(names, 2):
        if draw(st.booleans()):
            graph.add_edge(a, b, bandwidth=draw(st.sampled_from([5, 10, 16, 25, 50, 300])))
    # Often a slow backbone switch; without it some pairs may have no path (the host floor).
    if draw(st.booleans()):
        graph.add_node("backbone", kind="cpu")
        for i in range(gpus):
            if not graph.has_edge(f"g{i}", "backbone"):
                graph.add_edge(f"g{i}", "backbone", bandwidth=1)
    return json.dumps(nx.node_link_data(graph, edges="edges")), graph


def brute_force_widest(graph: nx.Graph, a: str, b: str) -> float:
    others = [v for v, kind in graph.nodes(data="kind") if kind == "gpu" and v not in (a, b)]
    relays_only = graph.subgraph([v for v in graph.nodes if v not in others])
    best = 0.0
    for path in nx.all_simple_paths(relays_only, a, b):
        best = max(best, min(relays_only.edges[u, v]["bandwidth"] for u, v in itertools.pairwise(path)))
    return best


@settings(max_examples=60, deadline=None)
@given(small_graphs())
def test_pair_bandwidth_is_the_widest_path_without_gpu_relays(case: tuple[str, nx.Graph]) -> None:
    text, graph = case
    topology: GpuTopology = parse_gpu_topology(text)
    for a, b in itertools.combinations(range(topology.gpu_count), 2):
        expected = brute_force_widest(graph, f"g{a}", f"g{b}") or HOST_FLOOR
        assert topology.bandwidth(a, b) == expected
        assert topology.bandwidth(b, a) == expected
    assert all(math.isinf(topology.bandwidth(i, i)) for i in range(topology.gpu_count))


def test_a_file_with_an_nvlink_only_graph_is_read() -> None:
    """The converter (strict, as for files) takes the graph and keeps it on the node."""
    from test_objects import k8s_node

    from vcsat.adapters.convert.snapshot import snapshot_from_objects

    text = annotation([gpu(f"g{i}", i) for i in range(8)], [("g0", "g5", 50), ("g1", "g2", 25)])
    node = k8s_node("n1", gpus=8, metadata__annotations={"vcsat.io/gpu-topology": text})
    (converted,) = snapshot_from_objects([node], source="t.yaml").nodes
    assert converted.gpu_topology == text
    assert gpu_topology(text, 8).bandwidth(0, 1) == HOST_FLOOR
