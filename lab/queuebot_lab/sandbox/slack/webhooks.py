"""The sandbox's non-API URLs: response_url targets, file upload URLs and permalink pages.

A response_url takes JSON with text/blocks, `response_type` (ephemeral by default or
in_channel), `replace_original`, `delete_original` and `thread_ts`, at most 5 times within
30 minutes (https://docs.slack.dev/interactivity/handling-user-interaction#message_responses).
"""

from typing import Any

from aiohttp import web

from queuebot_lab.sandbox.slack.blockkit import error_of, message_problems
from queuebot_lab.sandbox.slack.events import (
    EventHub,
    SandboxEvent,
    SandboxEventKind,
    ephemeral_posted,
)
from queuebot_lab.sandbox.slack.models import JSON, MessageVersion, ResponsePost, ResponseTarget
from queuebot_lab.sandbox.slack.params import blocks_error
from queuebot_lab.sandbox.slack.text import render_thread
from queuebot_lab.sandbox.slack.workspace import WebApiError, Workspace, with_block_ids


def is_true(value: Any) -> bool:
    # respond() sends booleans; hand-written clients often send "true".
    return value is True or value == "true"


class Webhooks:
    """Handlers for `/response/{target}`, `/upload/v1/{file}` and `/archives/{channel}/p{ts}`."""

    def __init__(self, workspace: Workspace, hub: EventHub) -> None:
        self.workspace = workspace
        self.hub = hub

    async def respond(self, request: web.Request) -> web.Response:
        target_id = request.match_info["target"]
        body: JSON = {}
        try:
            target = self.workspace.use_response_url(target_id)
            try:
                parsed = await request.json()
            except ValueError:
                raise WebApiError("invalid_payload", status=400) from None
            if not isinstance(parsed, dict):
                raise WebApiError("invalid_payload", status=400)
            body = parsed
            outcome = await self.apply(target, body)
            status, answer = 200, {"ok": True}
        except WebApiError as refusal:
            status, answer, outcome = refusal.status, refusal.body(), refusal.error
        self.workspace.response_posts.append(ResponsePost(target_id, body, status, outcome))
        await self.hub.publish(
            SandboxEvent(
                SandboxEventKind.RESPONSE_POSTED, detail={"target": target_id, "outcome": outcome}
            )
        )
        return web.json_response(answer, status=status)

    async def apply(self, target: ResponseTarget, body: JSON) -> str:
        ws = self.workspace
        channel = ws.channels[target.channel]
        if is_true(body.get("delete_original")):
            return await self.delete_source(target)
        text = str(body.get("text") or "")
        blocks = body.get("blocks")
        if not text and not blocks:
            raise WebApiError("no_text", status=400)
        if error := error_of(problems := message_problems(blocks)):
            refusal = blocks_error(error, problems)
            refusal.status = 400
            raise refusal
        try:
            ws.check_slack_files(blocks)
        except WebApiError as refusal:
            refusal.status = 400
            raise
        blocks = list(blocks or [])
        # A slash command's response_url has no message of its own to replace: Slack posts a
        # new one (slackapi/bolt-js#2287, slackapi/bolt-python#1268).
        if is_true(body.get("replace_original")) and target.source_ts:
            return await self.replace_source(target, text, blocks)
        thread_ts = body.get("thread_ts")
        thread = str(thread_ts) if thread_ts else None
        if body.get("response_type") == "in_channel":
            message = ws.post(channel, ws.identity.bot_user_id, text, blocks, thread)
            await self.hub.publish(
                SandboxEvent(
                    SandboxEventKind.MESSAGE_POSTED, channel.id, message.ts, message.thread_ts
                )
            )
            return "in_channel"
        ephemeral = ws.post_ephemeral(channel, target.user, text, blocks, thread)
        await self.hub.publish(ephemeral_posted(ephemeral))
        return "ephemeral"

    async def replace_source(self, target: ResponseTarget, text: str, blocks: list[JSON]) -> str:
        ws = self.workspace
        assert target.source_ts is not None
        if target.source_ephemeral:
            ephemeral = ws.find_ephemeral(target.channel, target.source_ts)
            if ephemeral is None:
                raise WebApiError("message_not_found", status=404)
            ephemeral.text, ephemeral.blocks = text, with_block_ids(blocks)
            ephemeral.versions.append(MessageVersion(text, ephemeral.blocks, ws.next_ts()))
            event = SandboxEvent(
                SandboxEventKind.MESSAGE_UPDATED, target.channel, ephemeral.ts, user=target.user
            )
        else:
            message = ws.find(target.channel, target.source_ts)
            if message is None:
                raise WebApiError("message_not_found", status=404)
            ws.update(message, text, blocks, ws.identity.bot_user_id)
            event = SandboxEvent(
                SandboxEventKind.MESSAGE_UPDATED, target.channel, message.ts, message.thread_ts
            )
        await self.hub.publish(event)
        return "replaced"

    async def delete_source(self, target: ResponseTarget) -> str:
        ws = self.workspace
        if target.source_ts is None:
            return "nothing_to_delete"
        found = (
            ws.find_ephemeral(target.channel, target.source_ts)
            if target.source_ephemeral
            else ws.find(target.channel, target.source_ts)
        )
        if found is None:
            raise WebApiError("message_not_found", status=404)
        found.deleted = True
        await self.hub.publish(
            SandboxEvent(SandboxEventKind.MESSAGE_DELETED, target.channel, found.ts)
        )
        return "deleted"

    async def upload(self, request: web.Request) -> web.Response:
        upload = self.workspace.files.get(request.match_info["file"])
        if upload is None:
            return web.Response(status=404, text="file_not_found")
        if request.content_type == "multipart/form-data":
            form = await request.post()
            part = next((v for v in form.values() if isinstance(v, web.FileField)), None)
            data = part.file.read() if part is not None else b""
        else:
            data = await request.read()
        upload.content = data
        return web.Response(text=f"OK - {len(data)}")

    async def archive(self, request: web.Request) -> web.Response:
        """The permalink target: the message (and its thread) as text."""
        channel_id, digits = request.match_info["channel"], request.match_info["digits"]
        ts = f"{digits[:-6]}.{digits[-6:]}"
        message = self.workspace.find(channel_id, ts)
        if message is None:
            return web.Response(status=404, text="message_not_found")
        users = {u.id: u.name for u in self.workspace.users.values()}
        replies = [r.to_slack() for r in self.workspace.replies(channel_id, ts)]
        return web.Response(text=render_thread(message.to_slack(), replies, users) + "\n")
