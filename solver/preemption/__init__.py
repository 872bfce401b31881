"""Preemption and reclaim (Volcano's preempt and reclaim actions) as small exact models.

:mod:`.preempt` picks victims and nominates the gangs the allocate phase left waiting;
:mod:`.antiaffinity` and :mod:`.spread` carry the pod rules a victim's removal can lift
(inter-pod affinity and anti-affinity on any key, host ports, DoNotSchedule topology spread), as kube-scheduler's
DefaultPreemption re-runs its filters with the victims gone.
"""
