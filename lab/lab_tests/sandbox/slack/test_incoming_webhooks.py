"""Incoming webhooks, driven over HTTP as notifiers post to them: a hook URL posts into its own
channel as the app's bot, answers bare words with Slack's statuses, and fails as injected."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from queuebot_lab.sandbox.slack import SlackSandbox
from queuebot_lab.sandbox.slack.faults import INCOMING_WEBHOOK
from queuebot_lab.sandbox.slack.incoming import MOST_ATTACHMENTS
from queuebot_lab.sandbox.slack.server import SANDBOX_BOT_TOKEN

#: What Alertmanager 0.25's slack_configs sends (notify/slack/slack.go `request`).
ALERTMANAGER_BODY: dict[str, Any] = {
    "channel": "#elsewhere",
    "username": "Alertmanager",
    "attachments": [
        {
            "title": "[FIRING:1] QueueBacklog",
            "text": "backlog over 500",
            "fallback": "[FIRING:1] QueueBacklog | http://alertmanager/#/alerts",
            "callback_id": "",
            "footer": "",
            "color": "danger",
            "mrkdwn_in": ["fallback", "pretext", "text"],
        }
    ],
}


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def post(
    http: aiohttp.ClientSession,
    url: str,
    body: Any,
    headers: dict[str, str] | None = None,
) -> tuple[int, str, Mapping[str, str]]:
    """POST `body` (JSON unless bytes) to `url`: status, body text, headers."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", **(headers or {})}
    async with http.post(url, data=data, headers=sent) as answer:
        return answer.status, await answer.text(), answer.headers


async def test_a_post_lands_in_the_hooks_channel_as_the_apps_bot(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    """200 `ok` (text/html, not JSON); the message is the bot's, in the hook's channel."""
    url = sandbox.incoming.add(sandbox.channel_id)
    async with http.post(url, json={"text": "queue is backing up"}) as answer:
        assert (answer.status, await answer.text()) == (200, "ok")
        assert answer.content_type == "text/html"
    [message] = sandbox.messages()
    assert message.text == "queue is backing up"
    assert (message.user, message.bot_id, message.app_id) == (
        sandbox.bot_user_id,
        sandbox.identity.bot_id,
        sandbox.identity.app_id,
    )
    [call] = sandbox.calls(INCOMING_WEBHOOK)
    assert (call.status, call.ok, call.params) == (200, True, {"text": "queue is backing up"})


async def test_the_url_names_the_team_a_hook_and_a_secret(sandbox: SlackSandbox) -> None:
    url = sandbox.incoming.add("queue-alerts")
    team, hook, secret = url.removeprefix(f"{sandbox.url}/services/").split("/")
    assert team == sandbox.identity.team_id
    assert hook.startswith("B") and len(secret) == 24


async def test_slack_sdks_webhook_client_reads_the_answer(sandbox: SlackSandbox) -> None:
    answer = await AsyncWebhookClient(sandbox.incoming.add(sandbox.channel_id)).send(text="hi")
    assert (answer.status_code, answer.body) == (200, "ok")


async def test_alertmanagers_attachments_are_kept_and_its_channel_and_name_ignored(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    """An app's hook cannot be moved or renamed by the body; attachments alone make a message,
    and conversations.history returns them."""
    sandbox.add_channel("elsewhere")
    url = sandbox.incoming.add(sandbox.channel_id)
    assert (await post(http, url, ALERTMANAGER_BODY))[:2] == (200, "ok")
    assert sandbox.messages("elsewhere") == []
    [message] = sandbox.messages()
    assert message.user == sandbox.bot_user_id and message.text == ""
    client = AsyncWebClient(token=SANDBOX_BOT_TOKEN, base_url=sandbox.api_url)
    [listed] = (await client.conversations_history(channel=sandbox.channel_id))["messages"]
    assert listed["attachments"] == ALERTMANAGER_BODY["attachments"]


async def test_blocks_and_a_thread_reply(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    url = sandbox.incoming.add(sandbox.channel_id)
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*down*"}}]
    assert (await post(http, url, {"blocks": blocks}))[:2] == (200, "ok")
    [parent] = sandbox.messages()
    assert parent.blocks[0]["text"] == blocks[0]["text"]
    assert (await post(http, url, {"text": "still down", "thread_ts": parent.ts}))[0] == 200
    assert [r.text for r in sandbox.replies(None, parent.ts)] == ["still down"]


async def test_a_form_with_the_json_in_payload_is_taken(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    url = sandbox.incoming.add(sandbox.channel_id)
    async with http.post(url, data={"payload": json.dumps({"text": "form"})}) as answer:
        assert answer.status == 200
    assert [m.text for m in sandbox.messages()] == ["form"]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"not json", "invalid_payload"),
        (b"[1, 2]", "invalid_payload"),
        ({"text": 5}, "invalid_payload"),
        ({"attachments": "x"}, "invalid_payload"),
        ({}, "no_text"),
        ({"text": "", "attachments": []}, "no_text"),
        ({"attachments": [{"text": "a"}] * (MOST_ATTACHMENTS + 1)}, "too_many_attachments"),
        ({"blocks": [{"type": "no_such_block"}]}, "invalid_blocks"),
    ],
)
async def test_a_message_slack_cannot_take_is_a_400_with_the_reason(
    sandbox: SlackSandbox, http: aiohttp.ClientSession, body: Any, error: str
) -> None:
    status, text, _ = await post(http, sandbox.incoming.add(sandbox.channel_id), body)
    assert (status, text) == (400, error)
    assert sandbox.messages() == []
    assert sandbox.calls(INCOMING_WEBHOOK)[0].error == error


async def test_a_wrong_secret_unknown_hook_or_other_team_is_refused(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    url = sandbox.incoming.add(sandbox.channel_id)
    base, team, hook, _ = url.rsplit("/", 3)
    message = {"text": "x"}
    assert (await post(http, f"{base}/{team}/{hook}/{'0' * 24}", message))[:2] == (
        403,
        "invalid_token",
    )
    assert (await post(http, f"{base}/{team}/B0NOSUCH/{'0' * 24}", message))[:2] == (
        404,
        "no_service",
    )
    assert (await post(http, url.replace(team, "T0OTHER"), message))[:2] == (400, "no_team")
    assert sandbox.messages() == []


async def test_a_removed_hook_is_no_service(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    url = sandbox.incoming.add(sandbox.channel_id)
    sandbox.incoming.remove(url)
    assert (await post(http, url, {"text": "x"}))[:2] == (404, "no_service")


async def test_an_archived_or_deleted_channel_is_refused(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    archived = sandbox.incoming.add(sandbox.add_channel("old").id)
    sandbox.workspace.channel("old").is_archived = True
    assert (await post(http, archived, {"text": "x"}))[:2] == (410, "channel_is_archived")
    gone = sandbox.add_channel("gone")
    deleted = sandbox.incoming.add(gone.id)
    del sandbox.workspace.channels[gone.id]
    assert (await post(http, deleted, {"text": "x"}))[:2] == (404, "channel_not_found")


async def test_only_post_is_allowed(sandbox: SlackSandbox, http: aiohttp.ClientSession) -> None:
    async with http.get(sandbox.incoming.add(sandbox.channel_id)) as answer:
        assert answer.status == 405


# -- faults and limits -------------------------------------------------------------------------


async def test_an_injected_429_answers_with_retry_after_and_posts_nothing(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    """A fault for `incoming-webhook` answers the next posts; then the hook works again."""
    url = sandbox.incoming.add(sandbox.channel_id)
    sandbox.faults.add(INCOMING_WEBHOOK, status=429, retry_after=30, count=2)
    for _ in range(2):
        status, text, headers = await post(http, url, {"text": "x"})
        assert (status, text, headers["Retry-After"]) == (429, "ratelimited", "30")
    assert sandbox.messages() == []
    assert (await post(http, url, {"text": "x"}))[:2] == (200, "ok")
    calls = sandbox.calls(INCOMING_WEBHOOK)
    assert [(c.status, c.params) for c in calls] == [(429, {"text": "x"})] * 2 + [
        (200, {"text": "x"})
    ]


async def test_a_fault_for_a_web_api_method_spares_hooks_and_one_for_all_does_not(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    url = sandbox.incoming.add(sandbox.channel_id)
    sandbox.faults.add("chat.postMessage", status=429)
    assert (await post(http, url, {"text": "x"}))[0] == 200
    sandbox.faults.clear()
    sandbox.faults.add(status=503)
    assert (await post(http, url, {"text": "y"}))[:2] == (503, "service_unavailable")
    assert [m.text for m in sandbox.messages()] == ["x"]


async def test_a_fault_after_the_post_loses_the_answer_not_the_message(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    sandbox.faults.add(INCOMING_WEBHOOK, status=500, after=True)
    url = sandbox.incoming.add(sandbox.channel_id)
    assert (await post(http, url, {"text": "posted anyway"}))[:2] == (500, "internal_error")
    assert [m.text for m in sandbox.messages()] == ["posted anyway"]


async def test_the_control_endpoint_injects_a_hook_fault(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    """A benchmark in another process fails hooks over HTTP, as it fails Web API methods."""
    spec = {"method": INCOMING_WEBHOOK, "status": 429, "retry_after": 5}
    assert (await post(http, f"{sandbox.url}/_sandbox/faults", spec))[0] == 200
    url = sandbox.incoming.add(sandbox.channel_id)
    assert (await post(http, url, {"text": "x"}))[0] == 429
    async with http.get(f"{sandbox.url}/_sandbox/calls?method={INCOMING_WEBHOOK}") as answer:
        assert [c["status"] for c in (await answer.json())["calls"]] == [429]


async def test_hooks_share_the_channels_message_limit_with_chat_post_message() -> None:
    """With enforce_rate_limits, three chat.postMessage calls use the burst: the hook's post
    to that channel is a 429 with Retry-After, and a hook on another channel is not."""
    async with SlackSandbox(enforce_rate_limits=True) as sandbox, aiohttp.ClientSession() as http:
        client = AsyncWebClient(token=SANDBOX_BOT_TOKEN, base_url=sandbox.api_url)
        for _ in range(3):
            await client.chat_postMessage(channel=sandbox.channel_id, text="x")
        status, text, headers = await post(
            http, sandbox.incoming.add(sandbox.channel_id), {"text": "y"}
        )
        assert (status, text) == (429, "ratelimited")
        assert int(headers["Retry-After"]) >= 1
        other = sandbox.incoming.add(sandbox.add_channel("other").id)
        assert (await post(http, other, {"text": "z"}))[0] == 200


# -- who may post ------------------------------------------------------------------------------


async def test_a_hook_keeps_slacks_rules_not_the_pages(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    """Any content type and origin, as Slack takes them (the secret URL is the credential),
    but only under an address the workspace listens on."""
    url = sandbox.incoming.add(sandbox.channel_id)
    plain = {"Content-Type": "text/plain", "Origin": "http://elsewhere.example"}
    assert (await post(http, url, {"text": "x"}, plain))[0] == 200
    rebound = {"Host": f"evil.example:{sandbox.port}"}
    assert (await post(http, url, {"text": "y"}, rebound))[0] == 421
    assert [m.text for m in sandbox.messages()] == ["x"]
