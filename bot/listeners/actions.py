"""Handlers for Run diagnostics and the link buttons.

Each acks first (Slack wants an answer within 3 s). Run diagnostics then works in the incident's
thread; whatever stops it is told privately to the person who clicked.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck

from bot.diagnostics.service import DIAGNOSTICS_OFF, Diagnoser, Outcome
from bot.listeners.answer import incident_button, tell_clicker
from bot.listeners.payloads import BlockActions
from bot.render.renderer import Renderer
from bot.slack.gateway import SlackGateway

log = logging.getLogger(__name__)


class ActionHandlers:
    """Bound-method listeners; dependencies arrive in __init__, not through Bolt's context."""

    def __init__(self, slack: SlackGateway, renderer: Renderer, diagnoser: Diagnoser) -> None:
        self._slack = slack
        self._renderer = renderer
        self._diagnoser = diagnoser

    async def on_run_diagnostics(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        click = await incident_button(self._slack, self._renderer, body)
        if click is None:
            return
        payload, incident_id = click
        try:
            outcome = await self._diagnoser.run(incident_id)
        except Exception:
            log.exception("diagnostics failed (incident=%s user=%s)", incident_id, payload.user.id)
            outcome = None
        answer = {
            Outcome.NOT_CONFIGURED: DIAGNOSTICS_OFF,
            Outcome.ALREADY_RUNNING: (
                ":hourglass_flowing_sand: Diagnostics are already running for this incident;"
                " the report will appear in its thread."
            ),
            Outcome.NO_THREAD: (
                ":hourglass: This incident's message is not in Slack yet; try again in a moment."
            ),
            None: ":warning: Diagnostics failed because of an error on queuebot's side (logged).",
        }.get(outcome)
        if answer is not None:
            await self._tell(payload, answer)

    async def _tell(self, payload: BlockActions, text: str) -> None:
        await tell_clicker(self._slack, self._renderer, payload, text)

    async def on_link_opened(self, ack: AsyncAck) -> None:
        await ack()

    async def on_error(self, error: Exception, body: dict[str, Any]) -> None:
        """The one place unexpected listener failures land: logged with their traceback."""
        log.error("Slack request failed (type=%s)", body.get("type", "?"), exc_info=error)
