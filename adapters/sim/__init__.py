"""The simulator behind ``vcsat simulate`` and ``vcsat bench``: workloads replayed under vcsat and baselines.

:mod:`.workloads` builds the experiments (Alibaba's openb trace, synthetic production-like jobs,
the TensorFlow gang experiment) and :mod:`.hetero` openb's variants whose pods ask for a GPU model;
:mod:`.engine` is the discrete-event loop that runs one scheduler over one workload, applying only
decisions the validator accepts; :mod:`.schedulers` names the schedulers it can run (vcsat, its
ablations, the baselines of :mod:`vcsat.solver.baselines`); :mod:`.metrics` summarises a run and
:mod:`.report` prints the tables and plots; :mod:`.commands` is the command line over all of it.
Kept apart from the live scheduler because nothing here touches a cluster: simulated time, in-memory
state, and every number a benchmark table reports.
"""
