"""How long the jobs not yet running have waited, where no source measures the longest wait.

actions-runner-controller counts the jobs not yet running, not how long they have waited, and
the wait of the jobs that started lately tells of a queue that may have drained since or not
yet formed. The jobs waiting 5 and 10 minutes before, less every job started since, are the
jobs of those still waiting (cancellations aside; exactly so where jobs start in the order they
came): where none of the queue 10 minutes ago and fewer than the alert's 5 of the queue 5
minutes ago still wait, no job has waited 10 minutes and fewer than 5 have waited 5, whatever
the jobs that started lately waited: the type does not queue as the alert counts.
"""

from __future__ import annotations

from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals

#: Fewer than one job: none (Prometheus's `increase` extrapolates to the window's edges).
NONE_LEFT = 1.0


def queue_ruled_out(fleet: FleetSignals, name: str, count: float) -> bool:
    """Whether `name`'s jobs, their longest wait not measured, surely do not queue as the alert
    counts: no job of the queue 10 minutes ago still waiting, fewer than `count` (the alert's
    count) of that 5 minutes ago. False where the longest wait is measured, or what still
    waits is not."""
    if fleet.value(Signal.MAX_WAIT, name) is not None:
        return False
    five, ten = fleet.value(Signal.WAITING_5M, name), fleet.value(Signal.WAITING_10M, name)
    if five is None or ten is None:
        return False
    return ten < NONE_LEFT and five < count
