"""Watching the queues for the early warning: every check, each runner type's queue read from
the job events and stepped through each channel's heads-up board; a heads-up posted when one
starts, edited as the trend changes (at most every EDIT_SECONDS while it reads the same way), and
edited to say the threshold was crossed (linking the alert's message, with a reply in its thread
pointing back) or that the queue is back to normal.

Of several replicas on one store, only the one holding the watcher's leader lease checks; the
heads-ups out are in the store, so a new leader edits and ends them rather than posting again.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from datetime import UTC, datetime

from bot.delivery.pacing import Pacer
from bot.diagnostics.sources.jobs_config import JobsConfig
from bot.domain.clock import Clock, utcnow
from bot.domain.incidents import Incident
from bot.forecast.news import HeadsUpNews, arrivals_context
from bot.forecast.reading import queue_states
from bot.forecast.settings import EarlyWarning
from bot.forecast.warnings import COOL_DOWN, HeadsUp, Phase, WarningBoard
from bot.render.mrkdwn import date_token, inert, safe_url
from bot.render.renderer import Renderer
from bot.slack.gateway import SlackGateway
from bot.store import HeadsUpRecord, Store

log = logging.getLogger(__name__)

LEADER_ROLE = "early-warning"
LEADER_INTERVALS = 3
#: A heads-up reading the same way is edited at most this often.
EDIT_SECONDS = 300.0
#: Heads-up messages carry this event type, with the runner type and when the heads-up began.
HEADS_UP_EVENT = "queuebot_heads_up"
#: The alert's incident counts as this heads-up's if it opened no earlier than this before it.
ALERT_SLACK_SECONDS = 3600.0


class EarlyWarningWatcher:
    def __init__(
        self,
        store: Store,
        slack: SlackGateway,
        renderer: Renderer,
        pacer: Pacer,
        configs: list[EarlyWarning],
        jobs: JobsConfig,
        *,
        clock: Clock = utcnow,
    ) -> None:
        self._store = store
        self._slack = slack
        self._renderer = renderer
        self._pacer = pacer
        self._configs = configs
        self._jobs = jobs
        self._clock = clock
        self._owner = uuid.uuid4().hex
        self._boards: dict[str, WarningBoard] = {}

    async def run(self, interval: float) -> None:
        """Check every `interval` seconds until cancelled; a failed check never stops it."""
        while True:
            await asyncio.sleep(interval)
            try:
                until = time.time() + LEADER_INTERVALS * interval
                if not await self._store.lead(LEADER_ROLE, self._owner, until):
                    self._boards.clear()  # another replica checks: what this one holds goes stale
                    continue
                await self.check()
            except Exception:
                log.exception("early warning check failed; trying again in %.0fs", interval)

    async def check(self) -> None:
        at = self._clock().timestamp()
        states = await queue_states(self._store, self._jobs, at)
        for config in self._configs:
            board = await self._board(config, at)
            watched = {name: state for name, state in states.items() if config.watches(name)}
            for heads_up in board.step(watched):
                await self._show(config, board, heads_up)

    async def _board(self, config: EarlyWarning, at: float) -> WarningBoard:
        board = self._boards.get(config.channel)
        if board is None:
            board = WarningBoard(
                threshold=config.threshold(self._jobs.queued_after_seconds),
                horizon_minutes=config.horizon_minutes,
            )
            for record in await self._store.heads_ups(config.channel, at - COOL_DOWN):
                if record.ended_at is None:
                    board.resume(record.runner_type, record.started_at, at)
                else:
                    board.ended(record.runner_type, record.ended_at)
            self._boards[config.channel] = board
        return board

    async def _show(self, config: EarlyWarning, board: WarningBoard, heads_up: HeadsUp) -> None:
        found = await self._store.heads_ups(config.channel, heads_up.started_at)
        record = next(
            (
                r
                for r in found
                if r.runner_type == heads_up.runner_type and r.started_at == heads_up.started_at
            ),
            None,
        )
        same = record is not None and record.phase == heads_up.phase.value
        if same and record is not None and heads_up.at - record.shown_at < EDIT_SECONDS:
            return
        if (record is None or record.ts is None) and heads_up.phase is not Phase.WARNING:
            return  # never shown: nothing to end
        usual, workflows = await arrivals_context(
            self._store, self._jobs, heads_up.runner_type, heads_up.at
        )
        alert = await self._alert(config.channel, heads_up)
        news = HeadsUpNews(
            heads_up,
            board.threshold,
            usual_arrivals=usual,
            workflows=workflows,
            runbook_url=str(config.runbook_url) if config.runbook_url else None,
            alert_link=alert.permalink if alert is not None else None,
        )
        message = self._renderer.heads_up(news)
        if record is None or record.ts is None or record.channel_id is None:
            await self._pacer.wait(config.channel)
            carrying = {"runner_type": heads_up.runner_type, "started_at": heads_up.started_at}
            posted = await self._slack.post_message(
                config.channel,
                message,
                metadata={"event_type": HEADS_UP_EVENT, "event_payload": carrying},
            )
            channel_id, ts = posted.channel_id, posted.ts
            log.info("heads-up posted (%s, %s)", config.channel, heads_up.runner_type)
        else:
            channel_id, ts = record.channel_id, record.ts
            await self._slack.update_message(channel_id, ts, message)
        ended = None if heads_up.phase is Phase.WARNING else heads_up.at
        await self._store.save_heads_up(
            HeadsUpRecord(
                config.channel,
                heads_up.runner_type,
                heads_up.started_at,
                heads_up.phase.value,
                channel_id,
                ts,
                heads_up.at,
                ended,
            )
        )
        if heads_up.phase is Phase.FIRED and alert is not None:
            await self._point_back(alert, channel_id, ts, heads_up)

    async def _alert(self, channel: str, heads_up: HeadsUp) -> Incident | None:
        """The alert's incident in the channel, once it fired after the heads-up began."""
        if heads_up.phase is not Phase.FIRED:
            return None
        firing, _ = await self._store.firing_incidents(20)
        since = heads_up.started_at - ALERT_SLACK_SECONDS
        mine = [
            i
            for i in firing
            if i.channel == channel and i.parent_ts and i.started_at.timestamp() >= since
        ]
        return max(mine, key=lambda i: i.started_at, default=None)

    async def _point_back(
        self, alert: Incident, channel_id: str, ts: str, heads_up: HeadsUp
    ) -> None:
        """A reply in the alert's thread linking the heads-up that came before it."""
        assert alert.channel_id is not None and alert.parent_ts is not None
        link = safe_url(await self._slack.permalink(channel_id, ts))
        began = date_token(datetime.fromtimestamp(heads_up.started_at, UTC))
        named = inert(heads_up.runner_type, 80)
        text = f":hourglass_flowing_sand: queuebot warned of *{named}* from {began}" + (
            f": <{link}|the heads-up>." if link else "."
        )
        await self._pacer.wait(alert.channel)
        await self._slack.post_message(
            alert.channel_id, self._renderer.notice(text), thread_ts=alert.parent_ts
        )
