"""Injected failures and the optional message rate limit, as slack_sdk experiences them."""

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from queuebot_lab.sandbox.slack import SlackSandbox
from queuebot_lab.sandbox.slack.server import SANDBOX_BOT_TOKEN


async def test_injected_429_reaches_slack_sdk_with_retry_after(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A 429 fault is a SlackApiError with status 429, Retry-After and `ratelimited`."""
    sandbox.faults.add(method="chat.postMessage", status=429, retry_after=7, count=1)
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel=sandbox.channel_id, text="x")
    response = raised.value.response
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "7"
    assert response["error"] == "ratelimited"
    assert sandbox.messages() == []
    assert sandbox.calls("chat.postMessage")[0].status == 429


async def test_fault_lasts_count_calls_then_the_method_works(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A fault with count=2 fails two calls; the third succeeds."""
    sandbox.faults.add(method="chat.postMessage", status=429, count=2)
    for _ in range(2):
        with pytest.raises(SlackApiError):
            await client.chat_postMessage(channel=sandbox.channel_id, text="x")
    assert (await client.chat_postMessage(channel=sandbox.channel_id, text="x"))["ok"]
    assert [c.status for c in sandbox.calls()] == [429, 429, 200]


async def test_fault_for_one_method_spares_the_others(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A fault on chat.update does not touch chat.postMessage."""
    sandbox.faults.add(method="chat.update", status=503)
    assert (await client.chat_postMessage(channel=sandbox.channel_id, text="x"))["ok"]


async def test_fault_for_every_method_hits_auth_test(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A fault without a method answers whatever is called next, with its status."""
    sandbox.faults.add(status=500)
    with pytest.raises(SlackApiError) as raised:
        await client.auth_test()
    assert raised.value.response.status_code == 500
    assert raised.value.response["error"] == "internal_error"


async def test_slack_sdk_rate_limit_handler_retries_through_a_429(
    sandbox: SlackSandbox,
) -> None:
    """slack_sdk's AsyncRateLimitErrorRetryHandler reads Retry-After and the retry succeeds."""
    sandbox.faults.add(method="chat.postMessage", status=429, retry_after=0, count=1)
    retrying = AsyncWebClient(
        token=SANDBOX_BOT_TOKEN,
        base_url=sandbox.api_url,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=1)],
    )
    assert (await retrying.chat_postMessage(channel=sandbox.channel_id, text="x"))["ok"]
    assert [c.status for c in sandbox.calls("chat.postMessage")] == [429, 200]
    assert len(sandbox.messages()) == 1


async def test_control_endpoint_adds_lists_and_clears_faults(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """Another process can inject and clear faults over HTTP."""
    faults_url = f"{sandbox.url}/_sandbox/faults"
    async with aiohttp.ClientSession() as session:
        spec = {"method": "chat.postMessage", "status": 429, "retry_after": 2, "count": 5}
        async with session.post(faults_url, json=spec) as added:
            assert added.status == 200
        async with session.get(faults_url) as listed:
            assert (await listed.json())["faults"][0]["remaining"] == 5
        with pytest.raises(SlackApiError) as raised:
            await client.chat_postMessage(channel=sandbox.channel_id, text="x")
        assert raised.value.response.headers["Retry-After"] == "2"
        json_type = {"Content-Type": "application/json"}
        async with session.delete(faults_url, headers=json_type) as cleared:
            assert cleared.status == 200
    assert (await client.chat_postMessage(channel=sandbox.channel_id, text="x"))["ok"]


async def test_control_endpoint_refuses_a_malformed_fault(sandbox: SlackSandbox) -> None:
    """A fault spec with an impossible status is a 400, not a crash."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{sandbox.url}/_sandbox/faults", json={"status": 99}) as answer,
    ):
        assert answer.status == 400


async def test_control_endpoint_lists_calls(sandbox: SlackSandbox, client: AsyncWebClient) -> None:
    """GET /_sandbox/calls reports the calls received, filtered by method."""
    await client.auth_test()
    await client.chat_postMessage(channel=sandbox.channel_id, text="x")
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sandbox.url}/_sandbox/calls?method=chat.postMessage") as answer,
    ):
        calls = (await answer.json())["calls"]
    assert [(c["method"], c["status"]) for c in calls] == [("chat.postMessage", 200)]


async def test_enforced_rate_limit_allows_a_burst_then_answers_429() -> None:
    """With enforce_rate_limits, a fast burst per channel ends in 429 with Retry-After."""
    async with SlackSandbox(enforce_rate_limits=True) as sandbox:
        client = AsyncWebClient(token=SANDBOX_BOT_TOKEN, base_url=sandbox.api_url)
        for _ in range(3):
            await client.chat_postMessage(channel=sandbox.channel_id, text="x")
        with pytest.raises(SlackApiError) as raised:
            await client.chat_postMessage(channel=sandbox.channel_id, text="x")
        other = sandbox.add_channel("other")
        assert (await client.chat_postMessage(channel=other.id, text="x"))["ok"]
    assert raised.value.response.status_code == 429
    assert int(raised.value.response.headers["Retry-After"]) >= 1


async def test_a_fault_after_the_call_loses_the_answer_not_the_message(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """`after`: Slack posts the message, then the caller sees a 500 and cannot know."""
    sandbox.faults.add(method="chat.postMessage", status=500, after=True)
    with pytest.raises(SlackApiError) as raised:
        await client.chat_postMessage(channel=sandbox.channel_id, text="posted anyway")
    assert raised.value.response.status_code == 500
    assert [m.text for m in sandbox.messages()] == ["posted anyway"]


async def test_history_shows_metadata_only_when_asked_and_honours_oldest(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """conversations.history: metadata with include_all_metadata; `oldest` is exclusive."""
    metadata = {"event_type": "demo", "event_payload": {"n": 1}}
    first = await client.chat_postMessage(channel=sandbox.channel_id, text="a", metadata=metadata)
    await client.chat_postMessage(channel=sandbox.channel_id, text="b", metadata=metadata)
    plain = await client.conversations_history(channel=sandbox.channel_id)
    assert all("metadata" not in m for m in plain["messages"])
    rich = await client.conversations_history(
        channel=sandbox.channel_id, include_all_metadata=True, oldest=first["ts"]
    )
    assert [m["text"] for m in rich["messages"]] == ["b"]
    assert rich["messages"][0]["metadata"] == metadata
