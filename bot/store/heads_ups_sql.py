"""Heads-ups before the alert in the store, on both backends (`bot.store.statements`): the early
warning saves how each should read, a new version each time; the writer records what Slack
shows."""

from __future__ import annotations

from typing import Any

from bot.store.records import HeadsUpRecord
from bot.store.shared_sql import Columns
from bot.store.statements import Queries

_COLUMNS = (
    "channel, runner_type, started_at, phase, view_json, updated_at, ended_at, version,"
    " shown_version, channel_id, ts"
)
RECENT_HEADS_UPS = (
    f"SELECT {_COLUMNS} FROM heads_ups WHERE channel = ?"  # noqa: S608
    " AND (ended_at IS NULL OR updated_at >= ?) ORDER BY started_at"
)
UNSHOWN_HEADS_UPS = (
    f"SELECT {_COLUMNS} FROM heads_ups WHERE shown_version < version"  # noqa: S608
    " ORDER BY updated_at"
)
SAVE_HEADS_UP = (
    "INSERT INTO heads_ups (channel, runner_type, started_at, phase, view_json, updated_at,"
    " ended_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (channel, runner_type, started_at) DO UPDATE SET phase = excluded.phase,"
    " view_json = excluded.view_json, updated_at = excluded.updated_at,"
    " ended_at = excluded.ended_at, version = heads_ups.version + 1"
)
#: Shown: the version (never lowered), and the message it is shown in.
HEADS_UP_SHOWN = (
    "UPDATE heads_ups SET shown_version = CASE WHEN shown_version > ? THEN shown_version"
    " ELSE ? END, channel_id = ?, ts = ? WHERE channel = ? AND runner_type = ? AND started_at = ?"
)


def heads_up_from(row: Columns) -> HeadsUpRecord:
    return HeadsUpRecord(
        channel=row[0],
        runner_type=row[1],
        started_at=float(row[2]),
        phase=row[3],
        view_json=row[4],
        updated_at=float(row[5]),
        ended_at=None if row[6] is None else float(row[6]),
        version=int(row[7]),
        shown_version=int(row[8]),
        channel_id=row[9],
        ts=row[10],
    )


def saved_values(record: HeadsUpRecord) -> tuple[Any, ...]:
    return (
        record.channel,
        record.runner_type,
        record.started_at,
        record.phase,
        record.view_json,
        record.updated_at,
        record.ended_at,
    )


def shown_values(record: HeadsUpRecord, channel_id: str, ts: str) -> tuple[Any, ...]:
    return (
        record.version,
        record.version,
        channel_id,
        ts,
        record.channel,
        record.runner_type,
        record.started_at,
    )


class HeadsUpQueries(Queries):
    async def heads_ups(self, channel: str, since: float) -> list[HeadsUpRecord]:
        rows = await self._database.fetch(RECENT_HEADS_UPS, channel, since)
        return [heads_up_from(row) for row in rows]

    async def save_heads_up(self, record: HeadsUpRecord) -> None:
        await self._database.write(SAVE_HEADS_UP, *saved_values(record))

    async def unshown_heads_ups(self) -> list[HeadsUpRecord]:
        return [heads_up_from(row) for row in await self._database.fetch(UNSHOWN_HEADS_UPS)]

    async def set_heads_up_shown(self, record: HeadsUpRecord, channel_id: str, ts: str) -> None:
        await self._database.write(HEADS_UP_SHOWN, *shown_values(record, channel_id, ts))
