"""The history read once, in the background, when `queuebot serve` first starts on a store
(QUEUEBOT_BACKFILL_ON_START_DAYS): `queuebot backfill --days N` without a terminal, so that a new
install compares with a usual from its first hour instead of after a week.

Once the walk has gone through, the store remembers it and later starts leave it alone. A walk
cut short (the bot stopped, GitHub's budget spent) goes on at the next start where it stopped:
each repository's finished days are remembered by the walk itself. Of several replicas on one
store, the one holding the lease walks; should the lease lapse during a long walk, a second
walker only asks GitHub again for what the first already merged (merging is idempotent).
"""

from __future__ import annotations

import logging
import uuid

from bot.domain.clock import SYSTEM, Clock
from bot.fleet.sources.backfill import Backfill
from bot.fleet.sources.github_http import GitHubError
from bot.store import Store, StoreError

log = logging.getLogger(__name__)

FIRST_BACKFILL_ROLE = "first-backfill"
LEASE_SECONDS = 3600.0
#: What the store remembers once the walk has gone through (for ten years: for good).
DONE = "backfill:first-start"
_KEPT_SECONDS = 10 * 365 * 86400.0


class FirstBackfill:
    """`walk` run once for the store (its store and clock are `store` and `clock`)."""

    def __init__(self, walk: Backfill, store: Store, *, clock: Clock = SYSTEM) -> None:
        self._walk, self._store, self._clock = walk, store, clock
        self._owner = uuid.uuid4().hex
        #: Whether this start's walk went through (None: not walked here).
        self.done: bool | None = None

    async def run(self) -> None:
        """Walk, unless the store has been walked or another replica is walking."""
        try:
            if await self._store.remembered(DONE):
                return
            if not await self._store.lead(
                FIRST_BACKFILL_ROLE, self._owner, self._clock.time() + LEASE_SECONDS
            ):
                return
            days = self._walk.days
            log.info("reading %d days of job history from GitHub (first start)", days)
            progress = await self._walk.run()
        except (GitHubError, StoreError) as exc:
            self.done = False
            log.warning("the first start's backfill stopped: %s; it goes on at the next", exc)
            return
        for skipped in progress.skipped:
            log.warning("backfill skipped %s", skipped)
        if progress.stopped:
            self.done = False
            log.warning("the first start's backfill stopped early: %s", progress.stopped)
            return
        await self._store.first_seen(DONE, self._clock.time() + _KEPT_SECONDS)
        self.done = True
        log.info("job history read from GitHub: %s", progress.line())
