"""Server-side apply of manifests as ``kubectl apply --server-side [--dry-run=server]`` does it.

Used by the tests of deploy/: the API server itself validates each object (schemas, CEL rules,
admission, Pod Security), and its ``Warning`` headers are kept so a test can insist on none.
Plain module (no pytest imports), beside controlplane.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlplane import load_manifests
from kubernetes.client import ApiClient
from kubernetes.dynamic import DynamicClient

FIELD_MANAGER = "vcsat-tests"
DEPLOY_DIR = Path(__file__).resolve().parents[2] / "deploy"


@dataclass(frozen=True)
class Applied:
    obj: dict[str, Any]
    """The object as the server stored it (or would have, under dry-run)."""
    warnings: list[str]
    """The server's ``Warning`` headers (deprecations, Pod Security, unknown fields...)."""


class ApplyError(AssertionError):
    """The server refused an object; the message names it and quotes the server."""


def describe(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{doc.get('kind')} {where}{meta.get('name')}"


class ServerSideApply:
    """Applies documents through one API client, discovering each kind's path once."""

    def __init__(self, api: ApiClient) -> None:
        self.api = api
        self.dynamic = DynamicClient(api)  # type: ignore[no-untyped-call]

    def __call__(self, doc: dict[str, Any], *, dry_run: bool) -> Applied:
        resource = self.dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        meta = doc.get("metadata") or {}
        namespace = (meta.get("namespace") or "default") if resource.namespaced else None
        query = [("fieldManager", FIELD_MANAGER), ("force", "true"), ("fieldValidation", "Strict")]
        if dry_run:
            query.append(("dryRun", "All"))
        request = self.api.param_serialize(
            "PATCH",
            resource.path(name=meta["name"], namespace=namespace),
            query_params=query,
            header_params={"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"},
            body=doc,
            auth_settings=["BearerToken"],
        )
        response = self.api.call_api(*request)
        payload = response.read()
        if not 200 <= response.status <= 299:
            try:
                message = json.loads(payload).get("message", "")
            except ValueError:
                message = payload.decode(errors="replace")
            raise ApplyError(f"{describe(doc)}: {response.status} {message}")
        return Applied(json.loads(payload), list(response.headers.getlist("Warning")))

    def file(self, path: Path, *, dry_run: bool) -> list[Applied]:
        return [self(doc, dry_run=dry_run) for doc in load_manifests(path)]
