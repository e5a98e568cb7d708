"""The capacity report's part of the SQLite store (its SQL is `bot.store.reports_sql`'s)."""

from __future__ import annotations

import sqlite3
from typing import Any

from bot.store import reports_sql as sql
from bot.store.records import JobSpan, ReportRecord


class SQLiteReports:
    """Part of `bot.store.sqlite.SQLiteStore`, which gives it its statements' runner."""

    async def _write(self, sql: str, params: tuple[Any, ...]) -> int:
        raise NotImplementedError

    async def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        raise NotImplementedError

    async def job_spans(self, since: float, until: float) -> list[JobSpan]:
        return [sql.job_span(row) for row in await self._fetch(sql.JOB_SPANS, (since, until))]

    async def save_report(self, record: ReportRecord) -> bool:
        return await self._write(sql.SAVE_REPORT, sql.report_values(record)) > 0

    async def report(self, slot: str) -> ReportRecord | None:
        rows = await self._fetch(sql.REPORT, (slot,))
        return sql.report_from(rows[0]) if rows else None

    async def unposted_reports(self) -> list[ReportRecord]:
        return [sql.report_from(row) for row in await self._fetch(sql.UNPOSTED_REPORTS)]

    async def set_report_sent(self, slot: str, at: float) -> None:
        await self._write(sql.REPORT_SENT, (at, slot))

    async def set_report_posted(self, slot: str, channel_id: str, ts: str) -> None:
        await self._write(sql.REPORT_POSTED, (channel_id, ts, slot))

    async def prune_reports(self, before: float) -> int:
        return await self._write(sql.PRUNE_REPORTS, (before,))
