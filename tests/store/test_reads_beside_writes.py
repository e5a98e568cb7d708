"""Reads never wait for the SQLite store's writer: with a write transaction open (a webhook's,
or retention's batch), the job history a report, diagnostics or /queue-status reads is read,
and the webhook's commit is then seen by the next read."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.domain.jobs import JobEvent
from bot.store import SQLiteStore
from testkit.jobs import job_event

T = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _job(n: int) -> JobEvent:
    return job_event(n, "linux.2xlarge", (T + timedelta(minutes=n)).timestamp(), None, None)


async def test_long_reads_go_on_while_a_write_transaction_is_open(tmp_path: Path) -> None:
    store = await SQLiteStore.open(str(tmp_path / "queuebot.db"))
    try:
        for n in range(50):
            assert await store.record_job(_job(n), f"d{n}", T.timestamp() + 86400)
        since, until = T.timestamp() - 60, T.timestamp() + 3600
        async with store.transaction():
            # The writer's lock is held here, as a webhook's transaction holds it.
            async with asyncio.timeout(10):
                spans = await store.job_spans(since, until)
                activity = await store.job_activity(since, until)
                queued = await store.queued_jobs(until, 300.0, 7 * 86400.0)
                running = await store.running_jobs(until, 3600.0)
                first = await store.first_job_created()
        assert len(spans) == 50 and len(activity.arrivals) == 50
        assert len(queued) == 50 and running == {} and first == T.timestamp()
        assert await store.record_job(_job(50), "d50", T.timestamp() + 86400)
        assert len(await store.job_spans(since, until + 3600)) == 51
    finally:
        await store.close()
