"""Pacing posts to Slack: about one message per second per channel, with short bursts.

Slack limits chat.postMessage to roughly one message per second per channel, allowing short
bursts (https://docs.slack.dev/apis/web-api/rate-limits#limits-when-posting-messages). Waiting
here, before the call, keeps a busy incident stream from running into 429s at all; a 429 that
comes anyway is still honoured by the outbox worker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

PER_SECOND = 1.0
BURST = 3


class Pacer:
    """A token bucket per channel; `wait(channel)` returns when a post may go."""

    def __init__(
        self,
        per_second: float = PER_SECOND,
        burst: int = BURST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._per_second = per_second
        self._burst = float(burst)
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._ids: dict[str, str] = {}

    def same(self, name: str, channel_id: str) -> None:
        """`name` (a channel routed to as `#name`) is the channel `channel_id`: posts to either
        share one bucket from now on, holding the fewer tokens of the two (Slack's limit is per
        channel, however the bot named it)."""
        if name == channel_id or self._ids.get(name) == channel_id:
            return
        self._ids[name] = channel_id
        if name in self._buckets:
            now = self._clock()
            named = self._level(name, now)
            known = self._level(channel_id, now)
            self._buckets[channel_id] = (min(named, known), now)
            del self._buckets[name]

    def _level(self, channel: str, now: float) -> float:
        tokens, last = self._buckets.get(channel, (self._burst, now))
        return min(self._burst, tokens + (now - last) * self._per_second)

    def delay(self, channel: str) -> float:
        """Seconds until a post to `channel` may go; 0 takes the token now."""
        channel = self._ids.get(channel, channel)
        now = self._clock()
        tokens, last = self._buckets.get(channel, (self._burst, now))
        tokens = min(self._burst, tokens + (now - last) * self._per_second)
        if tokens >= 1.0:
            self._buckets[channel] = (tokens - 1.0, now)
            return 0.0
        self._buckets[channel] = (tokens, now)
        return (1.0 - tokens) / self._per_second

    async def wait(self, channel: str) -> None:
        # One waiter at a time per channel, so posts keep their order of arrival.
        async with self._locks.setdefault(self._ids.get(channel, channel), asyncio.Lock()):
            pause = self.delay(channel)
            while pause > 0:
                await asyncio.sleep(pause)
                pause = self.delay(channel)
