"""What the sandbox sends to the app: signed clicks, slash commands, modal submissions."""

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import pytest
from aiohttp import web
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from lab_tests.sandbox.slack.conftest import SILENCE_MODAL
from queuebot_lab.sandbox.slack import ONCALL_USER, SECOND_USER, SlackSandbox, ViewState
from queuebot_lab.sandbox.slack.server import SANDBOX_BOT_TOKEN, SANDBOX_SIGNING_SECRET

Answer = Callable[[dict[str, Any]], Awaitable[web.StreamResponse]]

ALERT_BLOCKS: list[dict[str, Any]] = [
    {"type": "header", "text": {"type": "plain_text", "text": "Queueing P2"}},
    {
        "type": "actions",
        "block_id": "incident_actions",
        "elements": [
            {
                "type": "button",
                "text": {"type": "plain_text", "text": "Run diagnostics"},
                "action_id": "run_diagnostics",
                "value": "incident-1",
                "style": "primary",
            },
            {
                "type": "button",
                "text": {"type": "plain_text", "text": "Open runbook"},
                "action_id": "open_runbook",
                "url": "https://example.com/runbook",
            },
        ],
    },
]


class Receiver:
    """A stand-in app endpoint: checks Slack's signature, keeps what it got, answers as told."""

    def __init__(self) -> None:
        self.verifier = SignatureVerifier(SANDBOX_SIGNING_SECRET)
        self.received: list[dict[str, Any]] = []
        self.answer: Answer | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.text()
        if not self.verifier.is_valid_request(body, dict(request.headers)):
            return web.json_response({"error": "invalid request"}, status=401)
        form = {k: v[0] for k, v in parse_qs(body).items()}
        got = json.loads(form["payload"]) if "payload" in form else form
        self.received.append(got)
        return await self.answer(got) if self.answer else web.Response()


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[Receiver, str]]:
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/slack/events", receiver.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    yield receiver, f"http://{host}:{port}/slack/events"
    await runner.cleanup()


@pytest.fixture
async def sandbox(receiver: tuple[Receiver, str]) -> AsyncIterator[SlackSandbox]:
    sandbox = SlackSandbox(request_url=receiver[1])
    await sandbox.start()
    yield sandbox
    await sandbox.stop()


@pytest.fixture
def app(receiver: tuple[Receiver, str]) -> Receiver:
    return receiver[0]


@pytest.fixture
def client(sandbox: SlackSandbox) -> AsyncWebClient:
    return AsyncWebClient(token=SANDBOX_BOT_TOKEN, base_url=sandbox.api_url)


async def post_alert(client: AsyncWebClient, sandbox: SlackSandbox) -> str:
    answer = await client.chat_postMessage(
        channel=sandbox.channel_id, text="P2", blocks=ALERT_BLOCKS
    )
    ts: str = answer["ts"]
    return ts


async def test_click_sends_a_signed_block_actions_payload_from_the_real_button(
    sandbox: SlackSandbox, app: Receiver, client: AsyncWebClient
) -> None:
    """A click arrives signed, with the stored message and the clicked button's own fields."""
    ts = await post_alert(client, sandbox)
    result = await sandbox.click(sandbox.channel_id, ts, "run_diagnostics", ONCALL_USER)
    assert (result.status, result.acked_in_time, result.transport) == (200, True, "http")
    [payload] = app.received
    assert payload["type"] == "block_actions"
    assert payload["user"]["id"] == ONCALL_USER
    assert payload["container"] == {
        "type": "message",
        "message_ts": ts,
        "channel_id": sandbox.channel_id,
        "is_ephemeral": False,
    }
    assert payload["message"]["blocks"] == sandbox.messages()[0].blocks
    [action] = payload["actions"]
    assert (action["action_id"], action["block_id"]) == ("run_diagnostics", "incident_actions")
    assert (action["value"], action["style"], action["type"]) == ("incident-1", "primary", "button")
    assert payload["response_url"].startswith(f"{sandbox.url}/response/")
    assert payload["trigger_id"] in sandbox.workspace.triggers


async def test_click_signed_with_another_secret_is_refused_by_the_app(
    sandbox: SlackSandbox, app: Receiver, client: AsyncWebClient
) -> None:
    """The signature really covers the body: a different secret fails verification."""
    ts = await post_alert(client, sandbox)
    sandbox.link.signing_secret = "not-the-app-secret"
    result = await sandbox.click(sandbox.channel_id, ts, "run_diagnostics")
    assert (result.status, result.acked_in_time) == (401, False)
    assert app.received == []


async def test_click_on_a_url_button_is_still_sent(
    sandbox: SlackSandbox, app: Receiver, client: AsyncWebClient
) -> None:
    """A URL button click also reaches the app, which must ack it."""
    ts = await post_alert(client, sandbox)
    await sandbox.click(sandbox.channel_id, ts, "open_runbook")
    assert app.received[0]["actions"][0]["action_id"] == "open_runbook"


async def test_click_on_a_missing_button_fails_clearly(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """Clicking an action_id the message lacks names the ones it has."""
    ts = await post_alert(client, sandbox)
    with pytest.raises(LookupError, match="run_diagnostics"):
        await sandbox.click(sandbox.channel_id, ts, "silence")


async def test_click_trigger_opens_a_modal_within_the_ack(
    sandbox: SlackSandbox, app: Receiver, client: AsyncWebClient
) -> None:
    """The trigger_id in a click is good for views.open while the app handles it."""

    async def open_modal(payload: dict[str, Any]) -> web.StreamResponse:
        await client.views_open(trigger_id=payload["trigger_id"], view=SILENCE_MODAL)
        return web.Response()

    app.answer = open_modal
    ts = await post_alert(client, sandbox)
    await sandbox.click(sandbox.channel_id, ts, "run_diagnostics", SECOND_USER)
    [view] = sandbox.views
    assert view.user == SECOND_USER


async def test_slash_command_arrives_as_signed_form_fields(
    sandbox: SlackSandbox, app: Receiver
) -> None:
    """A slash command is a signed form with Slack's fields, and its ack text goes to the user."""

    async def ack_with_text(fields: dict[str, Any]) -> web.StreamResponse:
        return web.Response(text=f"status for {fields['text']}")

    app.answer = ack_with_text
    result = await sandbox.slash_command("/queue-status", "linux.2xlarge")
    [fields] = app.received
    assert fields["command"] == "/queue-status"
    assert (fields["channel_id"], fields["user_id"]) == (sandbox.channel_id, ONCALL_USER)
    assert fields["response_url"].startswith(f"{sandbox.url}/response/")
    assert result.acked_in_time
    assert [e.text for e in sandbox.ephemerals(ONCALL_USER)] == ["status for linux.2xlarge"]


async def test_slash_command_in_channel_ack_is_posted_to_the_channel(
    sandbox: SlackSandbox, app: Receiver
) -> None:
    """An ack with response_type in_channel becomes a channel message."""

    async def ack_in_channel(fields: dict[str, Any]) -> web.StreamResponse:
        return web.json_response({"response_type": "in_channel", "text": "fleet is fine"})

    app.answer = ack_in_channel
    await sandbox.slash_command("/queue-status")
    assert [m.text for m in sandbox.messages()] == ["fleet is fine"]


async def test_late_ack_is_recorded_and_its_body_ignored(
    sandbox: SlackSandbox, app: Receiver
) -> None:
    """An answer after the ack deadline counts as no ack, and Slack drops what it says."""

    async def slow(fields: dict[str, Any]) -> web.StreamResponse:
        await asyncio.sleep(0.2)
        return web.Response(text="too late")

    app.answer = slow
    sandbox.link.ack_deadline = 0.05
    result = await sandbox.slash_command("/queue-status")
    assert (result.status, result.acked_in_time) == (200, False)
    assert sandbox.ephemerals() == []


async def test_submit_view_sends_the_values_and_an_empty_ack_closes_it(
    sandbox: SlackSandbox, app: Receiver, client: AsyncWebClient
) -> None:
    """view_submission carries view.state.values; an empty ack closes the modal."""
    trigger = sandbox.workspace.issue_trigger(ONCALL_USER)
    opened = await client.views_open(trigger_id=trigger.id, view=SILENCE_MODAL)
    await sandbox.submit_view(opened["view"]["id"], {"duration": {"minutes": "30"}})
    [payload] = app.received
    assert payload["type"] == "view_submission"
    assert payload["view"]["callback_id"] == "silence"
    assert payload["view"]["state"]["values"] == {
        "duration": {"minutes": {"type": "plain_text_input", "value": "30"}}
    }
    assert sandbox.views[0].state is ViewState.CLOSED


async def test_submit_view_errors_keep_the_modal_open(
    sandbox: SlackSandbox, app: Receiver, client: AsyncWebClient
) -> None:
    """response_action errors leaves the modal open with the errors shown."""

    async def refuse(payload: dict[str, Any]) -> web.StreamResponse:
        errors = {"duration": "Enter a number of minutes"}
        return web.json_response({"response_action": "errors", "errors": errors})

    app.answer = refuse
    trigger = sandbox.workspace.issue_trigger(ONCALL_USER)
    opened = await client.views_open(trigger_id=trigger.id, view=SILENCE_MODAL)
    await sandbox.submit_view(opened["view"]["id"], {"duration": {"minutes": "soon"}})
    [view] = sandbox.views
    assert view.state is ViewState.OPEN
    assert view.errors == {"duration": "Enter a number of minutes"}


async def test_submit_view_with_an_unknown_input_fails_clearly(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """Values for an input the modal lacks are a ValueError, not a silent payload."""
    trigger = sandbox.workspace.issue_trigger(ONCALL_USER)
    opened = await client.views_open(trigger_id=trigger.id, view=SILENCE_MODAL)
    with pytest.raises(ValueError, match="comment"):
        await sandbox.submit_view(opened["view"]["id"], {"comment": {"text": "x"}})
