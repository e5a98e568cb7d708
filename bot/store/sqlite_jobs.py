"""GitHub job events on SQLite: merging deliveries into one row per job, and reading the jobs
queued at a moment and the activity of a window, with the statements `bot.store.shared_sql`
holds for both backends."""

from __future__ import annotations

import aiosqlite

from bot.domain.jobs import JobEvent
from bot.store.records import JobActivity, JobRow, QueuedJob
from bot.store.shared_sql import (
    ARRIVALS,
    COMPLETIONS,
    KNOWN_JOB,
    PRUNE_JOBS,
    RUNNING_JOBS,
    STARTS,
    UPSERT_JOB,
    job_row,
    merged_job,
    queued_job,
    queued_queries,
)


async def record_job(db: aiosqlite.Connection, event: JobEvent, now: float) -> None:
    """Merge one delivery into its job's row, in the caller's transaction (whose write lock
    keeps the read and the write together)."""
    async with db.execute(KNOWN_JOB, (event.job_id,)) as cursor:
        known = await cursor.fetchone()
    await db.execute(UPSERT_JOB, merged_job(event, known, now))


async def queued_at(
    db: aiosqlite.Connection, at: float, queued_after: float, max_age: float
) -> list[QueuedJob]:
    """Jobs waiting for a runner at `at` (`bot.store.shared_sql.queued_queries`)."""
    queued: list[QueuedJob] = []
    for sql, params in queued_queries(at, queued_after, max_age):
        async with db.execute(sql, params) as cursor:
            queued.extend(queued_job(row) for row in await cursor.fetchall())
    return queued


async def activity(db: aiosqlite.Connection, since: float, until: float) -> JobActivity:
    """What happened to jobs within [since, until): created, taken by a runner, completed."""

    async def rows(sql: str) -> list[JobRow]:
        async with db.execute(sql, (since, until)) as cursor:
            return [job_row(row) for row in await cursor.fetchall()]

    return JobActivity(
        since=since,
        until=until,
        arrivals=await rows(ARRIVALS),
        starts=await rows(STARTS),
        completions=await rows(COMPLETIONS),
    )


async def running_at(
    db: aiosqlite.Connection, at: float, lookback: float
) -> dict[tuple[str, str], int]:
    """Jobs started within `lookback` before `at` and not completed by then, per type and
    repository."""
    async with db.execute(RUNNING_JOBS, (at - lookback, at, at)) as cursor:
        return {(row[0], row[1]): int(row[2]) for row in await cursor.fetchall()}


async def prune_jobs(db: aiosqlite.Connection, before: float, batch: int) -> int:
    """Forget at most `batch` jobs created before `before`, queued or not."""
    cursor = await db.execute(PRUNE_JOBS, (before, batch))
    return max(cursor.rowcount, 0)
