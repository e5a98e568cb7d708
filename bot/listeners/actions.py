"""Handlers for the incident message's buttons and the slash command.

Each acks first (Slack wants an answer within 3 s), then answers the person who clicked with an
ephemeral message. Features that later versions add answer "not available yet" rather than
nothing, so a click is never met with silence.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError
from slack_bolt.async_app import AsyncAck

from bot.listeners.answer import tell
from bot.listeners.payloads import BlockActions
from bot.render import Renderer
from bot.slack import SlackGateway

log = logging.getLogger(__name__)


class ActionHandlers:
    """Bound-method listeners; dependencies arrive in __init__, not through Bolt's context."""

    def __init__(self, slack: SlackGateway, renderer: Renderer) -> None:
        self._slack = slack
        self._renderer = renderer

    async def on_run_diagnostics(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        await self._not_yet(body, "Run diagnostics")

    async def on_link_opened(self, ack: AsyncAck) -> None:
        await ack()

    async def on_queue_status(self, ack: AsyncAck) -> None:
        await ack(
            text=":hourglass: `/queue-status` is not available yet in this version of queuebot."
        )

    async def on_error(self, error: Exception, body: dict[str, Any]) -> None:
        """The one place unexpected listener failures land: logged with their traceback."""
        log.error("Slack request failed (type=%s)", body.get("type", "?"), exc_info=error)

    async def _not_yet(self, body: dict[str, Any], feature: str) -> None:
        try:
            payload = BlockActions.model_validate(body)
        except ValidationError:
            log.warning("block_actions payload without user or channel: %s", list(body))
            return
        await tell(
            self._slack,
            self._renderer,
            f":hourglass: *{feature}* is not available yet in this version of queuebot.",
            user=payload.user.id,
            response_url=payload.response_url,
            channel=payload.channel.id if payload.channel else None,
            thread_ts=payload.container.thread_ts,
        )
