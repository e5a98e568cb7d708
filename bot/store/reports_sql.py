"""The capacity report's part of the store, on both backends (`bot.store.statements`): the jobs
of a window, whole (each backend reads them its own way), and the scheduled reports, saved once
per slot and marked as Slack shows them."""

from __future__ import annotations

from bot.store.records import JobSpan, ReportRecord
from bot.store.shared_sql import Columns
from bot.store.statements import Queries

#: Jobs created in [?, ?), held for an environment's approval left out (not queueing).
JOB_SPANS = (
    "SELECT runner_type, repository, workflow, created_at, started_at, completed_at,"
    " left_queue_at, conclusion FROM jobs"
    " WHERE created_at >= ? AND created_at < ? AND status != 'waiting' ORDER BY created_at"
)

_COLUMNS = "slot, channel, due_at, view_json, chart, created_at, sent_at, channel_id, ts"
#: The first replica to save a slot's report wins; a later save of the same slot changes nothing.
SAVE_REPORT = (
    "INSERT INTO reports (slot, channel, due_at, view_json, chart, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (slot) DO NOTHING"
)
REPORT = f"SELECT {_COLUMNS} FROM reports WHERE slot = ?"  # noqa: S608
UNPOSTED_REPORTS = f"SELECT {_COLUMNS} FROM reports WHERE ts IS NULL ORDER BY due_at"  # noqa: S608
REPORT_SENT = "UPDATE reports SET sent_at = ? WHERE slot = ? AND ts IS NULL"
REPORT_POSTED = "UPDATE reports SET channel_id = ?, ts = ? WHERE slot = ?"
#: Posted reports due before ? (an unposted one is kept until it is posted).
PRUNE_REPORTS = "DELETE FROM reports WHERE due_at < ? AND ts IS NOT NULL"


def job_span(row: Columns) -> JobSpan:
    return JobSpan(
        runner_type=row[0],
        repository=row[1],
        workflow=row[2],
        created_at=float(row[3]),
        started_at=None if row[4] is None else float(row[4]),
        completed_at=None if row[5] is None else float(row[5]),
        left_queue_at=None if row[6] is None else float(row[6]),
        conclusion=row[7],
    )


def report_from(row: Columns) -> ReportRecord:
    return ReportRecord(
        slot=row[0],
        channel=row[1],
        due_at=float(row[2]),
        view_json=row[3],
        chart=None if row[4] is None else bytes(row[4]),
        created_at=float(row[5]),
        sent_at=None if row[6] is None else float(row[6]),
        channel_id=row[7],
        ts=row[8],
    )


def report_values(record: ReportRecord) -> tuple[object, ...]:
    return (
        record.slot,
        record.channel,
        record.due_at,
        record.view_json,
        record.chart,
        record.created_at,
    )


class ReportQueries(Queries):
    async def save_report(self, record: ReportRecord) -> bool:
        return await self._database.write(SAVE_REPORT, *report_values(record)) > 0

    async def report(self, slot: str) -> ReportRecord | None:
        rows = await self._database.fetch(REPORT, slot)
        return report_from(rows[0]) if rows else None

    async def unposted_reports(self) -> list[ReportRecord]:
        return [report_from(row) for row in await self._database.fetch(UNPOSTED_REPORTS)]

    async def set_report_sent(self, slot: str, at: float) -> None:
        await self._database.write(REPORT_SENT, at, slot)

    async def set_report_posted(self, slot: str, channel_id: str, ts: str) -> None:
        await self._database.write(REPORT_POSTED, channel_id, ts, slot)

    async def prune_reports(self, before: float) -> int:
        return await self._database.write(PRUNE_REPORTS, before)
