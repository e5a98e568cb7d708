"""What the SQLite store records of messages kept current in Slack: a storm digest's link,
the version it shows and who last edited it; heads-ups before the alert (their SQL is
`bot.store.heads_ups_sql`'s)."""

from __future__ import annotations

import sqlite3
from typing import Any

from bot.store import heads_ups_sql as sql
from bot.store.heads_ups_sql import heads_up_from
from bot.store.records import HeadsUpRecord


class SQLiteShown:
    """Part of `bot.store.sqlite.SQLiteStore`, which gives it its statements' runner."""

    async def _write(self, sql: str, params: tuple[Any, ...]) -> int:
        raise NotImplementedError

    async def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    async def set_digest_permalink(self, digest_id: int, permalink: str) -> None:
        await self._write("UPDATE digests SET permalink = ? WHERE id = ?", (permalink, digest_id))

    async def set_digest_shown(self, digest_id: int, version: int) -> None:
        await self._write(
            "UPDATE digests SET shown_version = MAX(shown_version, ?) WHERE id = ?",
            (version, digest_id),
        )

    async def set_digest_editor(self, digest_id: int, editor: str) -> None:
        await self._write("UPDATE digests SET editor = ? WHERE id = ?", (editor, digest_id))

    async def heads_ups(self, channel: str, since: float) -> list[HeadsUpRecord]:
        return [heads_up_from(r) for r in await self._fetch(sql.RECENT_HEADS_UPS, (channel, since))]

    async def save_heads_up(self, record: HeadsUpRecord) -> None:
        await self._write(sql.SAVE_HEADS_UP, sql.saved_values(record))

    async def unshown_heads_ups(self) -> list[HeadsUpRecord]:
        return [heads_up_from(r) for r in await self._fetch(sql.UNSHOWN_HEADS_UPS)]

    async def set_heads_up_shown(self, record: HeadsUpRecord, channel_id: str, ts: str) -> None:
        await self._write(sql.HEADS_UP_SHOWN, sql.shown_values(record, channel_id, ts))
