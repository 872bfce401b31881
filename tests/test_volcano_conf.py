"""Volcano's volcano-scheduler.conf read as a vcsat Policy: the stock configurations, binpack
weights, ConfigMaps, the warnings for what has no meaning here, and bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from vcsat.adapters.convert.volcano_conf import VolcanoConf, parse_volcano_conf, read_volcano_conf
from vcsat.adapters.errors import InputError
from vcsat.model import Policy

# Volcano's Helm chart ships this as volcano-scheduler-configmap.
HELM_DEFAULT = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""

# The scheduler's built-in default, used when it is given no configuration.
BUILT_IN_DEFAULT = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

FULL = """
actions: "enqueue, allocate, backfill, preempt, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
    arguments:
      overcommit-factor: 1.5
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 1
      binpack.memory: 2
      binpack.resources: nvidia.com/gpu, example.com/foo
      binpack.resources.nvidia.com/gpu: 5
  - name: network-topology-aware
    arguments:
      weight: 3
"""


def setting(conf: VolcanoConf, name: str) -> Any:
    """A setting wherever it lives: on the Policy once it has the field, in ``unmapped`` until then."""
    if name in Policy.model_fields:
        assert name not in conf.unmapped
        return getattr(conf.policy, name)
    return conf.unmapped.get(name)


def has_warning(warnings: tuple[str, ...], place: str, words: str) -> bool:
    return any(w.startswith(f"{place}: ") and words in w for w in warnings)


def test_helm_default_configuration() -> None:
    conf = parse_volcano_conf(HELM_DEFAULT)
    policy = conf.policy
    assert conf.actions == ("enqueue", "allocate", "backfill")
    assert (policy.enqueue, policy.preempt, policy.reclaim) == (True, False, False)
    assert (policy.gang, policy.priority, policy.proportion, policy.drf) == (True, True, True, True)
    assert policy.overcommit_factor == 1.2
    assert policy.packing_weight == 1
    assert policy.topology is False
    assert setting(conf, "overcommit") is True
    assert setting(conf, "packing_resource_weights") == {"cpu": 1, "memory": 1}
    assert setting(conf, "topology_weight") is None
    assert has_warning(conf.warnings, "actions", "backfill: ignored")
    assert has_warning(conf.warnings, "tiers[0].plugins[1].enablePreemptable", "minMember")
    assert has_warning(conf.warnings, "tiers[1].plugins[4]", "nodeorder: ignored")
    assert len(conf.warnings) == 3  # drf's enablePreemptable: false is what vcsat does anyway


def test_built_in_default_has_no_binpack() -> None:
    conf = parse_volcano_conf(BUILT_IN_DEFAULT)
    assert conf.policy.packing_weight == 0
    assert has_warning(conf.warnings, "tiers", "binpack is absent")
    assert setting(conf, "packing_resource_weights") in (None, {})


def test_full_configuration_with_binpack_weights() -> None:
    conf = parse_volcano_conf(FULL)
    policy = conf.policy
    assert (policy.preempt, policy.reclaim, policy.topology) == (True, True, True)
    assert policy.overcommit_factor == 1.5
    assert policy.packing_weight == 10
    assert setting(conf, "overcommit") is True
    assert setting(conf, "packing_resource_weights") == {
        "cpu": 1,
        "memory": 2,
        "nvidia.com/gpu": 5,
        "example.com/foo": 1,
    }
    assert setting(conf, "topology_weight") == 3
    assert [p.name for p in conf.plugins if p.tier == 0] == ["priority", "gang", "conformance"]
    assert conf.plugins[1].flags == {"enablePreemptable": False}


def test_base_policy_keeps_what_the_conf_does_not_say() -> None:
    base = Policy(time_limit_s=3.0, scheduler_name="volcano", num_workers=2)
    policy = parse_volcano_conf(HELM_DEFAULT, base=base).policy
    assert (policy.time_limit_s, policy.scheduler_name, policy.num_workers) == (3.0, "volcano", 2)


def test_a_minimal_configuration_turns_things_off_and_says_so() -> None:
    conf = parse_volcano_conf({"actions": "allocate"})
    policy = conf.policy
    assert (policy.enqueue, policy.gang, policy.priority, policy.proportion, policy.drf) == (False,) * 5
    assert setting(conf, "overcommit") is False
    for words in ("gang is absent", "conformance is absent", "predicates is absent", "binpack is absent"):
        assert has_warning(conf.warnings, "tiers", words)


@pytest.mark.parametrize(
    ("conf", "place", "words"),
    [
        ({"actions": "enqueue, reclaim, allocate, backfill, preempt"}, "actions", "order reclaim, allocate, preempt"),
        ({"actions": "allocate, enqueue"}, "actions", "enqueue comes after allocate"),
        ({"actions": "enqueue, allocate, allocate"}, "actions", "allocate is listed twice"),
        ({"actions": "enqueue"}, "actions", "allocate is absent"),
        ({"actions": "allocate, shuffle"}, "actions", "shuffle: ignored"),
        ({"actions": "allocate, gangpreempt"}, "actions", "gangpreempt: read as preempt"),
        (
            {"actions": "allocate", "tiers": [{"plugins": [{"name": "drf"}]}, {"plugins": [{"name": "priority"}]}]},
            "tiers[0].plugins[0]",
            "drf comes before priority",
        ),
        (
            {"actions": "allocate", "tiers": [{"plugins": [{"name": "deviceshare"}]}]},
            "tiers[0].plugins[0]",
            "deviceshare: not supported by vcsat, ignored: GPU sharing is the vcsat.io/gpu-milli",
        ),
        (
            {"actions": "allocate", "tiers": [{"plugins": [{"name": "binpak"}]}]},
            "tiers[0].plugins[0]",
            "binpak: not a Volcano plugin, ignored (a typo?)",
        ),
        (
            {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang", "enabledJobReady": False}]}]},
            "tiers[0].plugins[0].enabledJobReady",
            "separately switched callbacks",
        ),
        (
            {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang", "color": "red"}]}]},
            "tiers[0].plugins[0].color",
            "not a plugin key",
        ),
        (
            {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang", "arguments": {"x": 1}}]}]},
            "tiers[0].plugins[0].arguments.x",
            "not an argument of gang",
        ),
        (
            {
                "actions": "allocate",
                "tiers": [{"plugins": [{"name": "predicates", "arguments": {"predicate.NodeAffinityEnable": False}}]}],
            },
            "tiers[0].plugins[0].arguments.predicate.NodeAffinityEnable",
            "cannot be turned off",
        ),
        (
            {"actions": "allocate", "tiers": [{"plugins": [{"name": "proportion"}, {"name": "capacity"}]}]},
            "tiers",
            "both proportion and capacity",
        ),
        (
            {
                "actions": "allocate",
                "configurations": [{"name": "preempt", "arguments": {"minCandidateNodesPercentage": 10}}],
            },
            "configurations[0]",
            "preempt: action arguments tune a greedy search",
        ),
        ({"actions": "allocate", "metrics": {"address": "x"}}, "metrics", "ignored"),
        ({"actions": "allocate", "actons": "x"}, "actons", "not a Volcano configuration key"),
    ],
)
def test_warnings_for_what_has_no_meaning_here(conf: dict[str, Any], place: str, words: str) -> None:
    warnings = parse_volcano_conf(conf).warnings
    assert has_warning(warnings, place, words), warnings


def test_capacity_alone_enables_queue_shares() -> None:
    conf = parse_volcano_conf(
        {"actions": "allocate", "tiers": [{"plugins": [{"name": "capacity", "enableHierarchy": True}]}]}
    )
    assert conf.policy.proportion is True
    assert not any("enableHierarchy" in w for w in conf.warnings)


def test_disabling_job_order_turns_priority_off() -> None:
    conf = parse_volcano_conf(
        {"actions": "allocate", "tiers": [{"plugins": [{"name": "priority", "enableJobOrder": False}]}]}
    )
    assert conf.policy.priority is False


# --- ConfigMaps and files ---------------------------------------------------------------------


def config_map(text: str, key: str = "volcano-scheduler.conf") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
        "data": {key: text},
    }


def test_config_map_as_mapping_and_as_text() -> None:
    direct = parse_volcano_conf(FULL)
    assert parse_volcano_conf(config_map(FULL)).policy == direct.policy
    assert parse_volcano_conf(yaml.safe_dump(config_map(FULL))).policy == direct.policy
    wrapped = parse_volcano_conf(config_map(HELM_DEFAULT)).warnings
    assert any(w.startswith("data[volcano-scheduler.conf].actions: backfill") for w in wrapped)


def test_config_map_with_another_single_conf_key() -> None:
    assert parse_volcano_conf(config_map(FULL, key="scheduler.conf")).policy.packing_weight == 10


def test_read_from_files(tmp_path: Path) -> None:
    bare = tmp_path / "volcano-scheduler.conf"
    bare.write_text(FULL)
    wrapped = tmp_path / "cm.yaml"
    wrapped.write_text(yaml.safe_dump(config_map(FULL)))
    assert read_volcano_conf(bare).policy == read_volcano_conf(wrapped).policy == parse_volcano_conf(FULL).policy


# --- bad input --------------------------------------------------------------------------------


def plugin_conf(plugin: dict[str, Any], actions: str = "allocate") -> dict[str, Any]:
    return {"actions": actions, "tiers": [{"plugins": [plugin]}]}


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        (
            "actions: [unclosed",
            "s.conf: invalid YAML at line 1, column 19: expected ',' or ']', but got '<stream end>'",
        ),
        ("", "s.conf: the configuration is empty"),
        ("- a\n- b\n", "s.conf: must be a mapping, not a list"),
        ({"tiers": []}, "s.conf: actions: missing: Volcano needs the list of actions"),
        ({"actions": ["enqueue"]}, "s.conf: actions: must be a comma-separated string"),
        ({"actions": "enqueue, allocat"}, "s.conf: actions: unknown action 'allocat' (Volcano knows: enqueue,"),
        ({"actions": "enqueue,,allocate"}, "s.conf: actions: an empty action name"),
        ({"actions": "allocate", "tiers": {"plugins": []}}, "s.conf: tiers: must be a list of tiers, not a mapping"),
        ({"actions": "allocate", "tiers": ["gang"]}, "s.conf: tiers[0]: must be a mapping with plugins"),
        (
            {"actions": "allocate", "tiers": [{"plugins": "gang"}]},
            "s.conf: tiers[0].plugins: must be a list of plugins",
        ),
        (plugin_conf({"arguments": {}}), "s.conf: tiers[0].plugins[0].name: must be a plugin name (a string)"),
        (
            plugin_conf({"name": "gang", "enablePreemptable": "no"}),
            "tiers[0].plugins[0].enablePreemptable: must be true or false",
        ),
        (
            plugin_conf({"name": "gang", "arguments": ["x"]}),
            "tiers[0].plugins[0].arguments: must be a mapping, not a list",
        ),
        (
            plugin_conf({"name": "overcommit", "arguments": {"overcommit-factor": "high"}}),
            "s.conf: tiers[0].plugins[0].arguments.overcommit-factor: must be a number, not the string 'high'",
        ),
        (
            plugin_conf({"name": "overcommit", "arguments": {"overcommit-factor": 0.5}}),
            "tiers[0].plugins[0].arguments.overcommit-factor: must be a finite number of at least 1, not 0.5",
        ),
        (
            plugin_conf({"name": "binpack", "arguments": {"binpack.weight": 1.5}}),
            "tiers[0].plugins[0].arguments.binpack.weight: must be a whole number, not the number 1.5",
        ),
        (
            plugin_conf({"name": "binpack", "arguments": {"binpack.cpu": -1}}),
            "tiers[0].plugins[0].arguments.binpack.cpu: must not be negative, not -1",
        ),
        (
            plugin_conf({"name": "binpack", "arguments": {"binpack.resources": ["nvidia.com/gpu"]}}),
            "tiers[0].plugins[0].arguments.binpack.resources: must be a comma-separated string, not a list",
        ),
        (
            {
                "actions": "allocate",
                "tiers": [{"plugins": [{"name": "drf", "enableHierarchy": True}, {"name": "proportion"}]}],
            },
            "s.conf: tiers[0]: proportion and drf with enableHierarchy conflict",
        ),
        (
            {"actions": "allocate", "configurations": [{"arguments": {}}]},
            "configurations[0]: must be a mapping with an action name",
        ),
    ],
)
def test_bad_configurations(conf: str | dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_volcano_conf(conf, source="s.conf")
    text = str(caught.value)
    assert message in text
    assert "\n" not in text
    assert text.startswith("s.conf: ")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            config_map("actions: allocat"),
            "cm.yaml: ConfigMap volcano-system/volcano-scheduler-configmap: "
            "data[volcano-scheduler.conf].actions: unknown action 'allocat'",
        ),
        (
            {**config_map(""), "data": {"a.conf": "x", "b.conf": "y"}},
            "cm.yaml: ConfigMap volcano-system/volcano-scheduler-configmap: data: has no key "
            "volcano-scheduler.conf (keys: a.conf, b.conf)",
        ),
        ({**config_map(""), "data": None}, "data: must be a mapping holding volcano-scheduler.conf, not empty"),
        (
            {**config_map(""), "data": {"volcano-scheduler.conf": 3}},
            "data[volcano-scheduler.conf]: must be the configuration as text",
        ),
        (config_map("actions: [x"), "data[volcano-scheduler.conf]: invalid YAML at line 1, column 12"),
    ],
)
def test_bad_config_maps(config: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_volcano_conf(config, source="cm.yaml")
    assert message in str(caught.value)


def test_bad_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_volcano_conf(tmp_path / "missing.conf")
    empty = tmp_path / "empty.conf"
    empty.write_text("# nothing\n")
    with pytest.raises(InputError, match=r"empty.conf: actions: missing"):
        read_volcano_conf(empty)
