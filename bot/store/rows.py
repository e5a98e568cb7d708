"""Rows of the store's tables as the domain's objects: the columns read, and the mapping."""

from __future__ import annotations

import json
import sqlite3
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


def incident_from(row: sqlite3.Row) -> Incident:
    return Incident(
        id=row["id"],
        group_key=row["group_key"],
        generation=row["generation"],
        channel=row["channel"],
        channel_id=row["channel_id"],
        parent_ts=row["parent_ts"],
        status=IncidentStatus(row["status"]),
        group=AlertGroup.model_validate_json(row["group_json"]),
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
