"""The PostgreSQL incident store: the store's queries on one PostgreSQL database, shared by any
number of replicas (QUEUEBOT_DATABASE=postgresql://… or postgres://…).

The driver is asyncpg: it is the maintained asyncio-native PostgreSQL driver, its pool hands
out connections and replaces those the server dropped by itself, and it speaks the binary
protocol, the fastest way to PostgreSQL from Python.

What keeps replicas correct on one database:
- Each write that decides from what it reads is one statement (a claim, a lease, a dedupe
  key: `INSERT … ON CONFLICT` or `UPDATE … WHERE`), which PostgreSQL applies atomically: a
  second replica's statement waits for the first, then finds the row taken.
- `transaction()` takes the locks `bot.store.postgres_tx` describes, so one group's
  read-decide-write is never interleaved with another replica's.
- Every asyncpg, socket or timeout error leaves as StoreError
  (`postgres_tx.postgres_errors`): the webhook answers 503 and Grafana sends again.
The schema and its migrations are `bot.store.postgres_schema`'s; job events and retention are
`bot.store.postgres_jobs`'s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from bot.domain.clock import SYSTEM, Clock
from bot.domain.jobs import JobEvent
from bot.store import postgres_jobs as jobs
from bot.store.claims_sql import ClaimQueries
from bot.store.doubts_sql import DoubtQueries
from bot.store.heads_ups_sql import HeadsUpQueries
from bot.store.incidents_sql import IncidentQueries
from bot.store.outbox_sql import OutboxQueries
from bot.store.postgres_db import PostgresDatabase
from bot.store.postgres_pace import take_channel_pace
from bot.store.postgres_tx import PostgresTransaction
from bot.store.records import (
    FleetTotals,
    JobActivity,
    JobSpan,
    Pruned,
    QueueCount,
    QueuedJob,
    StoreError,
)
from bot.store.reports_sql import JOB_SPANS, ReportQueries, job_span
from bot.store.retention_sql import BATCH
from bot.store.rows import FIRST_SEEN, REMEMBERED, ParsedGroups
from bot.store.statements import numbered

#: Rows of job history fetched at a time.
SPANS_CHUNK = 5000


class PostgresStore(
    IncidentQueries, OutboxQueries, ClaimQueries, ReportQueries, HeadsUpQueries, DoubtQueries
):
    """`bot.store.Store` on a PostgreSQL database (`PostgresDatabase` holds the pool); the
    statements both backends share are its parts'."""

    _database: PostgresDatabase

    def __init__(self, database: PostgresDatabase, clock: Clock = SYSTEM) -> None:
        self._database = database
        self._now = clock.time
        self._groups = ParsedGroups()
        self._connection = database.transaction
        #: Runner types registered for the fleet's totals (a type once registered stays).
        self._fleet_types: set[str] = set()

    @classmethod
    async def open(cls, url: str, clock: Clock = SYSTEM) -> PostgresStore:
        """Connect to the database at `url` and migrate it; the store reads `clock`'s Unix
        seconds."""
        return cls(await PostgresDatabase.open(url), clock)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresTransaction]:
        async with self._database.transaction("transaction failed") as conn:
            yield PostgresTransaction(conn, self._groups, self._now)

    async def probe(self) -> None:
        if not await self._database.write(
            "UPDATE store_identity SET checked_at = ? WHERE id = 1", self._now()
        ):
            raise StoreError("the database has no store identity: it was emptied or replaced")

    async def take_pace(self, channel: str, per_second: float, burst: float) -> float:
        async with self._connection("the store cannot be written") as conn:
            return await take_channel_pace(conn, channel, self._now(), per_second, burst)

    async def first_seen(self, key: str, expires_at: float) -> bool:
        # See the SQLite store: expired keys are new again, and retention deletes them.
        return await self._database.write(FIRST_SEEN, key, expires_at, self._now()) == 1

    async def remembered(self, key: str) -> bool:
        return bool(await self._database.fetch(REMEMBERED, key, self._now()))

    async def record_job(self, event: JobEvent, delivery: str, remember_until: float) -> bool:
        return await self.record_jobs([(event, delivery)], remember_until) == 1

    async def record_jobs(
        self, deliveries: Sequence[tuple[JobEvent, str]], remember_until: float
    ) -> int:
        async with self._connection("the store cannot be written", jobs=True) as conn:
            new, named = await jobs.record_deliveries(
                conn, deliveries, remember_until, self._now(), self._fleet_types
            )
        self._fleet_types |= named
        return new

    async def queued_jobs(self, at: float, queued_after: float, max_age: float) -> list[QueuedJob]:
        async with self._connection("the store cannot be read", jobs=True) as conn:
            return await jobs.waiting_at(conn, at, queued_after, max_age)

    async def queue_counts(
        self, at: float, queued_after: float, max_age: float
    ) -> list[QueueCount]:
        async with self._connection("the store cannot be read", jobs=True) as conn:
            return await jobs.queued_counts_at(conn, at, queued_after, max_age)

    async def fleet_totals(self) -> FleetTotals:
        async with self._connection("the store cannot be read", jobs=True) as conn:
            return await jobs.totals_of_fleet(conn)

    async def job_activity(self, since: float, until: float) -> JobActivity:
        # One transaction: the three lists read one state of the jobs.
        async with self._connection("the store cannot be read", jobs=True) as conn:
            return await jobs.window_activity(conn, since, until)

    async def running_jobs(self, at: float, lookback: float) -> dict[tuple[str, str], int]:
        async with self._connection("the store cannot be read", jobs=True) as conn:
            return await jobs.busy_at(conn, at, lookback)

    async def first_job_created(self) -> float | None:
        rows = await self._database.fetch("SELECT MIN(created_at) FROM jobs", jobs=True)
        return float(rows[0][0]) if rows and rows[0][0] is not None else None

    async def prune_jobs(self, before: float, recorded_before: float = 0.0) -> int:
        total = 0
        while True:
            async with self._connection("cannot forget old jobs", jobs=True) as conn:
                pruned = await jobs.forget_jobs_before(conn, before, recorded_before, BATCH * 10)
            total += pruned
            if not pruned:
                return total

    async def prune(self, before: float) -> Pruned:
        # PostgreSQL's autovacuum makes the freed space reusable; there is nothing to give back
        # by hand, as SQLite's incremental vacuum does.
        total = Pruned()
        while True:
            async with self._connection("retention failed") as conn:
                pruned = await jobs.retention_pass(conn, before, self._now())
            total += pruned
            if not pruned.rows:
                return total

    async def add_digest_page(self, digest_id: int, ts: str) -> None:
        # Appended in one statement: two pages added at once both stay.
        await self._database.write(
            "UPDATE digests SET pages_json = (pages_json::jsonb || to_jsonb(?::text))::text"
            " WHERE id = ?",
            ts,
            digest_id,
        )

    async def job_spans(self, since: float, until: float) -> list[JobSpan]:
        # Weeks of jobs, a chunk at a time: between chunks the event loop serves webhooks
        # (decoding a million rows at once would hold it for seconds).
        spans: list[JobSpan] = []
        async with self._connection("the store cannot be read", jobs=True) as conn:
            cursor = conn.cursor(numbered(JOB_SPANS), since, until, prefetch=SPANS_CHUNK)
            async for row in cursor:
                spans.append(job_span(row))
        return spans

    async def close(self) -> None:
        await self._database.close()
