"""`/queue-status` and the Share in channel button of its answer.

The command is acked at once (Slack wants an answer within 3 s; help and anything not
understood are answered in the ack itself), then the fleet is read and the answer goes through
the command's response_url: privately, or for the channel with `post`. Share in channel reads
the fleet again, posts the fresh answer for everyone and removes the private one.

`org NAME` narrows any of these to one of the organizations queuebot watches (GITHUB_ORG, or
the YAML file's `github.orgs`): its repositories' jobs and its own runners list. Another name
is answered, in the ack, with the organizations there are.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from pydantic import ValidationError
from slack_bolt.async_app import AsyncAck

from bot.domain.queue_status import QueueStatus
from bot.fleet.charting import ChartUnavailable
from bot.listeners.answer import tell, tell_clicker
from bot.listeners.capacity import ReportAnswers
from bot.listeners.payloads import BlockActions
from bot.render.renderer import Renderer
from bot.silencing.permissions import Permissions
from bot.slack.contract import QUEUE_STATUS_COMMAND
from bot.slack.errors import SlackError, SlackRejected
from bot.slack.gateway import SlackGateway
from bot.slack.message import ChartFile, Message
from bot.status.rate_limit import PerUserLimit
from bot.status.reader import RUNNER_TYPE_PATTERN, StatusReader
from bot.status.request import (
    NotUnderstood,
    StatusRequest,
    known_org,
    org_note,
    parse_request,
    quoted,
    too_often,
)

log = logging.getLogger(__name__)

NO_REPORTS = f":information_source: `{QUEUE_STATUS_COMMAND} report` is not set up here."
#: What a request that names no channel is scoped to: no incident is routed there.
NO_CHANNEL = "-"
FAILED = (
    f":warning: `{QUEUE_STATUS_COMMAND}` failed because of an error on queuebot's side (logged)."
)


class StatusHandlers:
    def __init__(
        self,
        reader: StatusReader,
        slack: SlackGateway,
        renderer: Renderer,
        limit: PerUserLimit | None = None,
        *,
        reports: ReportAnswers | None = None,
        fleet_wide: Permissions | None = None,
        orgs: tuple[str, ...] = (),
    ) -> None:
        """`orgs`: the organizations `org NAME` may name (those queuebot watches)."""
        self._reader = reader
        self._orgs = orgs
        self._fleet_wide = fleet_wide
        self._slack = slack
        self._renderer = renderer
        self._limit = limit or PerUserLimit()
        self._reports = reports

    async def on_command(self, ack: AsyncAck, command: dict[str, Any]) -> None:
        request = known_org(parse_request(str(command.get("text") or "")), self._orgs)
        if isinstance(request, NotUnderstood):
            usage = self._renderer.queue_status_usage(request.problem, orgs=self._orgs)
            await ack(text=usage.text, blocks=usage.blocks, response_type="ephemeral")
            return
        wait = self._limit.wait(str(command.get("user_id") or ""))
        if wait:
            await ack(text=too_often(wait), response_type="ephemeral")
            return
        await ack()
        await self._answer(
            request,
            user=str(command.get("user_id") or ""),
            channel=command.get("channel_id"),
            response_url=command.get("response_url"),
        )

    async def _clicked(
        self, ack: AsyncAck, body: dict[str, Any], button: str
    ) -> BlockActions | None:
        """The click, acked; None (logged) for a payload Slack would not send."""
        await ack()
        try:
            return BlockActions.model_validate(body)
        except ValidationError:
            log.warning("a %s click without a usable payload", button)
            return None

    async def _answer_clicker(self, request: StatusRequest, payload: BlockActions) -> bool:
        """`request` answered where the click came from, unless its clicker asks too often."""
        wait = self._limit.wait(payload.user.id)
        if wait:
            await tell_clicker(self._slack, self._renderer, payload, too_often(wait))
            return False
        return await self._answer(
            request,
            user=payload.user.id,
            channel=payload.channel.id if payload.channel else None,
            response_url=payload.response_url,
        )

    async def on_share(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        payload = await self._clicked(ack, body, "Share in channel")
        if payload is None:
            return
        request = known_org(parse_request(payload.actions[0].value or ""), self._orgs)
        if not isinstance(request, StatusRequest):
            request = StatusRequest()
        shared = await self._answer_clicker(replace(request, public=True), payload)
        if shared and payload.response_url:
            try:
                await self._slack.respond(payload.response_url, None)
            except SlackError as exc:
                log.info("the private answer stays: %s", exc)

    async def on_show_queue(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """A heads-up's Show queue: its runner type's detail, privately for the clicker."""
        payload = await self._clicked(ack, body, "Show queue")
        if payload is None:
            return
        runner_type = payload.actions[0].value or ""
        if not RUNNER_TYPE_PATTERN.fullmatch(runner_type):
            shown = quoted(runner_type)
            await tell_clicker(
                self._slack,
                self._renderer,
                payload,
                f":information_source: `{shown}` cannot be looked up with"
                f" `{QUEUE_STATUS_COMMAND}`; `{QUEUE_STATUS_COMMAND}` lists every runner type.",
            )
            return
        await self._answer_clicker(StatusRequest(query=runner_type), payload)

    async def _answer(
        self,
        request: StatusRequest,
        *,
        user: str,
        channel: str | None,
        response_url: str | None,
    ) -> bool:
        """Read, render and send; True when the answer reached Slack."""
        if request.report_days is not None:
            return await self._report(
                request, user=user, channel=channel, response_url=response_url
            )
        try:
            status = await self._reader.read(
                request.query, channel=await self._scope(request, user, channel), org=request.org
            )
            chart, note = await self._chart(status, request.org)
            note = org_note(request.org, note)
            message = self._renderer.queue_status(
                status,
                shared_by=user if request.public else None,
                chart=chart,
                note=note,
                asked=request.words,
            )
        except Exception:
            log.exception("queue status failed (user=%s)", user)
            await self._tell(FAILED, user, channel, response_url)
            return False
        try:
            await self._send(message, request.public, user, channel, response_url)
        except SlackRejected as exc:
            if chart is None:
                log.warning("Slack refused the queue status: %s", exc)
                await self._tell(FAILED, user, channel, response_url)
                return False
            # The chart is the one part that can be refused for reasons of its own (a file
            # Slack has not finished processing); the words are sent without it.
            log.warning("Slack refused the queue status with its chart: %s", exc)
            note = org_note(request.org, "The chart could not be shown.")
            message = self._renderer.queue_status(
                status, shared_by=user if request.public else None, note=note, asked=request.words
            )
            try:
                await self._send(message, request.public, user, channel, response_url)
            except SlackError as again:
                log.warning("Slack refused the queue status: %s", again)
                return False
        except SlackError as exc:
            log.warning("the queue status did not reach %s: %s", user, exc)
            return False
        return True

    async def _scope(self, request: StatusRequest, user: str, channel: str | None) -> str | None:
        """Whose incidents an answer lists: the channel's it is asked in; every channel's
        (None) only privately, and only for the fleet-wide viewers. A request from nowhere
        lists none."""
        everyone = self._fleet_wide
        if not request.public and everyone is not None and await everyone.listed(user):
            return None
        return channel or NO_CHANNEL

    async def _report(
        self,
        request: StatusRequest,
        *,
        user: str,
        channel: str | None,
        response_url: str | None,
    ) -> bool:
        if self._reports is None:
            await self._tell(NO_REPORTS, user, channel, response_url)
            return False
        return await self._reports.answer(
            request.report_days or 0,
            public=request.public,
            user=user,
            channel=channel,
            response_url=response_url,
            org=request.org,
        )

    async def _chart(
        self, status: QueueStatus, org: str | None = None
    ) -> tuple[ChartFile | None, str | None]:
        """The detail's chart, uploaded privately for an image block; or why there is none."""
        if not status.details:
            return None, None
        try:
            png = await self._reader.chart(status, org=org)
        except ChartUnavailable as exc:
            return None, f"No chart: {exc}"
        if png is None:
            return None, None
        names = ", ".join(d.state.name for d in status.details)
        title = "Jobs queueing and longest wait, last 6 h"
        alt = f"Queued jobs and longest wait over the last 6 hours for {names}"
        try:
            chart = await self._slack.private_image(
                png, filename="queue-status.png", title=title, alt_text=alt
            )
        except SlackError as exc:
            log.warning("queue status chart not uploaded: %s", exc)
            return None, "The chart could not be uploaded to Slack."
        return chart, None

    async def _send(
        self,
        message: Message,
        public: bool,
        user: str,
        channel: str | None,
        response_url: str | None,
    ) -> None:
        # An answer for the channel goes only through the request's response_url: Slack posts
        # it as the answer to the command. Channel messages of the bot's own are the outbox's.
        if response_url:
            await self._slack.respond(response_url, message, public=public)
        elif channel and not public:
            await self._slack.post_ephemeral(channel, user, message)
        else:
            raise SlackRejected("queue status", "the request named no response_url to answer")

    async def _tell(
        self, text: str, user: str, channel: str | None, response_url: str | None
    ) -> None:
        await tell(
            self._slack, self._renderer, text, user=user, response_url=response_url, channel=channel
        )
