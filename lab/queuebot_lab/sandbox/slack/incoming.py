"""Incoming webhooks: `POST /services/T…/B…/<secret>` posts a message into the hook's channel.

What Slack documents (https://docs.slack.dev/messaging/sending-messages-using-incoming-webhooks,
https://api.slack.com/changelog/2016-05-17-changes-to-errors-for-incoming-webhooks):

- A hook URL names the workspace (`T…`), the hook (`B…`) and a secret, and belongs to the one
  channel picked when the app was installed. An app's hook cannot be moved or restyled by the
  body: `channel`, `username`, `icon_emoji` and `icon_url` are ignored, and the message shows
  the app's bot as its author, in the channel like any other message.
- The body is JSON (or a form with the JSON in `payload`, as older clients send it): `text`,
  `blocks`, legacy `attachments` (at most 100), `thread_ts`; one of the first three is needed.
- The answer is a bare word, not JSON (`text/html`, as hooks.slack.com sends it:
  slackapi/node-slack-sdk#480): 200 `ok`; 400 `invalid_payload`, `no_text`,
  `too_many_attachments`, `no_team` or a blocks error such as `invalid_blocks`; 403
  `invalid_token` (a wrong secret); 404 `no_service` (a hook that does not exist or was
  removed) or `channel_not_found`; 410 `channel_is_archived`.
- Posting counts against the channel's limit of about one message a second, as for
  chat.postMessage: over it, 429 with `Retry-After` (https://api.slack.com/docs/rate-limits).
  Slack does not document that answer's body; here it is the Web API's error name.

Faults: a fault for the pseudo-method `incoming-webhook` (`INCOMING_WEBHOOK`), or for every
method, answers a hook post instead of the workspace, its error name as the body. Each post is
recorded with the calls (`sandbox.calls("incoming-webhook")`), its body as the params.
"""

import asyncio
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from queuebot_lab.sandbox.slack.blockkit import cut_text, error_of, message_problems
from queuebot_lab.sandbox.slack.events import EventHub, SandboxEvent, SandboxEventKind
from queuebot_lab.sandbox.slack.faults import INCOMING_WEBHOOK, Answer, Faults, MessageRateLimit
from queuebot_lab.sandbox.slack.models import JSON, CallRecord, Channel
from queuebot_lab.sandbox.slack.workspace import Workspace

#: "too_many_attachments: ... a maximum of 100 attachments" (Slack's incoming webhook errors).
MOST_ATTACHMENTS = 100


class HookRefusal(Exception):
    """Slack's refusal of a hook post: an HTTP status and the word in the body."""

    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status = status
        self.error = error


@dataclass
class IncomingWebhook:
    id: str
    channel: str
    secret: str
    removed: bool = False


class IncomingWebhooks:
    """The workspace's incoming webhooks and the handler that serves their URLs."""

    def __init__(
        self,
        workspace: Workspace,
        hub: EventHub,
        faults: Faults,
        rate_limit: MessageRateLimit | None,
        base_url: Callable[[], str],
    ) -> None:
        self.workspace = workspace
        self.hub = hub
        self.faults = faults
        self.rate_limit = rate_limit
        self._base_url = base_url
        self.hooks: dict[str, IncomingWebhook] = {}

    def add(self, channel: str) -> str:
        """A new hook posting into `channel` (an id or a name); its URL."""
        target = self.workspace.channel(channel)
        # Slack's secrets are 24 letters and digits.
        hook = IncomingWebhook(self.workspace.new_id("B"), target.id, secrets.token_hex(12))
        self.hooks[hook.id] = hook
        return self.url(hook)

    def url(self, hook: IncomingWebhook) -> str:
        team = self.workspace.identity.team_id
        return f"{self._base_url()}/services/{team}/{hook.id}/{hook.secret}"

    def remove(self, url: str) -> None:
        """Remove the hook at `url`, as uninstalling the app does: posts get `no_service`."""
        self.hooks[url.rstrip("/").split("/")[-2]].removed = True

    async def post(self, request: web.Request) -> web.Response:
        received_at = self.workspace.monotonic()
        body: JSON = {}
        try:
            hook = self._hook(request.match_info)
            # Read first, as the Web API reads its arguments: the record shows what was sent.
            body = await _payload(request)
            fault = self.faults.take(INCOMING_WEBHOOK)
            if fault is not None and not fault[1]:
                answer = await _held(fault[0])
            else:
                answer = await self._deliver(hook, body)
                if fault is not None and answer.status == 200:
                    answer = await _held(fault[0])  # posted, and the answer lost
        except HookRefusal as refusal:
            answer = Answer(refusal.status, {"ok": False, "error": refusal.error})
        error = answer.body.get("error")
        self.workspace.calls.append(
            CallRecord(
                INCOMING_WEBHOOK,
                body,
                answer.status,
                received_at,
                ok=bool(answer.body.get("ok")),
                error=error if isinstance(error, str) else None,
            )
        )
        await self.hub.publish(
            SandboxEvent(SandboxEventKind.API_CALL, detail={"method": INCOMING_WEBHOOK})
        )
        word = "ok" if answer.body.get("ok") else str(error)
        return web.Response(
            text=word, status=answer.status, headers=answer.headers, content_type="text/html"
        )

    def _hook(self, path: dict[str, str]) -> IncomingWebhook:
        if path["team"] != self.workspace.identity.team_id:
            raise HookRefusal(400, "no_team")
        hook = self.hooks.get(path["hook"])
        if hook is None or hook.removed:
            raise HookRefusal(404, "no_service")
        if not secrets.compare_digest(path["secret"], hook.secret):
            raise HookRefusal(403, "invalid_token")
        return hook

    async def _deliver(self, hook: IncomingWebhook, body: JSON) -> Answer:
        """Post `body` into the hook's channel; the rate limiter's answer when over it."""
        channel = self._channel(hook)
        if self.rate_limit is not None and (limited := self.rate_limit.take(channel.id)):
            return limited
        text, blocks, attachments = _content(body)
        thread_ts = body.get("thread_ts")
        ws = self.workspace
        message = ws.post(
            channel,
            ws.identity.bot_user_id,
            cut_text(text)[0],
            blocks,
            str(thread_ts) if thread_ts else None,
        )
        message.attachments = attachments
        await self.hub.publish(
            SandboxEvent(SandboxEventKind.MESSAGE_POSTED, channel.id, message.ts, message.thread_ts)
        )
        return Answer(200, {"ok": True})

    def _channel(self, hook: IncomingWebhook) -> Channel:
        channel = self.workspace.channels.get(hook.channel)
        if channel is None:
            raise HookRefusal(404, "channel_not_found")
        if channel.is_archived:
            raise HookRefusal(410, "channel_is_archived")
        return channel


async def _payload(request: web.Request) -> JSON:
    """The message the hook was sent: a JSON object, or one in a form's `payload` field."""
    if request.content_type == "application/x-www-form-urlencoded":
        raw: Any = (await request.post()).get("payload", "")
    else:
        raw = await request.text()
    try:
        body = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise HookRefusal(400, "invalid_payload")
    return body


def _content(body: JSON) -> tuple[str, list[JSON], list[JSON]]:
    """`text`, `blocks` and `attachments` of a hook message, refused as Slack refuses them."""
    text = body.get("text")
    blocks = body.get("blocks")
    attachments = body.get("attachments")
    if text is not None and not isinstance(text, str):
        raise HookRefusal(400, "invalid_payload")
    if attachments is not None and (
        not isinstance(attachments, list) or any(not isinstance(a, dict) for a in attachments)
    ):
        raise HookRefusal(400, "invalid_payload")
    if not text and not blocks and not attachments:
        raise HookRefusal(400, "no_text")
    if attachments and len(attachments) > MOST_ATTACHMENTS:
        raise HookRefusal(400, "too_many_attachments")
    if error := error_of(message_problems(blocks)):
        raise HookRefusal(400, error)
    return text or "", list(blocks or []), list(attachments or [])


async def _held(answer: Answer) -> Answer:
    if answer.stall:
        await asyncio.sleep(answer.stall)
    return answer
