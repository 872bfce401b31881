"""Every side effect of vcsat, one subpackage per kind, around the pure ``vcsat.solver``.

:mod:`.convert` reads files and Kubernetes objects into model values; :mod:`.kube` talks to the
API server (client, watches, leader election, the writes of a decision); :mod:`.live` is the
scheduler loop with its metrics and logs, and :mod:`.dashboard` its web view; :mod:`.cli` is the
``vcsat`` command line; :mod:`.generate` makes synthetic clusters; :mod:`.controller` runs Volcano
Jobs; :mod:`.sim` replays workloads for ``vcsat bench``. Imports point one way: adapters use the
solver and the model, never the reverse.
"""
