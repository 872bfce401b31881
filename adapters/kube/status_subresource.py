"""Writing an object's status where the serving CRD takes it: ``…/status`` or the object itself.

Volcano's PodGroup CRD has no status subresource (its Queue and Job CRDs have one), and a cluster
that already runs Volcano keeps Volcano's CRDs (they are cluster-wide). There a write to
``…/podgroups/NAME/status`` is a 404, and the status must be written as Volcano's own components
write it: with an update of the PodGroup itself. Where the subresource is served, the reverse
holds: the main resource ignores ``status``. So which path takes the status is decided by
discovery (``GET /apis/GROUP/VERSION`` lists ``PLURAL/status`` when it is served), asked once per
resource and asked again when a write answers 404 while the object still exists (the CRD was
replaced under a running process).

Writes are merge patches of ``{"status": …}`` on either path, so a status write on the object
itself never touches its spec or metadata.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from vcsat.adapters.kube.client import MERGE_PATCH, ApiError, Kube, Resource

log = logging.getLogger("vcsat.kube")


class StatusWriter:
    """Status writes for any resource, through the path its CRD serves (thread-safe)."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._lock = threading.Lock()
        self._served: dict[tuple[str, str], bool] = {}

    def has_status_subresource(self, resource: Resource, *, refresh: bool = False) -> bool:
        """Whether the API server serves ``PLURAL/status`` for ``resource`` (discovery, cached).

        A discovery that fails (no answer, forbidden) assumes the subresource, as Kubernetes'
        own kinds have it; the first write that 404s asks again.
        """
        key = (resource.api_version, resource.plural)
        with self._lock:
            if not refresh and key in self._served:
                return self._served[key]
        prefix = "/api/" if "/" not in resource.api_version else "/apis/"
        try:
            found = self.kube.get(prefix + resource.api_version)
        except ApiError as error:
            log.warning(
                "cannot discover whether a status subresource is served; assuming it is",
                extra={"resource": f"{resource.plural}.{resource.api_version}", "error": str(error)},
            )
            return True
        names = {str(item.get("name")) for item in (found or {}).get("resources") or () if isinstance(item, Mapping)}
        served = f"{resource.plural}/status" in names
        with self._lock:
            before = self._served.get(key)
            self._served[key] = served
        if before is not served:
            log.info(
                "status writes go to the status subresource" if served else "status writes go to the object itself",
                extra={"resource": f"{resource.plural}.{resource.api_version}", "status_subresource": served},
            )
        return served

    def status_path(self, resource: Resource, namespace: str | None, name: str) -> str:
        subresource = "status" if self.has_status_subresource(resource) else None
        return resource.path(namespace, name, subresource)

    def patch_status(
        self, resource: Resource, namespace: str | None, name: str, status: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Merge-patch ``status`` into the object; raises :class:`ApiError` as the server refuses.

        A 404 through the subresource while the object exists means the CRD changed: discovery
        is asked again and the write retried once on the path it now names.
        """
        body = {"status": dict(status)}
        subresource = self.has_status_subresource(resource)
        try:
            result: dict[str, Any] = self.kube.patch(
                resource.path(namespace, name, "status" if subresource else None), body, content_type=MERGE_PATCH
            )
            return result
        except ApiError as error:
            if error.status != 404 or not subresource:
                raise
            if self.has_status_subresource(resource, refresh=True):
                raise
            result = self.kube.patch(resource.path(namespace, name), body, content_type=MERGE_PATCH)
            return result

    def put_status(self, resource: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the object's status with ``obj["status"]``, guarded by ``obj``'s resourceVersion.

        Through the subresource the rest of ``obj`` is ignored; without it ``obj`` is written whole,
        as Volcano's components do (so ``obj`` must be the object as last read, changed only in
        its status). A 409 means the object moved on meanwhile.
        """
        metadata = obj.get("metadata") or {}
        namespace = metadata.get("namespace") if resource.namespaced else None
        name = str(metadata.get("name"))
        subresource = self.has_status_subresource(resource)
        try:
            result: dict[str, Any] = self.kube.request(
                "PUT", resource.path(namespace, name, "status" if subresource else None), body=dict(obj)
            )
            return result
        except ApiError as error:
            if error.status != 404 or not subresource:
                raise
            if self.has_status_subresource(resource, refresh=True):
                raise
            result = self.kube.request("PUT", resource.path(namespace, name), body=dict(obj))
            return result
