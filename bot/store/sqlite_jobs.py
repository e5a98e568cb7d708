"""GitHub job events on SQLite: merging deliveries into one row per job, and reading the jobs
queued at a moment and the activity of a window.

Times are Unix seconds. A job's row holds the furthest state any delivery reported (deliveries
come late, twice and out of order) and each time the first delivery that knew it gave; a job
left the queue when a runner took it (`started_at`) or, cancelled while queued, when it
completed. Which jobs were queued at a moment T is a range question on `created_at` that three
indexes answer without reading the whole history: jobs created in the last hour before T, and,
older, those still in the queue or whose wait lasted an hour or more (partial indexes).
"""

from __future__ import annotations

import json

import aiosqlite

from bot.domain.jobs import JobAction, JobEvent
from bot.store.interface import JobActivity, JobRow, QueuedJob

#: Jobs that waited at least this long are found through their own index.
LONG_WAIT_SECONDS = 3600.0


async def record_job(db: aiosqlite.Connection, event: JobEvent, now: float) -> None:
    """Merge one delivery into its job's row, in the caller's transaction."""
    async with db.execute(
        "SELECT status, started_at, completed_at, conclusion, runner_name FROM jobs WHERE id = ?",
        (event.job_id,),
    ) as cursor:
        row = await cursor.fetchone()
    started = event.started_at.timestamp() if event.started_at else None
    completed = event.completed_at.timestamp() if event.completed_at else None
    status = event.action
    conclusion, runner = event.conclusion, event.runner_name
    if row is not None:
        known = JobAction(row[0])
        if known.rank > status.rank:
            status = known
        started = row[1] if row[1] is not None else started
        completed = row[2] if row[2] is not None else completed
        conclusion = row[3] if row[3] is not None else conclusion
        runner = row[4] if row[4] is not None else runner
    # A job cancelled before any runner took it left the queue when it completed.
    left = started if started is not None else completed
    await db.execute(
        "INSERT INTO jobs (id, run_id, run_attempt, repository, workflow, job, labels,"
        " runner_type, html_url, head_branch, status, created_at, started_at, completed_at,"
        " left_queue_at, conclusion, runner_name, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET status = excluded.status,"
        " started_at = excluded.started_at, completed_at = excluded.completed_at,"
        " left_queue_at = excluded.left_queue_at, conclusion = excluded.conclusion,"
        " runner_name = excluded.runner_name, updated_at = excluded.updated_at",
        (
            event.job_id,
            event.run_id,
            event.run_attempt,
            event.repository,
            event.workflow,
            event.job,
            json.dumps(list(event.labels)),
            event.runner_type,
            event.html_url,
            event.head_branch,
            status.value,
            event.created_at.timestamp(),
            started,
            completed,
            left,
            conclusion,
            runner,
            now,
        ),
    )


_QUEUED_COLUMNS = "runner_type, repository, workflow, job, created_at, html_url"


async def queued_at(
    db: aiosqlite.Connection, at: float, queued_after: float, max_age: float
) -> list[QueuedJob]:
    """Jobs waiting for a runner at `at` that had waited more than `queued_after` seconds, and
    were created less than `max_age` seconds before (older ones are taken for lost): the
    reference alert's "created more than 5 minutes and less than a week ago"."""
    newest, oldest = at - queued_after, at - max_age
    recent = max(at - LONG_WAIT_SECONDS, oldest)
    # Held for an environment's approval is not queueing; a job still waiting now was
    # waiting at any earlier moment too.
    rows: list[aiosqlite.Row] = []
    older = "created_at > ? AND created_at <= ? AND created_at < ?"
    for sql, params in (
        (
            "created_at > ? AND created_at < ? AND (left_queue_at IS NULL OR left_queue_at > ?)",
            (recent, newest, at),
        ),
        (f"{older} AND left_queue_at IS NULL", (oldest, recent, newest)),
        (
            f"{older} AND left_queue_at - created_at >= ? AND left_queue_at > ?",
            (oldest, recent, newest, LONG_WAIT_SECONDS, at),
        ),
    ):
        async with db.execute(
            f"SELECT {_QUEUED_COLUMNS} FROM jobs WHERE {sql} AND status != 'waiting'",  # noqa: S608
            params,
        ) as cursor:
            rows.extend(await cursor.fetchall())
    return [
        QueuedJob(
            runner_type=row[0],
            repository=row[1],
            workflow=row[2],
            job=row[3],
            created_at=float(row[4]),
            html_url=row[5],
        )
        for row in rows
    ]


async def activity(db: aiosqlite.Connection, since: float, until: float) -> JobActivity:
    """What happened to jobs within [since, until): created, taken by a runner, completed."""

    async def rows(sql: str) -> list[JobRow]:
        async with db.execute(sql, (since, until)) as cursor:
            return [
                JobRow(
                    runner_type=r[0],
                    repository=r[1],
                    workflow=r[2],
                    seconds=float(r[3]),
                    failed=bool(r[4]),
                    job=r[5],
                )
                for r in await cursor.fetchall()
            ]

    return JobActivity(
        since=since,
        until=until,
        arrivals=await rows(
            "SELECT runner_type, repository, workflow, 0, 0, job FROM jobs"
            " WHERE created_at >= ? AND created_at < ? AND status != 'waiting'"
        ),
        starts=await rows(
            "SELECT runner_type, repository, workflow, started_at - created_at, 0, job FROM jobs"
            " WHERE started_at >= ? AND started_at < ?"
        ),
        completions=await rows(
            "SELECT runner_type, repository, workflow, completed_at - started_at,"
            " conclusion = 'failure', job FROM jobs"
            " WHERE completed_at >= ? AND completed_at < ? AND started_at IS NOT NULL"
        ),
    )


async def running_at(
    db: aiosqlite.Connection, at: float, lookback: float
) -> dict[tuple[str, str], int]:
    """Jobs started within `lookback` before `at` and not completed by then, per type and
    repository."""
    async with db.execute(
        "SELECT runner_type, repository, COUNT(*) FROM jobs WHERE started_at > ?"
        " AND started_at <= ? AND (completed_at IS NULL OR completed_at > ?)"
        " GROUP BY runner_type, repository",
        (at - lookback, at, at),
    ) as cursor:
        return {(row[0], row[1]): int(row[2]) for row in await cursor.fetchall()}


async def prune_jobs(db: aiosqlite.Connection, before: float, batch: int) -> int:
    """Forget at most `batch` jobs created before `before`, queued or not."""
    cursor = await db.execute(
        "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE created_at < ? LIMIT ?)",
        (before, batch),
    )
    return max(cursor.rowcount, 0)
