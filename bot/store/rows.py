"""Rows of the store's tables as the domain's objects: the columns read, and the mapping.

Both backends' rows go through here: SQLite's `sqlite3.Row` and asyncpg's `Record` are read by
column name alike. SQLite keeps moments as ISO 8601 text, PostgreSQL as `timestamptz`, which
asyncpg hands over as datetimes already.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from datetime import datetime
from typing import Any, Protocol

from bot.domain.alerts import AlertGroup
from bot.domain.incidents import Incident, IncidentStatus
from bot.domain.silences import Silence
from bot.store.records import Digest, OutboxItem, OutboxKind, StoreError


class Row(Protocol):
    """A row read by column name."""

    def __getitem__(self, key: str, /) -> Any: ...


def _moment(value: str | datetime) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


INCIDENT_COLUMNS = (
    "id, group_key, generation, channel, channel_id, parent_ts, status, group_json, started_at,"
    " resolved_at, fired_count, previous_id, previous_link, version, parent_version, silence_json,"
    " digest_id, permalink"
)

#: An incident routed to one channel: posted there, or (not posted yet) addressed by its id or
#: by a name under which an incident was posted there; any when the channel is NULL. The one
#: parameter four times (the cast lets PostgreSQL type a NULL).
_IN_CHANNEL = (
    "(CAST(? AS TEXT) IS NULL OR channel_id = ? OR (channel_id IS NULL AND (channel = ?"
    " OR channel IN (SELECT i.channel FROM incidents i WHERE i.channel_id = ?))))"
)
#: Firing incidents with a silence queuebot made, of a channel (four times), oldest first.
SILENCED_INCIDENTS = (
    f"SELECT {INCIDENT_COLUMNS} FROM incidents"  # noqa: S608 - no value is formatted in
    f" WHERE silence_json IS NOT NULL AND status = 'firing' AND {_IN_CHANNEL} ORDER BY id"
)
#: The latest firing incidents of a channel (four times), with how many in all; then a limit.
FIRING_INCIDENTS = (
    f"SELECT {INCIDENT_COLUMNS}, COUNT(*) OVER () AS total FROM incidents"  # noqa: S608
    f" WHERE status = 'firing' AND {_IN_CHANNEL} ORDER BY started_at DESC, id DESC LIMIT ?"
)

#: A request or delivery seen for the first time: inserted, or an expired memory of it renewed
#: (one row changed); one still remembered changes none. Key, expiry, now.
#: Whether a key is remembered now (not past its expiry).
REMEMBERED = "SELECT 1 FROM seen_requests WHERE key = ? AND expires_at >= ?"
FIRST_SEEN = (
    "INSERT INTO seen_requests (key, expires_at) VALUES (?, ?) ON CONFLICT (key) DO UPDATE"
    " SET expires_at = excluded.expires_at WHERE seen_requests.expires_at < ?"
)
#: Remembered keys past their expiry, a batch at a time.
PRUNE_SEEN = (
    "DELETE FROM seen_requests WHERE key IN (SELECT key FROM seen_requests WHERE expires_at < ?"
    " LIMIT ?)"
)
#: Heads-ups that ended before the cut-off and whose last version is shown, a batch at a time.
PRUNE_HEADS_UPS = (
    "DELETE FROM heads_ups WHERE (channel, runner_type, started_at) IN"
    " (SELECT channel, runner_type, started_at FROM heads_ups WHERE ended_at IS NOT NULL"
    " AND ended_at < ? AND shown_version >= version LIMIT ?)"
)


class ParsedGroups:
    """Big alert groups, parsed once.

    Validating the stored JSON of a group of thousands of alerts takes a tenth of a second, in
    one call that holds the interpreter, and an incident is read again for every delivery. A
    group written or read once is kept, keyed by its JSON text, so reading it again costs a
    dictionary lookup; being keyed by content, it can never be stale. Small groups are parsed
    each time (it is cheap); at most MAX_ALERTS alerts are kept, the least recently used let go.
    """

    MIN_LENGTH = 64 * 1024
    MAX_ALERTS = 30_000

    def __init__(self) -> None:
        self._groups: OrderedDict[str, AlertGroup] = OrderedDict()
        self._alerts = 0

    def parse(self, text: str) -> AlertGroup:
        if len(text) < self.MIN_LENGTH:
            return AlertGroup.model_validate_json(text)
        found = self._groups.get(text)
        if found is None:
            found = AlertGroup.model_validate_json(text)
            self.remember(text, found)
        else:
            self._groups.move_to_end(text)
        return found

    def remember(self, text: str, group: AlertGroup) -> None:
        """`text` is `group`'s JSON, just written: reading it back needs no parse."""
        if len(text) < self.MIN_LENGTH or text in self._groups:
            return
        self._groups[text] = group
        self._alerts += len(group.alerts)
        while self._alerts > self.MAX_ALERTS and len(self._groups) > 1:
            _, dropped = self._groups.popitem(last=False)
            self._alerts -= len(dropped.alerts)


def incident_from(row: Row, groups: ParsedGroups) -> Incident:
    return Incident(
        id=row["id"],
        group_key=row["group_key"],
        generation=row["generation"],
        channel=row["channel"],
        channel_id=row["channel_id"],
        parent_ts=row["parent_ts"],
        status=IncidentStatus(row["status"]),
        group=groups.parse(row["group_json"]),
        started_at=_moment(row["started_at"]),
        resolved_at=_moment(row["resolved_at"]) if row["resolved_at"] else None,
        fired_count=row["fired_count"],
        previous_id=row["previous_id"],
        previous_link=row["previous_link"],
        version=row["version"],
        parent_version=row["parent_version"],
        silence=Silence.model_validate_json(row["silence_json"]) if row["silence_json"] else None,
        digest_id=row["digest_id"],
        permalink=row["permalink"],
    )


def digest_from(row: Row) -> Digest:
    return Digest(
        id=row["id"],
        channel=row["channel"],
        channel_id=row["channel_id"],
        ts=row["ts"],
        opened_at=_moment(row["opened_at"]),
        last_joined_at=_moment(row["last_joined_at"]),
        version=row["version"],
        shown_version=row["shown_version"],
        pages=tuple(json.loads(row["pages_json"])),
        permalink=row["permalink"],
        editor=row["editor"],
    )


DIGEST_COLUMNS = (
    "id, channel, channel_id, ts, opened_at, last_joined_at, version, shown_version, pages_json,"
    " permalink, editor"
)


OUTBOX_COLUMNS = "id, incident_id, kind, payload, attempts, not_before, sent_at, created_at"


def outbox_item_from(row: Row) -> OutboxItem:
    try:
        return OutboxItem(
            id=row["id"],
            incident_id=row["incident_id"],
            kind=OutboxKind(row["kind"]),
            payload=row["payload"],
            attempts=row["attempts"],
            not_before=float(row["not_before"]),
            sent_at=row["sent_at"],
            created_at=row["created_at"],
        )
    except (TypeError, ValueError) as exc:
        raise StoreError(f"outbox row {row['id']} cannot be read: {exc}") from exc
