"""Pacing posts to Slack: about one message per second per channel, with short bursts.

Slack limits chat.postMessage to roughly one message per second per channel, allowing short
bursts (https://docs.slack.dev/apis/web-api/rate-limits#limits-when-posting-messages). Waiting
here, before the call, keeps a busy incident stream from running into 429s at all; a 429 that
comes anyway is still honoured by the outbox worker. The limit is per app and channel, so
replicas share one bucket per channel in the store (`Store.take_pace`); a lone process may keep
its buckets in memory.
"""

from __future__ import annotations

import asyncio

from bot.domain.clock import SYSTEM, Clock
from bot.domain.pace import Bucket, take
from bot.domain.timings import Timings
from bot.store import Store

#: A little under Slack's one a second (`Timings.posts_per_second`): a token is counted when a
#: post is asked for, and Slack counts it when the post arrives, a few milliseconds later or
#: earlier.
PER_SECOND = Timings().posts_per_second
BURST = 2


class Pacer:
    """A token bucket per channel; `wait(channel)` returns when a post may go. With a `store`,
    the buckets are the store's, shared by every replica on it."""

    def __init__(
        self,
        per_second: float = PER_SECOND,
        burst: int = BURST,
        clock: Clock = SYSTEM,
        store: Store | None = None,
    ) -> None:
        self._per_second = per_second
        self._burst = float(burst)
        self._clock = clock
        self._store = store
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
            now = self._clock.monotonic()
            named = self._level(name, now)
            known = self._level(channel_id, now)
            self._buckets[channel_id] = (min(named, known), now)
            del self._buckets[name]

    def _level(self, channel: str, now: float) -> float:
        tokens, last = self._buckets.get(channel, (self._burst, now))
        return min(self._burst, tokens + (now - last) * self._per_second)

    def delay(self, channel: str) -> float:
        """Seconds until a post to `channel` may go; 0 takes the token now (this process's
        buckets)."""
        channel = self._ids.get(channel, channel)
        known = self._buckets.get(channel)
        bucket, pause = take(
            Bucket(*known) if known else None,
            self._clock.monotonic(),
            self._per_second,
            self._burst,
        )
        self._buckets[channel] = (bucket.tokens, bucket.at)
        return pause

    async def _shared_delay(self, channel: str) -> float:
        if self._store is None:
            return self.delay(channel)
        # Replicas key the shared bucket by the channel as routed: what one replica learned of
        # its id, another may not know yet.
        return await self._store.take_pace(channel, self._per_second, self._burst)

    async def wait(self, channel: str) -> None:
        """Return when a post to `channel` (as routed: a name or an id) may go."""
        # One waiter at a time per channel, so posts keep their order of arrival.
        key = channel if self._store is not None else self._ids.get(channel, channel)
        async with self._locks.setdefault(key, asyncio.Lock()):
            pause = await self._shared_delay(channel)
            while pause > 0:
                await asyncio.sleep(pause)
                pause = await self._shared_delay(channel)
