"""Waiting for and watching the sandbox's state: wait_for and the event subscription."""

import asyncio

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from queuebot_lab.sandbox.slack import ONCALL_USER, SandboxEventKind, SlackSandbox


async def test_wait_for_wakes_when_a_message_arrives(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """wait_for returns the predicate's value once a post makes it true."""
    waiting = asyncio.create_task(sandbox.wait_for(lambda: sandbox.messages(), timeout=5))
    await asyncio.sleep(0)  # let the waiter start before the post
    await client.chat_postMessage(channel=sandbox.channel_id, text="alert")
    [message] = await waiting
    assert message.text == "alert"


async def test_wait_for_returns_at_once_when_already_true(sandbox: SlackSandbox) -> None:
    """A predicate that already holds does not wait for a change."""
    assert await sandbox.wait_for(lambda: sandbox.channel_id, timeout=0.01) == sandbox.channel_id


async def test_wait_for_times_out_with_a_clear_error(sandbox: SlackSandbox) -> None:
    """A predicate that never holds ends in TimeoutError naming the wait."""

    def nothing_posted() -> bool:
        return bool(sandbox.messages())

    with pytest.raises(TimeoutError, match="nothing_posted"):
        await sandbox.wait_for(nothing_posted, timeout=0.05)


async def test_subscription_sees_each_change_in_order(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A subscriber gets message_posted, message_updated and ephemeral_posted with its text."""
    events = sandbox.subscribe()
    posted = await client.chat_postMessage(channel=sandbox.channel_id, text="a")
    await client.chat_update(channel=sandbox.channel_id, ts=posted["ts"], text="b")
    await client.chat_postEphemeral(channel=sandbox.channel_id, user=ONCALL_USER, text="c")
    seen = [events.get_nowait() for _ in range(events.qsize())]
    changes = [e for e in seen if e.kind is not SandboxEventKind.API_CALL]
    kinds = [(e.kind, e.channel) for e in changes]
    assert kinds == [
        (SandboxEventKind.MESSAGE_POSTED, sandbox.channel_id),
        (SandboxEventKind.MESSAGE_UPDATED, sandbox.channel_id),
        (SandboxEventKind.EPHEMERAL_POSTED, sandbox.channel_id),
    ]
    assert (changes[-1].user, changes[-1].detail["text"]) == (ONCALL_USER, "c")


async def test_unsubscribed_queue_gets_nothing_more(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """After unsubscribe a queue stays empty."""
    events = sandbox.subscribe()
    sandbox.unsubscribe(events)
    await client.chat_postMessage(channel=sandbox.channel_id, text="a")
    assert events.empty()


async def test_render_shows_the_channel_with_its_threads(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """render() prints each message with its replies indented under it."""
    parent = await client.chat_postMessage(channel=sandbox.channel_id, text="alert &amp; more")
    await client.chat_postMessage(
        channel=sandbox.channel_id, text="finding", thread_ts=parent["ts"]
    )
    assert sandbox.render() == "alert & more\n    │ finding"
