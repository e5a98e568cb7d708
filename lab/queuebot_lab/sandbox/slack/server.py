"""`SlackSandbox`: a local Slack-compatible workspace served over HTTP for tests and the demo.

Point slack_sdk at it with `AsyncWebClient(token=..., base_url=sandbox.api_url)`, and a
notifier that speaks incoming webhooks at `sandbox.incoming.add(channel)`; point the
sandbox at the app with `request_url` (or connect the app over Socket Mode with `app_token`).
It listens on 127.0.0.1 unless told otherwise, and answers only requests that name the address
it listens on (`guard`: DNS rebinding, cross-site posts).
"""

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

from aiohttp import web

from queuebot_lab.sandbox.serving import serve
from queuebot_lab.sandbox.slack.api import Method, TokenKind, WebApi
from queuebot_lab.sandbox.slack.control import Control
from queuebot_lab.sandbox.slack.events import EventHub, SandboxEvent
from queuebot_lab.sandbox.slack.faults import Faults, MessageRateLimit
from queuebot_lab.sandbox.slack.guard import WILDCARDS, LocalGuard, is_loopback
from queuebot_lab.sandbox.slack.incoming import IncomingWebhooks
from queuebot_lab.sandbox.slack.interactions import AppLink, InteractionResult
from queuebot_lab.sandbox.slack.models import (
    CallRecord,
    Channel,
    Ephemeral,
    OpenView,
    PostedMessage,
    ResponsePost,
    SandboxFile,
    User,
    UserGroup,
)
from queuebot_lab.sandbox.slack.people import People
from queuebot_lab.sandbox.slack.socket_mode import SocketModeHub
from queuebot_lab.sandbox.slack.text import render_thread
from queuebot_lab.sandbox.slack.web import WebUi
from queuebot_lab.sandbox.slack.webhooks import Webhooks
from queuebot_lab.sandbox.slack.workspace import Identity, Workspace

_T = TypeVar("_T")

log = logging.getLogger(__name__)

# The sandbox's own credentials: they open nothing but the sandbox.
SANDBOX_BOT_TOKEN = "xoxb-sandbox-token"  # noqa: S105
SANDBOX_SIGNING_SECRET = "sandbox-signing-secret"  # noqa: S105

DEFAULT_SCOPES = (
    "chat:write",
    "commands",
    "files:write",
    "users:read",
    "channels:history",
    "channels:read",
    "usergroups:read",
)
#: The people every sandbox starts with: the on-call and a second engineer.
ONCALL_USER = "U0ONCALL"
SECOND_USER = "U0SECOND"


class SlackSandbox:
    """One sandbox workspace with one app installed, served on a real TCP port."""

    def __init__(
        self,
        *,
        bot_token: str = SANDBOX_BOT_TOKEN,
        signing_secret: str = SANDBOX_SIGNING_SECRET,
        request_url: str | None = None,
        channel_name: str = "queue-alerts",
        channel_id: str = "C0QUEUEALERTS",
        app_token: str | None = None,
        enforce_rate_limits: bool = False,
        rate_scale: float = 1.0,
        team_id: str = "T0QUEUEBOT",
        team_name: str = "queuebot sandbox",
        scopes: Iterable[str] = DEFAULT_SCOPES,
    ) -> None:
        identity = Identity(
            team_id=team_id,
            team_name=team_name,
            team_domain="queuebot-sandbox",
            bot_user_id="U0QUEUEBOT",
            bot_id="B0QUEUEBOT",
            app_id="A0QUEUEBOT",
            bot_token=bot_token,
            app_token=app_token,
            scopes=tuple(scopes),
        )
        self.workspace = Workspace(identity)
        self.hub = EventHub()
        self.faults = Faults()
        self.sockets = SocketModeHub(self.workspace, self.hub)
        self.api = WebApi(
            self.workspace,
            self.hub,
            self.faults,
            # A bot whose pacing runs `rate_scale` times Slack's meets a limit as many times it.
            MessageRateLimit(per_second=rate_scale) if enforce_rate_limits else None,
        )
        self.api.methods["apps.connections.open"] = Method(
            self.sockets.connections_open, "connections:write", TokenKind.APP
        )
        self.webhooks = Webhooks(self.workspace, self.hub)
        #: Incoming webhooks: `incoming.add(channel)` gives a URL that posts into the channel.
        self.incoming = IncomingWebhooks(
            self.workspace, self.hub, self.faults, self.api.rate_limit, lambda: self.url
        )
        self.link = AppLink(self.workspace, self.hub, self.sockets, signing_secret, request_url)
        self.people = People(self.workspace, self.link, lambda: self.url)
        self.ui = WebUi(self.workspace, self.hub, self.people)
        self.workspace.add_user(ONCALL_USER, "alice", "Alice Oncall")
        self.workspace.add_user(SECOND_USER, "bob", "Bob Second")
        self.default_channel = self.workspace.add_channel(
            channel_name, channel_id, {identity.bot_user_id, ONCALL_USER, SECOND_USER}
        )
        self.guard = LocalGuard()
        self._app: web.Application | None = None
        self._runner: web.AppRunner | None = None
        self._url: str | None = None

    # -- serving -----------------------------------------------------------------------------

    @property
    def web_app(self) -> web.Application:
        if self._app is None:
            self._app = self.create_app()
        return self._app

    def create_app(self) -> web.Application:
        app = web.Application(middlewares=[self.guard.middleware])
        app.router.add_route("*", "/api/{method}", self.api.handle)
        app.router.add_post("/response/{target}", self.webhooks.respond)
        app.router.add_post("/upload/v1/{file}", self.webhooks.upload)
        app.router.add_post("/services/{team}/{hook}/{secret}", self.incoming.post)
        app.router.add_get(r"/archives/{channel}/p{digits:\d{7,}}", self.webhooks.archive)
        app.router.add_get("/socket", self.sockets.websocket)
        app.router.add_routes(Control(self.workspace, self.faults).routes())
        app.router.add_routes(self.ui.routes())
        app.on_shutdown.append(self._on_shutdown)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_shutdown(self, app: web.Application) -> None:
        await self.ui.close_streams()
        await self.sockets.close()

    async def _on_cleanup(self, app: web.Application) -> None:
        await self.link.close()

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve on `host:port` (0 picks a free port); `url` and `api_url` say where.

        Anything but loopback lets every machine that reaches `host` act in the workspace
        (click as anyone, inject faults): it is allowed when asked for, with a warning."""
        self._runner, self._url = await serve(self.web_app, host, port)
        parts = urlsplit(self._url)
        bound, bound_port = parts.hostname or host, parts.port or port
        self.guard.listening(host, bound, bound_port)
        if host in WILDCARDS or not is_loopback(bound):
            log.warning(
                "the local Slack workspace listens on %s port %s: anyone who can reach it can"
                " act in it; listen on 127.0.0.1 unless that is meant",
                host or "every interface",
                bound_port,
            )

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> "SlackSandbox":
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:PORT; set by start() or use_url()."""
        if self._url is None:
            raise RuntimeError("the sandbox is not serving: call start() or use_url() first")
        return self._url

    def use_url(self, url: str) -> None:
        """Say where `web_app` is served when something other than start() serves it; only
        requests naming that host and port are answered."""
        self._url = url.rstrip("/")
        parts = urlsplit(self._url)
        if parts.hostname is None:
            raise ValueError(f"not a URL the sandbox can be reached at: {url!r}")
        self.guard.listening(parts.hostname, parts.hostname, parts.port or 80)

    @property
    def port(self) -> int:
        """The port `url` names."""
        port = urlsplit(self.url).port
        return 80 if port is None else port

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    # -- identity and setup ------------------------------------------------------------------

    @property
    def identity(self) -> Identity:
        return self.workspace.identity

    @property
    def channel_id(self) -> str:
        return self.default_channel.id

    @property
    def bot_user_id(self) -> str:
        return self.identity.bot_user_id

    @property
    def request_url(self) -> str | None:
        return self.link.request_url

    @request_url.setter
    def request_url(self, url: str | None) -> None:
        self.link.request_url = url

    def add_user(self, user_id: str, name: str, channels: Iterable[str] = ()) -> User:
        user = self.workspace.add_user(user_id, name)
        for ref in channels:
            self.workspace.channel(ref).members.add(user_id)
        return user

    def add_channel(
        self, name: str, channel_id: str | None = None, members: Iterable[str] | None = None
    ) -> Channel:
        default = {self.bot_user_id, ONCALL_USER, SECOND_USER}
        return self.workspace.add_channel(name, channel_id, default if members is None else members)

    def add_usergroup(
        self,
        handle: str,
        users: Iterable[str],
        *,
        usergroup_id: str | None = None,
        name: str | None = None,
    ) -> UserGroup:
        """A user group mentioned as @handle; its id is generated ("S0SBX...") unless given."""
        return self.workspace.add_usergroup(handle, users, usergroup_id, name)

    def disable_usergroup(self, usergroup_id: str) -> UserGroup:
        """Disable a group as an admin would: kept with its members, date_delete stamped."""
        return self.workspace.disable_usergroup(usergroup_id)

    # -- what happened -----------------------------------------------------------------------

    def _channel_id(self, channel: str | None) -> str:
        return self.channel_id if channel is None else self.workspace.channel(channel).id

    def messages(self, channel: str | None = None) -> list[PostedMessage]:
        """Top-level messages of a channel (the default one when None), oldest first."""
        return sorted(self.workspace.top_level(self._channel_id(channel)), key=lambda m: m.ts)

    def message(self, channel: str | None, ts: str) -> PostedMessage | None:
        return self.workspace.find(self._channel_id(channel), ts)

    def replies(self, channel: str | None, ts: str) -> list[PostedMessage]:
        return self.workspace.replies(self._channel_id(channel), ts)

    def orphans(self, channel: str | None = None) -> list[PostedMessage]:
        """Replies whose thread_ts named no message: accepted by Slack, visible nowhere."""
        stored = self.workspace.messages.get(self._channel_id(channel), {}).values()
        return [m for m in stored if m.orphan]

    def ephemerals(self, user: str | None = None) -> list[Ephemeral]:
        return [
            e
            for e in self.workspace.ephemerals
            if not e.deleted and (user is None or e.user == user)
        ]

    def calls(self, method: str | None = None) -> list[CallRecord]:
        return [c for c in self.workspace.calls if method is None or c.method == method]

    @property
    def views(self) -> list[OpenView]:
        return list(self.workspace.views.values())

    @property
    def files(self) -> list[SandboxFile]:
        return list(self.workspace.files.values())

    @property
    def response_posts(self) -> list[ResponsePost]:
        return list(self.workspace.response_posts)

    @property
    def interactions(self) -> list[InteractionResult]:
        return list(self.link.results)

    def render(self, channel: str | None = None, ts: str | None = None) -> str:
        """The channel (or the one thread `ts`) as terminal text, replies indented."""
        channel_id = self._channel_id(channel)
        users = {u.id: u.name for u in self.workspace.users.values()}
        if ts is None:
            parents = self.messages(channel_id)
        else:
            found = self.message(channel_id, ts)
            parents = [found] if found else []
        return "\n\n".join(
            render_thread(
                m.to_slack(), [r.to_slack() for r in self.replies(channel_id, m.ts)], users
            )
            for m in parents
        )

    # -- waiting and watching ----------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], _T], timeout: float = 5.0) -> _T:  # noqa: ASYNC109
        """Wait until `predicate()` is truthy, waking on every state change; return its value."""
        return await self.hub.wait_for(predicate, timeout)

    def subscribe(self) -> asyncio.Queue[SandboxEvent]:
        return self.hub.subscribe()

    def unsubscribe(self, queue: asyncio.Queue[SandboxEvent]) -> None:
        self.hub.unsubscribe(queue)

    # -- people acting -----------------------------------------------------------------------

    async def click(
        self, channel: str, ts: str, action_id: str, user_id: str = ONCALL_USER
    ) -> InteractionResult:
        return await self.people.click(channel, ts, action_id, user_id)

    async def slash_command(
        self,
        command: str,
        text: str = "",
        channel: str | None = None,
        user_id: str = ONCALL_USER,
    ) -> InteractionResult:
        return await self.people.slash_command(command, text, channel or self.channel_id, user_id)

    async def submit_view(
        self,
        view_id: str,
        values: Mapping[str, Mapping[str, Any]],
        user_id: str | None = None,
    ) -> InteractionResult:
        return await self.people.submit_view(view_id, values, user_id)
