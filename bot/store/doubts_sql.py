"""Jobs in doubt, on both backends (`bot.store.statements`): what reconciliation with GitHub's
REST API (`bot.fleet.sources.reconcile`) reads and corrects.

A job's row holds what deliveries said; GitHub drops some. A job that still looks queued
minutes after it was created, or still running long after its runner type's jobs usually end,
may be one whose `in_progress` or `completed` delivery went nowhere; a run no row knows may be
one whose every delivery was lost. Those are what these statements find. What GitHub answers is
merged as a delivery is (`Store.record_jobs`), and so is what reconciliation itself decides (a
job GitHub no longer has, one still queued past GitHub's own 24 hours, ended): the fleet's
totals count those as they count any delivery.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from bot.domain.jobs import JobAction, JobEvent
from bot.store.records import DoubtfulJob
from bot.store.statements import Queries

#: GitHub ends a job no self-hosted runner took within 24 hours ("Usage limits, billing, and
#: administration": job queue time).
GITHUB_QUEUE_LIMIT_SECONDS = 86400.0

_DOUBT_COLUMNS = "id, run_id, repository, runner_type, status, created_at, started_at"
#: Jobs still waiting for a runner, created in (?, ?], the longest waiting first, at most ?.
#: Held for an environment's approval is not waiting for a runner.
DOUBTFUL_QUEUED = (
    f"SELECT {_DOUBT_COLUMNS} FROM jobs WHERE left_queue_at IS NULL"  # noqa: S608
    " AND status != 'waiting' AND created_at > ? AND created_at <= ?"
    " ORDER BY created_at LIMIT ?"
)
#: Jobs a runner took in (?, ?] that no delivery has completed, the longest running first.
DOUBTFUL_RUNNING = (
    f"SELECT {_DOUBT_COLUMNS} FROM jobs WHERE started_at > ? AND started_at <= ?"  # noqa: S608
    " AND completed_at IS NULL ORDER BY started_at LIMIT ?"
)
#: Each runner type's mean run time over the jobs completed in [?, ?).
USUAL_RUN = (
    "SELECT runner_type, AVG(completed_at - started_at) FROM jobs"
    " WHERE completed_at >= ? AND completed_at < ? AND started_at IS NOT NULL"
    " GROUP BY runner_type"
)
#: Repositories with jobs created since ?, the busiest first.
ACTIVE_REPOSITORIES = (
    "SELECT repository FROM jobs WHERE created_at >= ? GROUP BY repository"
    " ORDER BY COUNT(*) DESC, repository"
)
KNOWN_RUNS = (
    "SELECT run_id, MAX(CASE WHEN left_queue_at IS NULL AND status != 'waiting' THEN 1 ELSE 0"
    " END) FROM jobs WHERE run_id IN ({}) GROUP BY run_id"
)
JOB_STATUSES = "SELECT id, status FROM jobs WHERE id IN ({})"
#: What the store knows of some jobs, as the delivery of their state would say it.
STORED_JOBS = (
    "SELECT id, run_id, run_attempt, repository, workflow, job, labels, runner_type, html_url,"
    " head_branch, status, created_at, started_at, completed_at, conclusion, runner_name"
    " FROM jobs WHERE id IN ({})"
)
ADD_CORRECTIONS = "INSERT INTO job_corrections (at, kind, jobs) VALUES (?, ?, ?)"
CORRECTIONS_SINCE = (
    "SELECT kind, SUM(jobs) FROM job_corrections WHERE at >= ? GROUP BY kind ORDER BY kind"
)
FORGET_CORRECTIONS = "DELETE FROM job_corrections WHERE at < ?"
#: Corrections are told for the last hour; a day of them is kept.
CORRECTIONS_KEPT_SECONDS = 86400.0
#: Ids in one `IN (…)` list: under SQLite's oldest limit of 999 variables.
_IN_BATCH = 900


def _moment(seconds: Any) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(float(seconds), UTC)


def _stored(row: Any) -> JobEvent:
    created = _moment(row[11])
    assert created is not None
    return JobEvent(
        job_id=int(row[0]),
        run_id=int(row[1]),
        run_attempt=int(row[2]),
        repository=row[3],
        workflow=row[4],
        job=row[5],
        labels=tuple(json.loads(row[6])),
        runner_type=row[7],
        html_url=row[8],
        head_branch=row[9],
        action=JobAction(row[10]),
        created_at=created,
        started_at=_moment(row[12]),
        completed_at=_moment(row[13]),
        conclusion=row[14],
        runner_name=row[15],
    )


def _doubt(row: Any) -> DoubtfulJob:
    return DoubtfulJob(
        job_id=int(row[0]),
        run_id=int(row[1]),
        repository=row[2],
        runner_type=row[3],
        status=row[4],
        created_at=float(row[5]),
        started_at=None if row[6] is None else float(row[6]),
    )


class DoubtQueries(Queries):
    """The store's part for reconciliation: jobs in doubt read, corrected and counted."""

    async def doubtful_jobs(
        self,
        queued_since: float,
        queued_until: float,
        running_since: float,
        running_until: float,
        limit: int,
    ) -> tuple[list[DoubtfulJob], list[DoubtfulJob]]:
        """Jobs still queued that were created in (queued_since, queued_until], and jobs still
        running that started in (running_since, running_until], each list the oldest first, at
        most `limit` of each."""
        queued = await self._database.fetch(DOUBTFUL_QUEUED, queued_since, queued_until, limit)
        running = await self._database.fetch(DOUBTFUL_RUNNING, running_since, running_until, limit)
        return [_doubt(row) for row in queued], [_doubt(row) for row in running]

    async def usual_run_seconds(self, since: float, until: float) -> dict[str, float]:
        """Each runner type's mean run time over the jobs completed in [since, until)."""
        rows = await self._database.fetch(USUAL_RUN, since, until)
        return {row[0]: float(row[1]) for row in rows if row[1] is not None}

    async def active_repositories(self, since: float) -> list[str]:
        """Repositories with jobs created since `since`, the busiest first."""
        return [row[0] for row in await self._database.fetch(ACTIVE_REPOSITORIES, since)]

    async def known_runs(self, run_ids: Sequence[int]) -> dict[int, bool]:
        """Of `run_ids`, those some job's row belongs to, each with whether one of its jobs
        waits for a runner."""
        return {int(row[0]): bool(row[1]) for row in await self._in_batches(KNOWN_RUNS, run_ids)}

    async def known_jobs(self, job_ids: Sequence[int]) -> dict[int, str]:
        """The status of each of `job_ids` that has a row."""
        return {int(row[0]): row[1] for row in await self._in_batches(JOB_STATUSES, job_ids)}

    async def stored_jobs(self, job_ids: Sequence[int]) -> list[JobEvent]:
        """What the store knows of each of `job_ids` that has a row, as the delivery of its
        state would say it (whether it counts is the caller's to say)."""
        return [_stored(row) for row in await self._in_batches(STORED_JOBS, job_ids)]

    async def add_corrections(self, at: float, counts: dict[str, int]) -> None:
        """Count jobs corrected at `at`, by kind; those counted more than a day ago go."""
        for kind, jobs in sorted(counts.items()):
            if jobs:
                await self._database.write(ADD_CORRECTIONS, at, kind, jobs)
        await self._database.write(FORGET_CORRECTIONS, at - CORRECTIONS_KEPT_SECONDS)

    async def corrections_since(self, since: float) -> dict[str, int]:
        """Jobs corrected since `since`, by kind."""
        rows = await self._database.fetch(CORRECTIONS_SINCE, since)
        return {row[0]: int(row[1]) for row in rows}

    async def _in_batches(self, sql: str, keys: Sequence[int]) -> list[Any]:
        rows: list[Any] = []
        for start in range(0, len(keys), _IN_BATCH):
            batch = list(keys[start : start + _IN_BATCH])
            rows.extend(await self._database.fetch(sql.format(", ".join("?" * len(batch))), *batch))
        return rows
