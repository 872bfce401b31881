"""Job plugins: what a Job's ``spec.plugins`` asks the controller to set up around its pods.

Each plugin is one module (ssh, svc, env, tensorflow, pytorch, mpi) that edits every pod before it
is created and may ask for objects of its own (a Secret, a Service, ...) created before the pods.
This package's ``__init__`` stays empty on purpose: :mod:`..jobspec` imports the registry while
the plugins themselves refer to jobspec's types, and an eager import here would make that a cycle.
"""
