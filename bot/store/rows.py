"""Rows of the store's tables as the domain's objects: the columns read, and the mapping."""

from __future__ import annotations

import json
import sqlite3
from collections import OrderedDict
from datetime import datetime

from bot.domain.alerts import AlertGroup
from bot.domain.incidents import Incident, IncidentStatus
from bot.domain.silences import Silence
from bot.store.interface import Digest

INCIDENT_COLUMNS = (
    "id, group_key, generation, channel, channel_id, parent_ts, status, group_json, started_at,"
    " resolved_at, fired_count, previous_id, previous_link, version, parent_version, silence_json,"
    " digest_id, permalink"
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


def incident_from(row: sqlite3.Row, groups: ParsedGroups) -> Incident:
    return Incident(
        id=row["id"],
        group_key=row["group_key"],
        generation=row["generation"],
        channel=row["channel"],
        channel_id=row["channel_id"],
        parent_ts=row["parent_ts"],
        status=IncidentStatus(row["status"]),
        group=groups.parse(row["group_json"]),
        started_at=datetime.fromisoformat(row["started_at"]),
        resolved_at=datetime.fromisoformat(row["resolved_at"]) if row["resolved_at"] else None,
        fired_count=row["fired_count"],
        previous_id=row["previous_id"],
        previous_link=row["previous_link"],
        version=row["version"],
        parent_version=row["parent_version"],
        silence=Silence.model_validate_json(row["silence_json"]) if row["silence_json"] else None,
        digest_id=row["digest_id"],
        permalink=row["permalink"],
    )


def digest_from(row: sqlite3.Row) -> Digest:
    return Digest(
        id=row["id"],
        channel=row["channel"],
        channel_id=row["channel_id"],
        ts=row["ts"],
        opened_at=datetime.fromisoformat(row["opened_at"]),
        last_joined_at=datetime.fromisoformat(row["last_joined_at"]),
        version=row["version"],
        shown_version=row["shown_version"],
        pages=tuple(json.loads(row["pages_json"])),
        permalink=row["permalink"],
    )


DIGEST_COLUMNS = (
    "id, channel, channel_id, ts, opened_at, last_joined_at, version, shown_version, pages_json,"
    " permalink"
)
