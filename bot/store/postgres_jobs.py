"""What grows on PostgreSQL and what lets it go: GitHub's job events, merged and read with the
statements `bot.store.shared_sql` holds for both backends, and one pass of retention.

Retention removes what `bot.store.sqlite_retention` describes, in the same order. The incidents
a pass takes are locked (`FOR UPDATE SKIP LOCKED`): one a replica is applying a notification
to right now is left for the next pass instead of being deleted under it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bot.domain.jobs import JobEvent
from bot.store.postgres_db import changed
from bot.store.postgres_schema import Lock
from bot.store.records import JobActivity, JobRow, Pruned, QueuedJob
from bot.store.rows import PRUNE_HEADS_UPS, PRUNE_SEEN
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
from bot.store.statements import numbered

if TYPE_CHECKING:
    from bot.store.postgres_schema import Connection

#: Incidents one pass of retention takes at most: a pass is one short transaction.
INCIDENTS_PER_PASS = 2000


async def merge_delivery(conn: Connection, event: JobEvent, now: float) -> None:
    """Merge one delivery into its job's row, in the caller's transaction."""
    # Two deliveries of one new job on two replicas would both find no row and the later
    # write would undo the earlier; the lock makes the second read what the first wrote.
    await conn.execute(
        "SELECT pg_advisory_xact_lock($1, hashint8($2))", int(Lock.JOB), event.job_id
    )
    known = await conn.fetchrow(numbered(KNOWN_JOB), event.job_id)
    await conn.execute(numbered(UPSERT_JOB), *merged_job(event, known, now))


async def waiting_at(
    conn: Connection, at: float, queued_after: float, max_age: float
) -> list[QueuedJob]:
    """Jobs waiting for a runner at `at` (`bot.store.shared_sql.queued_queries`)."""
    queued: list[QueuedJob] = []
    for sql, params in queued_queries(at, queued_after, max_age):
        queued.extend(queued_job(row) for row in await conn.fetch(numbered(sql), *params))
    return queued


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
    """One pass of retention at cut-off `before` (Unix seconds), in the caller's transaction;
    remembered keys expired by `now` go too."""
    cutoff = datetime.fromtimestamp(before, UTC)
    gone = [
        row[0]
        for row in await conn.fetch(
            "SELECT i.id FROM incidents i WHERE i.status = 'resolved' AND i.resolved_at < $1"
            " AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.incident_id = i.id"
            " AND o.state = 'pending') LIMIT $2 FOR UPDATE SKIP LOCKED",
            cutoff,
            INCIDENTS_PER_PASS,
        )
    ]

    async def removed(sql: str, *args: object) -> int:
        return changed(await conn.execute(sql, *args))

    incidents = outbox = notifications = 0
    if gone:
        await conn.execute(
            "UPDATE incidents SET previous_id = NULL WHERE previous_id = ANY($1)", gone
        )
        await conn.execute("DELETE FROM diagnoses WHERE incident_id = ANY($1)", gone)
        await conn.execute("DELETE FROM claims WHERE incident_id = ANY($1)", gone)
        outbox = await removed("DELETE FROM outbox WHERE incident_id = ANY($1)", gone)
        notifications = await removed("DELETE FROM notifications WHERE incident_id = ANY($1)", gone)
        incidents = await removed("DELETE FROM incidents WHERE id = ANY($1)", gone)

    await conn.execute(
        "DELETE FROM diagnoses WHERE finished_at IS NOT NULL AND finished_at < $1", before
    )
    outbox += await removed(
        "DELETE FROM outbox WHERE id IN (SELECT o.id FROM outbox o WHERE o.state != 'pending'"
        " AND o.done_at < $1 AND NOT EXISTS (SELECT 1 FROM diagnoses d WHERE d.note_id = o.id)"
        " LIMIT $2)",
        before,
        INCIDENTS_PER_PASS * 10,
    )
    notifications += await removed(
        "DELETE FROM notifications WHERE id IN (SELECT id FROM notifications"
        " WHERE received_at < $1 LIMIT $2)",
        cutoff,
        INCIDENTS_PER_PASS * 10,
    )
    bodies = await removed(
        "DELETE FROM notification_bodies b WHERE NOT EXISTS (SELECT 1 FROM notifications n"
        " WHERE n.body_sha256 = b.sha256)",
    )
    digests = await removed(
        "DELETE FROM digests d WHERE last_joined_at < $1 AND NOT EXISTS"
        " (SELECT 1 FROM incidents i WHERE i.digest_id = d.id)",
        cutoff,
    )
    await conn.execute("DELETE FROM claims WHERE until < $1", before)
    seen = await removed(numbered(PRUNE_SEEN), now, INCIDENTS_PER_PASS * 10)
    heads_ups = await removed(numbered(PRUNE_HEADS_UPS), before, INCIDENTS_PER_PASS * 10)
    return Pruned(
        seen=seen,
        heads_ups=heads_ups,
        incidents=incidents,
        notifications=notifications,
        bodies=bodies,
        outbox=outbox,
        digests=digests,
    )


async def record_deliveries(
    conn: Connection, deliveries: Sequence[tuple[JobEvent, str]], remember_until: float, now: float
) -> int:
    """Merge each delivery not seen before (by `X-GitHub-Delivery`); how many were new."""
    new = 0
    for event, delivery in deliveries:
        status = await conn.execute(
            "INSERT INTO seen_requests (key, expires_at) VALUES ($1, $2)"
            " ON CONFLICT (key) DO NOTHING",
            f"github:{delivery}",
            remember_until,
        )
        if changed(status) == 1:
            new += 1
            await merge_delivery(conn, event, now)
    return new
