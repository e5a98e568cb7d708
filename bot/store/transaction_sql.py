"""One write transaction of the store, what `Store.transaction()` hands its caller: its
statements written once for both backends, with `?` placeholders (`bot.store.statements`).

What a backend does its own way is given by its transaction (`bot.store.sqlite_tx`,
`bot.store.postgres_tx`): how a statement runs, how a moment is stored (SQLite: ISO 8601 text;
PostgreSQL: timestamptz), and the locks. SQLite's transaction holds the whole file, so it takes
none; PostgreSQL runs replicas' transactions side by side and locks where a decision is read
(its module says which, and why they cannot deadlock).
"""

from __future__ import annotations

import hashlib
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from bot.domain.incidents import Incident
from bot.store.records import Digest, NewIncident, OutboxKind, StoreError
from bot.store.rows import (
    DIGEST_COLUMNS,
    INCIDENT_COLUMNS,
    ParsedGroups,
    digest_from,
    incident_from,
)
from bot.store.statements import Record

_CURRENT = (
    f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE group_key = ?"  # noqa: S608
    " ORDER BY generation DESC LIMIT 1"
)
_INCIDENT = f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE id = ?"  # noqa: S608
_INSERT_INCIDENT = (
    "INSERT INTO incidents (group_key, generation, channel, status, group_json, started_at,"  # noqa: S608
    " resolved_at, previous_id, created_at, updated_at, digest_id)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    f" ON CONFLICT (group_key, generation) DO NOTHING RETURNING {INCIDENT_COLUMNS}"
)
_OPEN_DIGEST = (
    f"SELECT {DIGEST_COLUMNS} FROM digests WHERE channel = ?"  # noqa: S608
    " AND last_joined_at >= ? ORDER BY id DESC LIMIT 1"
)
_CREATE_DIGEST = (
    "INSERT INTO digests (channel, opened_at, last_joined_at) VALUES (?, ?, ?)"  # noqa: S608
    f" RETURNING {DIGEST_COLUMNS}"
)


class TransactionStatements(ABC):
    """The statements of one write transaction; a backend's transaction runs them."""

    #: What locks a row read to be changed ("" where the transaction holds the whole store).
    FOR_UPDATE = ""

    def __init__(self, groups: ParsedGroups, now: Callable[[], float]) -> None:
        """`now`: the store's clock, in Unix seconds."""
        self._groups = groups
        self._now = now

    @abstractmethod
    async def _one(self, sql: str, *params: Any) -> Record | None:
        """Run `sql`; its first row, if any."""

    @abstractmethod
    async def _execute(self, sql: str, *params: Any) -> None: ...

    @abstractmethod
    def _at(self, moment: datetime | None) -> Any:
        """`moment` as the backend stores it."""

    @abstractmethod
    def _stamp(self) -> Any:
        """Now, as the backend stores a row's creation or change."""

    @abstractmethod
    async def _lock_group(self, group_key: str) -> None:
        """Held until the transaction ends, where the backend runs transactions side by side:
        one group key's current incident read and decided about by one at a time."""

    @abstractmethod
    async def _lock_channel(self, channel: str) -> None:
        """As `_lock_group`, for a channel's digest and storm count."""

    async def current_incident(self, group_key: str) -> Incident | None:
        await self._lock_group(group_key)
        row = await self._one(_CURRENT + self.FOR_UPDATE, group_key)
        return incident_from(row, self._groups) if row else None

    async def incident(self, incident_id: int) -> Incident | None:
        row = await self._one(_INCIDENT + self.FOR_UPDATE, incident_id)
        return incident_from(row, self._groups) if row else None

    async def holds(self, incident_id: int, purpose: str, owner: str) -> bool:
        row = await self._one(
            "SELECT 1 FROM claims WHERE incident_id = ? AND purpose = ? AND owner = ?"
            " AND until >= ?",
            incident_id,
            purpose,
            owner,
            self._now(),
        )
        return row is not None

    async def insert_incident(self, new: NewIncident) -> Incident:
        await self._lock_group(new.group_key)
        now = self._stamp()
        group_json = new.group.model_dump_json()
        self._groups.remember(group_json, new.group)
        row = await self._one(
            _INSERT_INCIDENT,
            new.group_key,
            new.generation,
            new.channel,
            new.status.value,
            group_json,
            self._at(new.started_at),
            self._at(new.resolved_at),
            new.previous_id,
            now,
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
            "UPDATE incidents SET status = ?, group_json = ?, resolved_at = ?, fired_count = ?,"
            " version = ?, silence_json = ?, updated_at = ? WHERE id = ?",
            incident.status.value,
            group_json,
            self._at(incident.resolved_at),
            incident.fired_count,
            incident.version,
            incident.silence.model_dump_json() if incident.silence else None,
            self._stamp(),
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
            # Bodies are kept once each, by content (Grafana re-sends the same one often), and
            # deflated: a group's alerts repeat each other, a tenth of the size or less.
            raw = body.encode()
            sha256 = hashlib.sha256(raw).hexdigest()
            await self._execute(
                "INSERT INTO notification_bodies (sha256, deflated) VALUES (?, ?)"
                " ON CONFLICT (sha256) DO NOTHING",
                sha256,
                zlib.compress(raw, 1),
            )
        row = await self._one(
            "INSERT INTO notifications (group_key, received_at, body_sha256, outcome,"
            " incident_id, content_key) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
            group_key,
            self._at(received_at),
            sha256,
            outcome,
            incident_id,
            content_key,
        )
        assert row is not None
        return int(row[0])

    async def seen_since(self, group_key: str, content_key: str, since: datetime) -> bool:
        row = await self._one(
            "SELECT 1 FROM notifications WHERE group_key = ? AND content_key = ?"
            " AND received_at >= ? LIMIT 1",
            group_key,
            content_key,
            self._at(since),
        )
        return row is not None

    async def open_digest(self, channel: str, joined_since: datetime) -> Digest | None:
        await self._lock_channel(channel)
        row = await self._one(_OPEN_DIGEST, channel, self._at(joined_since))
        return digest_from(row) if row else None

    async def count_opening(self, channel: str, at: datetime, window: timedelta) -> int:
        # Under the channel's lock, as the digest is: replicas count one storm together.
        await self._lock_channel(channel)
        moment = at.timestamp()
        await self._execute(
            "DELETE FROM channel_openings WHERE channel = ? AND at < ?",
            channel,
            moment - window.total_seconds(),
        )
        await self._execute(
            "INSERT INTO channel_openings (channel, at) VALUES (?, ?)", channel, moment
        )
        row = await self._one(
            "SELECT COUNT(*) FROM channel_openings WHERE channel = ? AND at <= ?", channel, moment
        )
        return int(row[0]) if row else 0

    async def create_digest(self, channel: str, at: datetime) -> Digest:
        await self._lock_channel(channel)
        row = await self._one(_CREATE_DIGEST, channel, self._at(at), self._at(at))
        assert row is not None
        return digest_from(row)

    async def touch_digest(self, digest_id: int, joined_at: datetime | None) -> None:
        await self._execute(
            "UPDATE digests SET version = version + 1,"
            " last_joined_at = COALESCE(?, last_joined_at) WHERE id = ?",
            self._at(joined_at),
            digest_id,
        )

    async def enqueue(self, incident_id: int, kind: OutboxKind, payload: str = "") -> int:
        # The incident's row is locked before the entry's id is drawn: one incident's entries
        # are committed in id order, the order the worker delivers them in.
        row = await self._one(
            f"WITH owner AS (SELECT id FROM incidents WHERE id = ?{self.FOR_UPDATE})"  # noqa: S608
            " INSERT INTO outbox (incident_id, kind, payload, created_at)"
            " SELECT id, ?, ?, ? FROM owner RETURNING id",
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
            "INSERT INTO diagnoses (incident_id, note_id, requested_at) VALUES (?, ?, ?)"
            " RETURNING id",
            incident_id,
            note_id,
            self._now(),
        )
        assert row is not None
        return int(row[0])

    async def finish_diagnosis(self, diagnosis_id: int) -> None:
        await self._execute(
            "UPDATE diagnoses SET finished_at = ? WHERE id = ?", self._now(), diagnosis_id
        )
