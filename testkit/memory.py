"""Python's cyclic garbage collector, set for processes that build whole fleets.

A simulated week of a fleet is hundreds of thousands of jobs, and as many `workflow_job`
bodies and parsed deliveries; with Python's default thresholds (a young collection every 700
allocations, an old one every hundred of those) the collector walks them again and again,
about a third of the time such a test takes. Collecting less often keeps what is found the
same: nothing here relies on when a cycle is freed.
"""

from __future__ import annotations

import gc

#: Allocations between young collections, and collections between older ones.
THRESHOLDS = (100_000, 50, 100)


def collect_less() -> None:
    gc.set_threshold(*THRESHOLDS)
