"""Where a runner type's queue is heading: the queue and its longest wait some minutes ahead,
from the jobs waiting now and the recent rates of arrivals and starts.

Runners take a type's jobs about in the order they came. At the recent start rate μ, the jobs
taken in the next h minutes are the μ·h oldest; the longest wait then is that of the oldest job
left. Once the jobs waiting now are all taken, the queue is what arrived meanwhile and was not
taken (arrivals λ·h less what is left of μ·h), and its oldest job arrived that backlog's worth
of arrivals ago. Jobs count as queueing as the alert counts them: waiting longer than
`queued_after`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: How far back the longest wait is read to tell whether it rises.
RISE_SECONDS = 900.0


@dataclass(frozen=True)
class Threshold:
    """The alert rule's condition: more than `queued` jobs queueing and the longest of them
    waiting `wait_seconds` or more."""

    wait_seconds: float = 3600.0
    queued: int = 5
    #: A job counts as queueing once it has waited longer than this (the alert's 5 minutes).
    queued_after: float = 300.0

    def crossed(self, queued: float, wait: float) -> bool:
        return queued > self.queued and wait >= self.wait_seconds


@dataclass(frozen=True)
class QueueState:
    """A runner type's queue at a moment: when each waiting job was created (oldest first, Unix
    seconds), and the rates (jobs a minute) of the recent minutes."""

    at: float
    created: tuple[float, ...]
    arrivals_per_minute: float
    starts_per_minute: float
    #: The longest wait RISE_SECONDS before `at` (None where not read): a queue heading for the
    #: threshold has a longest wait that rises, where a steady one holds its level.
    longest_wait_before: float | None = None

    def queued(self, threshold: Threshold) -> int:
        """Jobs queueing now as the alert counts them."""
        return sum(self.at - c > threshold.queued_after for c in self.created)

    def longest_wait(self) -> float:
        return self.at - self.created[0] if self.created else 0.0


@dataclass(frozen=True)
class Projection:
    """The queue and its longest wait `minutes` ahead."""

    minutes: float
    queued: float
    wait_seconds: float


def project(state: QueueState, minutes: float, threshold: Threshold) -> Projection:
    """The queue `minutes` ahead at the recent rates (see the module's docstring)."""
    at = state.at + minutes * 60.0
    taken = state.starts_per_minute * minutes
    waiting = len(state.created)
    young = state.arrivals_per_minute * threshold.queued_after / 60.0
    if taken < waiting:
        oldest = state.created[math.floor(taken)]
        left = [c for c in state.created[math.floor(taken) :] if at - c > threshold.queued_after]
        arrived = state.arrivals_per_minute * max(0.0, minutes - threshold.queued_after / 60.0)
        return Projection(minutes, len(left) + arrived, at - oldest)
    backlog = max(0.0, waiting + state.arrivals_per_minute * minutes - taken)
    if backlog <= 0.0 or state.arrivals_per_minute <= 0.0:
        return Projection(minutes, 0.0, 0.0)
    wait = backlog / state.arrivals_per_minute * 60.0
    return Projection(minutes, max(0.0, backlog - young), min(wait, minutes * 60.0))


def crossing(state: QueueState, horizon_minutes: float, threshold: Threshold) -> float | None:
    """In how many minutes (whole, up to the horizon) the queue crosses the alert's threshold
    at the recent rates; 0 when it is over it now; None when not within the horizon."""
    for minute in range(int(horizon_minutes) + 1):
        ahead = project(state, float(minute), threshold)
        if threshold.crossed(ahead.queued, ahead.wait_seconds):
            return float(minute)
    return None
