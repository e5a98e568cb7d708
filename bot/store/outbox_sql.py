"""The Slack outbox: what is owed to Slack for each incident, delivered strictly in order per
incident, each item leased by one replica at a time and finished, deferred or failed."""

from __future__ import annotations

from bot.store.records import Due, OutboxItem, OutboxState, StoreError
from bot.store.rows import OUTBOX_COLUMNS, outbox_item_from
from bot.store.statements import Queries

#: Each incident whose first pending item is due, with when: its own time, or the end of
#: another owner's lease on it.
DUE = (
    "SELECT o.incident_id, i.group_key, GREATEST(o.not_before,"
    " CASE WHEN o.lease_owner = ? THEN 0 ELSE COALESCE(o.lease_until, 0) END)"
    " FROM outbox o JOIN incidents i ON i.id = o.incident_id"
    " WHERE o.id IN (SELECT MIN(id) FROM outbox WHERE state = 'pending'"
    " GROUP BY incident_id) ORDER BY o.id"
)


class OutboxQueries(Queries):
    async def due_incidents(self, owner: str | None = None) -> list[Due]:
        # The first pending item decides: items of one incident go out strictly in order.
        rows = await self._database.fetch(DUE, owner)
        try:
            return [Due(int(row[0]), str(row[1]), float(row[2])) for row in rows]
        except (TypeError, ValueError) as exc:
            raise StoreError(f"an outbox row cannot be read: {exc}") from exc

    async def next_item(self, incident_id: int) -> OutboxItem | None:
        rows = await self._database.fetch(
            f"SELECT {OUTBOX_COLUMNS} FROM outbox"  # noqa: S608
            " WHERE incident_id = ? AND state = 'pending' ORDER BY id LIMIT 1",
            incident_id,
        )
        return outbox_item_from(rows[0]) if rows else None

    async def has_later_update(self, incident_id: int, after_id: int) -> bool:
        rows = await self._database.fetch(
            "SELECT 1 FROM outbox WHERE incident_id = ? AND state = 'pending' AND id > ?"
            " AND kind = 'update_parent' LIMIT 1",
            incident_id,
            after_id,
        )
        return bool(rows)

    async def finish_item(
        self,
        item_id: int,
        state: OutboxState,
        error: str | None = None,
        *,
        posted_ts: str | None = None,
    ) -> None:
        # A delivered item's payload (a whole alert group, for a big group) is needed no more.
        await self._database.write(
            "UPDATE outbox SET state = ?, last_error = ?, done_at = ?, attempts = attempts + 1,"
            " lease_owner = NULL, lease_until = NULL, posted_ts = COALESCE(?, posted_ts),"
            " payload = CASE WHEN ? = 'done' THEN '' ELSE payload END WHERE id = ?",
            state.value,
            error,
            self._now(),
            posted_ts,
            state.value,
            item_id,
        )

    async def posted_ts(self, item_id: int) -> str | None:
        rows = await self._database.fetch("SELECT posted_ts FROM outbox WHERE id = ?", item_id)
        return str(rows[0][0]) if rows and rows[0][0] else None

    async def claim_item(self, item_id: int, owner: str, until: float) -> bool:
        # One UPDATE: a replica updating the same row waits for this one's commit (or SQLite's
        # write lock), then re-checks the WHERE against the row as committed.
        claimed = await self._database.write(
            "UPDATE outbox SET lease_owner = ?, lease_until = ? WHERE id = ?"
            " AND state = 'pending' AND (lease_until IS NULL OR lease_until < ?"
            " OR lease_owner = ?)",
            owner,
            until,
            item_id,
            self._now(),
            owner,
        )
        return claimed == 1

    async def release_leases(self, owner: str) -> None:
        await self._database.write(
            "UPDATE outbox SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?",
            owner,
        )

    async def defer_item(self, item_id: int, not_before: float, error: str) -> None:
        await self._database.write(
            "UPDATE outbox SET not_before = ?, last_error = ?, attempts = attempts + 1,"
            " lease_owner = NULL, lease_until = NULL WHERE id = ?",
            not_before,
            error,
            item_id,
        )

    async def outbox_stats(self) -> tuple[int, float | None]:
        rows = await self._database.fetch(
            "SELECT COUNT(*), MIN(created_at) FROM outbox WHERE state = 'pending'"
        )
        return int(rows[0][0]), rows[0][1]

    async def mark_sending(self, item_id: int, at: float) -> None:
        await self._database.write("UPDATE outbox SET sent_at = ? WHERE id = ?", at, item_id)
