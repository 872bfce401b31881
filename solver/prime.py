"""The carries a cycle with pending pods leaves to the next, made for a snapshot with none.

The live scheduler's cycles carry what depends only on the nodes and the bound pods from one
snapshot to the next (:mod:`vcsat.solver.node_side`'s node rooms, the pricing tallies of
:mod:`vcsat.solver.pricing.pod_tally`), so a steady cycle costs what its changes cost. But a
scheduler that starts on a cluster with nothing pending decides its first cycles without building
those parts for pending work: the build over no pending pod watches only the pod count, and the
greedy, which reads the fragmentation tally, never runs. The first batch of new pods then pays for
them all afresh (every node's room, every pod's task type; benchmarks/RESULTS.md, session 33),
in the cycle its pods wait for.

:func:`prime` makes them once, at start-up, from the snapshot with nothing pending, so the first
batch's cycle carries them like any later one. The node rooms need the problem's resources, which
the pending pods set; the pods of ours already bound say what the next ones will most likely ask
(:func:`likely_resources`). A wrong guess costs only the rooms made for it: the next build sees
other resources and makes its rooms afresh, as without priming. Every carry is equal to a fresh
computation by construction, so what is primed changes no decision, only when its work is done.
"""

from __future__ import annotations

from vcsat.model import Snapshot
from vcsat.solver import node_side
from vcsat.solver.pricing import fragmentation, scarcity
from vcsat.solver.problem import problem_resources


def likely_resources(snapshot: Snapshot) -> list[str]:
    """The resources a problem would watch if pods like our bound ones were pending
    (:func:`~vcsat.solver.problem.problem_resources` over them; volume counts left out)."""
    return problem_resources([pod for pod in snapshot.pods if pod.managed and pod.bound])


def prime(snapshot: Snapshot) -> list[str]:
    """Make the node rooms (for :func:`likely_resources`) and the pricing tallies for ``snapshot``,
    as a build with pending pods would; the resources primed."""
    resources = likely_resources(snapshot)
    node_side.node_rooms(snapshot, resources)
    fragmentation.workload_of(snapshot)
    scarcity.demand_sums(snapshot)
    return resources
