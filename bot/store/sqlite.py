"""The SQLite incident store: the store's queries on one SQLite file.

The connection, its lock and its guarantees (durable commits, errors as StoreError, the file's
identity) are `bot.store.sqlite_db`'s; one write transaction's statements are
`bot.store.sqlite_tx`'s; what retention removes is `bot.store.sqlite_retention`'s.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from bot.domain.incidents import Incident
from bot.domain.jobs import JobEvent
from bot.domain.pace import Bucket, take
from bot.store.interface import (
    Digest,
    Due,
    OutboxItem,
    OutboxState,
    Pruned,
    StoreError,
    UnfinishedDiagnosis,
)
from bot.store.records import JobActivity, QueuedJob
from bot.store.rows import (
    DIGEST_COLUMNS,
    FIRING_INCIDENTS,
    FIRST_SEEN,
    INCIDENT_COLUMNS,
    OUTBOX_COLUMNS,
    SILENCED_INCIDENTS,
    ParsedGroups,
    digest_from,
    incident_from,
    outbox_item_from,
)
from bot.store.sqlite_db import SQLiteDatabase, translated
from bot.store.sqlite_jobs import (
    activity,
    prune_jobs,
    queued_at,
    record_lot,
    running_at,
)
from bot.store.sqlite_reports import SQLiteReports
from bot.store.sqlite_retention import BATCH, prune_before
from bot.store.sqlite_shown import SQLiteShown
from bot.store.sqlite_tx import SQLiteTransaction


class SQLiteStore(SQLiteShown, SQLiteReports):
    """`bot.store.Store` on one SQLite file (`bot.store.sqlite_db` holds the connection)."""

    def __init__(self, database: SQLiteDatabase, clock: Callable[[], float] = time.time) -> None:
        self._database = database
        self._now = clock
        self._groups = ParsedGroups()

    @classmethod
    async def open(cls, path: str, clock: Callable[[], float] = time.time) -> SQLiteStore:
        """Open (creating and migrating) the file; `clock` gives Unix seconds (tests and
        benchmarks that play time forward pass their own)."""
        return cls(await SQLiteDatabase.open(path), clock)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SQLiteTransaction]:
        async with self._database.transaction() as db:
            yield SQLiteTransaction(db, self._groups, self._now)

    async def _write(self, sql: str, params: tuple[Any, ...]) -> int:
        return await self._database.write(sql, params)

    async def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        return await self._database.fetch(sql, params)

    async def probe(self) -> None:
        await self._database.probe(self._now())

    async def lead(self, role: str, owner: str, until: float) -> bool:
        sql = (
            "INSERT INTO leader_leases (role, owner, until) VALUES (?, ?, ?)"
            " ON CONFLICT (role) DO UPDATE SET owner = excluded.owner, until = excluded.until"
            " WHERE leader_leases.owner = excluded.owner OR leader_leases.until < ?"
        )
        return await self._write(sql, (role, owner, until, self._now())) == 1

    async def take_pace(self, channel: str, per_second: float, burst: float) -> float:
        async with self._database.transaction() as db:
            async with db.execute(
                "SELECT tokens, at FROM channel_pace WHERE channel = ?", (channel,)
            ) as cursor:
                row = await cursor.fetchone()
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

    async def record_job(self, event: JobEvent, delivery: str, remember_until: float) -> bool:
        return await self.record_jobs([(event, delivery)], remember_until) == 1

    async def record_jobs(
        self, deliveries: Sequence[tuple[JobEvent, str]], remember_until: float
    ) -> int:
        async with self._database.transaction() as db:
            return await record_lot(db, deliveries, remember_until, self._now())

    async def queued_jobs(self, at: float, queued_after: float, max_age: float) -> list[QueuedJob]:
        async with self._database.reading() as db:
            with translated("the store cannot be read"):
                return await queued_at(db, at, queued_after, max_age)

    async def job_activity(self, since: float, until: float) -> JobActivity:
        async with self._database.reading() as db:
            with translated("the store cannot be read"):
                return await activity(db, since, until)

    async def running_jobs(self, at: float, lookback: float) -> dict[tuple[str, str], int]:
        async with self._database.reading() as db:
            with translated("the store cannot be read"):
                return await running_at(db, at, lookback)

    async def first_job_created(self) -> float | None:
        rows = await self._fetch("SELECT MIN(created_at) FROM jobs")
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

    async def get_incident(self, incident_id: int) -> Incident | None:
        rows = await self._fetch(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE id = ?",  # noqa: S608
            (incident_id,),
        )
        return incident_from(rows[0], self._groups) if rows else None

    async def silenced_incidents(self, channel: str | None = None) -> list[Incident]:
        rows = await self._fetch(SILENCED_INCIDENTS, (channel,) * 4)
        return [incident_from(row, self._groups) for row in rows]

    async def firing_incidents(
        self, limit: int, channel: str | None = None
    ) -> tuple[list[Incident], int]:
        rows = await self._fetch(FIRING_INCIDENTS, (*(channel,) * 4, limit))
        return [incident_from(row, self._groups) for row in rows], (
            int(rows[0]["total"]) if rows else 0
        )

    async def claim(self, incident_id: int, purpose: str, owner: str, until: float) -> bool:
        # One statement, atomic under SQLite's write lock: a free or lapsed claim is taken,
        # a live one is left alone (rowcount 0).
        claimed = await self._write(
            "INSERT INTO claims (incident_id, purpose, owner, until) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (incident_id, purpose) DO UPDATE SET owner = excluded.owner,"
            " until = excluded.until WHERE claims.until < ?",
            (incident_id, purpose, owner, until, self._now()),
        )
        return claimed == 1

    async def renew(self, incident_id: int, purpose: str, owner: str, until: float) -> bool:
        renewed = await self._write(
            "UPDATE claims SET until = ? WHERE incident_id = ? AND purpose = ? AND owner = ?",
            (until, incident_id, purpose, owner),
        )
        return renewed == 1

    async def unfinished_diagnoses(self) -> list[UnfinishedDiagnosis]:
        rows = await self._fetch(
            "SELECT id, incident_id, note_id FROM diagnoses WHERE finished_at IS NULL ORDER BY id"
        )
        return [UnfinishedDiagnosis(int(r[0]), int(r[1]), int(r[2])) for r in rows]

    async def diagnosis_unfinished(self, diagnosis_id: int) -> bool:
        rows = await self._fetch(
            "SELECT 1 FROM diagnoses WHERE id = ? AND finished_at IS NULL", (diagnosis_id,)
        )
        return bool(rows)

    async def release(self, incident_id: int, purpose: str, owner: str) -> None:
        await self._write(
            "DELETE FROM claims WHERE incident_id = ? AND purpose = ? AND owner = ?",
            (incident_id, purpose, owner),
        )

    async def due_incidents(self, owner: str | None = None) -> list[Due]:
        # The first pending item decides: items of one incident go out strictly in order.
        rows = await self._fetch(
            "SELECT o.incident_id, i.group_key, MAX(o.not_before, CASE WHEN o.lease_owner = ?"
            " THEN 0 ELSE COALESCE(o.lease_until, 0) END)"
            " FROM outbox o"
            " JOIN incidents i ON i.id = o.incident_id"
            " WHERE o.id IN (SELECT MIN(id) FROM outbox WHERE state = 'pending'"
            " GROUP BY incident_id) ORDER BY o.id",
            (owner,),
        )
        try:
            return [Due(int(row[0]), str(row[1]), float(row[2])) for row in rows]
        except (TypeError, ValueError) as exc:
            raise StoreError(f"an outbox row cannot be read: {exc}") from exc

    async def next_item(self, incident_id: int) -> OutboxItem | None:
        rows = await self._fetch(
            f"SELECT {OUTBOX_COLUMNS} FROM outbox"  # noqa: S608
            " WHERE incident_id = ? AND state = 'pending' ORDER BY id LIMIT 1",
            (incident_id,),
        )
        return outbox_item_from(rows[0]) if rows else None

    async def has_later_update(self, incident_id: int, after_id: int) -> bool:
        rows = await self._fetch(
            "SELECT 1 FROM outbox WHERE incident_id = ? AND state = 'pending' AND id > ?"
            " AND kind = 'update_parent' LIMIT 1",
            (incident_id, after_id),
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
            "UPDATE outbox SET state = ?, last_error = ?, done_at = ?, attempts = attempts + 1,"
            " lease_owner = NULL, lease_until = NULL, posted_ts = COALESCE(?, posted_ts),"
            " payload = CASE WHEN ? = 'done' THEN '' ELSE payload END WHERE id = ?",
            (state.value, error, self._now(), posted_ts, state.value, item_id),
        )

    async def posted_ts(self, item_id: int) -> str | None:
        rows = await self._fetch("SELECT posted_ts FROM outbox WHERE id = ?", (item_id,))
        return str(rows[0][0]) if rows and rows[0][0] else None

    async def claim_item(self, item_id: int, owner: str, until: float) -> bool:
        # One UPDATE is atomic under SQLite's write lock, across processes too.
        claimed = await self._write(
            "UPDATE outbox SET lease_owner = ?, lease_until = ? WHERE id = ?"
            " AND state = 'pending' AND (lease_until IS NULL OR lease_until < ?"
            " OR lease_owner = ?)",
            (owner, until, item_id, self._now(), owner),
        )
        return claimed == 1

    async def release_leases(self, owner: str) -> None:
        await self._write(
            "UPDATE outbox SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?",
            (owner,),
        )

    async def defer_item(self, item_id: int, not_before: float, error: str) -> None:
        await self._write(
            "UPDATE outbox SET not_before = ?, last_error = ?, attempts = attempts + 1,"
            " lease_owner = NULL, lease_until = NULL WHERE id = ?",
            (not_before, error, item_id),
        )

    async def outbox_stats(self) -> tuple[int, float | None]:
        rows = await self._fetch(
            "SELECT COUNT(*), MIN(created_at) FROM outbox WHERE state = 'pending'"
        )
        return int(rows[0][0]), rows[0][1]

    async def mark_sending(self, item_id: int, at: float) -> None:
        await self._write("UPDATE outbox SET sent_at = ? WHERE id = ?", (at, item_id))

    async def channel_id_for(self, channel: str) -> str | None:
        rows = await self._fetch(
            "SELECT channel_id FROM incidents WHERE channel = ? AND channel_id IS NOT NULL"
            " ORDER BY id DESC LIMIT 1",
            (channel,),
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
            "UPDATE incidents SET channel_id = ?, parent_ts = ?, parent_version = ?,"
            " previous_link = ? WHERE id = ?",
            (channel_id, parent_ts, version, previous_link, incident_id),
        )

    async def set_permalink(self, incident_id: int, permalink: str) -> None:
        await self._write(
            "UPDATE incidents SET permalink = ? WHERE id = ?", (permalink, incident_id)
        )

    async def set_parent_version(self, incident_id: int, version: int) -> None:
        await self._write(
            "UPDATE incidents SET parent_version = MAX(parent_version, ?) WHERE id = ?",
            (version, incident_id),
        )

    async def get_digest(self, digest_id: int) -> Digest | None:
        rows = await self._fetch(
            f"SELECT {DIGEST_COLUMNS} FROM digests WHERE id = ?",  # noqa: S608
            (digest_id,),
        )
        return digest_from(rows[0]) if rows else None

    async def digest_members(self, digest_id: int) -> list[Incident]:
        rows = await self._fetch(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE digest_id = ?"  # noqa: S608
            " ORDER BY id",
            (digest_id,),
        )
        return [incident_from(row, self._groups) for row in rows]

    async def set_digest_posted(
        self, digest_id: int, channel_id: str, ts: str, version: int
    ) -> None:
        await self._write(
            "UPDATE digests SET channel_id = ?, ts = ?, shown_version = ? WHERE id = ?",
            (channel_id, ts, version, digest_id),
        )

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

    async def close(self) -> None:
        await self._database.close()
