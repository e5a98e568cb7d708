"""Delivered once: when Slack took a post but its answer was lost, the retry finds the message
by the outbox id in its metadata instead of posting it again; and a bot killed with SIGKILL
mid-storm and started again leaves one parent per incident and no repeated reply."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import aiohttp
import pytest

from bot.incidents.service import STORM_THRESHOLD
from bot.sandbox.slack import PostedMessage, SlackSandbox
from tests.support.harness import (
    BOT_TOKEN,
    CHANNEL_NAME,
    SIGNING_SECRET,
    running_stack,
    serve_process,
)
from tests.support.payloads import encoded, reference, with_values
from tests.support.servers import free_port


async def test_a_lost_answer_to_a_parent_post_posts_no_second_parent(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack:
        # A first incident teaches the bot the channel's id.
        first = reference()
        first["groupKey"] = "first"
        await stack.webhook(first)
        await stack.parents(1)
        await stack.settled()
        stack.sandbox.faults.add("chat.postMessage", status=500, after=True)
        await stack.webhook(reference())
        await stack.settled(timeout=10)
        assert len(stack.sandbox.messages()) == 2
        lookups = stack.sandbox.calls("conversations.history")
        assert lookups and lookups[-1].params.get("include_all_metadata") in (True, "true", "1")


async def test_a_lost_answer_to_a_reply_posts_no_second_reply(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack:
        await stack.webhook(reference())
        (parent,) = await stack.parents(1)
        await stack.settled()
        stack.sandbox.faults.add("chat.postMessage", status=500, after=True)
        await stack.webhook(with_values(reference(), max_queue_time_mins=150))
        await stack.settled(timeout=10)
        replies = stack.sandbox.replies(None, parent.ts)
        assert len(replies) == 1 and "150" in stack.text(replies[0])
        assert stack.sandbox.calls("conversations.replies")


#: The storm threshold: incidents opening faster get one digest message between them.
OWN_MESSAGES = STORM_THRESHOLD


def _split(sandbox: SlackSandbox) -> tuple[list[PostedMessage], list[PostedMessage]]:
    """Top-level messages: incidents' own, and storm digests."""
    messages = sandbox.messages()
    kinds = [(m.metadata or {}).get("event_type") for m in messages]
    own = [m for m, k in zip(messages, kinds, strict=True) if k == "queuebot_incident"]
    digests = [m for m, k in zip(messages, kinds, strict=True) if k == "queuebot_digest"]
    return own, digests


@pytest.mark.integration
async def test_kill_9_mid_storm_then_restart_delivers_each_once(tmp_path: Path) -> None:
    """SIGKILL while a storm is being delivered through a slow, rate-limited Slack; the
    restarted bot delivers the rest: one message per incident (the storm's last ones in one
    digest), every change replied once."""
    incidents = 14
    in_digest = range(OWN_MESSAGES, incidents)  # past the storm threshold
    async with SlackSandbox(
        bot_token=BOT_TOKEN,
        signing_secret=SIGNING_SECRET,
        channel_name=CHANNEL_NAME,
        enforce_rate_limits=True,
    ) as sandbox:
        database, port = tmp_path / "queuebot.db", free_port()
        bot = await serve_process(sandbox, database, port)
        try:
            async with aiohttp.ClientSession() as http:

                async def post(body: dict[str, object]) -> int:
                    async with http.post(
                        f"http://127.0.0.1:{port}/webhooks/grafana",
                        data=encoded(body),
                        headers={"Content-Type": "application/json"},
                    ) as answer:
                        return answer.status

                bodies = []
                for n in range(incidents):
                    body = reference()
                    body["groupKey"] = f"storm-{n}"
                    bodies.append(body)
                    changed = with_values(body, max_queue_time_mins=200 + n)
                    bodies.append(changed)
                statuses = [await post(b) for b in bodies]
                assert set(statuses) == {202}
            # Rate-limited to about one post a second: the storm is mid-delivery now.
            await sandbox.wait_for(lambda: len(sandbox.messages()) >= 3, timeout=20)
            bot.send_signal(signal.SIGKILL)
            await bot.wait()
            delivered_before = len(sandbox.messages())
            assert delivered_before < OWN_MESSAGES
            bot = await serve_process(sandbox, database, port)

            def done() -> bool:
                own, digests = _split(sandbox)
                return (
                    len(own) >= OWN_MESSAGES
                    and all(len(sandbox.replies(None, m.ts)) >= 1 for m in own)
                    and len(digests) == 1
                    and all(f"{200 + n} min" in str(digests[0].blocks) for n in in_digest)
                )

            await sandbox.wait_for(done, timeout=120)
            await asyncio.sleep(2.0)  # anything doubled would show by now
        finally:
            if bot.returncode is None:
                bot.send_signal(signal.SIGINT)
                try:
                    async with asyncio.timeout(10):
                        await bot.wait()
                except TimeoutError:
                    bot.kill()
                    await bot.wait()
        parents, digests = _split(sandbox)
        keys = [p.metadata["event_payload"]["incident"] for p in parents if p.metadata]
        assert len(parents) == OWN_MESSAGES and len(set(keys)) == OWN_MESSAGES
        assert len(digests) == 1 and len(sandbox.messages()) == OWN_MESSAGES + 1
        for parent in parents:
            replies = sandbox.replies(None, parent.ts)
            assert len(replies) == 1, [r.text for r in replies]


async def test_slack_failing_for_a_while_delivers_everything_in_order(tmp_path: Path) -> None:
    """429s and 500s for a while: afterwards every message is there, each thread in order."""
    async with running_stack(tmp_path) as stack:
        stack.sandbox.faults.add("chat.postMessage", status=429, retry_after=1, count=2)
        stack.sandbox.faults.add("chat.postMessage", status=500, count=2)
        for n in range(2):
            body = reference()
            body["groupKey"] = f"outage-{n}"
            await stack.webhook(body)
            for value in (150, 160, 170):
                await stack.webhook(with_values(body, max_queue_time_mins=value + n))
        await stack.settled(timeout=30)
        parents = stack.sandbox.messages()
        assert len(parents) == 2
        for parent in parents:
            replies = [stack.text(r) for r in stack.sandbox.replies(None, parent.ts)]
            assert len(replies) == 3
            n = 1 if "151 min" in replies[0] else 0
            assert [f"{v + n} min" in r for v, r in zip((150, 160, 170), replies, strict=True)] == [
                True
            ] * 3
        statuses = {c.status for c in stack.sandbox.calls("chat.postMessage")}
        assert {429, 500, 200} <= statuses
