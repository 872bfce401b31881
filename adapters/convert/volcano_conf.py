"""Volcano's ``volcano-scheduler.conf`` read as a vcsat Policy, with warnings where it cannot mean
what it says.

Why: a cluster moving from Volcano to vcsat already has a scheduler configuration, usually the
ConfigMap ``volcano-scheduler-configmap``; vcsat should accept it as it is rather than make
people translate it by hand. Volcano's configuration is procedural (actions run in order, plugins
vote in tiers, node scores are summed heuristics); vcsat solves one exact model with fixed
lexicographic levels. Most of it maps onto a Policy switch or weight; the rest has no meaning for
an exact solver, and each such place yields one warning line that says why, instead of silently
changing or ignoring it. docs/volcano-config.md holds the full mapping table.

Input: the configuration text (YAML), its parsed mapping, or a ConfigMap wrapping it under
``data["volcano-scheduler.conf"]``. Bad input (YAML that does not parse, a field of the wrong
type, an unknown action, an overcommit factor below 1) raises :class:`InputError` naming the file,
the object and the field, as Volcano itself refuses to start on them.

Settings the Policy has no field for yet are returned in :attr:`VolcanoConf.unmapped`, keyed by
the Policy field they call for; as soon as the Policy has that field it is set there instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic
import yaml

from vcsat.adapters.convert.instance_file import read_yaml_mapping
from vcsat.adapters.errors import InputError
from vcsat.model import Policy

CONF_KEY = "volcano-scheduler.conf"
"""The key of the configuration inside Volcano's ConfigMap."""

ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim", "gangpreempt", "gangreclaim", "shuffle")
"""Every action Volcano registers; any other name makes Volcano refuse the configuration."""

SUPPORTED_PLUGINS = frozenset(
    {
        "priority",
        "gang",
        "conformance",
        "overcommit",
        "drf",
        "predicates",
        "proportion",
        "capacity",
        "nodeorder",
        "binpack",
        "network-topology-aware",
    }
)

UNSUPPORTED_PLUGINS: dict[str, str] = {
    "deviceshare": "GPU sharing is the vcsat.io/gpu-milli resource (docs/contract.md §1), not a plugin",
    "numaaware": "NUMA placement inside a node is the kubelet's topology manager's job here",
    "tdm": "time-division multiplexing of nodes between schedulers is not modelled",
    "sla": "job waiting-time SLAs are not an objective level",
    "task-topology": "affinity between tasks of a job is priced by the GPU and HyperNode topology instead",
    "cdp": "cooldown protection of elastic pods is not modelled",
    "rescheduling": "vcsat does not move running pods to rebalance nodes",
    "usage": "placement by measured node load is a heuristic; vcsat places by requests",
    "pdb": "PodDisruptionBudgets do not restrict victims yet",
    "nodegroup": "queue-to-node-group affinity is not modelled; use node affinity on the pods",
    "extender": "HTTP scheduler extenders are not called",
    "resourcequota": "namespace ResourceQuota is enforced by the API server at pod creation",
    "resource-strategy-fit": "per-resource scoring strategies are heuristics; packing replaces them",
}
"""Plugins Volcano has that vcsat ignores, with the reason given in the warning."""

PLUGIN_KEYS = frozenset({"name", "arguments"})
FLAG_PREFIXES = ("enable", "enabled")

OVERCOMMIT_FACTOR = "overcommit-factor"
BINPACK_WEIGHT = "binpack.weight"
BINPACK_RESOURCES = "binpack.resources"
BINPACK_RESOURCE_PREFIX = "binpack.resources."
TOPOLOGY_WEIGHT = "weight"


@dataclass(frozen=True)
class PluginConf:
    """One plugin entry as written: where it stands and what it was given."""

    name: str
    tier: int
    position: int
    """Index within its tier."""
    flags: dict[str, bool] = field(default_factory=dict)
    """The ``enable*`` switches as written."""
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VolcanoConf:
    """A Volcano configuration read for vcsat."""

    policy: Policy
    warnings: tuple[str, ...]
    """One line each, ``field: what has no meaning here and why``."""
    actions: tuple[str, ...]
    plugins: tuple[PluginConf, ...]
    unmapped: dict[str, Any]
    """Settings for which the Policy has no field yet, by the field name they call for."""


def read_volcano_conf(path: str | Path, *, base: Policy | None = None) -> VolcanoConf:
    """The configuration in a file: the conf itself, or a ConfigMap (YAML or JSON) wrapping it."""
    return parse_volcano_conf(read_yaml_mapping(path), source=str(path), base=base)


def parse_volcano_conf(
    data: str | Mapping[str, Any],
    *,
    source: str = CONF_KEY,
    base: Policy | None = None,
) -> VolcanoConf:
    """Read a configuration (text or mapping, bare or in a ConfigMap) onto ``base`` (defaults)."""
    reader = _Reader(source=source)
    conf = reader.unwrap(reader.load(data, field=None))
    return reader.read(conf, base or Policy())


class _Reader:
    def __init__(self, *, source: str) -> None:
        self.source = source
        self.obj: str | None = None
        self.prefix = ""
        self.warnings: list[str] = []

    # -- errors and warnings name the place --

    def error(self, message: str, place: str | None = None) -> InputError:
        where = f"{self.prefix}{place}" if place else (self.prefix.rstrip(".") or None)
        return InputError(message, source=self.source, obj=self.obj, field=where)

    def warn(self, place: str, message: str) -> None:
        self.warnings.append(f"{self.prefix}{place}: {message}")

    # -- text, ConfigMap --

    def load(self, data: str | Mapping[str, Any], *, field: str | None) -> Mapping[str, Any]:
        if isinstance(data, Mapping):
            return data
        try:
            loaded = yaml.safe_load(data)
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            what = " ".join(str(error.problem or error.context or "syntax error").split())
            raise self.error(f"invalid YAML{where}: {what}", field) from None
        except yaml.YAMLError as error:
            raise self.error(f"invalid YAML: {' '.join(str(error).split())}", field) from None
        if loaded is None:
            raise self.error("the configuration is empty", field)
        if not isinstance(loaded, Mapping):
            raise self.error(f"must be a mapping, not {_kind(loaded)}", field)
        return loaded

    def unwrap(self, document: Mapping[str, Any]) -> Mapping[str, Any]:
        if document.get("kind") != "ConfigMap":
            return document
        metadata = document.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        namespace, name = metadata.get("namespace"), metadata.get("name")
        self.obj = "ConfigMap " + "/".join(str(part) for part in (namespace, name) if part)
        data = document.get("data")
        if not isinstance(data, Mapping):
            raise self.error(f"must be a mapping holding {CONF_KEY}, not {_kind(data)}", "data")
        key = CONF_KEY
        if key not in data:
            candidates = [k for k in data if isinstance(k, str) and k.endswith(".conf")]
            if len(candidates) != 1:
                keys = ", ".join(sorted(str(k) for k in data)) or "none"
                raise self.error(f"has no key {CONF_KEY} (keys: {keys})", "data")
            key = candidates[0]
        text = data[key]
        if not isinstance(text, str):
            raise self.error(f"must be the configuration as text, not {_kind(text)}", f"data[{key}]")
        conf = self.load(text, field=f"data[{key}]")
        self.prefix = f"data[{key}]."
        return conf

    # -- the configuration --

    def read(self, conf: Mapping[str, Any], base: Policy) -> VolcanoConf:
        for key in conf:
            if key not in ("actions", "tiers", "configurations", "metrics"):
                self.warn(str(key), "not a Volcano configuration key: ignored")
        actions = self.actions(conf.get("actions"))
        plugins = self.tiers(conf.get("tiers"))
        self.configurations(conf.get("configurations"))
        if conf.get("metrics") is not None:
            self.warn("metrics", "ignored: vcsat exports its own Prometheus metrics")

        by_name = {plugin.name: plugin for plugin in reversed(plugins)}  # the first entry wins
        settings: dict[str, Any] = {
            "enqueue": "enqueue" in actions,
            "preempt": "preempt" in actions or "gangpreempt" in actions,
            "reclaim": "reclaim" in actions or "gangreclaim" in actions,
            "gang": "gang" in by_name,
            "priority": "priority" in by_name and by_name["priority"].flags.get("enableJobOrder", True),
            "proportion": "proportion" in by_name or "capacity" in by_name,
            "drf": "drf" in by_name and by_name["drf"].flags.get("enableJobOrder", True),
            "topology": "network-topology-aware" in by_name,
            "overcommit": "overcommit" in by_name,
            "packing_weight": 0,
        }
        for plugin in plugins:
            self.plugin(plugin, settings)
        self.absences(by_name)
        self.tier_order(by_name)

        fields = base.model_dump()
        unmapped: dict[str, Any] = {}
        for key, value in settings.items():
            if key in Policy.model_fields:
                fields[key] = value
            else:
                unmapped[key] = value
        try:
            policy = Policy.model_validate(fields)
        except pydantic.ValidationError as error:  # pragma: no cover - every value was checked above
            first = error.errors()[0]
            raise self.error(" ".join(str(first["msg"]).split())) from None
        return VolcanoConf(
            policy=policy,
            warnings=tuple(self.warnings),
            actions=actions,
            plugins=tuple(plugins),
            unmapped=unmapped,
        )

    def actions(self, value: Any) -> tuple[str, ...]:
        if value is None:
            raise self.error("missing: Volcano needs the list of actions", "actions")
        if not isinstance(value, str):
            raise self.error(f'must be a comma-separated string ("enqueue, allocate"), not {_kind(value)}', "actions")
        names = [part.strip() for part in value.split(",")]
        for name in names:
            if name not in ACTIONS:
                shown = f"unknown action {name!r}" if name else "an empty action name"
                raise self.error(f"{shown} (Volcano knows: {', '.join(ACTIONS)})", "actions")
        seen: list[str] = []
        for name in names:
            if name in seen:
                self.warn("actions", f"{name} is listed twice: one cycle runs it once")
            else:
                seen.append(name)
        if "allocate" not in seen:
            self.warn(
                "actions",
                "allocate is absent: Volcano would place nothing new, vcsat always places what fits",
            )
        if "backfill" in seen:
            self.warn(
                "actions",
                "backfill: ignored: the exact model already places every pod that fits, so a second "
                "best-effort pass has nothing left to fill",
            )
        if "shuffle" in seen:
            self.warn("actions", "shuffle: ignored: vcsat evicts only to preempt or reclaim, never to rebalance")
        for gang_action, plain in (("gangpreempt", "preempt"), ("gangreclaim", "reclaim")):
            if gang_action in seen:
                self.warn("actions", f"{gang_action}: read as {plain}: vcsat's evictions always respect gangs")
        if "enqueue" in seen and seen.index("enqueue") > 0:
            self.warn(
                "actions",
                f"enqueue comes after {seen[0]}: vcsat always admits first, then places, in every cycle",
            )
        placing = [name for name in seen if name in ("allocate", "preempt", "reclaim", "gangpreempt", "gangreclaim")]
        canonical = sorted(placing, key=("allocate", "preempt", "gangpreempt", "reclaim", "gangreclaim").index)
        if placing != canonical:
            self.warn(
                "actions",
                f"the order {', '.join(placing)} has no meaning for vcsat: one model decides placements, "
                "preemptions and reclaims together, ranked by fixed objective levels (fairness, priority, "
                "DRF, topology, packing, evictions)",
            )
        return tuple(seen)

    def tiers(self, value: Any) -> list[PluginConf]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(f"must be a list of tiers, not {_kind(value)}", "tiers")
        plugins: list[PluginConf] = []
        seen: set[str] = set()
        for t, tier in enumerate(value):
            place = f"tiers[{t}]"
            if not isinstance(tier, Mapping):
                raise self.error(f"must be a mapping with plugins, not {_kind(tier)}", place)
            for key in tier:
                if key != "plugins":
                    self.warn(f"{place}.{key}", "not a tier key: ignored")
            entries = tier.get("plugins") or []
            if not isinstance(entries, list):
                raise self.error(f"must be a list of plugins, not {_kind(entries)}", f"{place}.plugins")
            hierarchical_drf = False
            for p, entry in enumerate(entries):
                plugin = self.plugin_entry(entry, t, p, f"{place}.plugins[{p}]")
                if plugin.name in seen:
                    self.warn(f"{place}.plugins[{p}]", f"{plugin.name} is listed twice: the first entry is used")
                    continue
                seen.add(plugin.name)
                plugins.append(plugin)
                hierarchical_drf |= plugin.name == "drf" and plugin.flags.get("enableHierarchy", False)
            names = {plugin.name for plugin in plugins if plugin.tier == t}
            if hierarchical_drf and "proportion" in names:
                raise self.error("proportion and drf with enableHierarchy conflict (Volcano refuses them too)", place)
        return plugins

    def plugin_entry(self, entry: Any, tier: int, position: int, place: str) -> PluginConf:
        if not isinstance(entry, Mapping):
            raise self.error(f"must be a mapping with a name, not {_kind(entry)}", place)
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise self.error("must be a plugin name (a string)", f"{place}.name")
        flags: dict[str, bool] = {}
        for key, value in entry.items():
            if key in PLUGIN_KEYS:
                continue
            if isinstance(key, str) and key.startswith(FLAG_PREFIXES):
                if not isinstance(value, bool):
                    raise self.error(f"must be true or false, not {_kind(value)}", f"{place}.{key}")
                flags[key] = value
            else:
                self.warn(f"{place}.{key}", "not a plugin key: ignored")
        arguments = entry.get("arguments") or {}
        if not isinstance(arguments, Mapping):
            raise self.error(f"must be a mapping, not {_kind(arguments)}", f"{place}.arguments")
        return PluginConf(name, tier, position, flags, {str(k): v for k, v in arguments.items()})

    # -- one plugin's meaning --

    def plugin(self, plugin: PluginConf, settings: dict[str, Any]) -> None:
        place = f"tiers[{plugin.tier}].plugins[{plugin.position}]"
        name = plugin.name
        if name in UNSUPPORTED_PLUGINS:
            self.warn(place, f"{name}: not supported by vcsat, ignored: {UNSUPPORTED_PLUGINS[name]}")
            return
        if name not in SUPPORTED_PLUGINS:
            self.warn(place, f"{name}: not a Volcano plugin, ignored (a typo?)")
            return
        self.flags(plugin, place)
        arguments = dict(plugin.arguments)
        args = f"{place}.arguments"
        if name == "overcommit":
            if OVERCOMMIT_FACTOR in arguments:
                settings["overcommit_factor"] = self.number(
                    arguments.pop(OVERCOMMIT_FACTOR), f"{args}.{OVERCOMMIT_FACTOR}", minimum=1.0
                )
        elif name == "binpack":
            weight = self.integer(arguments.pop(BINPACK_WEIGHT, 1), f"{args}.{BINPACK_WEIGHT}")
            settings["packing_weight"] = weight
            settings["packing_resource_weights"] = self.binpack_resources(arguments, args)
        elif name == "network-topology-aware":
            if TOPOLOGY_WEIGHT in arguments:
                settings["topology_weight"] = self.integer(arguments.pop(TOPOLOGY_WEIGHT), f"{args}.weight")
            for key in sorted(k for k in arguments if k.startswith("hypernode.")):
                arguments.pop(key)
                self.warn(
                    f"{args}.{key}",
                    "ignored: HyperNode scores are heuristics; the topology level prices bandwidth exactly",
                )
        elif name == "nodeorder":
            given = ", ".join(f"{k}={arguments[k]}" for k in sorted(arguments))
            arguments.clear()
            self.warn(
                place,
                "nodeorder: ignored: its node scores are heuristics for a greedy pass; vcsat ranks "
                "placements by its exact topology and packing levels" + (f" (given: {given})" if given else ""),
            )
        elif name == "predicates":
            for key in sorted(arguments):
                value = arguments.pop(key)
                if key.startswith("predicate.") and key.endswith("Enable") and value in (False, "false"):
                    self.warn(
                        f"{args}.{key}",
                        "cannot be turned off: vcsat always applies the Kubernetes predicates",
                    )
                else:
                    self.warn(f"{args}.{key}", "ignored: a predicate cache or device switch has no meaning here")
        elif name in ("capacity", "proportion"):
            for key in sorted(arguments):
                arguments.pop(key)
                self.warn(f"{args}.{key}", f"ignored: vcsat's {name} has no arguments")
        for key in sorted(arguments):
            self.warn(f"{args}.{key}", f"not an argument of {name}: ignored")

    def flags(self, plugin: PluginConf, place: str) -> None:
        for flag, value in sorted(plugin.flags.items()):
            if value:
                continue
            where = f"{place}.{flag}"
            if plugin.name == "gang" and flag in ("enablePreemptable", "enableReclaimable"):
                self.warn(
                    where,
                    "ignored: vcsat never breaks a victim gang below minMember unless the whole gang goes "
                    "(docs/contract.md §3); Volcano with this flag would",
                )
            elif plugin.name == "drf" and flag in ("enablePreemptable", "enableReclaimable"):
                continue  # vcsat's victims are chosen by priority and cost, never vetoed by DRF: the same
            elif plugin.name in ("priority", "drf") and flag == "enableJobOrder":
                continue  # read above: the plugin then does not rank jobs
            else:
                self.warn(where, "ignored: vcsat does not split a plugin into separately switched callbacks")

    def binpack_resources(self, arguments: dict[str, Any], args: str) -> dict[str, int]:
        weights = {
            "cpu": self.integer(arguments.pop("binpack.cpu", 1), f"{args}.binpack.cpu"),
            "memory": self.integer(arguments.pop("binpack.memory", 1), f"{args}.binpack.memory"),
        }
        listed = arguments.pop(BINPACK_RESOURCES, "")
        if not isinstance(listed, str):
            raise self.error(f"must be a comma-separated string, not {_kind(listed)}", f"{args}.{BINPACK_RESOURCES}")
        for resource in (part.strip() for part in listed.split(",")):
            if resource:
                key = BINPACK_RESOURCE_PREFIX + resource
                weights[resource] = self.integer(arguments.pop(key, 1), f"{args}.{key}")
        for key in sorted(k for k in arguments if k.startswith(BINPACK_RESOURCE_PREFIX)):
            arguments.pop(key)
            self.warn(
                f"{args}.{key}",
                f"ignored: {key[len(BINPACK_RESOURCE_PREFIX) :]} is not in {BINPACK_RESOURCES}",
            )
        return weights

    def absences(self, by_name: Mapping[str, PluginConf]) -> None:
        if "gang" not in by_name:
            self.warn("tiers", "gang is absent: pods of a PodGroup are placed one by one (no all-or-nothing)")
        if "conformance" not in by_name:
            self.warn(
                "tiers",
                "conformance is absent: vcsat still never evicts kube-system, system-critical or "
                'preemptable: "false" pods (docs/contract.md §3)',
            )
        if "predicates" not in by_name:
            self.warn("tiers", "predicates is absent: vcsat still applies the Kubernetes predicates")
        if "binpack" not in by_name:
            self.warn("tiers", "binpack is absent: the packing level is off (packing_weight 0)")
        if "proportion" in by_name and "capacity" in by_name:
            self.warn(
                "tiers",
                "both proportion and capacity: vcsat has one queue-share model (a queue's deserved when "
                "set, its weight otherwise; hierarchy through parent)",
            )

    def tier_order(self, by_name: Mapping[str, PluginConf]) -> None:
        """Volcano ranks jobs by the first plugin (tier, then position) that tells two apart; vcsat's
        levels are fixed, priority above DRF."""
        priority, drf = by_name.get("priority"), by_name.get("drf")
        if priority is None or drf is None:
            return
        if (drf.tier, drf.position) < (priority.tier, priority.position):
            self.warn(
                f"tiers[{drf.tier}].plugins[{drf.position}]",
                "drf comes before priority: Volcano would rank jobs by DRF share first; vcsat always ranks "
                "priority above DRF (its levels are fixed)",
            )

    def configurations(self, value: Any) -> None:
        if value is None:
            return
        if not isinstance(value, list):
            raise self.error(f"must be a list, not {_kind(value)}", "configurations")
        for index, entry in enumerate(value):
            place = f"configurations[{index}]"
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise self.error("must be a mapping with an action name", place)
            self.warn(
                place,
                f"{entry['name']}: action arguments tune a greedy search (candidate nodes, caches): ignored",
            )

    # -- typed arguments --

    def integer(self, value: Any, place: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"must be a whole number, not {_kind(value)}", place)
        if value < 0:
            raise self.error(f"must not be negative, not {value}", place)
        return value

    def number(self, value: Any, place: str, *, minimum: float) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"must be a number, not {_kind(value)}", place)
        if not math.isfinite(value) or value < minimum:
            raise self.error(f"must be a finite number of at least {minimum:g}, not {value:g}", place)
        return float(value)


def _kind(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__
