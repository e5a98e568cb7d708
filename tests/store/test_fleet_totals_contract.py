"""The fleet's totals and queue counts in the store, on SQLite and on PostgreSQL: each delivery
adds what it moved a job on by, once, out of order or redelivered; retention forgets jobs, not
totals; the runner types are registered first seen first, up to the cap; a store that already
held jobs registers their types when it migrates."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from bot.domain.jobs import JobAction, JobEvent
from bot.store import FleetTotals, Store
from bot.store import fleet_totals_sql as totals_sql
from bot.store.schema import MIGRATIONS
from bot.store.sqlite import SQLiteStore
from tests.store.contract import DAY, NOW, Clock, Opener, T, job

#: The migration that made the fleet's totals (`bot.store.schema`), counted from 1.
_TOTALS_STEP = next(
    number for number, step in enumerate(MIGRATIONS, start=1) if "CREATE TABLE fleet_totals" in step
)


def totals(found: tuple[tuple[str, str, str, float], ...]) -> dict[tuple[str, str, str], float]:
    return {(kind, what, part): value for kind, what, part, value in found}


def other(job_id: int, runner_type: str, action: JobAction, minutes: float = 0.0) -> JobEvent:
    event = replace(job(action), job_id=job_id, runner_type=runner_type)
    return replace(event, created_at=T + timedelta(minutes=minutes))


async def test_each_delivery_adds_what_it_moved_the_job_by_once(store: Store) -> None:
    keep = NOW + DAY
    # completed first, then in_progress, a redelivery, then queued: one job, counted once.
    await store.record_job(job(JobAction.COMPLETED), "d3", keep)
    await store.record_job(job(JobAction.IN_PROGRESS), "d2", keep)
    await store.record_job(job(JobAction.IN_PROGRESS), "d2", keep)
    await store.record_jobs([(job(JobAction.QUEUED), "d1"), (job(JobAction.QUEUED), "d4")], keep)
    # A second job waits for approval, then queues; a third is cancelled while queued.
    await store.record_job(other(2, "linux.2xlarge", JobAction.WAITING), "w1", keep)
    await store.record_job(other(2, "linux.2xlarge", JobAction.QUEUED), "w2", keep)
    cancelled = replace(other(3, "linux.4xlarge", JobAction.COMPLETED), started_at=None)
    await store.record_job(replace(cancelled, conclusion="cancelled"), "c1", keep)
    found = await store.fleet_totals()
    assert found.types == ("linux.2xlarge", "linux.4xlarge")
    assert totals(found.totals) == {
        ("linux.2xlarge", "queued", ""): 2.0,
        ("linux.2xlarge", "started", ""): 1.0,
        ("linux.2xlarge", "queue_seconds", "60"): 1.0,
        ("linux.2xlarge", "queue_seconds", "sum"): 60.0,
        ("linux.2xlarge", "completed", "failure"): 1.0,
        ("linux.2xlarge", "run_seconds", ""): 300.0,
        ("linux.4xlarge", "queued", ""): 1.0,
        ("linux.4xlarge", "completed", "cancelled"): 1.0,
    }
    # Retention forgets the jobs; the totals stay, so a counter never goes back.
    assert await store.prune_jobs(T.timestamp() + DAY) == 3
    assert totals((await store.fleet_totals()).totals) == totals(found.totals)


async def test_jobs_that_do_not_count_add_nothing(store: Store) -> None:
    await store.record_job(replace(job(JobAction.QUEUED), counted=False), "n1", NOW + DAY)
    assert await store.fleet_totals() == FleetTotals(types=(), totals=())
    assert await store.queued_jobs(T.timestamp() + 30, 10, 7 * DAY) != []


async def test_queue_counts_are_the_queued_jobs_counted(store: Store) -> None:
    keep = NOW + DAY
    lot = [
        (other(10, "a", JobAction.QUEUED, minutes=0), "q10"),
        (other(11, "a", JobAction.QUEUED, minutes=-90), "q11"),  # waits past the hour's index
        (other(12, "a", JobAction.QUEUED, minutes=-120), "q12"),
        (other(12, "a", JobAction.IN_PROGRESS, minutes=-120), "s12"),  # started at -119
        (other(13, "b", JobAction.QUEUED, minutes=-20), "q13"),
        (other(14, "b", JobAction.QUEUED, minutes=-3), "q14"),  # not yet 5 minutes
        (replace(other(15, "c", JobAction.WAITING, minutes=-30)), "w15"),
    ]
    await store.record_jobs(lot, keep)
    at = (T + timedelta(minutes=1)).timestamp()
    queued = await store.queued_jobs(at, 300, 7 * DAY)
    counts = await store.queue_counts(at, 300, 7 * DAY)
    expected: dict[tuple[str, str], tuple[int, float]] = {}
    for item in queued:
        jobs, oldest = expected.get((item.runner_type, item.repository), (0, at))
        expected[(item.runner_type, item.repository)] = (jobs + 1, min(oldest, item.created_at))
    assert {(c.runner_type, c.repository): (c.jobs, c.oldest_created) for c in counts} == expected
    assert {key: jobs for key, (jobs, _) in expected.items()} == {
        ("a", "org/repo"): 1,
        ("b", "org/repo"): 1,
    }
    assert expected[("a", "org/repo")][1] == (T - timedelta(minutes=90)).timestamp()


async def test_types_past_the_cap_are_counted_together(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(totals_sql, "MAX_COUNTED_TYPES", 2)
    keep = NOW + DAY
    for index, name in enumerate(["t1", "t2", "t3", "t4"]):
        await store.record_job(other(100 + index, name, JobAction.QUEUED, index), f"x{index}", keep)
    found = await store.fleet_totals()
    assert found.types == ("t1", "t2")
    assert totals(found.totals) == {
        ("t1", "queued", ""): 1.0,
        ("t2", "queued", ""): 1.0,
        (totals_sql.OVERFLOW, "queued", ""): 2.0,
    }


async def test_a_type_seen_later_comes_later_whenever_its_jobs_were_created(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A type is placed by when it was registered, not by its jobs' times: a late delivery of
    an old job never puts its type before those already counted (on /metrics it would take
    their series)."""
    monkeypatch.setattr(totals_sql, "MAX_COUNTED_TYPES", 3)
    keep = NOW + DAY
    await store.record_job(other(1, "first", JobAction.QUEUED, minutes=0), "a", keep)
    await store.record_job(other(2, "second", JobAction.QUEUED, minutes=-600), "b", keep)
    lot = [
        (other(3, "zeta", JobAction.QUEUED, minutes=-30), "c"),
        (other(4, "alpha", JobAction.QUEUED, minutes=-20), "d"),
        (other(5, "beyond", JobAction.QUEUED, minutes=-900), "e"),
    ]
    await store.record_jobs(lot, keep)
    # One lot's new types in the order of their first jobs, as far as there is room.
    assert (await store.fleet_totals()).types == ("first", "second", "beyond")


async def test_a_store_with_jobs_registers_their_types_when_it_migrates(
    tmp_path: Path, clock: Clock
) -> None:
    path = tmp_path / "queuebot.db"
    store = await SQLiteStore.open(str(path), clock.product)
    await store.record_job(other(1, "late", JobAction.QUEUED, minutes=10), "a", NOW + DAY)
    await store.record_job(other(2, "early", JobAction.QUEUED, minutes=-10), "b", NOW + DAY)
    await store.close()
    with sqlite3.connect(path) as db:
        # As a store of the version before the totals (and what later steps made): no totals.
        db.executescript(
            "DROP TABLE fleet_types; DROP TABLE fleet_totals;"
            " DROP INDEX jobs_run; DROP TABLE job_corrections;"
        )
        db.execute(f"PRAGMA user_version = {_TOTALS_STEP - 1}")
    store = await SQLiteStore.open(str(path), clock.product)
    try:
        assert (await store.fleet_totals()).types == ("early", "late")
    finally:
        await store.close()


async def test_replicas_share_registered_types(opener: Opener) -> None:
    first, second = await opener(), await opener()
    try:
        await first.record_job(other(1, "x", JobAction.QUEUED), "r1", NOW + DAY)
        await second.record_job(other(2, "x", JobAction.IN_PROGRESS), "r2", NOW + DAY)
        await second.record_job(other(3, "y", JobAction.QUEUED), "r3", NOW + DAY)
        assert await first.fleet_totals() == await second.fleet_totals()
        assert totals((await first.fleet_totals()).totals)[("x", "queued", "")] == 2.0
    finally:
        await first.close()
        await second.close()
