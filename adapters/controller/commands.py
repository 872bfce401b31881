"""Volcano's ``bus.volcano.sh/v1alpha1`` Command objects: what they ask, and how one is made.

A Command is a one-shot request: Volcano's ``vcctl job suspend|resume`` and ``vcctl queue
operate`` create one whose ``target`` (and controller owner reference) is the Job or Queue, named
``<target>-<action in lower case>-<random>``; the controller that handles it deletes it and acts.
Job commands live in the Job's namespace; Queue commands, whose target is cluster-wide, in
``default``. ``vcsat job`` and ``vcsat queue`` create the very same objects, so either tool works
against either controller.

vcsat's controller applies a Job command exactly once: the Command's uid goes into the Job's
status (``status.controlledResources``) in the same write that acts on it, and the Command is
deleted only after that write; one found again after a crash is recognised by its uid and only
deleted. Queue commands (open, close) are idempotent: the state is set (Open, or Closing while the
queue still holds PodGroups and Closed once it holds none: :mod:`.queue_states`), then the Command
deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vcsat.adapters.controller import naming
from vcsat.adapters.kube.client import Resource

COMMAND_API_VERSION = "bus.volcano.sh/v1alpha1"
COMMANDS = Resource("Command", COMMAND_API_VERSION, "commands", namespaced=True)
QUEUES = Resource("Queue", naming.PODGROUP_API_VERSION, naming.QUEUE_PLURAL, namespaced=False)
QUEUE_COMMAND_NAMESPACE = "default"
"""Where Volcano's vcctl puts Queue commands (a Queue has no namespace of its own)."""


@dataclass(frozen=True)
class CommandObject:
    """One Command as read from the API: which object it targets and what to do."""

    namespace: str
    name: str
    uid: str
    action: str
    target_api_version: str
    target_kind: str
    target_name: str
    created: str = ""
    arrival: int = 0
    """The order the watch delivered it in: creation times have only whole seconds."""

    @property
    def for_job(self) -> bool:
        return self.target_kind == naming.JOB_KIND and self.target_api_version == naming.JOB_API_VERSION

    @property
    def for_queue(self) -> bool:
        return self.target_kind == "Queue" and self.target_api_version == naming.PODGROUP_API_VERSION

    @property
    def order(self) -> tuple[str, int, str]:
        """Oldest first (creation time, then arrival), the order they are applied in."""
        return (self.created, self.arrival, self.name)


def read_command_object(obj: Mapping[str, Any]) -> CommandObject | None:
    """The Command ``obj``; None when it names no target (nothing could act on it)."""
    metadata = obj.get("metadata") or {}
    target = obj.get("target")
    if not isinstance(target, Mapping) or not target.get("name"):
        return None
    return CommandObject(
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        uid=str(metadata.get("uid") or ""),
        action=str(obj.get("action") or ""),
        target_api_version=str(target.get("apiVersion") or ""),
        target_kind=str(target.get("kind") or ""),
        target_name=str(target.get("name")),
        created=str(metadata.get("creationTimestamp") or ""),
    )


def command_body(target: Mapping[str, Any], action: str, *, namespace: str, message: str = "") -> dict[str, Any]:
    """A Command for ``action`` on the object ``target`` (as read: kind, apiVersion, metadata),
    made as Volcano's vcctl makes one: owned by its target, named after it and the action."""
    metadata = target.get("metadata") or {}
    reference = {
        "apiVersion": target.get("apiVersion"),
        "kind": target.get("kind"),
        "name": metadata.get("name"),
        "uid": metadata.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    body: dict[str, Any] = {
        "apiVersion": COMMAND_API_VERSION,
        "kind": "Command",
        "metadata": {
            "generateName": f"{metadata.get('name')}-{action.lower()}-",
            "namespace": namespace,
            "ownerReferences": [reference],
        },
        "target": reference,
        "action": action,
    }
    if message:
        body["message"] = message
    return body
