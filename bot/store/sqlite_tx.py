"""One SQLite write transaction of the store (its statements are `bot.store.transaction_sql`'s).

It runs on the store's connection, inside the `BEGIN IMMEDIATE` the store took: the whole file
is the transaction's until it ends, so every statement here is part of one atomic change and no
lock of its own is needed. Moments are stored as ISO 8601 text; a row's own stamps carry the
machine's offset.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import Any

import aiosqlite

from bot.store.rows import ParsedGroups
from bot.store.transaction_sql import TransactionStatements


class SQLiteTransaction(TransactionStatements):
    def __init__(
        self,
        db: aiosqlite.Connection,
        groups: ParsedGroups,
        now: Callable[[], float],
    ) -> None:
        super().__init__(groups, now)
        self._db = db

    async def _one(self, sql: str, *params: Any) -> sqlite3.Row | None:
        async with self._db.execute(sql, params) as cursor:
            row: sqlite3.Row | None = await cursor.fetchone()
            return row

    async def _execute(self, sql: str, *params: Any) -> None:
        await self._db.execute(sql, params)

    def _at(self, moment: datetime | None) -> str | None:
        return moment.isoformat() if moment is not None else None

    def _stamp(self) -> str:
        return datetime.fromtimestamp(self._now()).astimezone().isoformat()

    async def _lock_group(self, group_key: str) -> None:
        """No lock of its own: the transaction holds the whole file."""

    async def _lock_channel(self, channel: str) -> None:
        """No lock of its own: the transaction holds the whole file."""
