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

import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from bot.domain.incidents import Incident
from bot.domain.jobs import JobEvent
from bot.store import postgres_jobs as jobs
from bot.store.interface import (
    Digest,
    Due,
    OutboxItem,
    OutboxState,
    Pruned,
    StoreError,
    UnfinishedDiagnosis,
)
from bot.store.postgres_db import PostgresDatabase, changed
from bot.store.postgres_pace import take_channel_pace, take_leader_lease
from bot.store.postgres_reports import PostgresReports
from bot.store.postgres_shown import PostgresShown
from bot.store.postgres_tx import PostgresTransaction
from bot.store.records import JobActivity, QueuedJob
from bot.store.rows import (
    DIGEST_COLUMNS,
    FIRING_INCIDENTS_PG,
    FIRST_SEEN_PG,
    INCIDENT_COLUMNS,
    OUTBOX_COLUMNS,
    SILENCED_INCIDENTS_PG,
    ParsedGroups,
    digest_from,
    incident_from,
    outbox_item_from,
)


class PostgresStore(PostgresShown, PostgresReports):
    """`bot.store.Store` on a PostgreSQL database (`PostgresDatabase` holds the pool)."""

    def __init__(self, database: PostgresDatabase, clock: Callable[[], float] = time.time) -> None:
        self._database = database
        self._now = clock
        self._groups = ParsedGroups()
        self._write = database.write
        self._fetch = database.fetch
        self._connection = database.transaction

    @classmethod
    async def open(cls, url: str, clock: Callable[[], float] = time.time) -> PostgresStore:
        """Connect to the database at `url` and migrate it; `clock` gives Unix seconds."""
        return cls(await PostgresDatabase.open(url), clock)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresTransaction]:
        async with self._database.transaction("transaction failed") as conn:
            yield PostgresTransaction(conn, self._groups, self._now)

    async def probe(self) -> None:
        if not await self._write(
            "UPDATE store_identity SET checked_at = $1 WHERE id = 1", self._now()
        ):
            raise StoreError("the database has no store identity: it was emptied or replaced")

    async def lead(self, role: str, owner: str, until: float) -> bool:
        async with self._connection("the store cannot be written") as conn:
            return await take_leader_lease(conn, role, owner, until, self._now())

    async def take_pace(self, channel: str, per_second: float, burst: float) -> float:
        async with self._connection("the store cannot be written") as conn:
            return await take_channel_pace(conn, channel, self._now(), per_second, burst)

    async def first_seen(self, key: str, expires_at: float) -> bool:
        # See the SQLite store: expired keys are new again, and retention deletes them.
        async with self._connection("the store cannot be written") as conn:
            status = await conn.execute(FIRST_SEEN_PG, key, expires_at, self._now())
            return changed(status) == 1

    async def record_job(self, event: JobEvent, delivery: str, remember_until: float) -> bool:
        return await self.record_jobs([(event, delivery)], remember_until) == 1

    async def record_jobs(
        self, deliveries: Sequence[tuple[JobEvent, str]], remember_until: float
    ) -> int:
        async with self._connection("the store cannot be written", jobs=True) as conn:
            return await jobs.record_deliveries(conn, deliveries, remember_until, self._now())

    async def queued_jobs(self, at: float, queued_after: float, max_age: float) -> list[QueuedJob]:
        async with self._connection("the store cannot be read", jobs=True) as conn:
            return await jobs.waiting_at(conn, at, queued_after, max_age)

    async def job_activity(self, since: float, until: float) -> JobActivity:
        # One transaction: the three lists read one state of the jobs.
        async with self._connection("the store cannot be read", jobs=True) as conn:
            return await jobs.window_activity(conn, since, until)

    async def running_jobs(self, at: float, lookback: float) -> dict[tuple[str, str], int]:
        async with self._connection("the store cannot be read", jobs=True) as conn:
            return await jobs.busy_at(conn, at, lookback)

    async def first_job_created(self) -> float | None:
        rows = await self._fetch("SELECT MIN(created_at) FROM jobs", jobs=True)
        return float(rows[0][0]) if rows and rows[0][0] is not None else None

    async def prune_jobs(self, before: float, recorded_before: float = 0.0) -> int:
        total = 0
        while True:
            async with self._connection("cannot forget old jobs", jobs=True) as conn:
                pruned = await jobs.forget_jobs_before(
                    conn, before, recorded_before, jobs.INCIDENTS_PER_PASS * 10
                )
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

    async def get_incident(self, incident_id: int) -> Incident | None:
        rows = await self._fetch(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE id = $1",  # noqa: S608
            incident_id,
        )
        return incident_from(rows[0], self._groups) if rows else None

    async def silenced_incidents(self, channel: str | None = None) -> list[Incident]:
        rows = await self._fetch(SILENCED_INCIDENTS_PG, *(channel,) * 4)
        return [incident_from(row, self._groups) for row in rows]

    async def firing_incidents(
        self, limit: int, channel: str | None = None
    ) -> tuple[list[Incident], int]:
        rows = await self._fetch(FIRING_INCIDENTS_PG, *(channel,) * 4, limit)
        return [incident_from(row, self._groups) for row in rows], (
            int(rows[0]["total"]) if rows else 0
        )

    async def claim(self, incident_id: int, purpose: str, owner: str, until: float) -> bool:
        # One statement: a free or lapsed claim is taken, a live one left alone (0 rows);
        # a replica claiming at the same moment waits on the row, then finds it taken.
        claimed = await self._write(
            "INSERT INTO claims (incident_id, purpose, owner, until) VALUES ($1, $2, $3, $4)"
            " ON CONFLICT (incident_id, purpose) DO UPDATE SET owner = excluded.owner,"
            " until = excluded.until WHERE claims.until < $5",
            incident_id,
            purpose,
            owner,
            until,
            self._now(),
        )
        return claimed == 1

    async def renew(self, incident_id: int, purpose: str, owner: str, until: float) -> bool:
        renewed = await self._write(
            "UPDATE claims SET until = $1 WHERE incident_id = $2 AND purpose = $3 AND owner = $4",
            until,
            incident_id,
            purpose,
            owner,
        )
        return renewed == 1

    async def release(self, incident_id: int, purpose: str, owner: str) -> None:
        await self._write(
            "DELETE FROM claims WHERE incident_id = $1 AND purpose = $2 AND owner = $3",
            incident_id,
            purpose,
            owner,
        )

    async def unfinished_diagnoses(self) -> list[UnfinishedDiagnosis]:
        rows = await self._fetch(
            "SELECT id, incident_id, note_id FROM diagnoses WHERE finished_at IS NULL ORDER BY id"
        )
        return [UnfinishedDiagnosis(int(r[0]), int(r[1]), int(r[2])) for r in rows]

    async def diagnosis_unfinished(self, diagnosis_id: int) -> bool:
        rows = await self._fetch(
            "SELECT 1 FROM diagnoses WHERE id = $1 AND finished_at IS NULL", diagnosis_id
        )
        return bool(rows)

    async def due_incidents(self, owner: str | None = None) -> list[Due]:
        # The first pending item decides: items of one incident go out strictly in order.
        rows = await self._fetch(
            "SELECT o.incident_id, i.group_key, GREATEST(o.not_before,"
            " CASE WHEN o.lease_owner = $1 THEN 0 ELSE COALESCE(o.lease_until, 0) END)"
            " FROM outbox o JOIN incidents i ON i.id = o.incident_id"
            " WHERE o.id IN (SELECT MIN(id) FROM outbox WHERE state = 'pending'"
            " GROUP BY incident_id) ORDER BY o.id",
            owner,
        )
        return [Due(int(row[0]), str(row[1]), float(row[2])) for row in rows]

    async def next_item(self, incident_id: int) -> OutboxItem | None:
        rows = await self._fetch(
            f"SELECT {OUTBOX_COLUMNS} FROM outbox"  # noqa: S608
            " WHERE incident_id = $1 AND state = 'pending' ORDER BY id LIMIT 1",
            incident_id,
        )
        return outbox_item_from(rows[0]) if rows else None

    async def has_later_update(self, incident_id: int, after_id: int) -> bool:
        rows = await self._fetch(
            "SELECT 1 FROM outbox WHERE incident_id = $1 AND state = 'pending' AND id > $2"
            " AND kind = 'update_parent' LIMIT 1",
            incident_id,
            after_id,
        )
        return bool(rows)

    async def finish_item(
        self,
        item_id: int,
        state: OutboxState,
        error: str | None = None,
        *,
        posted_ts: str | None = None,
    ) -> None:
        # A delivered item's payload (a whole alert group, for a big group) is needed no more.
        await self._write(
            "UPDATE outbox SET state = $1, last_error = $2, done_at = $3,"
            " attempts = attempts + 1, lease_owner = NULL, lease_until = NULL,"
            " posted_ts = COALESCE($4, posted_ts),"
            " payload = CASE WHEN $1 = 'done' THEN '' ELSE payload END WHERE id = $5",
            state.value,
            error,
            self._now(),
            posted_ts,
            item_id,
        )

    async def posted_ts(self, item_id: int) -> str | None:
        rows = await self._fetch("SELECT posted_ts FROM outbox WHERE id = $1", item_id)
        return str(rows[0][0]) if rows and rows[0][0] else None

    async def claim_item(self, item_id: int, owner: str, until: float) -> bool:
        # A replica updating the same row waits for this one's commit, then re-checks the
        # WHERE against the row as committed: only one of them leases it.
        claimed = await self._write(
            "UPDATE outbox SET lease_owner = $1, lease_until = $2 WHERE id = $3"
            " AND state = 'pending' AND (lease_until IS NULL OR lease_until < $4"
            " OR lease_owner = $1)",
            owner,
            until,
            item_id,
            self._now(),
        )
        return claimed == 1

    async def release_leases(self, owner: str) -> None:
        await self._write(
            "UPDATE outbox SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1",
            owner,
        )

    async def defer_item(self, item_id: int, not_before: float, error: str) -> None:
        await self._write(
            "UPDATE outbox SET not_before = $1, last_error = $2, attempts = attempts + 1,"
            " lease_owner = NULL, lease_until = NULL WHERE id = $3",
            not_before,
            error,
            item_id,
        )

    async def outbox_stats(self) -> tuple[int, float | None]:
        rows = await self._fetch(
            "SELECT COUNT(*), MIN(created_at) FROM outbox WHERE state = 'pending'"
        )
        return int(rows[0][0]), rows[0][1]

    async def mark_sending(self, item_id: int, at: float) -> None:
        await self._write("UPDATE outbox SET sent_at = $1 WHERE id = $2", at, item_id)

    async def channel_id_for(self, channel: str) -> str | None:
        rows = await self._fetch(
            "SELECT channel_id FROM incidents WHERE channel = $1 AND channel_id IS NOT NULL"
            " ORDER BY id DESC LIMIT 1",
            channel,
        )
        return str(rows[0][0]) if rows else None

    async def set_parent(
        self,
        incident_id: int,
        channel_id: str,
        parent_ts: str,
        version: int,
        previous_link: str | None,
    ) -> None:
        await self._write(
            "UPDATE incidents SET channel_id = $1, parent_ts = $2, parent_version = $3,"
            " previous_link = $4 WHERE id = $5",
            channel_id,
            parent_ts,
            version,
            previous_link,
            incident_id,
        )

    async def set_permalink(self, incident_id: int, permalink: str) -> None:
        await self._write(
            "UPDATE incidents SET permalink = $1 WHERE id = $2", permalink, incident_id
        )

    async def set_parent_version(self, incident_id: int, version: int) -> None:
        await self._write(
            "UPDATE incidents SET parent_version = GREATEST(parent_version, $1) WHERE id = $2",
            version,
            incident_id,
        )

    async def get_digest(self, digest_id: int) -> Digest | None:
        rows = await self._fetch(
            f"SELECT {DIGEST_COLUMNS} FROM digests WHERE id = $1",  # noqa: S608
            digest_id,
        )
        return digest_from(rows[0]) if rows else None

    async def digest_members(self, digest_id: int) -> list[Incident]:
        rows = await self._fetch(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE digest_id = $1"  # noqa: S608
            " ORDER BY id",
            digest_id,
        )
        return [incident_from(row, self._groups) for row in rows]

    async def set_digest_posted(
        self, digest_id: int, channel_id: str, ts: str, version: int
    ) -> None:
        await self._write(
            "UPDATE digests SET channel_id = $1, ts = $2, shown_version = $3 WHERE id = $4",
            channel_id,
            ts,
            version,
            digest_id,
        )

    async def add_digest_page(self, digest_id: int, ts: str) -> None:
        # Appended in one statement: two pages added at once both stay.
        await self._write(
            "UPDATE digests SET pages_json = (pages_json::jsonb || to_jsonb($1::text))::text"
            " WHERE id = $2",
            ts,
            digest_id,
        )

    async def close(self) -> None:
        await self._database.close()
