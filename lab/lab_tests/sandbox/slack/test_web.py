"""The workspace's web page over HTTP: what it shows each person, what it sends for them, and
its live event stream (the browser test drives the same endpoints from the page itself)."""

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from lab_tests.sandbox.slack import test_interactions as interactions
from lab_tests.sandbox.slack.conftest import SILENCE_MODAL
from lab_tests.sandbox.slack.test_interactions import Receiver, post_alert
from queuebot_lab.sandbox.slack import ONCALL_USER, SECOND_USER, SlackSandbox
from queuebot_lab.sandbox.slack.web import UiControl

# The stand-in app and the sandbox that sends to it, shared with the interaction tests.
receiver = interactions.receiver
sandbox = interactions.sandbox
app = interactions.app
client = interactions.client


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def _state(http: aiohttp.ClientSession, sandbox: SlackSandbox, user: str) -> Any:
    async with http.get(f"{sandbox.url}/ui/state", params={"user": user}) as answer:
        assert answer.status == 200
        return await answer.json()


async def _post(
    http: aiohttp.ClientSession, sandbox: SlackSandbox, path: str, body: Any
) -> tuple[int, Any]:
    async with http.post(f"{sandbox.url}{path}", json=body) as answer:
        text = await answer.text()
        return answer.status, (json.loads(text) if text.startswith("{") else text)


async def test_the_page_and_its_files_are_served(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    async with http.get(f"{sandbox.url}/") as page:
        assert page.status == 200 and page.content_type == "text/html"
        assert '<script src="/static/app.js">' in await page.text()
    for name, kind in (("app.js", "text/javascript"), ("app.css", "text/css")):
        async with http.get(f"{sandbox.url}/static/{name}") as served:
            assert (served.status, served.content_type) == (200, kind)
    async with http.get(f"{sandbox.url}/static/..%2Fserver.py") as escaped:
        assert escaped.status == 404


async def test_state_shows_messages_threads_and_only_ones_own_ephemerals(
    sandbox: SlackSandbox, http: aiohttp.ClientSession, client: AsyncWebClient
) -> None:
    ts = await post_alert(client, sandbox)
    await client.chat_postMessage(channel=sandbox.channel_id, text="a reply", thread_ts=ts)
    await client.chat_postEphemeral(channel=sandbox.channel_id, user=ONCALL_USER, text="psst")
    alice = await _state(http, sandbox, ONCALL_USER)
    (channel,) = alice["channels"]
    (parent,) = channel["messages"]
    assert parent["ts"] == ts and parent["blocks"][0]["type"] == "header"
    assert [r["text"] for r in parent["replies"]] == ["a reply"]
    assert [e["text"] for e in channel["ephemerals"]] == ["psst"]
    bob = await _state(http, sandbox, SECOND_USER)
    assert bob["channels"][0]["ephemerals"] == []
    assert {u["name"] for u in alice["users"]} >= {"alice", "bob"}


async def test_clicks_commands_and_submissions_reach_the_app_signed(
    sandbox: SlackSandbox, app: Receiver, http: aiohttp.ClientSession, client: AsyncWebClient
) -> None:
    ts = await post_alert(client, sandbox)
    click = {
        "channel": sandbox.channel_id,
        "ts": ts,
        "action_id": "run_diagnostics",
        "user": SECOND_USER,
    }
    status, answer = await _post(http, sandbox, "/ui/click", click)
    assert (status, answer["ok"], answer["acked_in_time"]) == (200, True, True)
    command = {"text": "/queue-status linux", "channel": sandbox.channel_id, "user": ONCALL_USER}
    status, _ = await _post(http, sandbox, "/ui/command", command)
    assert status == 200
    clicked, typed = app.received
    assert clicked["type"] == "block_actions" and clicked["user"]["id"] == SECOND_USER
    assert (typed["command"], typed["text"], typed["user_id"]) == (
        "/queue-status",
        "linux",
        ONCALL_USER,
    )
    assert typed["response_url"].startswith(f"{sandbox.url}/response/")
    view_id = (await client.views_open(trigger_id=clicked["trigger_id"], view=SILENCE_MODAL))[
        "view"
    ]["id"]
    shown = await _state(http, sandbox, SECOND_USER)
    assert [v["id"] for v in shown["views"]] == [view_id]
    assert (await _state(http, sandbox, ONCALL_USER))["views"] == []
    values = {"duration": {"minutes": "30"}}
    status, _ = await _post(
        http, sandbox, "/ui/submit", {"view_id": view_id, "values": values, "user": SECOND_USER}
    )
    assert status == 200
    submitted = app.received[-1]
    assert submitted["type"] == "view_submission"
    assert submitted["view"]["state"]["values"]["duration"]["minutes"]["value"] == "30"


@pytest.mark.parametrize(
    ("path", "body", "why"),
    [
        (
            "/ui/command",
            {"text": "queue-status", "channel": "C0QUEUEALERTS", "user": "U0ONCALL"},
            "starts with /",
        ),
        (
            "/ui/click",
            {"channel": "C0QUEUEALERTS", "action_id": "x", "user": "U0ONCALL"},
            "ts is required",
        ),
        (
            "/ui/click",
            {"channel": "C0QUEUEALERTS", "ts": "1.2", "action_id": "x", "user": "U0ONCALL"},
            "no message",
        ),
        ("/ui/submit", {"view_id": "V1", "values": [], "user": "U0ONCALL"}, "values must be"),
        ("/ui/close", {"view_id": "V404"}, "no open view"),
        ("/ui/control/nothing", {}, "no such control"),
    ],
)
async def test_what_cannot_be_done_is_refused_with_a_reason(
    sandbox: SlackSandbox, http: aiohttp.ClientSession, path: str, body: Any, why: str
) -> None:
    status, answer = await _post(http, sandbox, path, body)
    assert 400 <= status < 500
    assert why in (answer if isinstance(answer, str) else answer["error"])


async def test_only_json_is_taken_so_other_pages_cannot_act(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    """A form or text/plain POST (what another site could send without asking) is refused."""
    body = json.dumps({"text": "/queue-status", "channel": sandbox.channel_id, "user": "U0ONCALL"})
    async with http.post(
        f"{sandbox.url}/ui/command", data=body, headers={"Content-Type": "text/plain"}
    ) as answer:
        assert answer.status == 415
    assert sandbox.interactions == []


async def test_controls_of_the_host_run_and_say_what_they_did(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    fired: list[str] = []

    async def fire() -> str:
        fired.append("surge")
        return "Fired a surge"

    sandbox.ui.controls["surge"] = UiControl("Fire a surge", fire)
    assert (await _state(http, sandbox, ONCALL_USER))["controls"] == [
        {"name": "surge", "label": "Fire a surge", "hint": ""}
    ]
    status, answer = await _post(http, sandbox, "/ui/control/surge", {})
    assert (status, answer, fired) == (200, {"ok": True, "said": "Fired a surge"}, ["surge"])


async def test_every_change_is_streamed_to_open_pages(
    sandbox: SlackSandbox, http: aiohttp.ClientSession, client: AsyncWebClient
) -> None:
    async with http.get(f"{sandbox.url}/ui/events") as stream:
        assert stream.content_type == "text/event-stream"
        assert await stream.content.readline() == b": connected\n"
        await stream.content.readline()
        await post_alert(client, sandbox)
        async with asyncio.timeout(5):
            line = await stream.content.readline()
            while not line.startswith(b"data:"):
                line = await stream.content.readline()
        assert json.loads(line[5:]) == {"kind": "message_posted", "channel": sandbox.channel_id}
    # Stopping the sandbox ends open streams instead of waiting for them.
    async with http.get(f"{sandbox.url}/ui/events") as held:
        await held.content.readline()
        async with asyncio.timeout(5):
            await sandbox.stop()
