"""The instance generator and the hand-written instances: deterministic, well formed, loadable.

Benchmarks and solver tests lean on generated clusters being what they claim (the busy share of
GPUs, consistent gangs, no GPU index held twice, nodes not over-committed) and on every instance
in the repository converting cleanly, so both are checked here rather than trusted.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcsat.adapters.convert.snapshot import snapshot_from_objects
from vcsat.adapters.generate.command import generate_cmd
from vcsat.adapters.generate.generator import (
    GPU_PRODUCT_LABEL,
    RACK_LABEL,
    GeneratorOptions,
    dump_instance,
    generate_instance,
    write_instance,
)
from vcsat.model import resources as res

REPO = Path(__file__).resolve().parent.parent
HAND_WRITTEN = sorted((REPO / "instances").glob("*.yaml")) + sorted((REPO / "adapters" / "data").glob("*.yaml"))

SMALL = GeneratorOptions(nodes=60, pending_jobs=80, seed=3)

_CACHE: dict[GeneratorOptions, dict[str, Any]] = {}


def generated(options: GeneratorOptions) -> dict[str, Any]:
    if options not in _CACHE:
        _CACHE[options] = generate_instance(options)
    return _CACHE[options]


def of_kind(instance: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [item for item in instance["items"] if item["kind"] == kind]


def gpu_request(pod: dict[str, Any]) -> int:
    return sum(int(c["resources"]["requests"].get(res.GPU, "0")) for c in pod["spec"]["containers"])


def bound_gpu_ids(instance: dict[str, Any]) -> dict[str, list[int]]:
    held: dict[str, list[int]] = defaultdict(list)
    for pod in of_kind(instance, "Pod"):
        ids = pod["metadata"].get("annotations", {}).get("vcsat.io/gpu-ids")
        if ids:
            held[pod["spec"]["nodeName"]].extend(int(i) for i in ids.split(","))
    return held


# --- determinism ------------------------------------------------------------------------------


def test_same_seed_gives_byte_identical_json() -> None:
    first = dump_instance(generate_instance(SMALL), "json")
    second = dump_instance(generate_instance(SMALL), "json")
    assert first == second


def test_another_seed_gives_another_cluster() -> None:
    other = GeneratorOptions(nodes=SMALL.nodes, pending_jobs=SMALL.pending_jobs, seed=SMALL.seed + 1)
    assert dump_instance(generate_instance(other), "json") != dump_instance(generated(SMALL), "json")


def test_more_pending_jobs_leave_the_cluster_and_its_load_alone() -> None:
    """Separate random streams: the pending mix can vary while the running cluster stays put."""
    more = GeneratorOptions(nodes=SMALL.nodes, pending_jobs=SMALL.pending_jobs * 2, seed=SMALL.seed)

    def running(instance: dict[str, Any]) -> list[dict[str, Any]]:
        return [i for i in instance["items"] if i["kind"] == "Node" or i.get("spec", {}).get("nodeName")]

    assert running(generate_instance(more)) == running(generated(SMALL))


# --- shapes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        SMALL,
        GeneratorOptions(nodes=37, gpus_per_node=4, rack_size=5, racks_per_spine=3, pending_jobs=40, seed=1),
        GeneratorOptions(nodes=16, busy_gpu_fraction=0.0, pending_jobs=10),
        GeneratorOptions(nodes=16, busy_gpu_fraction=1.0, pending_jobs=10),
        GeneratorOptions(nodes=40, busy_gpu_fraction=0.85, pending_jobs=0, rack_members="regex"),
    ],
    ids=["small", "odd-sizes", "idle", "full", "busy-regex"],
)
def test_shape(options: GeneratorOptions) -> None:
    instance = generated(options)
    assert (instance["apiVersion"], instance["kind"]) == ("v1", "List")
    for item in instance["items"]:
        assert item["apiVersion"] and item["kind"] and item["metadata"]["name"], item
    names = Counter((i["kind"], i["metadata"].get("namespace"), i["metadata"]["name"]) for i in instance["items"])
    assert names.most_common(1)[0][1] == 1

    nodes = of_kind(instance, "Node")
    assert len(nodes) == options.nodes
    assert len({node["metadata"]["name"] for node in nodes}) == options.nodes
    for node in nodes:
        assert node["status"]["allocatable"][res.GPU] == str(options.gpus_per_node)
        assert node["metadata"]["labels"][GPU_PRODUCT_LABEL]
        assert node["metadata"]["labels"][RACK_LABEL]

    total = options.nodes * options.gpus_per_node
    busy = sum(len(ids) for ids in bound_gpu_ids(instance).values())
    assert abs(busy - options.busy_gpu_fraction * total) <= 0.05 * total

    pending = [p for p in of_kind(instance, "Pod") if p["status"]["phase"] == "Pending"]
    assert len(pending) == options.pending_pods
    pending_groups = {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pending}
    assert len(pending_groups) == options.pending_jobs
    for pod in pending:
        assert "nodeName" not in pod["spec"]
        assert pod["spec"]["schedulerName"] == options.scheduler_name
        assert pod["metadata"]["annotations"]["volcano.sh/task-spec"]


@pytest.mark.parametrize("options", [SMALL, GeneratorOptions(nodes=24, gpus_per_node=4, busy_gpu_fraction=0.9)])
def test_no_gpu_index_is_held_twice_and_each_pod_holds_what_it_asks(options: GeneratorOptions) -> None:
    instance = generated(options)
    for node, ids in bound_gpu_ids(instance).items():
        assert len(ids) == len(set(ids)), node
        assert all(0 <= i < options.gpus_per_node for i in ids), node
    for pod in of_kind(instance, "Pod"):
        ids = pod["metadata"].get("annotations", {}).get("vcsat.io/gpu-ids")
        if pod["spec"].get("nodeName") and gpu_request(pod):
            assert ids is not None and len(ids.split(",")) == gpu_request(pod)


def test_gangs_are_consistent() -> None:
    instance = generated(SMALL)
    groups = {(g["metadata"]["namespace"], g["metadata"]["name"]): g for g in of_kind(instance, "PodGroup")}
    queues = {q["metadata"]["name"] for q in of_kind(instance, "Queue")}
    classes = {c["metadata"]["name"] for c in of_kind(instance, "PriorityClass")}
    members: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    phases: dict[tuple[str, str], set[str]] = defaultdict(set)
    for pod in of_kind(instance, "Pod"):
        annotations = pod["metadata"].get("annotations", {})
        assert pod["spec"]["priorityClassName"] in classes
        if "scheduling.k8s.io/group-name" not in annotations:
            assert pod["metadata"]["namespace"] == "kube-system"
            continue
        key = (pod["metadata"]["namespace"], annotations["scheduling.k8s.io/group-name"])
        assert key in groups, key
        members[key][annotations["volcano.sh/task-spec"]] += 1
        phases[key].add(pod["status"]["phase"])
    assert set(members) == set(groups)
    for key, group in groups.items():
        spec = group["spec"]
        assert spec["minMember"] == sum(members[key].values()), key
        assert spec.get("minTaskMember", dict(members[key])) == dict(members[key])
        assert spec["queue"] in queues and spec["priorityClassName"] in classes
        assert len(phases[key]) == 1, key  # a job is running whole or waiting whole
        running = phases[key] == {"Running"}
        assert (group["status"]["phase"] == "Running") == running


def test_pending_work_is_a_production_like_mix_in_creation_order() -> None:
    instance = generated(GeneratorOptions(nodes=50, pending_jobs=1000))
    groups = [g for g in of_kind(instance, "PodGroup") if g["status"]["phase"] != "Running"]
    stamps = [g["metadata"]["creationTimestamp"] for g in groups]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    running = [g["metadata"]["creationTimestamp"] for g in of_kind(instance, "PodGroup") if g not in groups]
    assert max(running) < min(stamps)  # what waits arrived after what runs
    pending = [p for p in of_kind(instance, "Pod") if p["status"]["phase"] == "Pending"]
    gpus = Counter(gpu_request(p) for p in pending)
    assert gpus.most_common(1)[0][0] == 1  # mostly 1-GPU pods
    assert {0, 1, 2, 4, 8} <= set(gpus)
    multi_node = [g for g in groups if g["spec"].get("minResources", {}).get(res.GPU, "0") in ("16", "24", "32")]
    assert multi_node  # the tail of multi-node gangs
    assert len({g["spec"]["queue"] for g in groups}) == 3
    assert len({g["spec"]["priorityClassName"] for g in groups}) == 3


def test_hypernodes_cover_every_node_once() -> None:
    for options in (SMALL, GeneratorOptions(nodes=SMALL.nodes, pending_jobs=1, rack_members="regex")):
        instance = generated(options)
        names = [n["metadata"]["name"] for n in of_kind(instance, "Node")]
        racks = [h for h in of_kind(instance, "HyperNode") if h["spec"]["tier"] == 1]
        spines = [h for h in of_kind(instance, "HyperNode") if h["spec"]["tier"] == 2]
        covered: Counter[str] = Counter()
        for rack in racks:
            for member in rack["spec"]["members"]:
                assert member["type"] == "Node"
                selector = member["selector"]
                if "exactMatch" in selector:
                    covered[selector["exactMatch"]["name"]] += 1
                else:
                    pattern = re.compile(selector["regexMatch"]["pattern"])
                    covered.update(name for name in names if pattern.fullmatch(name))
        assert covered == Counter(names)
        in_spines = Counter(m["selector"]["exactMatch"]["name"] for s in spines for m in s["spec"]["members"])
        assert in_spines == Counter(r["metadata"]["name"] for r in racks)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.integers(1, 40),
    gpus_per_node=st.sampled_from([1, 2, 4, 8, 16]),
    busy=st.floats(0.0, 1.0),
    jobs=st.integers(0, 30),
    extra_pods=st.integers(0, 30),
    seed=st.integers(0, 2**16),
)
def test_any_small_cluster_is_consistent(
    nodes: int, gpus_per_node: int, busy: float, jobs: int, extra_pods: int, seed: int
) -> None:
    options = GeneratorOptions(
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        rack_size=4,
        racks_per_spine=2,
        busy_gpu_fraction=busy,
        pending_jobs=jobs,
        target_pending_pods=jobs + min(extra_pods, 7 * jobs),
        seed=seed,
    )
    instance = generate_instance(options)
    held = bound_gpu_ids(instance)
    assert sum(len(ids) for ids in held.values()) == round(busy * nodes * gpus_per_node)
    assert all(len(ids) == len(set(ids)) for ids in held.values())
    pending = [p for p in of_kind(instance, "Pod") if p["status"]["phase"] == "Pending"]
    assert len(pending) == options.pending_pods
    snapshot = snapshot_from_objects(instance["items"], strict=True)
    assert_no_node_overcommitted(snapshot)


def assert_no_node_overcommitted(snapshot: Any) -> None:
    for node in snapshot.nodes:
        used = res.total(pod.requests for pod in snapshot.pods_on_node.get(node.name, ()))
        used.pop(res.GPU_MILLI, None)  # shares of a GPU, not a node resource (contract §1)
        assert not res.shortfall(used, node.allocatable), node.name


# --- options, files and the command -------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"nodes": 0}, "nodes must be at least 1"),
        ({"busy_gpu_fraction": 1.5}, "busy_gpu_fraction"),
        ({"pending_jobs": 10, "target_pending_pods": 5}, "target_pending_pods"),
        ({"queues": ()}, "queues"),
        ({"queues": (("a", 0),)}, "queues"),
        ({"high_priority_share": 0.7, "low_priority_share": 0.7}, "at most 1"),
        ({"gpus_per_node": 1000}, "per GPU"),
    ],
)
def test_bad_options_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GeneratorOptions(**changes)


def test_default_pending_pods_are_one_and_a_half_per_job() -> None:
    assert GeneratorOptions(pending_jobs=2000).pending_pods == 3000


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_write_instance_round_trips(tmp_path: Path, suffix: str) -> None:
    instance = generated(SMALL)
    path = tmp_path / f"cluster{suffix}"
    size = write_instance(instance, path)
    assert size == path.stat().st_size
    text = path.read_text()
    assert (json.loads(text) if suffix == ".json" else yaml.safe_load(text)) == instance
    if suffix == ".json":
        assert "\n" not in text and ", " not in text[:200]  # compact


def test_generate_command_writes_a_file(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    result = CliRunner().invoke(
        generate_cmd,
        ["--nodes", "20", "--pending-jobs", "10", "--busy", "0.25", "--seed", "7", "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    instance = json.loads(out.read_text())
    assert instance == generate_instance(GeneratorOptions(nodes=20, pending_jobs=10, busy_gpu_fraction=0.25, seed=7))


def test_generate_command_prints_yaml_without_a_file() -> None:
    result = CliRunner().invoke(generate_cmd, ["--nodes", "3", "--pending-jobs", "2"])
    assert result.exit_code == 0
    assert yaml.safe_load(result.output)["kind"] == "List"


@pytest.mark.parametrize("args", [["--busy", "1.5"], ["--nodes", "0"], ["--pending-jobs", "-1"]])
def test_generate_command_refuses_bad_options_with_exit_2(args: list[str]) -> None:
    result = CliRunner().invoke(generate_cmd, args)
    assert result.exit_code == 2


# --- speed ------------------------------------------------------------------------------------


def test_small_instance_has_the_asked_sizes() -> None:
    items = generate_instance(GeneratorOptions(nodes=200, pending_jobs=400))["items"]
    assert sum(1 for item in items if item["kind"] == "Node") == 200


# --- everything loads -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [SMALL, GeneratorOptions(nodes=40, pending_jobs=30, rack_members="regex", unavailable_node_fraction=0.2)],
    ids=["small", "regex-unavailable"],
)
def test_generated_instances_convert(options: GeneratorOptions) -> None:
    instance = generated(options)
    snapshot = snapshot_from_objects(instance["items"], strict=True, source="generated")
    assert len(snapshot.nodes) == options.nodes
    assert sum(1 for pod in snapshot.pods if pod.pending) == options.pending_pods
    assert {q.name for q in snapshot.queues} == {"default", *(name for name, _ in options.queues)}
    unavailable = round(options.unavailable_node_fraction * options.nodes)
    assert sum(1 for node in snapshot.nodes if not node.schedulable) == unavailable
    assert_no_node_overcommitted(snapshot)


def test_the_default_benchmark_instance_converts_whole() -> None:
    """Also catches name clashes that only show at scale (the loader refuses duplicates)."""
    instance = generated(GeneratorOptions(system_pods_per_node=3))
    snapshot = snapshot_from_objects(instance["items"], strict=True)
    assert sum(node.gpus for node in snapshot.nodes) == 8000
    assert sum(len(pod.gpu_ids or ()) for pod in snapshot.pods if pod.bound) == 4000
    assert len(snapshot.hypernodes) == 63 + 8
    assert_no_node_overcommitted(snapshot)


@pytest.mark.parametrize("path", HAND_WRITTEN, ids=lambda p: p.name)
def test_hand_written_instances_convert(path: Path) -> None:
    instance = yaml.safe_load(path.read_text())
    assert (instance["apiVersion"], instance["kind"]) == ("v1", "List")
    assert path.read_text().startswith("#"), "each instance opens with a comment saying what it shows"
    snapshot = snapshot_from_objects(instance["items"], strict=True, source=str(path))
    assert snapshot.nodes and any(pod.pending for pod in snapshot.pods)
    if path.parent.name == "instances":
        assert len(snapshot.nodes) <= 6
    assert_no_node_overcommitted(snapshot)


def test_every_hand_written_instance_is_there() -> None:
    names = {p.name for p in HAND_WRITTEN}
    expected = {"gang.yaml", "predicates.yaml", "fragmentation.yaml", "gpus.yaml", "priority.yaml"}
    assert expected | {"queues.yaml", "demo.yaml"} <= names


def test_anti_affinity_share_spreads_whole_jobs_and_leaves_the_rest_alone() -> None:
    spread = GeneratorOptions(nodes=60, pending_jobs=80, seed=3, anti_affinity_share=0.2)
    plain, marked = generated(SMALL), generated(spread)
    pending = [p for p in of_kind(marked, "Pod") if "nodeName" not in p["spec"]]
    carrying = [p for p in pending if "podAntiAffinity" in p["spec"].get("affinity", {})]
    assert 0.2 * len(pending) <= len(carrying) < 0.2 * len(pending) + 9  # whole jobs of at most 8 pods
    for pod in carrying:
        anti = pod["spec"]["affinity"]["podAntiAffinity"]
        (term,) = anti["requiredDuringSchedulingIgnoredDuringExecution"]
        job = pod["metadata"]["labels"]["volcano.sh/job-name"]
        assert term["labelSelector"]["matchLabels"] == {"volcano.sh/job-name": job}

    def without_affinity(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**p, "spec": {k: v for k, v in p["spec"].items() if k != "affinity"}} for p in pods]

    assert without_affinity(of_kind(marked, "Pod")) == without_affinity(of_kind(plain, "Pod"))
    snapshot = snapshot_from_objects(marked["items"])
    assert sum(1 for p in snapshot.pods if p.pod_anti_affinity.required) == len(carrying)


def test_spread_job_share_adds_topology_spread_and_leaves_the_rest_alone() -> None:
    options = GeneratorOptions(nodes=60, pending_jobs=80, seed=3, spread_job_share=0.3)
    plain, marked = generated(SMALL), generated(options)
    pending = [p for p in of_kind(marked, "Pod") if "nodeName" not in p["spec"]]
    carrying = [p for p in pending if "topologySpreadConstraints" in p["spec"]]
    jobs = {p["metadata"]["labels"]["volcano.sh/job-name"] for p in pending}
    spread_jobs = {p["metadata"]["labels"]["volcano.sh/job-name"] for p in carrying}
    assert 0 < len(spread_jobs) < len(jobs)
    for pod in carrying:
        (rule,) = pod["spec"]["topologySpreadConstraints"]
        job = pod["metadata"]["labels"]["volcano.sh/job-name"]
        assert rule["labelSelector"]["matchLabels"] == {"volcano.sh/job-name": job}
        assert rule["whenUnsatisfiable"] == "DoNotSchedule" and rule["maxSkew"] == 1
    # Whole jobs: every pod of a spreading job carries the constraint.
    assert all(
        "topologySpreadConstraints" in p["spec"]
        for p in pending
        if p["metadata"]["labels"]["volcano.sh/job-name"] in spread_jobs
    )

    def without_spread(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**p, "spec": {k: v for k, v in p["spec"].items() if k != "topologySpreadConstraints"}} for p in pods]

    assert without_spread(of_kind(marked, "Pod")) == without_spread(of_kind(plain, "Pod"))
    snapshot = snapshot_from_objects(marked["items"])
    assert sum(1 for p in snapshot.pods if p.spread_constraints) == len(carrying)
