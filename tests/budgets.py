"""The e-graph budget of tests that check what the optimizer finds, and the slack of
tests that bound a wall-clock time.

Bounded by iterations and e-nodes (the defaults), with time to spare: the default
2 s can cut a run short on a loaded CI runner and make a quality test flaky. The
graphs these tests optimize saturate or stall in 0.01-3 s on an idle machine.

A test that bounds a wall-clock time is marked ``timing`` (``-m "not timing"``
deselects them) and multiplies its idle-machine bound by :data:`TIMING_SLACK`.
"""

from __future__ import annotations

from eqsat.api import Budget

QUALITY = Budget(seconds=60.0)

#: how much slower than on an idle machine a ``timing`` test's run may be: CI runs the
#: suite on two loaded cores, where a process gets a fraction of a core at times
TIMING_SLACK = 4.0
