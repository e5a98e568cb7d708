"""Retention's statements, written once for both backends (`?` placeholders, see
`bot.store.statements`): what one pass removes, inside one write transaction.

Older than the cut-off, and no longer needed by anything still running:
- resolved incidents with nothing left to deliver, with their outbox entries, claims,
  diagnostics runs and notifications (a later incident's link to one is dropped);
- delivered or abandoned outbox entries of the incidents that stay (an unfinished diagnostics
  run's notice stays: its report replaces it);
- notifications, and the bodies no remaining notification refers to;
- storm digests none of whose incidents remain;
- claims that lapsed; remembered request keys that expired; heads-ups long ended.

Which incidents a pass takes is the backend's own (a temporary table on SQLite; on PostgreSQL
a list, the rows locked with `FOR UPDATE SKIP LOCKED`): it hands the condition that picks them.
A pass takes at most `BATCH` incidents, so that a pass is one short transaction; the caller
repeats until a pass removes nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bot.store.records import Pruned
from bot.store.rows import PRUNE_HEADS_UPS, PRUNE_SEEN

BATCH = 2000

#: What goes with the incidents a pass takes, in this order: each statement, with the column
#: that holds an incident's id.
_TAKEN = (
    ("UPDATE incidents SET previous_id = NULL WHERE {}", "previous_id"),
    ("DELETE FROM diagnoses WHERE {}", "incident_id"),
    ("DELETE FROM claims WHERE {}", "incident_id"),
    ("DELETE FROM outbox WHERE {}", "incident_id"),
    ("DELETE FROM notifications WHERE {}", "incident_id"),
    ("DELETE FROM incidents WHERE {}", "id"),
)

#: Runs one statement in the pass's transaction; the rows it changed.
Removes = Callable[..., Awaitable[int]]


async def prune_pass(
    removed: Removes,
    taken: str | None,
    params: tuple[Any, ...],
    cutoff: Any,
    before: float,
    now: float,
) -> Pruned:
    """One pass at cut-off `before` (Unix seconds; `cutoff` the same moment as incident and
    notification times are stored); remembered keys expired by `now` go too. `taken` is what
    follows a column holding an incident's id for it to be one the pass took (with `params`,
    e.g. `IN (SELECT id FROM …)` or `= ANY(?)`), None where it took none."""
    incidents = outbox = notifications = 0
    if taken is not None:
        counts = [await removed(sql.format(f"{column} {taken}"), *params) for sql, column in _TAKEN]
        outbox, notifications, incidents = counts[-3:]
    await removed("DELETE FROM diagnoses WHERE finished_at IS NOT NULL AND finished_at < ?", before)
    outbox += await removed(
        "DELETE FROM outbox WHERE id IN (SELECT o.id FROM outbox o WHERE o.state != 'pending'"
        " AND o.done_at < ? AND NOT EXISTS (SELECT 1 FROM diagnoses d WHERE d.note_id = o.id)"
        " LIMIT ?)",
        before,
        BATCH * 10,
    )
    notifications += await removed(
        "DELETE FROM notifications WHERE id IN (SELECT id FROM notifications"
        " WHERE received_at < ? LIMIT ?)",
        cutoff,
        BATCH * 10,
    )
    bodies = await removed(
        "DELETE FROM notification_bodies WHERE NOT EXISTS (SELECT 1 FROM notifications n"
        " WHERE n.body_sha256 = notification_bodies.sha256)",
    )
    digests = await removed(
        "DELETE FROM digests WHERE last_joined_at < ? AND NOT EXISTS"
        " (SELECT 1 FROM incidents i WHERE i.digest_id = digests.id)",
        cutoff,
    )
    await removed("DELETE FROM claims WHERE until < ?", before)
    return Pruned(
        seen=await removed(PRUNE_SEEN, now, BATCH * 10),
        heads_ups=await removed(PRUNE_HEADS_UPS, before, BATCH * 10),
        incidents=incidents,
        notifications=notifications,
        bodies=bodies,
        outbox=outbox,
        digests=digests,
    )
