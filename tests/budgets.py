"""The e-graph budget of tests that check what the optimizer finds.

Bounded by iterations and e-nodes (the defaults), with time to spare: the default
2 s can cut a run short on a loaded CI runner and make a quality test flaky. The
graphs these tests optimize saturate or stall in 0.01-3 s on an idle machine.
"""

from __future__ import annotations

from eqsat.api import Budget

QUALITY = Budget(seconds=60.0)
