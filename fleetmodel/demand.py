"""How busy a team is, minute by minute on its own clock, and the jobs a workflow sends then.

Demand follows the working day and drops at weekends; scheduled workflows send a burst in the
first 20 minutes of their hour of the night and a trickle otherwise. A workflow's rate is read
by the minute, so an episode's rates are a table of its minutes, and arrivals are drawn from it
by thinning a Poisson process at the rate's bound.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fleetmodel.plan import Trouble, Workflow


def _local_minute(moment: float, utc_offset: int) -> int:
    """The minute `moment` falls in on the team's clock, counted from the Unix epoch, as
    `datetime.fromtimestamp` reads it (to the microsecond, rounding half to even)."""
    fraction, whole = math.modf(moment + utc_offset * 3600)
    return (int(whole) + (round(fraction * 1e6) >= 1_000_000)) // 60


@functools.lru_cache(maxsize=1 << 16)
def _day_factor(minute: int, quiet: float) -> float:
    # 1 January 1970, the first minute's day, was a Thursday (weekday 3).
    hour = minute % 1440 // 60 + minute % 60 / 60.0
    working = max(0.0, math.sin(math.pi * (hour - 7.5) / 13.0)) ** 1.4 if 7.5 < hour < 20.5 else 0
    weekday = 1.0 if (minute // 1440 + 3) % 7 < 5 else 0.3
    return weekday * (quiet + (1 - quiet) * working)


def _nightly_factor(minute: int, hour: int) -> float:
    minute %= 1440
    return 6.0 if minute // 60 == hour and minute % 60 < 20 else 0.08


def day_factor(moment: float, utc_offset: int, quiet: float = 0.15) -> float:
    """How busy the team is at `moment`, 1 at the busiest weekday hour (by the minute)."""
    return _day_factor(_local_minute(moment, utc_offset), quiet)


def nightly_factor(moment: float, utc_offset: int, hour: int) -> float:
    """Scheduled runs: a burst in the first 20 minutes of `hour` (local), a trickle otherwise."""
    return _nightly_factor(_local_minute(moment, utc_offset), hour)


class Rates:
    """Jobs a minute of `flow` through an episode from `start` to `end`: its cycle, then the
    trouble staged from `since` (a workflow moved in arrives only from then on, one moved out
    no more)."""

    def __init__(
        self,
        flow: Workflow,
        trouble: Trouble | None,
        since: float,
        start: float,
        end: float,
        utc_offset: int,
    ) -> None:
        self.since, self.utc_offset = since, utc_offset
        self.shift = utc_offset * 3600
        self.first = _local_minute(start, utc_offset)
        moved_in = trouble is not None and flow in trouble.moved_in
        #: The rate in each minute of the episode before the trouble, and from it on.
        self.before: list[float] = []
        self.after: list[float] = []
        for minute in range(self.first, _local_minute(end, utc_offset) + 1):
            if flow.nightly_hour is not None:
                base = flow.peak * _nightly_factor(minute, flow.nightly_hour)
            else:
                base = flow.peak * _day_factor(minute, 0.15)
            self.before.append(0.0 if moved_in else base)
            if trouble is None or moved_in:
                self.after.append(base)
            elif flow.name in trouble.moved_out:
                self.after.append(0.0)
            else:
                self.after.append(base * trouble.demand)

    def rate(self, moment: float, whole: int) -> float:
        """The rate at `moment`, whose second on the team's clock is `whole`; only the last
        second of a minute can round up into the next."""
        minute = _local_minute(moment, self.utc_offset) if whole % 60 == 59 else whole // 60
        table = self.after if moment >= self.since else self.before
        return table[minute - self.first]


def thinned(
    rng: random.Random, bound: float, start: float, end: float, rates: Rates
) -> Iterator[float]:
    """Arrival times in [start, end) of a Poisson process at `rates`, none above `bound` jobs a
    minute: candidates at the bound, each kept with the chance of its rate over the bound. The
    caller may draw from `rng` between arrivals."""
    log, uniform01 = math.log, rng.random
    per_second = bound / 60.0
    shift, since, first = rates.shift, rates.since, rates.first
    before, after = rates.before, rates.after
    at = start
    while True:
        at += -log(1.0 - uniform01()) / per_second  # as `rng.expovariate(per_second)` draws
        if at >= end:
            return
        draw = uniform01() * bound
        whole = int(at + shift)
        if whole % 60 == 59:
            rate = rates.rate(at, whole)
        else:
            rate = (after if at >= since else before)[whole // 60 - first]
        if draw < rate:
            yield at
