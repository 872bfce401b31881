"""Volcano HyperNode objects → :class:`~vcsat.model.HyperNode`: the network topology's tiers and members.

Each member is a Node or a HyperNode chosen by exactly one of an exact name, a regular
expression or labels; resolving members to nodes is :func:`vcsat.model.hypernodes.resolve_hypernodes`.
"""

from __future__ import annotations

import re
from typing import Literal, cast

from vcsat.adapters.convert.fields import MAPPING_TYPES
from vcsat.adapters.convert.reader import Conversion, KubeObject, construct, construct_complete
from vcsat.model.cluster import (
    HyperNode,
    HyperNodeMember,
)


def read_hypernode(conversion: Conversion, obj: KubeObject) -> HyperNode:
    spec = obj.mapping(obj.raw, "spec", "spec")
    if spec.get("tier") is None:
        obj.fail("spec.tier", "missing")
    members = []
    for index, raw in enumerate(obj.sequence(spec, "members", "spec.members")):
        # The common member, named by exactMatch alone (a rack's nodes, a spine's racks): read
        # here with what the checks below would find, without spelling its paths for an error.
        if type(raw) is dict:
            member_type = raw.get("type")
            selector = raw.get("selector")
            if (
                (member_type == "Node" or member_type == "HyperNode")
                and type(member_type) is str
                and type(selector) is dict
                and selector.get("regexMatch") is None
                and selector.get("labelMatch") is None
            ):
                exact = selector.get("exactMatch")
                exact_name = exact.get("name") if type(exact) is dict else None
                if type(exact_name) is str and exact_name:
                    members.append(
                        construct_complete(
                            HyperNodeMember,
                            {"type": member_type, "exact_name": exact_name, "regex": None, "labels": None},
                        )
                    )
                    continue
        path = f"spec.members[{index}]"
        if not isinstance(raw, MAPPING_TYPES):
            obj.fail(path, "must be a mapping")
        member_type = obj.string(raw, "type", f"{path}.type")
        if member_type not in ("Node", "HyperNode"):
            obj.fail(f"{path}.type", f"must be Node or HyperNode, not {member_type!r}")
        selector = obj.mapping(raw, "selector", f"{path}.selector")
        exact = obj.mapping(selector, "exactMatch", f"{path}.selector.exactMatch")
        regex = obj.mapping(selector, "regexMatch", f"{path}.selector.regexMatch")
        label = obj.mapping(selector, "labelMatch", f"{path}.selector.labelMatch")
        chosen = [name for name in ("exactMatch", "regexMatch", "labelMatch") if selector.get(name) is not None]
        if len(chosen) != 1:
            obj.fail(f"{path}.selector", "must have exactly one of exactMatch, regexMatch, labelMatch")
        exact_name = obj.string(exact, "name", f"{path}.selector.exactMatch.name") or None
        pattern = obj.string(regex, "pattern", f"{path}.selector.regexMatch.pattern") or None
        if chosen == ["exactMatch"] and exact_name is None:
            obj.fail(f"{path}.selector.exactMatch.name", "missing")
        if chosen == ["regexMatch"]:
            if pattern is None:
                obj.fail(f"{path}.selector.regexMatch.pattern", "missing")
            try:
                re.compile(pattern)
            except re.error as error:
                obj.fail(f"{path}.selector.regexMatch.pattern", f"not a regular expression: {error}")
        labels = (
            obj.string_map(label, "matchLabels", f"{path}.selector.labelMatch.matchLabels")
            if chosen == ["labelMatch"]
            else None
        )
        members.append(
            construct(
                HyperNodeMember,
                type=cast('Literal["Node", "HyperNode"]', member_type),
                exact_name=exact_name,
                regex=pattern,
                labels=labels,
            )
        )
    return construct(
        HyperNode, name=obj.name, tier=obj.integer(spec, "tier", "spec.tier", 0, minimum=1), members=tuple(members)
    )
