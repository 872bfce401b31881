"""vcsat's Job controller: Volcano ``batch.volcano.sh/v1alpha1`` Jobs → PodGroups, pods and plugins.

One concept per module: :mod:`.jobspec` (typed, checked Job), :mod:`.naming` (Volcano's names,
labels and annotations), :mod:`.podgroup` (Job → PodGroup), :mod:`.pods` (Job → pods),
:mod:`.plugins` (ssh, svc, env, tensorflow, pytorch, mpi), :mod:`.status` (the Job status),
:mod:`.observe` (pods as the state machine sees them), :mod:`.state` (the lifecycle, a pure
function), :mod:`.reconciler` (applies one decision against the API), :mod:`.controller` (watches,
work queue, leader election, the ``vcsat controller`` command) and :mod:`.cli` (``vcsat job`` and
``vcsat queue``).
"""
