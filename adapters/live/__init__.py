"""The live scheduler: the loop that runs one CP-SAT cycle after another against a cluster.

:mod:`.scheduler` is the ``vcsat scheduler`` command and its cycle (read the informers' cache,
convert, solve, check, apply); :mod:`.metrics` its Prometheus metrics (with :mod:`.volcano_metrics`,
Volcano's series under Volcano's names, and :mod:`.queue_view`, each queue after a cycle as both
they and the web dashboard show it), :mod:`.logs` its logging set-up
and :mod:`.daemon` what the long-running commands (scheduler and controller) share: leader-election
flags, signals, the Lease's namespace. Kept apart because this is the only code that runs forever
and owns time and process state; the parts it wires together (:mod:`vcsat.adapters.convert`,
:mod:`vcsat.solver`, :mod:`vcsat.adapters.kube`) stay usable one at a time, offline and in tests.
"""
