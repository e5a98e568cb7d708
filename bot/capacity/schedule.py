"""The weekly capacity reports: at each post's scheduled moment, the report is composed and
saved in the store for its slot (channel and moment); `bot.delivery.report` posts it.

Once per slot: of several replicas, only the one holding the leader lease composes, and should
two compose at once (a lease that changed hands mid-way), the store keeps the first report of a
slot and refuses the second. A restart finds the slot's report saved and composes nothing. A bot
that was down at the moment composes on starting again within `LATE_SECONDS`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable

from bot.capacity.report import CapacityReporter
from bot.capacity.settings import LATE_SECONDS
from bot.domain.clock import SYSTEM, Clock
from bot.store import ReportRecord, Store
from bot.telemetry.passes import PassRecord

log = logging.getLogger(__name__)

SCHEDULE_ROLE = "capacity-reports"
#: How often the schedule is looked at.
CHECK_SECONDS = 60.0


class WeeklyReports:
    def __init__(
        self,
        store: Store,
        reporter: CapacityReporter,
        *,
        on_saved: Callable[[], None] = lambda: None,
        clock: Clock = SYSTEM,
        record: PassRecord | None = None,
    ) -> None:
        self._store = store
        #: How its passes have gone (for /healthz and /metrics); a pass is a look at the
        #: schedule by the replica that holds the lease.
        self.record = record or PassRecord("capacity report schedule")
        self._reporter = reporter
        self._on_saved = on_saved
        self._clock = clock
        self._owner = uuid.uuid4().hex

    async def run(self, interval: float = CHECK_SECONDS) -> None:
        """Look at the schedule every `interval` seconds until cancelled; never fatal."""
        while True:
            try:
                # Held for long enough to compose a report (seconds; minutes for a huge fleet).
                if await self._store.lead(
                    SCHEDULE_ROLE, self._owner, self._clock.time() + 10 * interval
                ):
                    await self.check()
                    self.record.succeeded()
            except Exception:
                self.record.failed()
                log.exception("the capacity report schedule failed; trying again")
            await asyncio.sleep(interval)

    async def check(self) -> list[str]:
        """Compose and save the report of every slot due and not saved yet; the slots saved."""
        now = self._clock.now()
        due = []
        for post in self._reporter.settings.posts:
            moment = post.due(now)
            slot = post.slot(moment)
            if (now - moment).total_seconds() > LATE_SECONDS:
                continue
            if await self._store.report(slot) is None:
                due.append((post.channel, moment.timestamp(), slot, post.orgs or None))
        if not due:
            return []
        # One report for each set of organizations the posts due ask for.
        reports = {orgs: await self._reporter.compose(orgs=orgs) for *_, orgs in due}
        saved = []
        for channel, due_at, slot, orgs in due:
            composed = reports[orgs]
            record = ReportRecord(
                slot=slot,
                channel=channel,
                due_at=due_at,
                view_json=composed.report.to_json(),
                chart=composed.chart,
                created_at=now.timestamp(),
            )
            if await self._store.save_report(record):
                log.info("capacity report composed for %s", slot)
                saved.append(slot)
        if saved:
            self._on_saved()
        return saved
