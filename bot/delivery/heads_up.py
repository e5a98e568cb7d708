"""Showing heads-ups before the alert in Slack: each heads-up the early warning saved (a new
version of how it should read) is posted once, then edited in place; one that ends because the
alert's threshold was crossed also gets a reply in the alert's thread pointing back to it.

Of several replicas, only the one holding the writer's leader lease writes, so a heads-up is
posted once; a version whose write failed stays unshown and is tried again at the next pass.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import UTC, datetime

from bot.delivery.leading import lead_and_pass
from bot.delivery.pacing import Pacer
from bot.delivery.recovery import CLOCK_SLACK_SECONDS, known_channel_id
from bot.domain.clock import SYSTEM, Clock
from bot.domain.heads_up import HeadsUpView, Phase
from bot.domain.timings import Timings
from bot.render.mrkdwn import date_token, inert, safe_url
from bot.render.renderer import Renderer
from bot.slack.errors import SlackAuthError, SlackChannelError, SlackError
from bot.slack.gateway import SlackGateway
from bot.store import HeadsUpRecord, Store
from bot.telemetry.passes import PassRecord

log = logging.getLogger(__name__)

#: Heads-up messages carry this event type, with the runner type and when the heads-up began.
HEADS_UP_EVENT = "queuebot_heads_up"
WRITER_ROLE = "heads-up-writer"


class HeadsUpWriter:
    def __init__(
        self,
        store: Store,
        slack: SlackGateway,
        renderer: Renderer,
        pacer: Pacer,
        record: PassRecord | None = None,
        *,
        poll: float = Timings().heads_up_poll,
        clock: Clock = SYSTEM,
    ) -> None:
        self._store = store
        #: Unshown heads-ups are looked for at least this often (and at once when one is saved).
        self._poll = poll
        self._clock = clock
        #: How its passes have gone (for /healthz and /metrics).
        self.record = record or PassRecord("heads-up writer")
        self._slack = slack
        self._renderer = renderer
        self._pacer = pacer
        self._owner = uuid.uuid4().hex
        self._wakeup = asyncio.Event()

    def wake(self) -> None:
        self._wakeup.set()

    async def run(self) -> None:
        """Show what is unshown until cancelled; a failed pass is tried again, never fatal."""
        await lead_and_pass(
            self._store,
            WRITER_ROLE,
            self._owner,
            self._wakeup,
            self._poll,
            self.show_unshown,
            self.record,
            self._clock,
        )

    async def show_unshown(self) -> None:
        for record in await self._store.unshown_heads_ups():
            try:
                await self._show(record)
            except SlackError as exc:
                log.warning(
                    "heads-up not shown (%s, %s): %s", record.channel, record.runner_type, exc
                )

    async def _show(self, record: HeadsUpRecord) -> None:
        view = HeadsUpView.from_json(record.view_json)
        message = self._renderer.heads_up(view)
        carrying = {"runner_type": view.runner_type, "started_at": view.started_at}
        shown_in = (
            (record.channel_id, record.ts)
            if record.channel_id and record.ts
            else await self._posted_before(record, carrying)
        )
        if shown_in is not None:
            channel_id, ts = shown_in
            await self._slack.update_message(channel_id, ts, message)
        else:
            await self._pacer.wait(record.channel)
            posted = await self._slack.post_message(
                record.channel,
                message,
                metadata={"event_type": HEADS_UP_EVENT, "event_payload": carrying},
            )
            channel_id, ts = posted.channel_id, posted.ts
            log.info("heads-up posted (%s, %s)", record.channel, record.runner_type)
        await self._store.set_heads_up_shown(record, channel_id, ts)
        if view.phase is Phase.FIRED and view.alert_channel_id and view.alert_ts:
            await self._point_back(view, channel_id, ts)

    async def _posted_before(
        self, record: HeadsUpRecord, carrying: dict[str, object]
    ) -> tuple[str, str] | None:
        """The heads-up's message, when an earlier attempt posted it but its answer was lost
        (or the bot died before storing it): found in the channel by its metadata."""
        channel = record.channel
        channel_id = await known_channel_id(self._store, channel)
        if channel_id is None:  # learnt from an earlier heads-up in the channel, if any
            shown = [
                r.channel_id for r in await self._store.heads_ups(channel, 0.0) if r.channel_id
            ]
            channel_id = shown[-1] if shown else None
        if channel_id is None:
            return None  # a channel never posted to by its name: nothing to find
        try:
            ts = await self._slack.find_posted(
                channel_id, HEADS_UP_EVENT, carrying, oldest=record.started_at - CLOCK_SLACK_SECONDS
            )
        except (SlackAuthError, SlackChannelError) as exc:
            log.info("cannot look for an earlier heads-up (%s): %s", record.channel, exc)
            return None
        if ts is not None:
            log.info("heads-up found posted (%s, %s); adopted", record.channel, record.runner_type)
        return (channel_id, ts) if ts is not None else None

    async def _point_back(self, view: HeadsUpView, channel_id: str, ts: str) -> None:
        """A reply in the alert's thread linking the heads-up that came before it."""
        assert view.alert_channel_id is not None and view.alert_ts is not None
        link = safe_url(await self._slack.permalink(channel_id, ts))
        began = date_token(datetime.fromtimestamp(view.started_at, UTC))
        named = inert(view.runner_type, 80)
        text = f":hourglass_flowing_sand: queuebot warned of *{named}* from {began}" + (
            f": <{link}|the heads-up>." if link else "."
        )
        await self._pacer.wait(view.alert_channel_id)
        await self._slack.post_message(
            view.alert_channel_id, self._renderer.notice(text), thread_ts=view.alert_ts
        )
