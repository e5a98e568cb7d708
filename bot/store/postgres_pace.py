"""Slack's per-channel posting pace (`Store.take_pace`), which replicas share, on PostgreSQL: the
channel's row is locked for the read-decide-write (SQLite's write lock does that for it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.domain.pace import Bucket, take

if TYPE_CHECKING:
    from bot.store.postgres_schema import Connection


async def take_channel_pace(
    conn: Connection, channel: str, now: float, per_second: float, burst: float
) -> float:
    """`Store.take_pace` in `conn`'s transaction: the channel's row is made and locked first,
    so replicas asking for one channel take turns."""
    await conn.execute(
        "INSERT INTO channel_pace (channel, tokens, at) VALUES ($1, $2, $3)"
        " ON CONFLICT (channel) DO NOTHING",
        channel,
        burst,
        now,
    )
    row = await conn.fetchrow(
        "SELECT tokens, at FROM channel_pace WHERE channel = $1 FOR UPDATE", channel
    )
    known = Bucket(row["tokens"], row["at"]) if row else None
    bucket, pause = take(known, now, per_second, burst)
    await conn.execute(
        "UPDATE channel_pace SET tokens = $2, at = $3 WHERE channel = $1",
        channel,
        bucket.tokens,
        bucket.at,
    )
    return pause
