"""Socket Mode against the sandbox with slack_sdk's aiohttp SocketModeClient and Bolt's handler."""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from queuebot_lab.sandbox.slack import ONCALL_USER, SlackSandbox
from queuebot_lab.sandbox.slack.server import SANDBOX_BOT_TOKEN

APP_TOKEN = "xapp-1-sandbox"


@pytest.fixture
async def sandbox() -> AsyncIterator[SlackSandbox]:
    sandbox = SlackSandbox(app_token=APP_TOKEN)
    await sandbox.start()
    yield sandbox
    await sandbox.stop()


def web_client(sandbox: SlackSandbox) -> AsyncWebClient:
    return AsyncWebClient(token=SANDBOX_BOT_TOKEN, base_url=sandbox.api_url)


async def test_connections_open_needs_the_app_token(sandbox: SlackSandbox) -> None:
    """apps.connections.open with the bot token is not_allowed_token_type."""
    with pytest.raises(SlackApiError) as raised:
        await web_client(sandbox).apps_connections_open(app_token=SANDBOX_BOT_TOKEN)
    assert raised.value.response["error"] == "not_allowed_token_type"


async def test_connections_open_answers_a_sandbox_websocket_url(sandbox: SlackSandbox) -> None:
    """apps.connections.open with the app token answers a ws:// URL on the sandbox."""
    answer = await web_client(sandbox).apps_connections_open(app_token=APP_TOKEN)
    assert answer["url"].startswith(f"{sandbox.url.replace('http', 'ws')}/socket?ticket=")


async def test_socket_mode_client_gets_hello_and_its_ack_is_used(sandbox: SlackSandbox) -> None:
    """The SDK client connects, hears hello, receives the envelope and its ack payload counts."""
    hello = asyncio.Event()
    envelopes: list[SocketModeRequest] = []

    async def on_message(
        client: AsyncBaseSocketModeClient, message: dict[str, Any], raw: str | None
    ) -> None:
        if message.get("type") == "hello":
            hello.set()

    async def on_request(client: AsyncBaseSocketModeClient, request: SocketModeRequest) -> None:
        envelopes.append(request)
        ack = SocketModeResponse(envelope_id=request.envelope_id, payload={"text": "fleet ok"})
        await client.send_socket_mode_response(ack)

    client = SocketModeClient(app_token=APP_TOKEN, web_client=web_client(sandbox))
    client.message_listeners.append(on_message)
    client.socket_mode_request_listeners.append(on_request)
    try:
        await client.connect()
        await asyncio.wait_for(hello.wait(), 5)
        result = await sandbox.slash_command("/queue-status", "now")
    finally:
        await client.close()
    [envelope] = envelopes
    assert (envelope.type, envelope.accepts_response_payload) == ("slash_commands", True)
    assert envelope.payload["command"] == "/queue-status"
    assert (result.transport, result.status, result.acked_in_time) == ("socket", 200, True)
    assert [e.text for e in sandbox.ephemerals(ONCALL_USER)] == ["fleet ok"]


async def test_bolt_socket_mode_handler_handles_a_click(sandbox: SlackSandbox) -> None:
    """Bolt's AsyncSocketModeHandler gets a click as an interactive envelope and acks it."""
    app = AsyncApp(client=web_client(sandbox))
    clicked: list[str] = []

    @app.action("run_diagnostics")
    async def on_run(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        clicked.append(body["actions"][0]["value"])

    button = {
        "type": "button",
        "text": {"type": "plain_text", "text": "Run diagnostics"},
        "action_id": "run_diagnostics",
        "value": "incident-7",
    }
    posted = await web_client(sandbox).chat_postMessage(
        channel=sandbox.channel_id, text="alert", blocks=[{"type": "actions", "elements": [button]}]
    )
    handler = AsyncSocketModeHandler(app, APP_TOKEN)
    try:
        await handler.connect_async()
        await sandbox.wait_for(lambda: sandbox.sockets.connected)
        result = await sandbox.click(sandbox.channel_id, posted["ts"], "run_diagnostics")
    finally:
        await handler.close_async()
    assert (result.transport, result.acked_in_time) == ("socket", True)
    assert clicked == ["incident-7"]
    assert sandbox.sockets.acks[0]["envelope_id"]
