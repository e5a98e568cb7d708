"""Socket Mode for the sandbox: apps.connections.open, the WebSocket, envelopes and acks.

https://docs.slack.dev/apis/events-api/using-socket-mode: the app trades its app-level token
for a one-use WebSocket URL; Slack greets with `hello`, sends envelopes
`{envelope_id, type, payload, accepts_response_payload}` and waits for `{"envelope_id": ...}`.
"""

import asyncio
import json
import secrets
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from queuebot_lab.sandbox.slack.events import EventHub, SandboxEvent, SandboxEventKind
from queuebot_lab.sandbox.slack.models import JSON
from queuebot_lab.sandbox.slack.params import Call
from queuebot_lab.sandbox.slack.workspace import Workspace


@dataclass
class Connection:
    socket: web.WebSocketResponse
    pending: dict[str, asyncio.Future[JSON]] = field(default_factory=dict)


class SocketModeHub:
    """Issues WebSocket URLs, holds the app's connections and delivers envelopes over them."""

    def __init__(self, workspace: Workspace, hub: EventHub) -> None:
        self.workspace = workspace
        self.hub = hub
        self.connections: list[Connection] = []
        self.acks: list[JSON] = []
        self._tickets: set[str] = set()

    @property
    def connected(self) -> bool:
        return any(not c.socket.closed for c in self.connections)

    async def connections_open(self, call: Call) -> JSON:
        """apps.connections.open: a WebSocket URL good for one connection."""
        ticket = secrets.token_urlsafe(16)
        self._tickets.add(ticket)
        ws_base = call.base_url.replace("http", "ws", 1)
        app_id = self.workspace.identity.app_id
        return {"url": f"{ws_base}/socket?ticket={ticket}&app_id={app_id}"}

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        if ticket not in self._tickets:
            raise web.HTTPUnauthorized(text="invalid ticket")
        self._tickets.discard(ticket)
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        connection = Connection(socket)
        self.connections.append(connection)
        await self.hub.publish(SandboxEvent(SandboxEventKind.SOCKET_CONNECTED))
        await socket.send_json(
            {
                "type": "hello",
                "num_connections": len(self.connections),
                "debug_info": {"host": "sandbox", "approximate_connection_time": 18060},
                "connection_info": {"app_id": self.workspace.identity.app_id},
            }
        )
        try:
            async for frame in socket:
                if frame.type == WSMsgType.TEXT:
                    self.on_frame(connection, frame.data)
        finally:
            self.connections.remove(connection)
            for waiter in connection.pending.values():
                if not waiter.done():
                    waiter.set_exception(ConnectionError("Socket Mode connection closed"))
            await self.hub.publish(SandboxEvent(SandboxEventKind.SOCKET_DISCONNECTED))
        return socket

    def on_frame(self, connection: Connection, data: str) -> None:
        try:
            frame = json.loads(data)
        except ValueError:
            return
        if not isinstance(frame, dict):
            return
        envelope_id = frame.get("envelope_id")
        waiter = connection.pending.pop(str(envelope_id), None)
        if waiter is not None and not waiter.done():
            self.acks.append(frame)
            waiter.set_result(frame)

    async def deliver(
        self, envelope_type: str, payload: Any, accepts_response_payload: bool, wait: float
    ) -> JSON:
        """Send one envelope over the newest open connection and return the app's ack frame."""
        live = [c for c in self.connections if not c.socket.closed]
        if not live:
            raise ConnectionError("no Socket Mode connection")
        connection = live[-1]
        envelope_id = str(uuid.uuid4())
        waiter: asyncio.Future[JSON] = asyncio.get_running_loop().create_future()
        connection.pending[envelope_id] = waiter
        await connection.socket.send_json(
            {
                "envelope_id": envelope_id,
                "type": envelope_type,
                "payload": payload,
                "accepts_response_payload": accepts_response_payload,
            }
        )
        try:
            async with asyncio.timeout(wait):  # not wait_for: python/cpython#86296
                return await waiter
        finally:
            connection.pending.pop(envelope_id, None)

    async def close(self) -> None:
        for connection in list(self.connections):
            await connection.socket.close()
