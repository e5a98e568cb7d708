"""Heads-ups before the alert in the store, written once with `?` placeholders for both
backends (`bot.store.shared_sql.numbered` numbers them for PostgreSQL)."""

from __future__ import annotations

from typing import Any

from bot.store.interface import HeadsUpRecord
from bot.store.shared_sql import Columns

RECENT_HEADS_UPS = (
    "SELECT channel, runner_type, started_at, phase, channel_id, ts, shown_at, ended_at"
    " FROM heads_ups WHERE channel = ? AND (ended_at IS NULL OR shown_at >= ?)"
    " ORDER BY started_at"
)
SAVE_HEADS_UP = (
    "INSERT INTO heads_ups (channel, runner_type, started_at, phase, channel_id, ts, shown_at,"
    " ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (channel, runner_type, started_at) DO UPDATE SET phase = excluded.phase,"
    " channel_id = excluded.channel_id, ts = excluded.ts, shown_at = excluded.shown_at,"
    " ended_at = excluded.ended_at"
)


def heads_up_from(row: Columns) -> HeadsUpRecord:
    return HeadsUpRecord(
        channel=row[0],
        runner_type=row[1],
        started_at=float(row[2]),
        phase=row[3],
        channel_id=row[4],
        ts=row[5],
        shown_at=float(row[6]),
        ended_at=None if row[7] is None else float(row[7]),
    )


def heads_up_values(record: HeadsUpRecord) -> tuple[Any, ...]:
    return (
        record.channel,
        record.runner_type,
        record.started_at,
        record.phase,
        record.channel_id,
        record.ts,
        record.shown_at,
        record.ended_at,
    )
