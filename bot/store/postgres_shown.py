"""What the PostgreSQL store records of messages kept current in Slack: a storm digest's link,
the version it shows and who last edited it; heads-ups before the alert (their SQL is
`bot.store.heads_ups_sql`'s)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import asyncpg

from bot.store import heads_ups_sql as sql
from bot.store.heads_ups_sql import heads_up_from
from bot.store.records import HeadsUpRecord
from bot.store.shared_sql import numbered


class PostgresShown:
    """Part of `bot.store.postgres.PostgresStore`, which gives it its statements' runner."""

    _write: Callable[..., Awaitable[int]]
    _fetch: Callable[..., Awaitable[list[asyncpg.Record]]]

    async def set_digest_permalink(self, digest_id: int, permalink: str) -> None:
        await self._write("UPDATE digests SET permalink = $1 WHERE id = $2", permalink, digest_id)

    async def set_digest_shown(self, digest_id: int, version: int) -> None:
        await self._write(
            "UPDATE digests SET shown_version = GREATEST(shown_version, $1) WHERE id = $2",
            version,
            digest_id,
        )

    async def set_digest_editor(self, digest_id: int, editor: str) -> None:
        await self._write("UPDATE digests SET editor = $1 WHERE id = $2", editor, digest_id)

    async def heads_ups(self, channel: str, since: float) -> list[HeadsUpRecord]:
        rows = await self._fetch(numbered(sql.RECENT_HEADS_UPS), channel, since)
        return [heads_up_from(row) for row in rows]

    async def save_heads_up(self, record: HeadsUpRecord) -> None:
        await self._write(numbered(sql.SAVE_HEADS_UP), *sql.saved_values(record))

    async def unshown_heads_ups(self) -> list[HeadsUpRecord]:
        return [heads_up_from(r) for r in await self._fetch(numbered(sql.UNSHOWN_HEADS_UPS))]

    async def set_heads_up_shown(self, record: HeadsUpRecord, channel_id: str, ts: str) -> None:
        await self._write(numbered(sql.HEADS_UP_SHOWN), *sql.shown_values(record, channel_id, ts))
