"""A real Bolt app against the sandbox: what works here must work with Slack's own payloads."""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from lab_tests.sandbox.slack.conftest import SILENCE_MODAL
from queuebot_lab.sandbox.slack import ONCALL_USER, SlackSandbox, ViewState
from queuebot_lab.sandbox.slack.server import SANDBOX_BOT_TOKEN, SANDBOX_SIGNING_SECRET


def build_app(sandbox: SlackSandbox) -> AsyncApp:
    app = AsyncApp(
        client=AsyncWebClient(token=SANDBOX_BOT_TOKEN, base_url=sandbox.api_url),
        signing_secret=SANDBOX_SIGNING_SECRET,
    )

    @app.action("run_diagnostics")
    async def on_run(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        channel, ts = body["channel"]["id"], body["message"]["ts"]
        await client.chat_postMessage(channel=channel, thread_ts=ts, text="diagnostics: ok")

    @app.action("silence")
    async def on_silence(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        await client.views_open(trigger_id=body["trigger_id"], view=SILENCE_MODAL)

    @app.view("silence")
    async def on_submit(ack: AsyncAck, view: dict[str, Any]) -> None:
        minutes = view["state"]["values"]["duration"]["minutes"]["value"]
        if not minutes.isdigit():
            await ack(response_action="errors", errors={"duration": "minutes, please"})
            return
        await ack()

    @app.command("/queue-status")
    async def on_status(ack: AsyncAck, respond: AsyncRespond, command: dict[str, Any]) -> None:
        await ack()
        await respond(text=f"queue for {command['text']}", response_type="in_channel")

    return app


@pytest.fixture
async def sandbox() -> AsyncIterator[SlackSandbox]:
    sandbox = SlackSandbox()
    await sandbox.start()
    runner = web.AppRunner(build_app(sandbox).web_app(path="/slack/events"))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    sandbox.request_url = f"http://{host}:{port}/slack/events"
    yield sandbox
    await runner.cleanup()
    await sandbox.stop()


async def post_alert(sandbox: SlackSandbox) -> str:
    buttons = [
        {"type": "button", "text": {"type": "plain_text", "text": t}, "action_id": a}
        for t, a in (("Run diagnostics", "run_diagnostics"), ("Silence…", "silence"))
    ]
    client = AsyncWebClient(token=SANDBOX_BOT_TOKEN, base_url=sandbox.api_url)
    answer = await client.chat_postMessage(
        channel=sandbox.channel_id, text="alert", blocks=[{"type": "actions", "elements": buttons}]
    )
    ts: str = answer["ts"]
    return ts


async def test_bolt_accepts_a_click_and_replies_in_the_thread(sandbox: SlackSandbox) -> None:
    """Bolt verifies the sandbox's signature, acks in time and its reply lands in the thread."""
    ts = await post_alert(sandbox)
    result = await sandbox.click(sandbox.channel_id, ts, "run_diagnostics")
    assert (result.status, result.acked_in_time) == (200, True)
    replies = await sandbox.wait_for(lambda: sandbox.replies(None, ts))
    assert replies[0].text == "diagnostics: ok"
    assert len(sandbox.calls("auth.test")) == 1


async def test_bolt_opens_a_modal_from_a_click_and_validates_the_submission(
    sandbox: SlackSandbox,
) -> None:
    """A click's trigger opens the modal; Bolt's errors ack keeps it open, a plain ack closes it."""
    ts = await post_alert(sandbox)
    await sandbox.click(sandbox.channel_id, ts, "silence")
    [view] = await sandbox.wait_for(lambda: sandbox.views)
    await sandbox.submit_view(view.id, {"duration": {"minutes": "soon"}})
    assert (view.state, view.errors) == (ViewState.OPEN, {"duration": "minutes, please"})
    await sandbox.submit_view(view.id, {"duration": {"minutes": "30"}})
    assert view.state is ViewState.CLOSED


async def test_bolt_respond_reaches_the_sandbox_response_url(sandbox: SlackSandbox) -> None:
    """Bolt's respond() posts to the response_url the sandbox put into the slash command."""
    await sandbox.slash_command("/queue-status", "linux.2xlarge", user_id=ONCALL_USER)
    [message] = await sandbox.wait_for(lambda: sandbox.messages())
    assert message.text == "queue for linux.2xlarge"
    assert sandbox.response_posts[0].status == 200
