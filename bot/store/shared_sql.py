"""What the SQLite and PostgreSQL stores share about GitHub's jobs: the statements that read and
merge them, written once with `?` placeholders (`bot.store.statements`), and the pure merge
of a delivery into what a job's row already holds.

Times are Unix seconds. A job's row holds the furthest state any delivery reported (deliveries
come late, twice and out of order) and each time the first delivery that knew it gave; a job
left the queue when a runner took it (`started_at`) or, cancelled while queued, when it
completed. Which jobs were queued at a moment T is a range question on `created_at` that three
indexes answer without reading the whole history: jobs created in the last hour before T, and,
older, those still in the queue or whose wait lasted an hour or more (partial indexes).
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from bot.domain.jobs import JobAction, JobEvent
from bot.store.records import JobRow, QueueCount, QueuedJob

#: Jobs that waited at least this long are found through their own index.
LONG_WAIT_SECONDS = 3600.0


class Columns(Protocol):
    """A row read by column position (SQLite's and asyncpg's rows alike)."""

    def __getitem__(self, index: int, /) -> Any: ...


#: What a job's row already knows, read before a delivery is merged into it.
KNOWN_JOB = (
    "SELECT status, started_at, completed_at, conclusion, runner_name FROM jobs WHERE id = ?"
)

UPSERT_JOB = (
    "INSERT INTO jobs (id, run_id, run_attempt, repository, workflow, job, labels,"
    " runner_type, html_url, head_branch, status, created_at, started_at, completed_at,"
    " left_queue_at, conclusion, runner_name, updated_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET status = excluded.status,"
    " started_at = excluded.started_at, completed_at = excluded.completed_at,"
    " left_queue_at = excluded.left_queue_at, conclusion = excluded.conclusion,"
    " runner_name = excluded.runner_name, updated_at = excluded.updated_at"
)


def merged_job(event: JobEvent, known: Columns | None, now: float) -> tuple[Any, ...]:
    """`UPSERT_JOB`'s parameters: the delivery merged into the row `KNOWN_JOB` read (if any)."""
    started = event.started_at.timestamp() if event.started_at else None
    completed = event.completed_at.timestamp() if event.completed_at else None
    status = event.action
    conclusion, runner = event.conclusion, event.runner_name
    if known is not None:
        stored = JobAction(known[0])
        if stored.rank > status.rank:
            status = stored
        started = known[1] if known[1] is not None else started
        completed = known[2] if known[2] is not None else completed
        conclusion = known[3] if known[3] is not None else conclusion
        runner = known[4] if known[4] is not None else runner
    # A job cancelled before any runner took it left the queue when it completed.
    left = started if started is not None else completed
    return (
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
    )


_QUEUED_COLUMNS = "runner_type, repository, workflow, job, created_at, html_url"


_COUNTED_COLUMNS = "runner_type, repository, COUNT(*), MIN(created_at)"


def queued_queries(
    at: float, queued_after: float, max_age: float, *, counted: bool = False
) -> list[tuple[str, tuple[float, ...]]]:
    """The three range reads whose rows together are the jobs waiting for a runner at `at`
    that had waited more than `queued_after` seconds, and were created less than `max_age`
    seconds before (older ones are taken for lost): the reference alert's "created more than
    5 minutes and less than a week ago". `counted`: their rows count the jobs per runner type
    and repository instead (`queue_count`; the three never hold the same job)."""
    newest, oldest = at - queued_after, at - max_age
    recent = max(at - LONG_WAIT_SECONDS, oldest)
    older = "created_at > ? AND created_at <= ? AND created_at < ?"
    # Held for an environment's approval is not queueing; a job still waiting now was
    # waiting at any earlier moment too.
    columns, grouped = (
        (_COUNTED_COLUMNS, " GROUP BY runner_type, repository")
        if counted
        else (_QUEUED_COLUMNS, "")
    )
    return [
        (
            f"SELECT {columns} FROM jobs WHERE {where} AND status != 'waiting'{grouped}",  # noqa: S608
            params,
        )
        for where, params in (
            (
                "created_at > ? AND created_at < ?"
                " AND (left_queue_at IS NULL OR left_queue_at > ?)",
                (recent, newest, at),
            ),
            (f"{older} AND left_queue_at IS NULL", (oldest, recent, newest)),
            # The bound is written into the statement, as in the index's own WHERE: PostgreSQL
            # keeps one plan for a statement after its fifth run, and a plan made for any
            # bound cannot use the partial index (a week of jobs read instead of the long
            # waits: 2 ms became 220 ms with a million jobs).
            (
                f"{older} AND left_queue_at - created_at >= {LONG_WAIT_SECONDS:.0f}"
                " AND left_queue_at > ?",
                (oldest, recent, newest, at),
            ),
        )
    ]


def queued_job(row: Columns) -> QueuedJob:
    """A row of `queued_queries`."""
    return QueuedJob(
        runner_type=row[0],
        repository=row[1],
        workflow=row[2],
        job=row[3],
        created_at=float(row[4]),
        html_url=row[5],
    )


def queue_count(row: Columns) -> QueueCount:
    """A row of `queued_queries(..., counted=True)`."""
    return QueueCount(row[0], row[1], int(row[2]), float(row[3]))


#: Jobs created, taken by a runner and completed within [?, ?): rows for `job_row`.
ARRIVALS = (
    "SELECT runner_type, repository, workflow, 0, 0, job FROM jobs"
    " WHERE created_at >= ? AND created_at < ? AND status != 'waiting'"
)
STARTS = (
    "SELECT runner_type, repository, workflow, started_at - created_at, 0, job FROM jobs"
    " WHERE started_at >= ? AND started_at < ?"
)
COMPLETIONS = (
    "SELECT runner_type, repository, workflow, completed_at - started_at,"
    " conclusion = 'failure', job FROM jobs"
    " WHERE completed_at >= ? AND completed_at < ? AND started_at IS NOT NULL"
)


def job_row(row: Columns) -> JobRow:
    """A row of `ARRIVALS`, `STARTS` or `COMPLETIONS`."""
    return JobRow(row[0], row[1], row[2], float(row[3]), bool(row[4]), row[5])


#: Jobs started in (?, ?] and not completed by the end (?), per type and repository.
RUNNING_JOBS = (
    "SELECT runner_type, repository, COUNT(*) FROM jobs WHERE started_at > ?"
    " AND started_at <= ? AND (completed_at IS NULL OR completed_at > ?)"
    " GROUP BY runner_type, repository"
)

#: Jobs created before the first cut-off, or last recorded before the second, at most a batch
#: of each; parameters (before, batch, recorded before, batch).
PRUNE_JOBS = (
    "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE created_at < ? LIMIT ?)"
    " OR id IN (SELECT id FROM jobs WHERE updated_at < ? LIMIT ?)"
)
