"""Reading what people and clusters write: files and Kubernetes objects in, model values out.

Everything here turns text or raw API objects into the typed values of :mod:`vcsat.model`, and
refuses bad input in one line naming the file, the object and the field. :mod:`.snapshot` is the
one converter from Kubernetes and Volcano objects to a Snapshot (the live scheduler and ``vcsat
solve`` both call it); it assembles what one module per kind reads (:mod:`.nodes`, :mod:`.pods`,
:mod:`.podgroups`, :mod:`.queues`, :mod:`.priority_classes`, :mod:`.hypernodes`,
:mod:`.storage_objects`), with the pod's parts apart (:mod:`.pod_requests`, :mod:`.node_selectors`,
:mod:`.pod_affinity`, :mod:`.spread`, :mod:`.gpu_ids`) and the shared reading machinery in
:mod:`.reader` and :mod:`.fields`. Beside it: instance files (:mod:`.instance_file`), Volcano's
scheduler configuration (:mod:`.volcano_conf`), the cycle's clock as objects carry it
(:mod:`.clock`) and the dump of a live cluster into an instance file (:mod:`.dump`). Kept apart
because none of it decides or writes anything: a newcomer can read a cycle's input here without
meeting the solver or the API server's side effects.
"""
