"""Retention on SQLite: one pass of `bot.store.retention_sql` in the caller's write
transaction, the incidents it takes held in a temporary table."""

from __future__ import annotations

from datetime import UTC, datetime

import aiosqlite

from bot.store.records import Pruned
from bot.store.retention_sql import BATCH, prune_pass


async def prune_before(db: aiosqlite.Connection, before: float, now: float) -> Pruned:
    """One pass of retention at cut-off `before` (Unix seconds), in the caller's transaction;
    remembered keys expired by `now` go too."""

    async def removed(sql: str, *params: object) -> int:
        cursor = await db.execute(sql, params)
        return max(cursor.rowcount, 0)

    # Incident and notification times are UTC ISO 8601 text, which sorts as time does.
    cutoff = datetime.fromtimestamp(before, UTC).isoformat()
    await db.execute("CREATE TEMP TABLE IF NOT EXISTS pruned_incidents (id INTEGER PRIMARY KEY)")
    await db.execute("DELETE FROM pruned_incidents")
    took = await removed(
        "INSERT INTO pruned_incidents (id) SELECT i.id FROM incidents i"
        " WHERE i.status = 'resolved' AND i.resolved_at < ?"
        " AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.incident_id = i.id"
        " AND o.state = 'pending') LIMIT ?",
        cutoff,
        BATCH,
    )

    taken = "IN (SELECT id FROM pruned_incidents)" if took else None
    return await prune_pass(removed, taken, (), cutoff, before, now)
