"""What grows on PostgreSQL and what lets it go: GitHub's job events, merged and read with the
statements `bot.store.shared_sql` holds for both backends, and one pass of retention.

Retention removes what `bot.store.retention_sql` describes, as SQLite does. The incidents
a pass takes are locked (`FOR UPDATE SKIP LOCKED`): one a replica is applying a notification
to right now is left for the next pass instead of being deleted under it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bot.domain.jobs import JobEvent
from bot.store.fleet_totals_sql import REGISTERED_TYPES, TOTALS, Tally, totals_record, write_tally
from bot.store.postgres_db import changed
from bot.store.postgres_schema import Lock
from bot.store.records import FleetTotals, JobActivity, JobRow, Pruned, QueueCount, QueuedJob
from bot.store.retention_sql import BATCH, prune_pass
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
    queue_count,
    queued_job,
    queued_queries,
)
from bot.store.statements import numbered

if TYPE_CHECKING:
    from bot.store.postgres_schema import Connection


async def merge_delivery(conn: Connection, event: JobEvent, now: float, tally: Tally) -> None:
    """Merge one delivery into its job's row, and what it adds into `tally`, in the caller's
    transaction."""
    # Two deliveries of one new job on two replicas would both find no row and the later
    # write would undo the earlier; the lock makes the second read what the first wrote.
    await conn.execute(
        "SELECT pg_advisory_xact_lock($1, hashint8($2))", int(Lock.JOB), event.job_id
    )
    known = await conn.fetchrow(numbered(KNOWN_JOB), event.job_id)
    row = merged_job(event, known, now)
    await conn.execute(numbered(UPSERT_JOB), *row)
    tally.add(event, known, row)


async def waiting_at(
    conn: Connection, at: float, queued_after: float, max_age: float
) -> list[QueuedJob]:
    """Jobs waiting for a runner at `at` (`bot.store.shared_sql.queued_queries`)."""
    queued: list[QueuedJob] = []
    for sql, params in queued_queries(at, queued_after, max_age):
        queued.extend(queued_job(row) for row in await conn.fetch(numbered(sql), *params))
    return queued


async def queued_counts_at(
    conn: Connection, at: float, queued_after: float, max_age: float
) -> list[QueueCount]:
    """`waiting_at`'s jobs counted per runner type and repository."""
    found: list[QueueCount] = []
    for sql, params in queued_queries(at, queued_after, max_age, counted=True):
        found.extend(queue_count(row) for row in await conn.fetch(numbered(sql), *params))
    return found


async def totals_of_fleet(conn: Connection) -> FleetTotals:
    """The fleet's totals (`bot.store.fleet_totals_sql`)."""
    totals = await conn.fetch(TOTALS)
    return totals_record(totals, await conn.fetch(REGISTERED_TYPES))


async def window_activity(conn: Connection, since: float, until: float) -> JobActivity:
    """What happened to jobs within [since, until): created, taken by a runner, completed."""

    async def rows(sql: str) -> list[JobRow]:
        return [job_row(row) for row in await conn.fetch(numbered(sql), since, until)]

    return JobActivity(
        since=since,
        until=until,
        arrivals=await rows(ARRIVALS),
        starts=await rows(STARTS),
        completions=await rows(COMPLETIONS),
    )


async def busy_at(conn: Connection, at: float, lookback: float) -> dict[tuple[str, str], int]:
    """Jobs started within `lookback` before `at` and not completed by then, per type and
    repository."""
    rows = await conn.fetch(numbered(RUNNING_JOBS), at - lookback, at, at)
    return {(row[0], row[1]): int(row[2]) for row in rows}


async def forget_jobs_before(
    conn: Connection, before: float, recorded_before: float, batch: int
) -> int:
    """Forget at most `batch` jobs created before `before` or last recorded before
    `recorded_before`, queued or not."""
    return changed(await conn.execute(numbered(PRUNE_JOBS), before, batch, recorded_before, batch))


async def retention_pass(conn: Connection, before: float, now: float) -> Pruned:
    """One pass of retention (`bot.store.retention_sql`) at cut-off `before` (Unix seconds), in
    the caller's transaction; remembered keys expired by `now` go too."""
    cutoff = datetime.fromtimestamp(before, UTC)
    gone = [
        row[0]
        for row in await conn.fetch(
            "SELECT i.id FROM incidents i WHERE i.status = 'resolved' AND i.resolved_at < $1"
            " AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.incident_id = i.id"
            " AND o.state = 'pending') LIMIT $2 FOR UPDATE SKIP LOCKED",
            cutoff,
            BATCH,
        )
    ]

    async def removed(sql: str, *params: object) -> int:
        return changed(await conn.execute(numbered(sql), *params))

    return await prune_pass(removed, "= ANY(?)" if gone else None, (gone,), cutoff, before, now)


async def record_deliveries(
    conn: Connection,
    deliveries: Sequence[tuple[JobEvent, str]],
    remember_until: float,
    now: float,
    fleet_types: set[str],
) -> tuple[int, set[str]]:
    """Merge each delivery not seen before (by `X-GitHub-Delivery`) into its job and its type's
    totals; how many were new, and the types counted under their own name (`fleet_types`:
    those known to be)."""
    new = 0
    tally = Tally()
    for event, delivery in deliveries:
        status = await conn.execute(
            "INSERT INTO seen_requests (key, expires_at) VALUES ($1, $2)"
            " ON CONFLICT (key) DO NOTHING",
            f"github:{delivery}",
            remember_until,
        )
        if changed(status) == 1:
            new += 1
            await merge_delivery(conn, event, now, tally)

    async def fetch(sql: str) -> list[Any]:
        return await conn.fetch(numbered(sql))

    async def write_many(sql: str, rows: list[tuple[object, ...]]) -> None:
        await conn.executemany(numbered(sql), rows)

    async def register() -> None:
        # Registrations commit in the order they take their places (`fleet_totals_sql`).
        await conn.execute("SELECT pg_advisory_xact_lock($1, 0)", int(Lock.FLEET_TYPES))

    return new, await write_tally(fetch, write_many, tally, fleet_types, register)
