"""One SQLite write transaction of the store: what `Store.transaction()` hands its caller.

It runs on the store's connection, inside the `BEGIN IMMEDIATE` the store took, so every
statement here is part of one atomic change.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
import zlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import aiosqlite

from bot.domain.incidents import Incident
from bot.store.records import Digest, NewIncident, OutboxKind
from bot.store.rows import (
    DIGEST_COLUMNS,
    INCIDENT_COLUMNS,
    ParsedGroups,
    digest_from,
    incident_from,
)


class SQLiteTransaction:
    def __init__(
        self,
        db: aiosqlite.Connection,
        groups: ParsedGroups,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._db = db
        self._groups = groups
        self._now = clock

    def _stamp(self) -> str:
        return datetime.fromtimestamp(self._now()).astimezone().isoformat()

    async def _one(self, sql: str, params: tuple[Any, ...]) -> sqlite3.Row | None:
        async with self._db.execute(sql, params) as cursor:
            row: sqlite3.Row | None = await cursor.fetchone()
            return row

    async def current_incident(self, group_key: str) -> Incident | None:
        row = await self._one(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE group_key = ?"  # noqa: S608
            " ORDER BY generation DESC LIMIT 1",
            (group_key,),
        )
        return incident_from(row, self._groups) if row else None

    async def incident(self, incident_id: int) -> Incident | None:
        row = await self._one(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE id = ?",  # noqa: S608
            (incident_id,),
        )
        return incident_from(row, self._groups) if row else None

    async def holds(self, incident_id: int, purpose: str, owner: str) -> bool:
        row = await self._one(
            "SELECT 1 FROM claims WHERE incident_id = ? AND purpose = ? AND owner = ?"
            " AND until >= ?",
            (incident_id, purpose, owner, self._now()),
        )
        return row is not None

    async def insert_incident(self, new: NewIncident) -> Incident:
        now = self._stamp()
        group_json = new.group.model_dump_json()
        self._groups.remember(group_json, new.group)
        cursor = await self._db.execute(
            "INSERT INTO incidents (group_key, generation, channel, status, group_json,"
            " started_at, resolved_at, previous_id, created_at, updated_at, digest_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                new.group_key,
                new.generation,
                new.channel,
                new.status.value,
                group_json,
                new.started_at.isoformat(),
                new.resolved_at.isoformat() if new.resolved_at else None,
                new.previous_id,
                now,
                now,
                new.digest_id,
            ),
        )
        row = await self._one(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE id = ?",  # noqa: S608
            (cursor.lastrowid,),
        )
        assert row is not None
        return incident_from(row, self._groups)

    async def save_incident(self, incident: Incident) -> None:
        group_json = incident.group.model_dump_json()
        self._groups.remember(group_json, incident.group)
        await self._db.execute(
            "UPDATE incidents SET status = ?, group_json = ?, resolved_at = ?, fired_count = ?,"
            " version = ?, silence_json = ?, updated_at = ? WHERE id = ?",
            (
                incident.status.value,
                group_json,
                incident.resolved_at.isoformat() if incident.resolved_at else None,
                incident.fired_count,
                incident.version,
                incident.silence.model_dump_json() if incident.silence else None,
                self._stamp(),
                incident.id,
            ),
        )

    async def add_notification(
        self,
        group_key: str,
        received_at: datetime,
        body: str | None,
        outcome: str,
        incident_id: int | None,
        content_key: str | None = None,
    ) -> int:
        sha256 = None
        if body is not None:
            # Bodies are kept once each, by content (Grafana re-sends the same one often), and
            # deflated: a group's alerts repeat each other, a tenth of the size or less.
            raw = body.encode()
            sha256 = hashlib.sha256(raw).hexdigest()
            await self._db.execute(
                "INSERT INTO notification_bodies (sha256, deflated) VALUES (?, ?)"
                " ON CONFLICT (sha256) DO NOTHING",
                (sha256, zlib.compress(raw, 1)),
            )
        cursor = await self._db.execute(
            "INSERT INTO notifications (group_key, received_at, body, body_sha256, outcome,"
            " incident_id, content_key) VALUES (?, ?, '', ?, ?, ?, ?)",
            (group_key, received_at.isoformat(), sha256, outcome, incident_id, content_key),
        )
        return int(cursor.lastrowid or 0)

    async def seen_since(self, group_key: str, content_key: str, since: datetime) -> bool:
        row = await self._one(
            "SELECT 1 FROM notifications WHERE group_key = ? AND content_key = ?"
            " AND received_at >= ? LIMIT 1",
            (group_key, content_key, since.isoformat()),
        )
        return row is not None

    async def open_digest(self, channel: str, joined_since: datetime) -> Digest | None:
        row = await self._one(
            f"SELECT {DIGEST_COLUMNS} FROM digests WHERE channel = ?"  # noqa: S608
            " AND last_joined_at >= ? ORDER BY id DESC LIMIT 1",
            (channel, joined_since.isoformat()),
        )
        return digest_from(row) if row else None

    async def count_opening(self, channel: str, at: datetime, window: timedelta) -> int:
        moment = at.timestamp()
        await self._db.execute(
            "DELETE FROM channel_openings WHERE channel = ? AND at < ?",
            (channel, moment - window.total_seconds()),
        )
        await self._db.execute(
            "INSERT INTO channel_openings (channel, at) VALUES (?, ?)", (channel, moment)
        )
        row = await self._one(
            "SELECT COUNT(*) FROM channel_openings WHERE channel = ? AND at <= ?",
            (channel, moment),
        )
        return int(row[0]) if row else 0

    async def create_digest(self, channel: str, at: datetime) -> Digest:
        cursor = await self._db.execute(
            "INSERT INTO digests (channel, opened_at, last_joined_at) VALUES (?, ?, ?)",
            (channel, at.isoformat(), at.isoformat()),
        )
        row = await self._one(
            f"SELECT {DIGEST_COLUMNS} FROM digests WHERE id = ?",  # noqa: S608
            (cursor.lastrowid,),
        )
        assert row is not None
        return digest_from(row)

    async def touch_digest(self, digest_id: int, joined_at: datetime | None) -> None:
        if joined_at is None:
            await self._db.execute(
                "UPDATE digests SET version = version + 1 WHERE id = ?", (digest_id,)
            )
        else:
            await self._db.execute(
                "UPDATE digests SET version = version + 1, last_joined_at = ? WHERE id = ?",
                (joined_at.isoformat(), digest_id),
            )

    async def enqueue(self, incident_id: int, kind: OutboxKind, payload: str = "") -> int:
        cursor = await self._db.execute(
            "INSERT INTO outbox (incident_id, kind, payload, created_at) VALUES (?, ?, ?, ?)",
            (incident_id, kind.value, payload, self._now()),
        )
        return int(cursor.lastrowid or 0)

    async def add_diagnosis(self, incident_id: int, note_id: int) -> int:
        cursor = await self._db.execute(
            "INSERT INTO diagnoses (incident_id, note_id, requested_at) VALUES (?, ?, ?)",
            (incident_id, note_id, self._now()),
        )
        return int(cursor.lastrowid or 0)

    async def finish_diagnosis(self, diagnosis_id: int) -> None:
        await self._db.execute(
            "UPDATE diagnoses SET finished_at = ? WHERE id = ?", (self._now(), diagnosis_id)
        )
