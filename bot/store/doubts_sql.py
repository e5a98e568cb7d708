"""Jobs in doubt, on both backends (`bot.store.statements`): what reconciliation with GitHub's
REST API (`bot.fleet.sources.reconcile`) reads and corrects.

A job's row holds what deliveries said; GitHub drops some. A job that still looks queued
minutes after it was created, or still running long after its runner type's jobs usually end,
may be one whose `in_progress` or `completed` delivery went nowhere; a run no row knows may be
one whose every delivery was lost. Those are what these statements find. What GitHub answers is
merged as a delivery is (`Store.record_jobs`); what GitHub no longer has is forgotten here, and a
job still queued past GitHub's own 24-hour limit is ended here, where GitHub ended it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
FORGET_JOB = "DELETE FROM jobs WHERE id = ?"
#: Jobs created in (?, ?] still waiting for a runner end where GitHub ended them: 24 hours
#: (`GITHUB_QUEUE_LIMIT_SECONDS`) after they were created, no runner having taken them.
EXPIRE_QUEUED = (
    "UPDATE jobs SET status = 'completed',"
    " completed_at = created_at + 86400, left_queue_at = created_at + 86400, updated_at = ?"
    " WHERE left_queue_at IS NULL AND status != 'waiting' AND created_at > ? AND created_at <= ?"
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

    async def forget_job(self, job_id: int) -> bool:
        """Forget a job GitHub no longer has; whether there was one."""
        return await self._database.write(FORGET_JOB, job_id) > 0

    async def expire_queued(self, since: float, before: float) -> int:
        """End the jobs created in (since, before] that still wait for a runner, where GitHub
        ended them (`GITHUB_QUEUE_LIMIT_SECONDS` after they were created); how many."""
        return await self._database.write(EXPIRE_QUEUED, self._now(), since, before)

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
