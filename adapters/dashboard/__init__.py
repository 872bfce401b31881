"""A read-only web dashboard of the live scheduler (``vcsat scheduler --dashboard-port``).

It shows what only vcsat can show beside the queues and nodes: why each PodGroup waits, in the
solver's own reason codes and messages, and how far from optimal each cycle was. Server-rendered
HTML from the last cycle's snapshot and decision, which the scheduler hands over after each cycle;
it reads the cluster through nothing else and writes nothing.
"""
