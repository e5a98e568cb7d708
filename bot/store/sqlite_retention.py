"""Retention on SQLite: what one pass removes, inside one write transaction.

Older than the cut-off, and no longer needed by anything still running:
- resolved incidents with nothing left to deliver, with their outbox entries, claims,
  diagnostics runs and notifications (a later incident's link to one is dropped);
- delivered or abandoned outbox entries of the incidents that stay (an unfinished diagnostics
  run's notice stays: its report replaces it);
- notifications, and the bodies no remaining notification refers to;
- storm digests none of whose incidents remain;
- claims that lapsed.

A pass takes at most `BATCH` incidents, so that the write lock is never held for long; the
caller repeats until a pass removes nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime

import aiosqlite

from bot.store.records import Pruned
from bot.store.rows import PRUNE_HEADS_UPS, PRUNE_SEEN

BATCH = 2000


async def _changed(db: aiosqlite.Connection, sql: str, params: tuple[object, ...] = ()) -> int:
    cursor = await db.execute(sql, params)
    return max(cursor.rowcount, 0)


async def prune_before(db: aiosqlite.Connection, before: float, now: float) -> Pruned:
    """One pass of retention at cut-off `before` (Unix seconds), in the caller's transaction;
    remembered keys expired by `now` go too."""
    # Incident and notification times are UTC ISO 8601 text, which sorts as time does.
    cutoff = datetime.fromtimestamp(before, UTC).isoformat()
    await db.execute("CREATE TEMP TABLE IF NOT EXISTS pruned_incidents (id INTEGER PRIMARY KEY)")
    await db.execute("DELETE FROM pruned_incidents")
    await db.execute(
        "INSERT INTO pruned_incidents (id) SELECT i.id FROM incidents i"
        " WHERE i.status = 'resolved' AND i.resolved_at < ?"
        " AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.incident_id = i.id"
        " AND o.state = 'pending') LIMIT ?",
        (cutoff, BATCH),
    )
    gone = "(SELECT id FROM pruned_incidents)"
    await db.execute(
        f"UPDATE incidents SET previous_id = NULL WHERE previous_id IN {gone}"  # noqa: S608
    )
    await db.execute(f"DELETE FROM diagnoses WHERE incident_id IN {gone}")  # noqa: S608
    await db.execute(f"DELETE FROM claims WHERE incident_id IN {gone}")  # noqa: S608
    outbox = await _changed(db, f"DELETE FROM outbox WHERE incident_id IN {gone}")  # noqa: S608
    notifications = await _changed(
        db,
        f"DELETE FROM notifications WHERE incident_id IN {gone}",  # noqa: S608
    )
    incidents = await _changed(db, f"DELETE FROM incidents WHERE id IN {gone}")  # noqa: S608

    await db.execute(
        "DELETE FROM diagnoses WHERE finished_at IS NOT NULL AND finished_at < ?", (before,)
    )
    outbox += await _changed(
        db,
        "DELETE FROM outbox WHERE id IN (SELECT o.id FROM outbox o WHERE o.state != 'pending'"
        " AND o.done_at < ? AND NOT EXISTS (SELECT 1 FROM diagnoses d WHERE d.note_id = o.id)"
        " LIMIT ?)",
        (before, BATCH * 10),
    )
    notifications += await _changed(
        db,
        "DELETE FROM notifications WHERE id IN (SELECT id FROM notifications"
        " WHERE received_at < ? LIMIT ?)",
        (cutoff, BATCH * 10),
    )
    bodies = await _changed(
        db,
        "DELETE FROM notification_bodies WHERE NOT EXISTS (SELECT 1 FROM notifications n"
        " WHERE n.body_sha256 = notification_bodies.sha256)",
    )
    digests = await _changed(
        db,
        "DELETE FROM digests WHERE last_joined_at < ? AND NOT EXISTS"
        " (SELECT 1 FROM incidents i WHERE i.digest_id = digests.id)",
        (cutoff,),
    )
    await db.execute("DELETE FROM claims WHERE until < ?", (before,))
    seen = await _changed(db, PRUNE_SEEN, (now, BATCH * 10))
    heads_ups = await _changed(db, PRUNE_HEADS_UPS, (before, BATCH * 10))
    return Pruned(
        seen=seen,
        heads_ups=heads_ups,
        incidents=incidents,
        notifications=notifications,
        bodies=bodies,
        outbox=outbox,
        digests=digests,
    )
