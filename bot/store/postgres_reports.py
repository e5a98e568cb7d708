"""The capacity report's part of the PostgreSQL store (its SQL is `bot.store.reports_sql`'s)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

import asyncpg

from bot.store import reports_sql as sql
from bot.store.records import JobSpan, ReportRecord
from bot.store.shared_sql import numbered

if TYPE_CHECKING:
    from bot.store.postgres_schema import Connection

#: Rows of job history fetched at a time.
SPANS_CHUNK = 5000


class PostgresReports:
    """Part of `bot.store.postgres.PostgresStore`, which gives it its statements' runner."""

    _write: Callable[..., Awaitable[int]]
    _fetch: Callable[..., Awaitable[list[asyncpg.Record]]]
    _connection: Callable[..., AbstractAsyncContextManager[Connection]]

    async def job_spans(self, since: float, until: float) -> list[JobSpan]:
        # Weeks of jobs, a chunk at a time: between chunks the event loop serves webhooks
        # (decoding a million rows at once would hold it for seconds).
        spans: list[JobSpan] = []
        async with self._connection("the store cannot be read", jobs=True) as conn:
            cursor = conn.cursor(numbered(sql.JOB_SPANS), since, until, prefetch=SPANS_CHUNK)
            async for row in cursor:
                spans.append(sql.job_span(row))
        return spans

    async def save_report(self, record: ReportRecord) -> bool:
        return await self._write(numbered(sql.SAVE_REPORT), *sql.report_values(record)) > 0

    async def report(self, slot: str) -> ReportRecord | None:
        rows = await self._fetch(numbered(sql.REPORT), slot)
        return sql.report_from(rows[0]) if rows else None

    async def unposted_reports(self) -> list[ReportRecord]:
        return [sql.report_from(row) for row in await self._fetch(numbered(sql.UNPOSTED_REPORTS))]

    async def set_report_sent(self, slot: str, at: float) -> None:
        await self._write(numbered(sql.REPORT_SENT), at, slot)

    async def set_report_posted(self, slot: str, channel_id: str, ts: str) -> None:
        await self._write(numbered(sql.REPORT_POSTED), channel_id, ts, slot)

    async def prune_reports(self, before: float) -> int:
        return await self._write(numbered(sql.PRUNE_REPORTS), before)
