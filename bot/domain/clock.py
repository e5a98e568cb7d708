"""The product's one clock: every reading of the time goes through a `Clock` passed in.

It reads three times, because they answer three questions:

- `now()`: the moment the bot reasons about: when an alert fired, what the fleet shows, when a
  report is due. Tests set it, and so does `queuebot demo --at`.
- `time()`: this machine's Unix seconds, for what replicas compare through the store (leases,
  claims, when a delivery is due) and for the age of a signed request.
- `monotonic()`: seconds that never go back, for intervals within one process (pacing, how
  long a read took).

A test that sets the moment leaves the other two running: leases and pacing still pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Clock:
    moment: Callable[[], datetime] = field(default=utcnow)
    seconds: Callable[[], float] = field(default=time.time)
    ticks: Callable[[], float] = field(default=time.monotonic)

    @classmethod
    def at(cls, moment: datetime | Callable[[], datetime]) -> Clock:
        """A clock whose moment is `moment` (a time, or what gives it), the machine's own
        time and intervals running as usual."""
        return cls(moment=moment if callable(moment) else lambda: moment)

    def now(self) -> datetime:
        return self.moment()

    def time(self) -> float:
        return self.seconds()

    def monotonic(self) -> float:
        return self.ticks()


#: The system's clock.
SYSTEM = Clock()
