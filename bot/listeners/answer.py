"""Answering the one person who clicked or submitted: privately, where they are."""

from __future__ import annotations

import logging
from typing import Any

from bot.listeners.payloads import BlockActions, clicked
from bot.render.renderer import Renderer
from bot.slack.errors import SlackError
from bot.slack.gateway import SlackGateway

log = logging.getLogger(__name__)

FOREIGN_BUTTON = ":warning: This button does not belong to a message queuebot posted."


async def tell(
    slack: SlackGateway,
    renderer: Renderer,
    text: str,
    *,
    user: str,
    response_url: str | None,
    channel: str | None,
    thread_ts: str | None = None,
) -> None:
    """An ephemeral message to `user`: through the interaction's response_url when there is
    one (it works whether or not the bot is in the channel), else chat.postEphemeral."""
    message = renderer.notice(text)
    if response_url:
        try:
            await slack.respond(response_url, message)
            return
        except SlackError as exc:
            # A response_url lasts 30 minutes and 5 uses; the channel may still take it.
            log.warning("could not answer %s through response_url: %s", user, exc)
    if not channel:
        log.warning("no way left to answer %s: the request named no channel", user)
        return
    try:
        await slack.post_ephemeral(channel, user, message, thread_ts=thread_ts)
    except SlackError as exc:
        log.warning("could not answer %s: %s", user, exc)


async def tell_clicker(
    slack: SlackGateway, renderer: Renderer, payload: BlockActions, text: str
) -> None:
    """An ephemeral message to the person who clicked, where they clicked."""
    await tell(
        slack,
        renderer,
        text,
        user=payload.user.id,
        response_url=payload.response_url,
        channel=payload.channel.id if payload.channel else None,
        thread_ts=payload.container.thread_ts,
    )


async def incident_button(
    slack: SlackGateway, renderer: Renderer, body: dict[str, Any]
) -> tuple[BlockActions, int] | None:
    """The click and the incident its button names; None (the clicker told, when possible)
    for a payload or a button value queuebot did not make."""
    click = clicked(body)
    if click is None:
        return None
    payload, incident_id = click
    if incident_id is None:
        await tell_clicker(slack, renderer, payload, FOREIGN_BUTTON)
        return None
    return payload, incident_id
