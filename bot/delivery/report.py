"""Posting the weekly capacity reports the schedule saved: each once, in its channel, with the
chart of the busiest runner types (uploaded privately, shown in the message's image block).

Of several replicas, only the one holding the writer's leader lease posts. When a post went to
Slack but its answer was lost (or the bot died before storing it), the next attempt first looks
for the message in the channel by its metadata (the report's slot moment) and adopts it instead
of posting again; only a channel given by `#name` whose id the bot has never learnt is posted to
again in that case.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from bot.delivery.leading import lead_and_pass
from bot.delivery.pacing import Pacer
from bot.delivery.recovery import CLOCK_SLACK_SECONDS, known_channel_id
from bot.domain.capacity import CAPACITY_CHART_TITLE, CapacityReport
from bot.domain.clock import SYSTEM, Clock
from bot.domain.timings import Timings
from bot.render.renderer import Renderer
from bot.slack.errors import SlackError, SlackRejected
from bot.slack.gateway import SlackGateway
from bot.slack.message import ChartFile
from bot.store import ReportRecord, Store
from bot.telemetry.passes import PassRecord

log = logging.getLogger(__name__)

REPORT_EVENT = "queuebot_capacity_report"
REPORT_WRITER_ROLE = "capacity-report-writer"


class ReportWriter:
    def __init__(
        self,
        store: Store,
        slack: SlackGateway,
        renderer: Renderer,
        pacer: Pacer,
        *,
        poll: float = Timings().report_poll,
        record: PassRecord | None = None,
        clock: Clock = SYSTEM,
    ) -> None:
        self._clock = clock
        self._store = store
        #: How its passes have gone (for /healthz and /metrics).
        self.record = record or PassRecord("capacity report writer")
        self._poll = poll
        self._slack = slack
        self._renderer = renderer
        self._pacer = pacer
        self._owner = uuid.uuid4().hex
        self._wakeup = asyncio.Event()

    def wake(self) -> None:
        self._wakeup.set()

    async def run(self) -> None:
        """Post what is unposted until cancelled; a failed pass is tried again, never fatal."""
        await lead_and_pass(
            self._store,
            REPORT_WRITER_ROLE,
            self._owner,
            self._wakeup,
            self._poll,
            self.post_unposted,
            self.record,
            self._clock,
        )

    async def post_unposted(self) -> None:
        for record in await self._store.unposted_reports():
            try:
                await self._post(record)
            except SlackError as exc:
                log.warning("capacity report not posted (%s): %s", record.slot, exc)

    async def _post(self, record: ReportRecord) -> None:
        carrying = {"due": int(record.due_at)}
        if record.sent_at is not None:
            channel_id = await known_channel_id(self._store, record.channel)
            if channel_id is not None:
                found = await self._slack.find_posted(
                    channel_id,
                    REPORT_EVENT,
                    carrying,
                    oldest=record.sent_at - CLOCK_SLACK_SECONDS,
                )
                if found is not None:
                    log.info("capacity report %s was posted already; adopted", record.slot)
                    await self._store.set_report_posted(record.slot, channel_id, found)
                    return
        view = CapacityReport.from_json(record.view_json)
        chart = await self._chart(record, view)
        await self._pacer.wait(record.channel)
        for shown in (chart, None) if chart else (None,):
            message = self._renderer.capacity_report(view, chart=shown)
            await self._store.set_report_sent(record.slot, self._clock.time())
            try:
                posted = await self._slack.post_message(
                    record.channel,
                    message,
                    metadata={"event_type": REPORT_EVENT, "event_payload": carrying},
                )
            except SlackRejected as exc:
                if shown is None or exc.error not in ("invalid_blocks", "invalid_arguments"):
                    raise
                # A chart Slack has not finished processing: the report goes without it.
                log.warning("capacity report refused with its chart: %s", exc)
                continue
            await self._store.set_report_posted(record.slot, posted.channel_id, posted.ts)
            log.info("capacity report posted (%s)", record.slot)
            return

    async def _chart(self, record: ReportRecord, view: CapacityReport) -> ChartFile | None:
        if record.chart is None:
            return None
        try:
            return await self._slack.private_image(
                record.chart,
                filename="capacity.png",
                title=CAPACITY_CHART_TITLE,
                alt_text=view.chart_alt(),
            )
        except SlackError as exc:
            log.warning("capacity chart not uploaded: %s", exc)
            return None
