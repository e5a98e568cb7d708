"""The sandbox Web API endpoint `/api/<method>`: auth, faults, rate limits, dispatch, records.

Answers as Slack does (https://docs.slack.dev/apis/web-api/): HTTP 200 with `{"ok": true, ...}`
or `{"ok": false, "error": ...}`, 429 with `Retry-After` when rate limited. Every call is
recorded with its arguments, the status answered and when it arrived.
"""

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from aiohttp import web

from queuebot_lab.sandbox.slack import api_chat, api_files, api_usergroups, api_views
from queuebot_lab.sandbox.slack.events import EventHub, SandboxEvent, SandboxEventKind
from queuebot_lab.sandbox.slack.faults import Answer, Faults, MessageRateLimit
from queuebot_lab.sandbox.slack.models import JSON, CallRecord
from queuebot_lab.sandbox.slack.params import Call, bearer_token, read_params
from queuebot_lab.sandbox.slack.workspace import WebApiError, Workspace

Handler = Callable[[Call], Awaitable[JSON]]


class TokenKind(StrEnum):
    BOT = "bot"
    APP = "app"


@dataclass(frozen=True)
class Method:
    handler: Handler
    #: The scope Slack requires (https://docs.slack.dev/reference/scopes), None for none.
    scope: str | None = None
    token: TokenKind = TokenKind.BOT


METHODS: Mapping[str, Method] = MappingProxyType(
    {
        "auth.test": Method(api_chat.auth_test),
        "chat.postMessage": Method(api_chat.chat_post_message, "chat:write"),
        "chat.update": Method(api_chat.chat_update, "chat:write"),
        "chat.delete": Method(api_chat.chat_delete, "chat:write"),
        "chat.postEphemeral": Method(api_chat.chat_post_ephemeral, "chat:write"),
        "chat.getPermalink": Method(api_chat.chat_get_permalink),
        "conversations.replies": Method(api_chat.conversations_replies, "channels:history"),
        "conversations.history": Method(api_chat.conversations_history, "channels:history"),
        "conversations.info": Method(api_chat.conversations_info, "channels:read"),
        "conversations.join": Method(api_chat.conversations_join, "channels:join"),
        "users.info": Method(api_chat.users_info, "users:read"),
        "usergroups.list": Method(api_usergroups.usergroups_list, "usergroups:read"),
        "usergroups.users.list": Method(api_usergroups.usergroups_users_list, "usergroups:read"),
        "views.open": Method(api_views.views_open),
        "views.update": Method(api_views.views_update),
        "files.getUploadURLExternal": Method(
            api_files.files_get_upload_url_external, "files:write"
        ),
        "files.completeUploadExternal": Method(
            api_files.files_complete_upload_external, "files:write"
        ),
    }
)


class WebApi:
    """Serves `/api/{method}` for one workspace."""

    def __init__(
        self,
        workspace: Workspace,
        hub: EventHub,
        faults: Faults,
        rate_limit: MessageRateLimit | None = None,
    ) -> None:
        self.workspace = workspace
        self.hub = hub
        self.faults = faults
        self.rate_limit = rate_limit
        #: Socket Mode adds apps.connections.open (see SlackSandbox).
        self.methods = dict(METHODS)

    async def handle(self, request: web.Request) -> web.Response:
        received_at = self.workspace.monotonic()
        method = request.match_info["method"]
        params: JSON = {}
        try:
            params = await read_params(request)
            answer = await self.answer(request, method, params)
        except WebApiError as refusal:
            answer = Answer(refusal.status, refusal.body())
        token = bearer_token(request, params)
        if token == self.workspace.identity.bot_token:
            # Slack reports the token's scopes on every answer; Bolt reads them from auth.test.
            answer.headers["x-oauth-scopes"] = ",".join(self.workspace.identity.scopes)
        recorded = {k: v for k, v in params.items() if k != "token"}
        error = answer.body.get("error")
        self.workspace.calls.append(
            CallRecord(
                method,
                recorded,
                answer.status,
                received_at,
                ok=bool(answer.body.get("ok")),
                error=error if isinstance(error, str) else None,
                http_verb=request.method,
            )
        )
        await self.hub.publish(SandboxEvent(SandboxEventKind.API_CALL, detail={"method": method}))
        return web.json_response(answer.body, status=answer.status, headers=answer.headers)

    async def answer(self, request: web.Request, method: str, params: JSON) -> Answer:
        spec = self.methods.get(method)
        if spec is None:
            return Answer(200, {"ok": False, "error": "unknown_method", "req_method": method})
        fault = self.faults.take(method)
        if fault is not None and not fault[1]:
            return await _held(fault[0])
        self.authorize(spec, bearer_token(request, params))
        if self.rate_limit is not None and method == "chat.postMessage":
            channel = self.workspace.channel(str(params.get("channel", "")))
            if limited := self.rate_limit.take(channel.id):
                return limited
        call = Call(method, params, base_url(request), self.workspace, self.hub)
        body = await spec.handler(call)
        if fault is not None:
            return await _held(fault[0])  # done, and the answer lost
        return Answer(200, {"ok": True, **body})

    def authorize(self, spec: Method, token: str | None) -> None:
        identity = self.workspace.identity
        if token is None:
            raise WebApiError("not_authed")
        kinds = {identity.bot_token: TokenKind.BOT}
        if identity.app_token:
            kinds[identity.app_token] = TokenKind.APP
        kind = kinds.get(token)
        if kind is None:
            raise WebApiError("invalid_auth")
        if spec.token is not kind:
            raise WebApiError("not_allowed_token_type")
        provided = identity.scopes if kind is TokenKind.BOT else ("connections:write",)
        if spec.scope is not None and spec.scope not in provided:
            raise WebApiError("missing_scope", needed=spec.scope, provided=",".join(provided))


def base_url(request: web.Request) -> str:
    """Where the caller reached the sandbox; URLs handed out point back there."""
    return f"{request.scheme}://{request.host}"


async def _held(answer: Answer) -> Answer:
    if answer.stall:
        await asyncio.sleep(answer.stall)
    return answer
