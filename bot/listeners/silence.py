"""Handlers for Silence…, the Silence modal's submission and Unsilence.

Silence… acks, checks what it can without Grafana (configured? allowed? still firing, not yet
silenced?) and opens the modal at once, inside Slack's 3-second trigger window. The modal shows
every matcher the silence will have and carries their digest; the silence is created only with
those matchers. The submission is checked (a custom end time must be in the future) and answered
with errors in the modal or an empty ack that closes it; the silence is created after the ack,
and whatever goes wrong is told to the person privately.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError
from slack_bolt.async_app import AsyncAck

from bot.domain.clock import SYSTEM, Clock
from bot.domain.silences import Person, matchers_digest
from bot.listeners.answer import incident_button, tell, tell_clicker
from bot.listeners.payloads import (
    BadSilenceInput,
    BlockActions,
    ModalContext,
    SilenceForm,
    ViewSubmission,
    silence_end,
)
from bot.render.mrkdwn import link
from bot.render.renderer import Renderer, RenderError
from bot.render.silence_modal import MatchersTooLong
from bot.silencing.service import Silencer, SilenceRefused
from bot.slack.errors import SlackError
from bot.slack.gateway import SlackGateway

log = logging.getLogger(__name__)

_BROKE = (
    ":warning: queuebot failed to {doing} this because of an error on its side (logged for"
    " its operators). Check the alert message before trying again."
)


class SilenceHandlers:
    """Bound-method listeners for silencing; dependencies arrive in __init__."""

    def __init__(
        self,
        silencer: Silencer,
        slack: SlackGateway,
        renderer: Renderer,
        clock: Clock = SYSTEM,
    ) -> None:
        self._silencer = silencer
        self._slack = slack
        self._renderer = renderer
        self._clock = clock

    async def on_silence(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        click = await incident_button(self._slack, self._renderer, body)
        if click is None:
            return
        payload, incident_id = click
        try:
            incident, sets = await self._silencer.prepare(incident_id, payload.user.id)
            context = ModalContext(
                incident=incident_id,
                channel=payload.channel.id if payload.channel else None,
                response_url=payload.response_url,
                shown=matchers_digest(sets),
            )
            try:
                view = self._renderer.silence_modal(incident, sets, context.encode())
            except MatchersTooLong:
                text = (
                    ":warning: This silence would have more matchers than the silence dialog"
                    " can show, and queuebot only makes a silence it has shown. Nothing was"
                    " silenced."
                )
                if url := incident.group.lead.usable_silence_url:
                    text += " Use " + link(url, "Grafana's silence page") + " instead."
                raise SilenceRefused(text) from None
            if not payload.trigger_id:
                raise SilenceRefused(":warning: Slack sent no trigger to open the silence dialog.")
            await self._slack.open_view(payload.trigger_id, view)
        except SilenceRefused as refused:
            await self._tell_click(payload, refused.text)
        except (SlackError, RenderError) as exc:
            log.error(
                "cannot open the silence dialog: %s (incident=%s user=%s)",
                exc,
                incident_id,
                payload.user.id,
            )
            await self._tell_click(
                payload, f":warning: queuebot could not open the silence dialog ({exc})."
            )

    async def on_silence_submitted(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        try:
            submission = ViewSubmission.model_validate(body)
            context = submission.context()
        except (ValidationError, ValueError) as exc:
            log.warning("silence modal submission not understood: %s", exc)
            await ack()
            return
        try:
            form = SilenceForm.from_view(submission)
            ends_at = silence_end(form.duration, form.until, self._clock.now())
        except BadSilenceInput as exc:
            await ack(response_action="errors", errors={exc.block.value: str(exc)})
            return
        await ack()
        user = submission.user
        person = Person(id=user.id, name=await self._name(user.id, user.username or user.name))
        try:
            await self._silencer.silence(
                context.incident, person, ends_at, form.comment, shown=context.shown
            )
        except SilenceRefused as refused:
            await self._tell(context, user.id, refused.text)
        except Exception:
            # The modal is closed already: the person must hear of it, whatever went wrong.
            log.exception("silencing failed (incident=%s user=%s)", context.incident, user.id)
            await self._tell(context, user.id, _BROKE.format(doing="silence"))

    async def on_unsilence(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        click = await incident_button(self._slack, self._renderer, body)
        if click is None:
            return
        payload, incident_id = click
        user = payload.user
        person = Person(id=user.id, name=await self._name(user.id, user.username or user.name))
        try:
            await self._silencer.unsilence(incident_id, person)
        except SilenceRefused as refused:
            await self._tell_click(payload, refused.text)
        except Exception:
            log.exception("unsilencing failed (incident=%s user=%s)", incident_id, user.id)
            await self._tell_click(payload, _BROKE.format(doing="unsilence"))

    async def _name(self, user_id: str, fallback: str | None) -> str:
        try:
            return await self._slack.display_name(user_id)
        except SlackError as exc:
            log.warning("no display name for %s: %s", user_id, exc)
            return fallback or user_id

    async def _tell_click(self, payload: BlockActions, text: str) -> None:
        await tell_clicker(self._slack, self._renderer, payload, text)

    async def _tell(self, context: ModalContext, user_id: str, text: str) -> None:
        await tell(
            self._slack,
            self._renderer,
            text,
            user=user_id,
            response_url=context.response_url,
            channel=context.channel,
        )
