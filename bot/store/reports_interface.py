"""The part of the store's interface the capacity report uses: a window's jobs, whole, and the
scheduled reports (one per slot, whoever composes it, posted once)."""

from __future__ import annotations

from typing import Protocol

from bot.store.records import JobSpan, ReportRecord


class ReportStore(Protocol):
    async def job_spans(self, since: float, until: float) -> list[JobSpan]:
        """Jobs created within [since, until), oldest first, with what is known of each."""
        ...

    async def save_report(self, record: ReportRecord) -> bool:
        """Keep `record` unless its slot has a report already; whether it was kept."""
        ...

    async def report(self, slot: str) -> ReportRecord | None: ...

    async def unposted_reports(self) -> list[ReportRecord]:
        """Reports not yet posted, the earliest due first."""
        ...

    async def set_report_sent(self, slot: str, at: float) -> None:
        """A post of the report is going to Slack now (its outcome may never be known)."""
        ...

    async def set_report_posted(self, slot: str, channel_id: str, ts: str) -> None: ...

    async def prune_reports(self, before: float) -> int:
        """Forget the posted reports due before `before`; how many."""
        ...
