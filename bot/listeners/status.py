"""`/queue-status` and the Share in channel button of its answer.

The command is acked at once (Slack wants an answer within 3 s; help and anything not
understood are answered in the ack itself), then the fleet is read and the answer goes through
the command's response_url: privately, or for the channel with `post`. Share in channel reads
the fleet again, posts the fresh answer for everyone and removes the private one.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from slack_bolt.async_app import AsyncAck

from bot.diagnostics.charting import ChartUnavailable
from bot.domain.queue_status import QueueStatus
from bot.listeners.answer import tell, tell_clicker
from bot.listeners.capacity import ReportAnswers
from bot.listeners.payloads import BlockActions
from bot.listeners.rate_limit import PER_WINDOW, PerUserLimit
from bot.render.mrkdwn import clip, escape_mrkdwn, oneline
from bot.render.renderer import Renderer
from bot.silencing.permissions import Permissions
from bot.slack.contract import QUEUE_STATUS_COMMAND
from bot.slack.errors import SlackError, SlackRejected
from bot.slack.gateway import SlackGateway
from bot.slack.message import ChartFile, Message
from bot.status.reader import RUNNER_TYPE_PATTERN, StatusReader

log = logging.getLogger(__name__)

HELP_WORDS = {"help", "-h", "--help", "?", "usage"}
POST_WORD = "post"
REPORT_WORD = "report"
#: The longest window `report N` may ask for (what the job events keep by default, and more).
MAX_REPORT_DAYS = 30
NO_REPORTS = f":information_source: `{QUEUE_STATUS_COMMAND} report` is not set up here."
_DAYS = re.compile(r"[0-9]{1,3}")
#: What a request that names no channel is scoped to: no incident is routed there.
NO_CHANNEL = "-"
FAILED = (
    f":warning: `{QUEUE_STATUS_COMMAND}` failed because of an error on queuebot's side (logged)."
)


@dataclass(frozen=True)
class StatusRequest:
    #: A runner type or prefix to show in detail; None for the summary.
    query: str | None = None
    #: For everyone in the channel rather than only for the asker.
    public: bool = False
    #: The capacity report of the last this many days (0: the configured window), not the
    #: queue now.
    report_days: int | None = None


@dataclass(frozen=True)
class NotUnderstood:
    """Help was asked for (`problem` None) or the text made no sense (`problem` says why)."""

    problem: str | None = None


def parse_request(text: str) -> StatusRequest | NotUnderstood:
    """`""`, `post`, `<prefix>`, `post <prefix>`, `report [days]`, `post report [days]`; `help`
    or anything else asks for the usage."""
    words = text.split()
    if not words:
        return StatusRequest()
    if len(words) == 1 and words[0].casefold() in HELP_WORDS:
        return NotUnderstood()
    public = words[0].casefold() == POST_WORD
    rest = words[1:] if public else words
    if not rest:
        return StatusRequest(public=public)
    if rest[0].casefold() == REPORT_WORD:
        days = rest[1] if len(rest) == 2 else "0"
        # ASCII digits only, and few: "²" is a digit to str.isdigit() but not to int(), and
        # int() refuses more than 4,300 of them.
        if _DAYS.fullmatch(days) and int(days) <= MAX_REPORT_DAYS and (len(rest) == 1 or int(days)):
            return StatusRequest(public=public, report_days=int(days))
        return NotUnderstood(
            f"`{QUEUE_STATUS_COMMAND} {REPORT_WORD}` takes a number of days from 1 to"
            f" {MAX_REPORT_DAYS} (default: the configured window)."
        )
    if len(rest) == 1 and RUNNER_TYPE_PATTERN.fullmatch(rest[0]):
        return StatusRequest(query=rest[0], public=public)
    return NotUnderstood(f"`{QUEUE_STATUS_COMMAND} {_quoted(text)}` is not something I understand.")


def _quoted(text: str) -> str:
    """What someone typed, shown inside inline code: one line, escaped, shortened."""
    return clip(escape_mrkdwn(oneline(text)), 100).replace("`", "'")


def too_often(wait: float) -> str:
    return (
        f":hourglass: You have asked for `{QUEUE_STATUS_COMMAND}` {PER_WINDOW} times in the"
        f" last minute; ask again in {max(1, math.ceil(wait))} s."
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
    ) -> None:
        self._reader = reader
        self._fleet_wide = fleet_wide
        self._slack = slack
        self._renderer = renderer
        self._limit = limit or PerUserLimit()
        self._reports = reports

    async def on_command(self, ack: AsyncAck, command: dict[str, Any]) -> None:
        request = parse_request(str(command.get("text") or ""))
        if isinstance(request, NotUnderstood):
            usage = self._renderer.queue_status_usage(request.problem)
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
        request = parse_request(payload.actions[0].value or "")
        if not isinstance(request, StatusRequest):
            request = StatusRequest()
        shared = await self._answer_clicker(
            StatusRequest(query=request.query, public=True, report_days=request.report_days),
            payload,
        )
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
            shown = _quoted(runner_type)
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
                request.query, channel=await self._scope(request, user, channel)
            )
            chart, note = await self._chart(status)
            message = self._renderer.queue_status(
                status, shared_by=user if request.public else None, chart=chart, note=note
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
            note = "The chart could not be shown."
            message = self._renderer.queue_status(
                status, shared_by=user if request.public else None, note=note
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
        )

    async def _chart(self, status: QueueStatus) -> tuple[ChartFile | None, str | None]:
        """The detail's chart, uploaded privately for an image block; or why there is none."""
        if not status.details:
            return None, None
        try:
            png = await self._reader.chart(status)
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
