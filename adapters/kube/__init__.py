"""Talking to the Kubernetes API server: the client, the watches, the Lease and the writes.

:mod:`.client` is our raw-JSON client (connections, retries, the resources vcsat reads);
:mod:`.informer` keeps a watched, always-current cache of those objects; :mod:`.leader` holds a
Lease so only one replica acts; :mod:`.applier` writes a cycle's decision back (bindings in
:mod:`.binding`, evictions and nominations in :mod:`.evictions`, PodGroup and pod status in
:mod:`.status_writes`, Events in :mod:`.events`, what they share in :mod:`.apply_state`), and
:mod:`.status_subresource` sends a status through ``…/status`` or the object itself, whichever the
serving CRD takes.
Kept apart from the scheduler loop and the converters because this is the only place that knows
how the API server behaves (conflicts, lag, 404s, rate limits), so the rest can treat the cluster
as plain objects in and a Decision out.
"""
