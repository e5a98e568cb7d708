"""The SQLite incident store (aiosqlite), with its schema migrations.

One connection, one asyncio lock: SQLite allows one writer, and a transaction on a shared
connection must not interleave with another coroutine's statements. `BEGIN IMMEDIATE` takes the
database's write lock at the start, so a second process on the same file waits instead of
interleaving too.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from bot.domain.incidents import Incident
from bot.store.interface import (
    Digest,
    Due,
    OutboxItem,
    OutboxKind,
    OutboxState,
    StoreError,
    UnfinishedDiagnosis,
)
from bot.store.rows import DIGEST_COLUMNS, INCIDENT_COLUMNS, digest_from, incident_from
from bot.store.schema import MIGRATIONS
from bot.store.sqlite_tx import SQLiteTransaction


def _prepare(path: str) -> str:
    """Expand `~` and create the file's directory (blocking, so run in a thread)."""
    if path == ":memory:":
        return path
    full = Path(path).expanduser()
    full.parent.mkdir(parents=True, exist_ok=True)
    return str(full)


class SQLiteStore:
    """`bot.store.Store` on one SQLite file."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: str) -> SQLiteStore:
        try:
            path = await asyncio.to_thread(_prepare, path)
            db = await aiosqlite.connect(path, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the SQLite database {path!r}: {exc}") from exc
        store = cls(db)
        try:
            db.row_factory = sqlite3.Row
            await db.execute("PRAGMA busy_timeout = 5000")
            await db.execute("PRAGMA journal_mode = WAL")
            await db.execute("PRAGMA synchronous = NORMAL")
            await db.execute("PRAGMA foreign_keys = ON")
            await store._migrate()
        except sqlite3.Error as exc:
            await db.close()
            raise StoreError(f"{path!r} is not a usable queuebot database: {exc}") from exc
        except StoreError:
            await db.close()
            raise
        return store

    async def _migrate(self) -> None:
        # Read the version under the write lock, so two processes starting together on one
        # file migrate it once: the second waits, then finds nothing left to do.
        await self._db.execute("BEGIN IMMEDIATE")
        try:
            async with self._db.execute("PRAGMA user_version") as cursor:
                row = await cursor.fetchone()
            current = int(row[0]) if row else 0
            if current > len(MIGRATIONS):
                raise StoreError(
                    f"the database has schema version {current}, newer than this queuebot knows"
                )
            for version, script in enumerate(MIGRATIONS[current:], start=current + 1):
                for statement in script.split(";"):
                    if statement.strip():
                        await self._db.execute(statement)
                await self._db.execute(f"PRAGMA user_version = {version}")
        except BaseException:
            await self._db.execute("ROLLBACK")
            raise
        await self._db.execute("COMMIT")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SQLiteTransaction]:
        async with self._lock:
            try:
                await self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot start a transaction: {exc}") from exc
            try:
                yield SQLiteTransaction(self._db)
                await self._db.execute("COMMIT")
            except BaseException as exc:
                await self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"transaction failed: {exc}") from exc
                raise

    async def _write(self, sql: str, params: tuple[Any, ...]) -> int:
        async with self._lock:
            cursor = await self._db.execute(sql, params)
            return cursor.rowcount

    async def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        async with self._lock, self._db.execute(sql, params) as cursor:
            return list(await cursor.fetchall())

    async def get_incident(self, incident_id: int) -> Incident | None:
        rows = await self._fetch(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE id = ?",  # noqa: S608
            (incident_id,),
        )
        return incident_from(rows[0]) if rows else None

    async def silenced_incidents(self) -> list[Incident]:
        rows = await self._fetch(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents"  # noqa: S608
            " WHERE silence_json IS NOT NULL AND status = 'firing' ORDER BY id"
        )
        return [incident_from(row) for row in rows]

    async def firing_incidents(self, limit: int) -> tuple[list[Incident], int]:
        rows = await self._fetch(
            f"SELECT {INCIDENT_COLUMNS}, COUNT(*) OVER () AS total FROM incidents"  # noqa: S608
            " WHERE status = 'firing' ORDER BY started_at DESC, id DESC LIMIT ?",
            (limit,),
        )
        return [incident_from(row) for row in rows], (int(rows[0]["total"]) if rows else 0)

    async def claim(self, incident_id: int, purpose: str, owner: str, until: float) -> bool:
        # One statement, atomic under SQLite's write lock: a free or lapsed claim is taken,
        # a live one is left alone (rowcount 0).
        claimed = await self._write(
            "INSERT INTO claims (incident_id, purpose, owner, until) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (incident_id, purpose) DO UPDATE SET owner = excluded.owner,"
            " until = excluded.until WHERE claims.until < ?",
            (incident_id, purpose, owner, until, time.time()),
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

    async def due_incidents(self) -> list[Due]:
        # The first pending item decides: items of one incident go out strictly in order.
        rows = await self._fetch(
            "SELECT o.incident_id, i.group_key, MAX(o.not_before, COALESCE(o.lease_until, 0))"
            " FROM outbox o"
            " JOIN incidents i ON i.id = o.incident_id"
            " WHERE o.id IN (SELECT MIN(id) FROM outbox WHERE state = 'pending'"
            " GROUP BY incident_id) ORDER BY o.id"
        )
        return [Due(int(row[0]), str(row[1]), float(row[2])) for row in rows]

    async def next_item(self, incident_id: int) -> OutboxItem | None:
        rows = await self._fetch(
            "SELECT id, incident_id, kind, payload, attempts, not_before, sent_at, created_at"
            " FROM outbox"
            " WHERE incident_id = ? AND state = 'pending' ORDER BY id LIMIT 1",
            (incident_id,),
        )
        if not rows:
            return None
        row = rows[0]
        return OutboxItem(
            id=row["id"],
            incident_id=row["incident_id"],
            kind=OutboxKind(row["kind"]),
            payload=row["payload"],
            attempts=row["attempts"],
            not_before=row["not_before"],
            sent_at=row["sent_at"],
            created_at=row["created_at"],
        )

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
        await self._write(
            "UPDATE outbox SET state = ?, last_error = ?, done_at = ?, attempts = attempts + 1,"
            " lease_owner = NULL, lease_until = NULL, posted_ts = COALESCE(?, posted_ts)"
            " WHERE id = ?",
            (state.value, error, time.time(), posted_ts, item_id),
        )

    async def posted_ts(self, item_id: int) -> str | None:
        rows = await self._fetch("SELECT posted_ts FROM outbox WHERE id = ?", (item_id,))
        return str(rows[0][0]) if rows and rows[0][0] else None

    async def claim_item(self, item_id: int, owner: str, until: float) -> bool:
        # One UPDATE is atomic under SQLite's write lock, across processes too.
        claimed = await self._write(
            "UPDATE outbox SET lease_owner = ?, lease_until = ? WHERE id = ?"
            " AND state = 'pending' AND (lease_until IS NULL OR lease_until < ?)",
            (owner, until, item_id, time.time()),
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
        return [incident_from(row) for row in rows]

    async def set_digest_posted(
        self, digest_id: int, channel_id: str, ts: str, version: int
    ) -> None:
        await self._write(
            "UPDATE digests SET channel_id = ?, ts = ?, shown_version = ? WHERE id = ?",
            (channel_id, ts, version, digest_id),
        )

    async def set_digest_permalink(self, digest_id: int, permalink: str) -> None:
        await self._write("UPDATE digests SET permalink = ? WHERE id = ?", (permalink, digest_id))

    async def set_digest_shown(self, digest_id: int, version: int) -> None:
        await self._write(
            "UPDATE digests SET shown_version = MAX(shown_version, ?) WHERE id = ?",
            (version, digest_id),
        )

    async def add_digest_page(self, digest_id: int, ts: str) -> None:
        async with self._lock:
            await self._db.execute("BEGIN IMMEDIATE")
            try:
                async with self._db.execute(
                    "SELECT pages_json FROM digests WHERE id = ?", (digest_id,)
                ) as cursor:
                    row = await cursor.fetchone()
                pages = [*json.loads(row[0]), ts] if row else [ts]
                await self._db.execute(
                    "UPDATE digests SET pages_json = ? WHERE id = ?",
                    (json.dumps(pages), digest_id),
                )
            except BaseException:
                await self._db.execute("ROLLBACK")
                raise
            await self._db.execute("COMMIT")

    async def close(self) -> None:
        await self._db.close()
