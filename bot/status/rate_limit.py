"""How often one person may ask for something expensive (`/queue-status` reads the whole fleet
and may draw a chart): a sliding window per user. Pure; the clock is passed in."""

from __future__ import annotations

from collections import deque

from bot.domain.clock import SYSTEM, Clock

#: What one person may ask within WINDOW_SECONDS: more than anyone reads, less than a script.
PER_WINDOW = 6
WINDOW_SECONDS = 60.0
#: People remembered at most; the ones quiet longest are forgotten first.
MAX_PEOPLE = 10_000


class PerUserLimit:
    """At most `per_window` requests per user in any `window` seconds."""

    def __init__(
        self,
        per_window: int = PER_WINDOW,
        window: float = WINDOW_SECONDS,
        clock: Clock = SYSTEM,
    ) -> None:
        self._per_window = per_window
        self._window = window
        self._clock = clock
        self._asked: dict[str, deque[float]] = {}

    def wait(self, user: str) -> float:
        """0 when `user` may ask now (which counts as asking), else the seconds to wait."""
        now = self._clock.monotonic()
        asked = self._asked.pop(user, deque())
        while asked and asked[0] <= now - self._window:
            asked.popleft()
        self._asked[user] = asked  # most recently asking last
        if len(asked) >= self._per_window:
            return asked[0] + self._window - now
        asked.append(now)
        while len(self._asked) > MAX_PEOPLE:
            del self._asked[next(iter(self._asked))]
        return 0.0
