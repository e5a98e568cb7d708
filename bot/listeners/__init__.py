"""Bolt listener registration: the one place action ids meet the functions that handle them."""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.listeners.actions import ActionHandlers
from bot.listeners.silence import SilenceHandlers
from bot.listeners.status import StatusHandlers
from bot.slack.contract import QUEUE_STATUS_COMMAND, ActionId, CallbackId


def register(
    app: AsyncApp, actions: ActionHandlers, silence: SilenceHandlers, status: StatusHandlers
) -> None:
    """Wire every interactive element queuebot renders to its handler."""
    app.action(ActionId.RUN_DIAGNOSTICS.value)(actions.on_run_diagnostics)
    app.action(ActionId.SILENCE.value)(silence.on_silence)
    app.action(ActionId.UNSILENCE.value)(silence.on_unsilence)
    app.view_submission(CallbackId.SILENCE_MODAL.value)(silence.on_silence_submitted)
    for url_button in (ActionId.OPEN_RUNBOOK, ActionId.VIEW_ALERT, ActionId.OPEN_DASHBOARD):
        # Slack sends block_actions for URL buttons too and expects the usual ack.
        app.action(url_button.value)(actions.on_link_opened)
    app.command(QUEUE_STATUS_COMMAND)(status.on_command)
    app.action(ActionId.SHARE_STATUS.value)(status.on_share)
    app.action(ActionId.SHOW_QUEUE.value)(status.on_show_queue)
    app.error(actions.on_error)
