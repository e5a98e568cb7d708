"""The sandbox workspace in a browser: a channel view where people click, type and submit.

`GET /` serves one page (static/index.html, app.js, app.css) that renders the workspace's
messages from their Block Kit, threads, the acting person's ephemeral messages and open modals,
and uploaded images. `GET /ui/state` is everything the page shows, as JSON; `GET /ui/events`
streams a server-sent event on every change, so the page refreshes live. What a person does
goes through `People`, which builds and signs the same requests Slack would send to the app:
`POST /ui/click`, `/ui/submit`, `/ui/close`, `/ui/command`. Whoever hosts the sandbox (the
demo) can add controls of its own (`/ui/control/{name}`, e.g. "fire another alert"). Each of
these takes only JSON from the page's own origin, and only under an address the workspace
listens on (guard.py), so no other web page can act or read here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from aiohttp import web

from queuebot_lab.sandbox.slack.events import EventHub, SandboxEvent, SandboxEventKind
from queuebot_lab.sandbox.slack.models import JSON, PostedMessage, ViewState
from queuebot_lab.sandbox.slack.people import People
from queuebot_lab.sandbox.slack.text import EMOJI
from queuebot_lab.sandbox.slack.workspace import WebApiError, Workspace

log = logging.getLogger(__name__)

STATIC = {
    "index.html": "text/html",
    "app.js": "text/javascript",
    "app.css": "text/css",
}
#: Events the page does not need to hear about (they change nothing it shows).
QUIET = {
    SandboxEventKind.API_CALL,
    SandboxEventKind.INTERACTION_SENT,
    SandboxEventKind.RESPONSE_POSTED,
}
#: A keep-alive comment this often keeps proxies and the browser from closing the stream.
KEEPALIVE_SECONDS = 15.0


@dataclass(frozen=True)
class UiControl:
    """A button of the host's in the page's header, e.g. "Fire a surge alert"."""

    label: str
    run: Callable[[], Awaitable[str]]
    #: Shown on hover.
    hint: str = ""


class WebUi:
    def __init__(self, workspace: Workspace, hub: EventHub, people: People) -> None:
        self.workspace = workspace
        self.hub = hub
        self.people = people
        self.controls: dict[str, UiControl] = {}
        #: The handlers streaming events to open pages; ended when the sandbox stops.
        self._streams: set[asyncio.Task[Any]] = set()

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/", self.page),
            web.get("/static/{name}", self.static),
            web.get("/ui/state", self.state),
            web.get("/ui/events", self.events),
            web.get("/ui/files/{file}", self.file),
            web.post("/ui/click", self.click),
            web.post("/ui/submit", self.submit),
            web.post("/ui/close", self.close),
            web.post("/ui/command", self.command),
            web.post("/ui/control/{name}", self.control),
        ]

    # -- the page ----------------------------------------------------------------------------

    async def page(self, request: web.Request) -> web.Response:
        return self._static("index.html")

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in STATIC:
            raise web.HTTPNotFound(text="no such file")
        return self._static(name)

    def _static(self, name: str) -> web.Response:
        body = resources.files("queuebot_lab.sandbox.slack").joinpath("static", name).read_bytes()
        return web.Response(
            body=body,
            content_type=STATIC[name],
            charset="utf-8",
            headers={"Cache-Control": "no-cache"},
        )

    async def state(self, request: web.Request) -> web.Response:
        user = request.query.get("user") or ""
        return web.json_response(self.snapshot(user), dumps=_dumps)

    def snapshot(self, user: str) -> JSON:
        """What `user` sees: every channel's messages with their threads, their own
        ephemerals and open modals, and the host's controls."""
        ws = self.workspace
        channels = []
        for channel in ws.channels.values():
            top = sorted(ws.top_level(channel.id), key=lambda m: float(m.ts))
            channels.append(
                {
                    "id": channel.id,
                    "name": channel.name,
                    "messages": [self._message(m, with_replies=True) for m in top],
                    "ephemerals": [
                        {**e.to_slack(), "channel": e.channel, "ephemeral": True}
                        for e in ws.ephemerals
                        if e.channel == channel.id and e.user == user and not e.deleted
                    ],
                }
            )
        views = [
            {
                "id": v.id,
                "view": v.view,
                "errors": v.errors,
            }
            for v in ws.views.values()
            if v.user == user and v.state is ViewState.OPEN
        ]
        return {
            "team": ws.identity.team_name,
            "bot_user": ws.identity.bot_user_id,
            "users": [
                {"id": u.id, "name": u.name, "real_name": u.real_name, "is_bot": u.is_bot}
                for u in ws.users.values()
            ],
            "channels": channels,
            "views": views,
            "controls": [
                {"name": name, "label": c.label, "hint": c.hint}
                for name, c in self.controls.items()
            ],
            "emoji": dict(EMOJI),
        }

    def _message(self, message: PostedMessage, *, with_replies: bool) -> JSON:
        shown = message.to_slack()
        shown["channel"] = message.channel
        shown["edited_count"] = max(len(message.versions) - 1, 0)
        if with_replies:
            shown["replies"] = [
                self._message(r, with_replies=False)
                for r in self.workspace.replies(message.channel, message.ts)
            ]
        return shown

    async def events(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: one `change` per state change the page shows."""
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            }
        )
        await response.prepare(request)
        feed = self.hub.subscribe()
        stream = asyncio.current_task()
        if stream is not None:
            self._streams.add(stream)
        try:
            await response.write(b": connected\n\n")
            while True:
                try:
                    async with asyncio.timeout(KEEPALIVE_SECONDS):
                        event: SandboxEvent = await feed.get()
                except TimeoutError:
                    await response.write(b": keep-alive\n\n")
                    continue
                if event.kind in QUIET:
                    continue
                data = json.dumps({"kind": event.kind.value, "channel": event.channel})
                await response.write(f"event: change\ndata: {data}\n\n".encode())
        except (ConnectionResetError, asyncio.CancelledError):
            pass  # the page went away, or the sandbox is stopping
        finally:
            self.hub.unsubscribe(feed)
            if stream is not None:
                self._streams.discard(stream)
        return response

    async def file(self, request: web.Request) -> web.Response:
        upload = self.workspace.files.get(request.match_info["file"])
        if upload is None or upload.content is None:
            raise web.HTTPNotFound(text="file_not_found")
        kind = "image/png" if upload.filename.lower().endswith(".png") else None
        return web.Response(body=upload.content, content_type=kind or "application/octet-stream")

    # -- people acting -----------------------------------------------------------------------

    async def click(self, request: web.Request) -> web.Response:
        body = await _body(request)
        return await self._act(
            self.people.click(
                _text(body, "channel"),
                _text(body, "ts"),
                _text(body, "action_id"),
                _text(body, "user"),
            )
        )

    async def submit(self, request: web.Request) -> web.Response:
        body = await _body(request)
        values = body.get("values")
        if not isinstance(values, dict):
            raise web.HTTPBadRequest(text="values must be an object")
        return await self._act(
            self.people.submit_view(_text(body, "view_id"), values, _text(body, "user"))
        )

    async def close(self, request: web.Request) -> web.Response:
        body = await _body(request)
        view = self.workspace.views.get(_text(body, "view_id"))
        if view is None or view.state is not ViewState.OPEN:
            raise web.HTTPNotFound(text="no open view")
        view.state = ViewState.CLOSED
        await self.hub.publish(SandboxEvent(SandboxEventKind.VIEW_CLOSED, user=view.user))
        return web.json_response({"ok": True})

    async def command(self, request: web.Request) -> web.Response:
        body = await _body(request)
        line = _text(body, "text").strip()
        command, _, text = line.partition(" ")
        if not command.startswith("/"):
            raise web.HTTPBadRequest(text="a slash command starts with /")
        return await self._act(
            self.people.slash_command(
                command, text.strip(), _text(body, "channel"), _text(body, "user")
            )
        )

    async def control(self, request: web.Request) -> web.Response:
        found = self.controls.get(request.match_info["name"])
        if found is None:
            raise web.HTTPNotFound(text="no such control")
        try:
            said = await found.run()
        except Exception as exc:
            log.exception("demo control %s failed", request.match_info["name"])
            return web.json_response({"ok": False, "error": str(exc)}, status=500)
        return web.json_response({"ok": True, "said": said})

    async def _act(self, action: Awaitable[Any]) -> web.Response:
        """Run what the person did; answer once the app has acked (or failed to)."""
        try:
            result = await action
        except (LookupError, ValueError, WebApiError) as problem:
            return web.json_response({"ok": False, "error": str(problem)}, status=400)
        return web.json_response(
            {"ok": True, "status": result.status, "acked_in_time": result.acked_in_time}
        )

    async def close_streams(self) -> None:
        """End every event stream, so stopping the sandbox does not wait for open pages."""
        for task in list(self._streams):
            task.cancel()
        for task in list(self._streams):
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _body(request: web.Request) -> JSON:
    # Declared JSON, from the page's own origin, under the workspace's own address: the guard
    # (guard.py) has refused anything else before a handler runs.
    try:
        body = await request.json()
    except ValueError:
        raise web.HTTPBadRequest(text="the body must be JSON") from None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text="the body must be a JSON object")
    return body


def _text(body: JSON, key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise web.HTTPBadRequest(text=f"{key} is required")
    return value


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
