"""Synthetic clusters: the generator of instance files and its ``vcsat generate`` command.

:mod:`.generator` builds a cluster (nodes in racks, queues, jobs and their pods) as the Kubernetes
objects an instance file lists, as a pure function of its options and seed, from its parts:
:mod:`.options` (what to make up), :mod:`.kube` (label names and text forms), :mod:`.cluster`
(racks, nodes, HyperNodes, PriorityClasses, Queues), :mod:`.jobs` (a job's PodGroup and Pods),
:mod:`.running` (the running load) and :mod:`.pending` (the pending work); :mod:`.command` is the
``vcsat generate`` command around it. Kept apart from :mod:`vcsat.adapters.convert` because it
writes inputs rather than reading them, and the benchmarks and the simulator call the generator
without its command line.
"""
