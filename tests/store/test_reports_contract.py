"""The capacity report's part of the store's contract, on SQLite and on PostgreSQL: a window's
jobs read whole, and scheduled reports kept once per slot and marked as Slack shows them."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from bot.domain.jobs import JobAction
from bot.store import ReportRecord, Store
from bot.store.postgres import PostgresStore
from testkit.postgres import fresh_database
from tests.store.contract import DAY, NOW, T, job


async def test_a_windows_jobs_are_read_whole(store: Store) -> None:
    keep = NOW + DAY
    await store.record_job(job(JobAction.QUEUED), "d1", keep)
    await store.record_job(job(JobAction.COMPLETED), "d2", keep)
    held = replace(job(JobAction.WAITING), job_id=9_000_000_002)
    await store.record_job(held, "d3", keep)
    waiting = replace(job(JobAction.QUEUED), job_id=9_000_000_003)
    await store.record_job(waiting, "d4", keep)
    t = T.timestamp()
    spans = await store.job_spans(t - 1, t + 1)
    assert [(s.started_at, s.completed_at, s.left_queue_at, s.conclusion) for s in spans] == [
        (t + 60, t + 360, t + 60, "failure"),
        (None, None, None, None),
    ]
    assert {(s.runner_type, s.repository, s.workflow, s.created_at) for s in spans} == {
        ("linux.2xlarge", "org/repo", "ci", t)
    }
    assert await store.job_spans(t + 1, t + 2) == []


def report(slot: str = "#ci@1700000000", view: str = '{"a": 1}') -> ReportRecord:
    return ReportRecord(
        slot=slot,
        channel="#ci",
        due_at=NOW,
        view_json=view,
        chart=b"\x89PNG\r\n\x1a\n\x00binary",
        created_at=NOW + 5,
    )


async def test_a_slots_report_is_kept_once_and_posted_once(store: Store) -> None:
    assert await store.save_report(report())
    assert not await store.save_report(report(view='{"a": 2}'))
    (unposted,) = await store.unposted_reports()
    assert unposted == report()
    await store.set_report_sent("#ci@1700000000", NOW + 6)
    assert await store.report("#ci@1700000000") == replace(report(), sent_at=NOW + 6)
    await store.set_report_posted("#ci@1700000000", "C1", "1.5")
    assert await store.unposted_reports() == []
    shown = await store.report("#ci@1700000000")
    assert shown is not None and (shown.channel_id, shown.ts) == ("C1", "1.5")
    assert await store.report("#ci@1") is None
    # Retention forgets posted reports due before the cut-off, and keeps unposted ones.
    assert await store.save_report(report(slot="#ci@2"))
    assert await store.prune_reports(NOW) == 0
    assert await store.prune_reports(NOW + 1) == 1
    assert [r.slot for r in await store.unposted_reports()] == ["#ci@2"]


async def test_of_two_replicas_saving_one_slot_one_keeps_it() -> None:
    async with fresh_database() as url:
        first, second = await PostgresStore.open(url), await PostgresStore.open(url)
        try:
            kept = await asyncio.gather(
                first.save_report(report(view='{"by": "a"}')),
                second.save_report(report(view='{"by": "b"}')),
            )
            assert sorted(kept) == [False, True]
            winner = '{"by": "a"}' if kept[0] else '{"by": "b"}'
            assert [r.view_json for r in await second.unposted_reports()] == [winner]
            assert [r.view_json for r in await first.unposted_reports()] == [winner]
        finally:
            await first.close()
            await second.close()
