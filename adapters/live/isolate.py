"""When a cycle's solve raises, find the waiting groups it raises on and decide without them.

A solver bug triggered by one odd PodGroup (a shape, a packing, a rule combination nobody tested)
would otherwise fail the whole cycle, and the same cycle fails again every period: one job stops
the cluster's scheduling until it goes away. kube-scheduler confines such a failure to the pod it
scheduled (the pod gets ``PodScheduled=False`` with reason ``SchedulerError`` and goes to backoff);
vcsat decides the whole cluster at once, so it has to find the culprits first.

:class:`Isolator` does that by re-solving with waiting groups left out. With the groups to try in a
list ``C``, a solve of the whole cluster failing again (a failure that does not repeat blames
nobody) and a solve without all of them succeeding (otherwise no waiting group is to blame and the
error stands), it searches the shortest prefix of ``C`` whose removal lets the
solve succeed; the prefix's last group flips the outcome, and it is set aside. That repeats until
the rest succeeds, each time within ``log2(len(C))`` solves; past ``max_solves`` the whole prefix
that made the last solve succeed is set aside, so the cluster is decided in bounded time. Groups set
aside stay out of later cycles for a back-off that doubles each time the same group is found again
(as kube-scheduler's pod back-off does, but in minutes: finding one costs several whole solves);
once it ends they are tried first, so a group that still fails is found again in few solves.

A group set aside keeps its pods and PodGroup in the cluster and in the decision's report: its
outcome says ``SchedulerError`` with the error, and the rest of the cycle (check, apply, dump) sees
the whole snapshot, so nothing is lost or written half. A group is left out of the solve's
snapshot with its waiting pods, and with its PodGroup when none of its pods holds room (a group
with bound pods keeps its PodGroup, so its running pods stay a gang the rules can read).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from vcsat.adapters.kube.status_writes import SCHEDULER_ERROR
from vcsat.model.cluster import Snapshot
from vcsat.model.decision import Decision, PodGroupOutcome, PodGroupPhase

log = logging.getLogger(__name__)

BACKOFF_S = 300.0
"""How long a group found to make the solve raise stays out of cycles the first time."""
MAX_BACKOFF_S = 3600.0
"""The longest it stays out; each time it is found again its back-off doubles up to this."""
MAX_SOLVES = 24
"""Solves one isolation may spend before it sets aside the whole prefix that made a solve succeed."""

Solve = Callable[[Snapshot], Decision]


def waiting_groups(snapshot: Snapshot) -> list[str]:
    """Keys of the groups a cycle decides on, in the snapshot's order: each PodGroup or lone pod
    with a pod waiting to be placed, and each PodGroup with no pods yet (it waits for admission)."""
    keys: dict[str, None] = {}
    with_pods: set[str] = set()
    for pod in snapshot.pods:
        key = pod.group or pod.key
        with_pods.add(key)
        if pod.pending:
            keys[key] = None
    for group in snapshot.podgroups:
        if group.key not in with_pods:
            keys[group.key] = None
    return list(keys)


def without_groups(snapshot: Snapshot, keys: Iterable[str]) -> Snapshot:
    """The snapshot with the groups ``keys`` left out: their waiting pods, and their PodGroup
    when none of its pods holds room on a node."""
    out = set(keys)
    if not out:
        return snapshot
    holding = {pod.group for pod in snapshot.pods if pod.group in out and pod.node_name is not None}
    pods = tuple(pod for pod in snapshot.pods if not (pod.pending and (pod.group or pod.key) in out))
    podgroups = tuple(group for group in snapshot.podgroups if group.key not in out or group.key in holding)
    return snapshot.model_copy(update={"pods": pods, "podgroups": podgroups})


@dataclass
class _SetAside:
    until: float
    backoff_s: float
    error: str


@dataclass
class Isolator:
    """Decides a cycle with :func:`solve`-like ``decide`` and, when it raises, without the waiting
    groups it raises on (module docstring). One per scheduler: it remembers the groups set aside."""

    backoff_s: float = BACKOFF_S
    max_backoff_s: float = MAX_BACKOFF_S
    max_solves: int = MAX_SOLVES
    clock: Callable[[], float] = time.monotonic
    set_aside: dict[str, _SetAside] = field(default_factory=dict)
    found: int = 0
    """Groups found to make a solve raise, over the scheduler's life (a group found again counts again)."""

    def decide(self, snapshot: Snapshot, decide: Solve, *, retry: Solve | None = None) -> Decision:
        """The decision of ``decide(snapshot)`` without the groups set aside; when that raises,
        the groups to blame are found with ``retry`` (default ``decide``) and set aside.
        Re-raises when no waiting group is to blame."""
        if not self.set_aside:  # the usual cycle: nothing to leave out, no pass over the pods
            try:
                return decide(snapshot)
            except Exception as error:
                blamed, decision = self._isolate(snapshot, [], waiting_groups(snapshot), retry or decide, error)
                return _with_errors(decision, snapshot, blamed, self.set_aside)
        now = self.clock()
        present = waiting_groups(snapshot)
        still_out = [key for key in present if key in self.set_aside and self.set_aside[key].until > now]
        due = [key for key in present if key in self.set_aside and key not in still_out]
        try:
            decision = decide(without_groups(snapshot, still_out))
        except Exception as error:
            candidates = due + [key for key in present if key not in self.set_aside]
            blamed, decision = self._isolate(snapshot, still_out, candidates, retry or decide, error)
            still_out += blamed
        else:
            for key in due:  # tried again and it decided: no longer set aside
                del self.set_aside[key]
        here = set(present)
        for key in list(self.set_aside):  # groups gone from the cluster are forgotten
            if key not in here:
                del self.set_aside[key]
        return _with_errors(decision, snapshot, [key for key in still_out if key in self.set_aside], self.set_aside)

    def _isolate(
        self, snapshot: Snapshot, out: list[str], candidates: list[str], retry: Solve, error: Exception
    ) -> tuple[list[str], Decision]:
        """The candidates to set aside so that ``retry`` decides the cluster, and its decision
        without them (module docstring)."""
        solves = 0
        decided: dict[frozenset[str], Decision] = {}

        def succeeds(left_out: list[str]) -> bool:
            nonlocal solves
            solves += 1
            try:
                decided[frozenset(left_out)] = retry(without_groups(snapshot, out + left_out))
            except Exception:
                return False
            return True

        if succeeds([]):  # it does not fail again: nobody to blame (the retry's own conditions)
            return [], decided[frozenset()]
        if not candidates or not succeeds(candidates):
            raise error  # not one waiting group is to blame
        blamed: list[str] = []
        rest = list(candidates)
        high = len(rest)  # blamed + rest[:high] left out: the solve succeeds
        while True:
            low = 0  # blamed + rest[:low] left out: the solve raises (known or assumed)
            while high - low > 1 and solves < self.max_solves:
                middle = (low + high) // 2
                if succeeds(blamed + rest[:middle]):
                    high = middle
                else:
                    low = middle
            if high - low > 1:  # out of solves: the whole prefix that succeeded
                blamed += rest[:high]
                break
            blamed.append(rest[high - 1])
            rest = rest[: high - 1] + rest[high:]
            high -= 1
            if high == 0:
                break  # blamed alone was the succeeding set
            if solves >= self.max_solves:
                blamed += rest[:high]
                break
            if succeeds(blamed):
                break
        self._remember(blamed, f"{type(error).__name__}: {error}")
        log.error(
            "the solve raised; waiting groups set aside",
            extra={"groups": blamed, "solves": solves, "error": repr(error)},
        )
        return blamed, decided[frozenset(blamed)]

    def _remember(self, blamed: list[str], reason: str) -> None:
        now = self.clock()
        for key in blamed:
            before = self.set_aside.get(key)
            backoff = min(before.backoff_s * 2, self.max_backoff_s) if before is not None else self.backoff_s
            self.set_aside[key] = _SetAside(until=now + backoff, backoff_s=backoff, error=reason)
            self.found += 1


def _with_errors(decision: Decision, snapshot: Snapshot, keys: list[str], set_aside: dict[str, _SetAside]) -> Decision:
    """``decision`` with a ``SchedulerError`` outcome for each group set aside."""
    if not keys:
        return decision
    groups = snapshot.podgroup_by_key
    aside = set(keys)
    # The contract reports groups with waiting pods only: one with no pods yet is left unadmitted
    # (and logged), as a group the cycle did not admit.
    waiting = {pod.group or pod.key for pod in snapshot.pods if pod.pending}
    outcomes = [outcome for outcome in decision.podgroups if outcome.podgroup not in aside]
    for key in keys:
        if key not in waiting:
            continue
        group = groups.get(key)
        phase: PodGroupPhase = "Pending"
        if group is not None and group.phase in ("Running", "Inqueue"):
            phase = "Running" if group.phase == "Running" else "Inqueue"
        entry = set_aside[key]
        outcomes.append(
            PodGroupOutcome(
                podgroup=key,
                phase=phase,
                reason=SCHEDULER_ERROR,
                message=f"the solver raised on this group ({entry.error}); left out of cycles, tried again later",
            )
        )
    outcomes.sort(key=lambda outcome: outcome.podgroup)  # the contract's order
    return decision.model_copy(update={"podgroups": outcomes})
