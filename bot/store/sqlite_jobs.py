"""GitHub job events on SQLite: merging deliveries into one row per job, and reading the jobs
queued at a moment and the activity of a window, with the statements `bot.store.shared_sql`
holds for both backends."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import aiosqlite

from bot.domain.jobs import JobEvent
from bot.store.fleet_totals_sql import REGISTERED_TYPES, TOTALS, Tally, totals_record, write_tally
from bot.store.records import FleetTotals, JobActivity, JobRow, QueueCount, QueuedJob
from bot.store.shared_sql import (
    ARRIVALS,
    COMPLETIONS,
    PRUNE_JOBS,
    RUNNING_JOBS,
    STARTS,
    UPSERT_JOB,
    job_row,
    merged_job,
    queue_count,
    queued_job,
    queued_queries,
)

#: Which of some deliveries were seen before, and what some jobs' rows know.
SEEN_KEYS = "SELECT key FROM seen_requests WHERE key IN ({})"
KNOWN_JOBS = (
    "SELECT id, status, started_at, completed_at, conclusion, runner_name FROM jobs"
    " WHERE id IN ({})"
)


#: Ids in one `IN (…)` list: under SQLite's oldest limit of 999 variables.
_IN_BATCH = 900


async def _in_batches(
    db: aiosqlite.Connection, sql: str, keys: Sequence[object]
) -> list[sqlite3.Row]:
    """`sql` (one `{}` for the `IN` list's placeholders) for all of `keys`, a batch at a time."""
    rows: list[sqlite3.Row] = []
    for start in range(0, len(keys), _IN_BATCH):
        batch = keys[start : start + _IN_BATCH]
        marks = ", ".join("?" * len(batch))
        rows.extend(await db.execute_fetchall(sql.format(marks), tuple(batch)))
    return rows


async def record_lot(
    db: aiosqlite.Connection,
    deliveries: Sequence[tuple[JobEvent, str]],
    remember_until: float,
    now: float,
    fleet_types: set[str],
) -> tuple[int, set[str]]:
    """Merge each delivery not seen before (by its id) into its job's row and its type's
    totals, in the caller's transaction; how many were new, and the runner types counted under
    their own name (`fleet_types`: those known to be). A handful of statements for the lot,
    not three for each delivery: a history of days is hundreds of thousands of them."""
    keys = [f"github:{delivery}" for _, delivery in deliveries]
    seen = {row[0] for row in await _in_batches(db, SEEN_KEYS, keys)}
    new: list[JobEvent] = []
    for (event, _), key in zip(deliveries, keys, strict=True):
        if key not in seen:
            seen.add(key)
            new.append(event)
    known: dict[int, tuple[object, ...]] = {
        row[0]: tuple(row[1:]) for row in await _in_batches(db, KNOWN_JOBS, [e.job_id for e in new])
    }
    merged: dict[int, tuple[object, ...]] = {}
    tally = Tally()
    for event in new:
        before = known.get(event.job_id)
        row = merged_job(event, before, now)
        tally.add(event, before, row)
        merged[event.job_id] = row
        # What the job's row knows now, for the job's next delivery in the lot.
        known[event.job_id] = (row[10], row[12], row[13], row[15], row[16])
    await db.executemany(
        "INSERT INTO seen_requests (key, expires_at) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
        [(key, remember_until) for key in dict.fromkeys(keys)],
    )
    await db.executemany(UPSERT_JOB, list(merged.values()))
    own = await write_tally(db.execute_fetchall, db.executemany, tally, fleet_types)
    return len(new), own


async def queued_at(
    db: aiosqlite.Connection, at: float, queued_after: float, max_age: float
) -> list[QueuedJob]:
    """Jobs waiting for a runner at `at` (`bot.store.shared_sql.queued_queries`)."""
    queued: list[QueuedJob] = []
    for sql, params in queued_queries(at, queued_after, max_age):
        queued.extend(queued_job(row) for row in await db.execute_fetchall(sql, params))
    return queued


async def count_queued_at(
    db: aiosqlite.Connection, at: float, queued_after: float, max_age: float
) -> list[QueueCount]:
    """`queued_at`'s jobs counted per runner type and repository."""
    found: list[QueueCount] = []
    for sql, params in queued_queries(at, queued_after, max_age, counted=True):
        found.extend(queue_count(row) for row in await db.execute_fetchall(sql, params))
    return found


async def read_fleet_totals(db: aiosqlite.Connection) -> FleetTotals:
    """The fleet's totals (`bot.store.fleet_totals_sql`)."""
    totals = await db.execute_fetchall(TOTALS)
    return totals_record(totals, await db.execute_fetchall(REGISTERED_TYPES))


async def activity(db: aiosqlite.Connection, since: float, until: float) -> JobActivity:
    """What happened to jobs within [since, until): created, taken by a runner, completed."""

    async def rows(sql: str) -> list[JobRow]:
        return [job_row(row) for row in await db.execute_fetchall(sql, (since, until))]

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
    rows = await db.execute_fetchall(RUNNING_JOBS, (at - lookback, at, at))
    return {(row[0], row[1]): int(row[2]) for row in rows}


async def prune_jobs(
    db: aiosqlite.Connection, before: float, recorded_before: float, batch: int
) -> int:
    """Forget at most `batch` jobs created before `before` or last recorded before
    `recorded_before`, queued or not."""
    cursor = await db.execute(PRUNE_JOBS, (before, batch, recorded_before, batch))
    return max(cursor.rowcount, 0)
