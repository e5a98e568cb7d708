"""One transaction of the PostgreSQL store (its statements are `bot.store.transaction_sql`'s, the
connections `bot.store.postgres_db`'s).

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

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import asyncpg

from bot.store.postgres_db import postgres_errors
from bot.store.postgres_schema import Lock
from bot.store.rows import ParsedGroups
from bot.store.statements import numbered
from bot.store.transaction_sql import TransactionStatements

if TYPE_CHECKING:
    from bot.store.postgres_schema import Connection


class PostgresTransaction(TransactionStatements):
    FOR_UPDATE = " FOR NO KEY UPDATE"

    def __init__(
        self,
        conn: Connection,
        groups: ParsedGroups,
        now: Callable[[], float],
    ) -> None:
        super().__init__(groups, now)
        self._conn = conn

    async def _one(self, sql: str, *params: Any) -> asyncpg.Record | None:
        with postgres_errors("the store cannot be read"):
            return await self._conn.fetchrow(numbered(sql), *params)

    async def _execute(self, sql: str, *params: Any) -> None:
        with postgres_errors("the store cannot be written"):
            await self._conn.execute(numbered(sql), *params)

    def _at(self, moment: datetime | None) -> datetime | None:
        return moment

    def _stamp(self) -> datetime:
        return datetime.fromtimestamp(self._now(), UTC)

    async def _lock(self, kind: Lock, key: str) -> None:
        await self._execute("SELECT pg_advisory_xact_lock(?, hashtext(?))", int(kind), key)

    async def _lock_group(self, group_key: str) -> None:
        await self._lock(Lock.INCIDENT_GROUP, group_key)

    async def _lock_channel(self, channel: str) -> None:
        await self._lock(Lock.DIGEST_CHANNEL, channel)
