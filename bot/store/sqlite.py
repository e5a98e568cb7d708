"""The SQLite incident store: the store's queries on one SQLite file.

The connection, its lock and its guarantees (durable commits, errors as StoreError, the file's
identity) are `bot.store.sqlite_db`'s; one write transaction's statements are
`bot.store.sqlite_tx`'s; what retention removes is `bot.store.sqlite_retention`'s.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from bot.domain.clock import SYSTEM, Clock
from bot.domain.jobs import JobEvent
from bot.domain.pace import Bucket, take
from bot.store.claims_sql import ClaimQueries
from bot.store.doubts_sql import DoubtQueries
from bot.store.heads_ups_sql import HeadsUpQueries
from bot.store.incidents_sql import IncidentQueries
from bot.store.outbox_sql import OutboxQueries
from bot.store.records import FleetTotals, JobActivity, JobSpan, Pruned, QueueCount, QueuedJob
from bot.store.reports_sql import JOB_SPANS, ReportQueries, job_span
from bot.store.retention_sql import BATCH
from bot.store.rows import FIRST_SEEN, REMEMBERED, ParsedGroups
from bot.store.sqlite_db import SQLiteDatabase, translated
from bot.store.sqlite_jobs import (
    activity,
    count_queued_at,
    prune_jobs,
    queued_at,
    read_fleet_totals,
    record_lot,
    running_at,
)
from bot.store.sqlite_retention import prune_before
from bot.store.sqlite_tx import SQLiteTransaction


class SQLiteStore(
    IncidentQueries, OutboxQueries, ClaimQueries, ReportQueries, HeadsUpQueries, DoubtQueries
):
    """`bot.store.Store` on one SQLite file (`bot.store.sqlite_db` holds the connection); the
    statements both backends share are its parts'."""

    _database: SQLiteDatabase

    def __init__(self, database: SQLiteDatabase, clock: Clock = SYSTEM) -> None:
        self._database = database
        self._now = clock.time
        self._groups = ParsedGroups()
        #: Runner types registered for the fleet's totals (a type once registered stays).
        self._fleet_types: set[str] = set()

    @classmethod
    async def open(cls, path: str, clock: Clock = SYSTEM) -> SQLiteStore:
        """Open (creating and migrating) the file; the store reads `clock`'s Unix seconds
        (tests and benchmarks that play time forward pass their own)."""
        return cls(await SQLiteDatabase.open(path), clock)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SQLiteTransaction]:
        async with self._database.transaction() as db:
            yield SQLiteTransaction(db, self._groups, self._now)

    async def probe(self) -> None:
        await self._database.probe(self._now())

    async def take_pace(self, channel: str, per_second: float, burst: float) -> float:
        async with self._database.transaction() as db:
            sql = "SELECT tokens, at FROM channel_pace WHERE channel = ?"
            rows = list(await db.execute_fetchall(sql, (channel,)))
            row = rows[0] if rows else None
            bucket, pause = take(
                Bucket(row[0], row[1]) if row else None, self._now(), per_second, burst
            )
            await db.execute(
                "INSERT INTO channel_pace (channel, tokens, at) VALUES (?, ?, ?)"
                " ON CONFLICT (channel) DO UPDATE SET tokens = excluded.tokens, at = excluded.at",
                (channel, bucket.tokens, bucket.at),
            )
            return pause

    async def first_seen(self, key: str, expires_at: float) -> bool:
        # A key remembered past its expiry is new again; retention deletes expired keys in
        # batches, never on this path (one long DELETE here held every write up).
        async with self._database.transaction() as db:
            cursor = await db.execute(FIRST_SEEN, (key, expires_at, self._now()))
            return cursor.rowcount == 1

    async def remembered(self, key: str) -> bool:
        return bool(await self._database.fetch(REMEMBERED, key, self._now()))

    async def record_job(self, event: JobEvent, delivery: str, remember_until: float) -> bool:
        return await self.record_jobs([(event, delivery)], remember_until) == 1

    async def record_jobs(
        self, deliveries: Sequence[tuple[JobEvent, str]], remember_until: float
    ) -> int:
        async with self._database.transaction() as db:
            new, named = await record_lot(
                db, deliveries, remember_until, self._now(), self._fleet_types
            )
        self._fleet_types |= named
        return new

    async def queued_jobs(self, at: float, queued_after: float, max_age: float) -> list[QueuedJob]:
        async with self._database.reading() as db:
            with translated("the store cannot be read"):
                return await queued_at(db, at, queued_after, max_age)

    async def queue_counts(
        self, at: float, queued_after: float, max_age: float
    ) -> list[QueueCount]:
        async with self._database.reading() as db:
            with translated("the store cannot be read"):
                return await count_queued_at(db, at, queued_after, max_age)

    async def fleet_totals(self) -> FleetTotals:
        async with self._database.reading() as db:
            with translated("the store cannot be read"):
                return await read_fleet_totals(db)

    async def job_activity(self, since: float, until: float) -> JobActivity:
        async with self._database.reading() as db:
            with translated("the store cannot be read"):
                return await activity(db, since, until)

    async def running_jobs(self, at: float, lookback: float) -> dict[tuple[str, str], int]:
        async with self._database.reading() as db:
            with translated("the store cannot be read"):
                return await running_at(db, at, lookback)

    async def first_job_created(self) -> float | None:
        rows = await self._database.fetch("SELECT MIN(created_at) FROM jobs")
        return float(rows[0][0]) if rows and rows[0][0] is not None else None

    async def prune_jobs(self, before: float, recorded_before: float = 0.0) -> int:
        total = 0
        while True:
            async with self._database.transaction() as db:
                pruned = await prune_jobs(db, before, recorded_before, BATCH * 10)
            total += pruned
            if not pruned:
                return total

    async def prune(self, before: float) -> Pruned:
        total = Pruned()
        while True:
            # One batch a transaction: webhooks wait for the write lock only that long.
            async with self._database.transaction() as db:
                pruned = await prune_before(db, before, self._now())
            total += pruned
            if not pruned.rows:
                break
        if total.rows:
            await self._database.release_free_pages()
        return total

    async def add_digest_page(self, digest_id: int, ts: str) -> None:
        async with self._database.transaction() as db:
            async with db.execute(
                "SELECT pages_json FROM digests WHERE id = ?", (digest_id,)
            ) as cursor:
                row = await cursor.fetchone()
            pages = [*json.loads(row[0]), ts] if row else [ts]
            await db.execute(
                "UPDATE digests SET pages_json = ? WHERE id = ?", (json.dumps(pages), digest_id)
            )

    async def job_spans(self, since: float, until: float) -> list[JobSpan]:
        rows = await self._database.fetch(JOB_SPANS, since, until)
        return [job_span(row) for row in rows]

    async def close(self) -> None:
        await self._database.close()
