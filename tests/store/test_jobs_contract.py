"""GitHub's jobs in the store, on SQLite and on PostgreSQL: deliveries merged out of order and
once, alone or in a lot; jobs held for approval are not queued; retention by when a job was
recorded."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from bot.domain.jobs import JobAction
from bot.store import JobActivity, Store
from tests.store.contract import DAY, NOW, Clock, T, job


async def test_job_deliveries_merge_out_of_order_and_once(store: Store) -> None:
    keep = NOW + DAY
    assert await store.record_job(job(JobAction.COMPLETED), "d3", keep)
    assert await store.record_job(job(JobAction.IN_PROGRESS), "d2", keep)
    assert not await store.record_job(job(JobAction.IN_PROGRESS), "d2", keep)
    assert (
        await store.record_jobs(
            [(job(JobAction.QUEUED), "d1"), (job(JobAction.QUEUED), "d3")], keep
        )
        == 1
    )
    t = T.timestamp()
    window = await store.job_activity(t - 1, t + 1000)
    assert [(r.seconds, r.failed, r.job) for r in window.arrivals] == [(0.0, False, "build")]
    assert [r.seconds for r in window.starts] == [60.0]
    assert [(r.seconds, r.failed) for r in window.completions] == [(300.0, True)]
    assert await store.job_activity(t + 1000, t + 2000) == JobActivity(
        t + 1000, t + 2000, [], [], []
    )
    (queued,) = await store.queued_jobs(t + 30, 10, 7 * DAY)
    assert (queued.runner_type, queued.created_at, queued.job) == ("linux.2xlarge", t, "build")
    assert await store.queued_jobs(t + 120, 10, 7 * DAY) == []
    assert await store.queued_jobs(t + 30, 60, 7 * DAY) == []
    assert await store.running_jobs(t + 120, 3600) == {("linux.2xlarge", "org/repo"): 1}
    assert await store.running_jobs(t + 400, 3600) == {}
    assert await store.first_job_created() == t
    assert await store.prune_jobs(t) == 0
    assert await store.prune_jobs(t + 1) == 1
    assert await store.first_job_created() is None


async def test_one_lot_merges_a_jobs_deliveries_out_of_order_and_each_once(store: Store) -> None:
    lot = [
        (job(JobAction.COMPLETED), "x3"),
        (job(JobAction.QUEUED), "x1"),
        (job(JobAction.IN_PROGRESS), "x2"),
        (job(JobAction.IN_PROGRESS), "x2"),
    ]
    assert await store.record_jobs(lot, NOW + DAY) == 3
    assert await store.record_jobs(lot, NOW + DAY) == 0
    t = T.timestamp()
    (span,) = await store.job_spans(t - 1, t + 1)
    assert (span.started_at, span.completed_at, span.conclusion) == (t + 60, t + 360, "failure")
    assert await store.queued_jobs(t + 30, 10, 7 * DAY) != []
    assert await store.queued_jobs(t + 120, 10, 7 * DAY) == []


async def test_a_job_held_for_approval_is_not_queued(store: Store) -> None:
    assert await store.record_job(job(JobAction.WAITING), "w1", NOW + DAY)
    t = T.timestamp()
    assert await store.queued_jobs(t + 30, 10, 7 * DAY) == []
    assert (await store.job_activity(t - 1, t + 1)).arrivals == []


async def test_a_job_from_the_far_future_is_forgotten_by_when_it_was_recorded(
    store: Store, clock: Clock
) -> None:
    """A row created "in the year 9999" (stored before deliveries were bounded) never gets old
    by its own time; retention forgets it by when the store last recorded it."""
    far = replace(
        job(JobAction.QUEUED), created_at=datetime(9999, 1, 1, tzinfo=UTC), job_id=9_000_000_009
    )
    assert await store.record_job(far, "far", NOW + DAY)
    assert await store.record_job(job(JobAction.QUEUED), "near", NOW + DAY)
    clock.now = NOW + 20 * DAY
    assert await store.record_job(
        job(JobAction.IN_PROGRESS), "near-again", clock.now + DAY
    )  # recorded again lately: kept
    assert await store.prune_jobs(NOW - 30 * DAY, clock.now - 14 * DAY) == 1
    assert await store.first_job_created() == T.timestamp()
