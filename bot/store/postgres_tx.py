"""One transaction of the PostgreSQL store: what `Store.transaction()` hands its caller
(the connections are `bot.store.postgres_db`'s).

SQLite's transaction is exclusive: the whole file is locked while one runs. PostgreSQL runs
replicas' transactions side by side (READ COMMITTED), so what the interface promises is kept
with locks taken where a decision is read:

- `current_incident` takes a transaction-level advisory lock on the group key before it reads,
  and locks the incident's row. Two notifications for one group key, on any replica, are
  applied one after the other: the second reads what the first committed, so a group never
  gets two current incidents and its first post is owed once. (SERIALIZABLE would give the
  same, but every caller would need to retry on serialization failures; a lock just waits.)
  `insert_incident` takes the same lock, and the UNIQUE (group_key, generation) constraint
  still stands behind it: a conflict is refused with StoreError, never a second incident.
- `incident` locks the incident's row (`FOR NO KEY UPDATE`), so a silence recorded on one
  replica and a notification applied on another never overwrite each other's change.
- `enqueue` locks the incident's row before the outbox entry takes its id: one incident's
  entries are committed in id order, which is the order the worker delivers them in.
- `open_digest` and `create_digest` take an advisory lock on the channel: one storm, one digest.

Locks are always taken in the order group key, incident, channel, digest; none is taken in
the other direction, so these transactions cannot deadlock one another.
"""

from __future__ import annotations

import hashlib
import time
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import asyncpg

from bot.domain.incidents import Incident
from bot.store.postgres_db import postgres_errors
from bot.store.postgres_schema import Lock
from bot.store.records import Digest, NewIncident, OutboxKind, StoreError
from bot.store.rows import (
    DIGEST_COLUMNS,
    INCIDENT_COLUMNS,
    ParsedGroups,
    digest_from,
    incident_from,
)

if TYPE_CHECKING:
    from bot.store.postgres_schema import Connection


def moment(unix: float) -> datetime:
    return datetime.fromtimestamp(unix, UTC)


class PostgresTransaction:
    def __init__(
        self,
        conn: Connection,
        groups: ParsedGroups,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._conn = conn
        self._groups = groups
        self._now = clock

    async def _one(self, sql: str, *args: Any) -> asyncpg.Record | None:
        with postgres_errors("the store cannot be read"):
            return await self._conn.fetchrow(sql, *args)

    async def _execute(self, sql: str, *args: Any) -> str:
        with postgres_errors("the store cannot be written"):
            return await self._conn.execute(sql, *args)

    async def _lock(self, kind: Lock, key: str) -> None:
        await self._execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", int(kind), key)

    async def current_incident(self, group_key: str) -> Incident | None:
        await self._lock(Lock.INCIDENT_GROUP, group_key)
        row = await self._one(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE group_key = $1"  # noqa: S608
            " ORDER BY generation DESC LIMIT 1 FOR NO KEY UPDATE",
            group_key,
        )
        return incident_from(row, self._groups) if row else None

    async def incident(self, incident_id: int) -> Incident | None:
        row = await self._one(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE id = $1"  # noqa: S608
            " FOR NO KEY UPDATE",
            incident_id,
        )
        return incident_from(row, self._groups) if row else None

    async def holds(self, incident_id: int, purpose: str, owner: str) -> bool:
        row = await self._one(
            "SELECT 1 FROM claims WHERE incident_id = $1 AND purpose = $2 AND owner = $3"
            " AND until >= $4",
            incident_id,
            purpose,
            owner,
            self._now(),
        )
        return row is not None

    async def insert_incident(self, new: NewIncident) -> Incident:
        await self._lock(Lock.INCIDENT_GROUP, new.group_key)
        now = moment(self._now())
        group_json = new.group.model_dump_json()
        self._groups.remember(group_json, new.group)
        row = await self._one(
            "INSERT INTO incidents (group_key, generation, channel, status, group_json,"  # noqa: S608
            " started_at, resolved_at, previous_id, created_at, updated_at, digest_id)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10)"
            " ON CONFLICT (group_key, generation) DO NOTHING"
            f" RETURNING {INCIDENT_COLUMNS}",
            new.group_key,
            new.generation,
            new.channel,
            new.status.value,
            group_json,
            new.started_at,
            new.resolved_at,
            new.previous_id,
            now,
            new.digest_id,
        )
        if row is None:
            raise StoreError(
                f"incident generation {new.generation} of group key {new.group_key!r} exists"
                " already: it was opened without reading the group's current incident first"
            )
        return incident_from(row, self._groups)

    async def save_incident(self, incident: Incident) -> None:
        group_json = incident.group.model_dump_json()
        self._groups.remember(group_json, incident.group)
        await self._execute(
            "UPDATE incidents SET status = $1, group_json = $2, resolved_at = $3,"
            " fired_count = $4, version = $5, silence_json = $6, updated_at = $7 WHERE id = $8",
            incident.status.value,
            group_json,
            incident.resolved_at,
            incident.fired_count,
            incident.version,
            incident.silence.model_dump_json() if incident.silence else None,
            moment(self._now()),
            incident.id,
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
            # Kept once per distinct body, deflated: as on SQLite (`bot.store.sqlite_tx`).
            raw = body.encode()
            sha256 = hashlib.sha256(raw).hexdigest()
            await self._execute(
                "INSERT INTO notification_bodies (sha256, deflated) VALUES ($1, $2)"
                " ON CONFLICT (sha256) DO NOTHING",
                sha256,
                zlib.compress(raw, 1),
            )
        row = await self._one(
            "INSERT INTO notifications (group_key, received_at, body_sha256, outcome,"
            " incident_id, content_key) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            group_key,
            received_at,
            sha256,
            outcome,
            incident_id,
            content_key,
        )
        assert row is not None
        return int(row[0])

    async def seen_since(self, group_key: str, content_key: str, since: datetime) -> bool:
        row = await self._one(
            "SELECT 1 FROM notifications WHERE group_key = $1 AND content_key = $2"
            " AND received_at >= $3 LIMIT 1",
            group_key,
            content_key,
            since,
        )
        return row is not None

    async def open_digest(self, channel: str, joined_since: datetime) -> Digest | None:
        await self._lock(Lock.DIGEST_CHANNEL, channel)
        row = await self._one(
            f"SELECT {DIGEST_COLUMNS} FROM digests WHERE channel = $1"  # noqa: S608
            " AND last_joined_at >= $2 ORDER BY id DESC LIMIT 1",
            channel,
            joined_since,
        )
        return digest_from(row) if row else None

    async def count_opening(self, channel: str, at: datetime, window: timedelta) -> int:
        # Under the channel's lock, as the digest is: replicas count one storm together.
        await self._lock(Lock.DIGEST_CHANNEL, channel)
        moment = at.timestamp()
        await self._execute(
            "DELETE FROM channel_openings WHERE channel = $1 AND at < $2",
            channel,
            moment - window.total_seconds(),
        )
        await self._execute(
            "INSERT INTO channel_openings (channel, at) VALUES ($1, $2)", channel, moment
        )
        row = await self._one(
            "SELECT COUNT(*) AS n FROM channel_openings WHERE channel = $1 AND at <= $2",
            channel,
            moment,
        )
        return int(row["n"]) if row else 0

    async def create_digest(self, channel: str, at: datetime) -> Digest:
        await self._lock(Lock.DIGEST_CHANNEL, channel)
        row = await self._one(
            "INSERT INTO digests (channel, opened_at, last_joined_at) VALUES ($1, $2, $2)"  # noqa: S608
            f" RETURNING {DIGEST_COLUMNS}",
            channel,
            at,
        )
        assert row is not None
        return digest_from(row)

    async def touch_digest(self, digest_id: int, joined_at: datetime | None) -> None:
        await self._execute(
            "UPDATE digests SET version = version + 1,"
            " last_joined_at = COALESCE($2, last_joined_at) WHERE id = $1",
            digest_id,
            joined_at,
        )

    async def enqueue(self, incident_id: int, kind: OutboxKind, payload: str = "") -> int:
        # The row lock comes before the entry's id is drawn (see the module's docstring).
        row = await self._one(
            "WITH owner AS (SELECT id FROM incidents WHERE id = $1 FOR NO KEY UPDATE)"
            " INSERT INTO outbox (incident_id, kind, payload, created_at)"
            " SELECT id, $2, $3, $4 FROM owner RETURNING id",
            incident_id,
            kind.value,
            payload,
            self._now(),
        )
        if row is None:
            raise StoreError(f"no incident {incident_id} to owe a delivery for")
        return int(row[0])

    async def add_diagnosis(self, incident_id: int, note_id: int) -> int:
        row = await self._one(
            "INSERT INTO diagnoses (incident_id, note_id, requested_at) VALUES ($1, $2, $3)"
            " RETURNING id",
            incident_id,
            note_id,
            self._now(),
        )
        assert row is not None
        return int(row[0])

    async def finish_diagnosis(self, diagnosis_id: int) -> None:
        await self._execute(
            "UPDATE diagnoses SET finished_at = $1 WHERE id = $2", self._now(), diagnosis_id
        )
