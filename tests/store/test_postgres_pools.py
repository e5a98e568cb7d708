"""On PostgreSQL, alerts never wait behind job history: with the jobs table locked and more
GitHub deliveries waiting on it than the jobs' connections, a Grafana notification is taken at
once, and the deliveries that find no connection answer 503 with the reason (GitHub's
redelivery brings them back) instead of hanging; once the lock goes, the rest are recorded."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from bot.store.postgres_db import JOBS_POOL_SIZE
from testkit.github import HOOK_SECRET, deliver, job_delivery
from testkit.harness import running_stack
from testkit.payloads import reference
from testkit.postgres import fresh_database

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
DELIVERIES = JOBS_POOL_SIZE + 7


async def _first(
    tasks: list[asyncio.Task[tuple[int, dict[str, object]]]], count: int
) -> tuple[list[asyncio.Task[tuple[int, dict[str, object]]]], set[asyncio.Task[Any]]]:
    """The first `count` of `tasks` to finish, and the others."""
    pending: set[asyncio.Task[Any]] = set(tasks)
    done: list[asyncio.Task[tuple[int, dict[str, object]]]] = []
    async with asyncio.timeout(25):
        while len(done) < count:
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            done += finished
    return done, pending


async def test_a_locked_jobs_table_keeps_no_alert_waiting(tmp_path: Path) -> None:
    async with (
        fresh_database() as url,
        running_stack(tmp_path, QUEUEBOT_DATABASE=url, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack,
    ):
        locker = await asyncpg.connect(url)
        watcher = await asyncpg.connect(url)
        try:
            lock = locker.transaction()
            await lock.start()
            await locker.execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
            sent = [
                asyncio.create_task(
                    deliver(stack.http, stack.url, job_delivery("queued", 100 + n, T0))
                )
                for n in range(DELIVERIES)
            ]

            async def waiting_on_the_lock() -> int:
                return int(
                    await watcher.fetchval(
                        "SELECT count(*) FROM pg_locks WHERE NOT granted"
                        " AND relation = 'jobs'::regclass"
                    )
                )

            async with asyncio.timeout(20):
                while await waiting_on_the_lock() < JOBS_POOL_SIZE:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
            # Every connection for jobs is held up by the lock: an alert still goes through.
            async with asyncio.timeout(20):
                assert (await stack.webhook(reference())).status == 202
            await stack.parents(1)
            # Those that found no connection are told so, while the lock is still held.
            done, held = await _first(sent, DELIVERIES - JOBS_POOL_SIZE)
            assert await waiting_on_the_lock() >= 1  # still held
            refused = [task.result() for task in done]
            assert all(status == 503 for status, _ in refused), refused
            assert all("every connection is busy" in body["reason"] for _, body in refused)
            await lock.rollback()
            # Those that had a connection are recorded (retention may have held one of them).
            rest = await asyncio.gather(*held)
            assert {status for status, _ in rest} <= {202, 503}
            assert [status for status, _ in rest].count(202) >= JOBS_POOL_SIZE - 1
        finally:
            await locker.close()
            await watcher.close()
