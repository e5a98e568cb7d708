"""Retention: the store forgets what nobody needs any more, on a schedule.

Everything older than the retention period (QUEUEBOT_RETENTION_DAYS, 30 days by default) that
`Store.prune` may remove (and posted capacity reports), and GitHub's jobs older than theirs
(`jobs.retention_days`, 14), is
removed every hour (`QUEUEBOT_PRUNE_SECONDS`; or every quarter of the period, if that is
shorter), and the freed space given back, so the database stays the size of a month of alerts
however long the bot runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from bot.domain.clock import SYSTEM, Clock
from bot.domain.timings import Timings
from bot.store.interface import Store
from bot.store.records import Pruned

log = logging.getLogger(__name__)


async def keep_pruning(
    store: Store,
    retention_seconds: float,
    *,
    jobs_retention_seconds: float | None = None,
    on_pruned: Callable[[Pruned], None] = lambda pruned: None,
    on_failed: Callable[[], None] = lambda: None,
    clock: Clock = SYSTEM,
    every: float = Timings().prune_interval,
) -> None:
    """Prune now and then every `every` seconds (at most a quarter of the retention period)
    until cancelled; a failure never stops it."""
    interval = min(every, retention_seconds / 4)
    while True:
        try:
            now = clock.now().timestamp()
            pruned = await store.prune(now - retention_seconds)
            if jobs_retention_seconds is not None:
                # By the jobs' own times (the clock of the world they come from), and by when
                # they were last recorded (the wall clock the store stamps them with).
                jobs = await store.prune_jobs(
                    now - jobs_retention_seconds, clock.time() - jobs_retention_seconds
                )
                if jobs:
                    log.info("retention removed %d GitHub jobs", jobs)
            if reports := await store.prune_reports(now - retention_seconds):
                log.info("retention removed %d capacity reports", reports)
        except Exception:
            on_failed()
            log.exception("retention failed; trying again in %.0fs", interval)
        else:
            on_pruned(pruned)
            if pruned.rows:
                log.info(
                    "retention removed %d incidents, %d notifications, %d bodies,"
                    " %d outbox entries and %d digests",
                    pruned.incidents,
                    pruned.notifications,
                    pruned.bodies,
                    pruned.outbox,
                    pruned.digests,
                )
        await asyncio.sleep(interval)
