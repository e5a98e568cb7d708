"""What a person does in the sandbox, sent to the app as Slack sends it, and Slack's ack rules.

Requests go to the app's request URL, form-encoded and signed
(https://docs.slack.dev/authentication/verifying-requests-from-slack), or over Socket Mode
when the app holds a connection. Slack waits 3 s for the ack and ignores a later answer
(https://docs.slack.dev/interactivity/handling-user-interaction#acknowledgment_response).
"""

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp

from queuebot_lab.sandbox.slack import payloads
from queuebot_lab.sandbox.slack.events import (
    EventHub,
    SandboxEvent,
    SandboxEventKind,
    ephemeral_posted,
)
from queuebot_lab.sandbox.slack.models import JSON, ViewState
from queuebot_lab.sandbox.slack.socket_mode import SocketModeHub
from queuebot_lab.sandbox.slack.workspace import Workspace

ACK_DEADLINE = 3.0


@dataclass
class InteractionResult:
    """The app's answer to one interaction."""

    kind: str
    #: HTTP status (200 for a Socket Mode ack); None when the app never answered.
    status: int | None
    body: str
    elapsed: float
    acked_in_time: bool
    transport: str
    payload: JSON
    trigger_id: str | None = None
    response_url: str | None = None

    def json(self) -> Any:
        return json.loads(self.body) if self.body.strip().startswith("{") else None


class AppLink:
    """Delivers interaction payloads to the app and applies what its ack asks for."""

    def __init__(
        self,
        workspace: Workspace,
        hub: EventHub,
        sockets: SocketModeHub,
        signing_secret: str,
        request_url: str | None = None,
        wait: float = 10.0,
        ack_deadline: float = ACK_DEADLINE,
    ) -> None:
        self.workspace = workspace
        self.hub = hub
        self.sockets = sockets
        self.signing_secret = signing_secret
        self.request_url = request_url
        self.wait = wait
        self.ack_deadline = ack_deadline
        self.results: list[InteractionResult] = []
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send(
        self, kind: str, payload: JSON, form: Mapping[str, str], envelope: str, accepts: bool
    ) -> InteractionResult:
        started = time.monotonic()
        if self.sockets.connected:
            status, body = await self.over_socket(envelope, payload, accepts)
            transport = "socket"
        else:
            status, body = await self.over_http(form)
            transport = "http"
        elapsed = time.monotonic() - started
        result = InteractionResult(
            kind,
            status,
            body,
            elapsed,
            acked_in_time=status == 200 and elapsed <= self.ack_deadline,
            transport=transport,
            payload=payload,
            trigger_id=payload.get("trigger_id"),
            response_url=payload.get("response_url"),
        )
        self.results.append(result)
        await self.hub.publish(
            SandboxEvent(SandboxEventKind.INTERACTION_SENT, detail={"kind": kind})
        )
        return result

    async def over_http(self, form: Mapping[str, str]) -> tuple[int | None, str]:
        if not self.request_url:
            raise RuntimeError("the sandbox has no request URL and no Socket Mode connection")
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.wait))
        body = urlencode(form)
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": payloads.sign(self.signing_secret, timestamp, body),
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        }
        try:
            async with self._session.post(self.request_url, data=body, headers=headers) as reply:
                return reply.status, await reply.text()
        except TimeoutError:
            return None, ""

    async def over_socket(
        self, envelope: str, payload: JSON, accepts: bool
    ) -> tuple[int | None, str]:
        try:
            frame = await self.sockets.deliver(envelope, payload, accepts, self.wait)
        except TimeoutError:
            return None, ""
        ack = frame.get("payload")
        return 200, json.dumps(ack) if ack else ""

    async def apply_command_ack(self, result: InteractionResult) -> None:
        """A slash command's ack body is shown to the user (or the channel, if in_channel)."""
        if not result.acked_in_time or not result.body.strip():
            return
        answer = result.json()
        if not isinstance(answer, dict):
            answer = {"text": result.body}
        text, blocks = str(answer.get("text") or ""), list(answer.get("blocks") or [])
        if not text and not blocks:
            return
        fields = result.payload
        channel = self.workspace.channels[fields["channel_id"]]
        ws = self.workspace
        if answer.get("response_type") == "in_channel":
            message = ws.post(channel, ws.identity.bot_user_id, text, blocks)
            event = SandboxEvent(SandboxEventKind.MESSAGE_POSTED, channel.id, message.ts)
        else:
            ephemeral = ws.post_ephemeral(channel, fields["user_id"], text, blocks, None)
            event = ephemeral_posted(ephemeral)
        await self.hub.publish(event)

    async def apply_submission_ack(self, view_id: str, result: InteractionResult) -> None:
        """view_submission: an empty ack closes the modal; response_action says otherwise."""
        if not result.acked_in_time:
            return
        view = self.workspace.views[view_id]
        answer = result.json() or {}
        action = answer.get("response_action")
        if action == "errors":
            view.errors = dict(answer.get("errors") or {})
            return
        if action in ("update", "push") and isinstance(answer.get("view"), dict):
            view.history.append(view.view)
            view.view, view.hash, view.errors = answer["view"], self.workspace.new_hash(), {}
            await self.hub.publish(
                SandboxEvent(
                    SandboxEventKind.VIEW_UPDATED, user=view.user, detail={"view_id": view.id}
                )
            )
            return
        view.state = ViewState.CLOSED
        await self.hub.publish(
            SandboxEvent(SandboxEventKind.VIEW_CLOSED, user=view.user, detail={"view_id": view.id})
        )
