"""The second model's deliveries as GitHub sends them (a few out of order, a few twice), and each
job's newest one, which the fleet readings load: the store holds the same jobs after either."""

from __future__ import annotations

import contextlib
import sqlite3
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.domain.jobs import JobAction
from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import open_store
from fleetmodel import Case, FleetRun, plan, run
from fleetmodel.github import deliveries, newest_deliveries

JOBS = JobsConfig(exclude=())
#: Every column of a job's row but when it was written.
COLUMNS = (
    "id, run_id, run_attempt, repository, workflow, job, labels, runner_type, html_url,"
    " head_branch, status, created_at, started_at, completed_at, left_queue_at, conclusion,"
    " runner_name"
)


async def _rows(path: Path, bodies: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    store = await open_store(str(path))
    try:
        await load_history(store, bodies, JOBS, remember_until=0.0)
    finally:
        await store.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(f"SELECT {COLUMNS} FROM jobs ORDER BY id").fetchall()  # noqa: S608


def _fleet(case: Case, seed: int) -> FleetRun:
    return run(plan(case, seed=seed, types=3, end=datetime(2026, 11, 26, 16, 21, tzinfo=UTC)))


@pytest.mark.parametrize(
    ("case", "seed", "hours_before_end"),
    [(Case.FAILING_STARTS, 3, 0.0), (Case.LOWERED_MAX, 9, 5.5)],
    ids=["failing-starts-at-the-end", "lowered-max-earlier"],
)
async def test_each_jobs_newest_delivery_leaves_the_store_as_every_delivery_does(
    tmp_path: Path, case: Case, seed: int, hours_before_end: float
) -> None:
    fleet = _fleet(case, seed)
    until = fleet.plan.end - hours_before_end * 3600
    every = deliveries(fleet, until=until)
    newest = newest_deliveries(fleet, until=until)
    # The deliveries hold what makes merging them matter: repeats, and a job's later action
    # arriving before an earlier one.
    sent = Counter((b["workflow_job"]["id"], b["action"]) for b in every)
    assert any(count > 1 for count in sent.values())
    furthest: dict[int, int] = {}
    overtaken = False
    for body in every:
        job, rank = body["workflow_job"]["id"], JobAction(body["action"]).rank
        overtaken = overtaken or rank < furthest.get(job, -1)
        furthest[job] = max(rank, furthest.get(job, -1))
    assert overtaken
    # One body a job, for each job GitHub had told of by then: queued, running and done.
    assert sorted(b["workflow_job"]["id"] for b in newest) == sorted(furthest)
    assert {b["action"] for b in newest} == {"queued", "in_progress", "completed"}
    assert all(JobAction(b["action"]).rank == furthest[b["workflow_job"]["id"]] for b in newest)

    rows = await _rows(tmp_path / "every.db", every)
    assert len(rows) == len(furthest)
    assert await _rows(tmp_path / "newest.db", newest) == rows
