"""Delivered once: when Slack took a post but its answer was lost, the retry finds the message
by the outbox id in its metadata instead of posting it again; a bot killed with SIGKILL
mid-storm and started again leaves one parent per incident and no repeated reply; and one
killed while diagnostics are delivered leaves one report and one chart."""

from __future__ import annotations

import json
import signal
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from bot.incidents.service import STORM_THRESHOLD
from bot.slack.contract import ActionId
from queuebot_lab.sandbox.slack import PostedMessage, SlackSandbox
from queuebot_lab.simulator import MetricsShape, Scenario, SimulationSpec
from testkit.fixtures import PrometheusFactory
from testkit.harness import (
    BOT_TOKEN,
    CHANNEL_NAME,
    SIGNING_SECRET,
    drained,
    running_stack,
    serve_process,
    stop_process,
    top_level,
    webhook_headers,
)
from testkit.payloads import encoded, reference, with_values
from testkit.servers import free_port
from testkit.timing import slack_scale


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
        rate_scale=slack_scale(),
    ) as sandbox:
        database, port = tmp_path / "queuebot.db", free_port()
        bot = await serve_process(sandbox, database, port)
        try:
            async with aiohttp.ClientSession() as http:

                async def post(body: dict[str, object]) -> int:
                    async with http.post(
                        f"http://127.0.0.1:{port}/webhooks/grafana",
                        data=encoded(body),
                        headers=webhook_headers(),
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
                own, digests = top_level(sandbox)
                return (
                    len(own) >= OWN_MESSAGES
                    and all(len(sandbox.replies(None, m.ts)) >= 1 for m in own)
                    and len(digests) == 1
                    and all(f"{200 + n} min" in str(digests[0].blocks) for n in in_digest)
                )

            await sandbox.wait_for(done, timeout=120)
            await drained(port)  # nothing more is owed: anything doubled is there now
        finally:
            await stop_process(bot)
        parents, digests = top_level(sandbox)
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


def _replies_now(sandbox: SlackSandbox, parent: PostedMessage) -> list[str]:
    """The thread's replies as they read now: their text, and the names of files they share."""
    return [
        json.dumps(r.blocks) + r.text + " ".join(str(f.get("name")) for f in r.files)
        for r in sandbox.replies(None, parent.ts)
    ]


#: What each stalled call leaves in the thread once it has taken effect.
_TOOK_EFFECT = {
    "chat.postMessage": "Running diagnostics",
    "chat.update": "Diagnostics:",
    "files.completeUploadExternal": "queue-",
}


@pytest.mark.integration
@pytest.mark.parametrize("stalled", sorted(_TOOK_EFFECT))
@pytest.mark.slow
async def test_kill_9_while_diagnostics_are_delivered_leaves_one_report_and_one_chart(
    tmp_path: Path, prometheus_for: PrometheusFactory, stalled: str
) -> None:
    """SIGKILL while Slack holds its answer to the running notice, to the edit that makes it
    the report, or to the chart's upload (each had taken effect): after a restart the thread
    holds exactly one report, edited from the notice, and one chart."""
    # What is delivered matters here, not what it finds: a small fleet, a lean scrape.
    end = datetime.now(UTC).replace(microsecond=0)
    spec = SimulationSpec(
        scenario=Scenario.SURGE, hours=4, runner_types=3, seed=7, end=end, step_seconds=120
    )
    prometheus, _ = await prometheus_for(spec, MetricsShape.ARC_LEAN)
    config = tmp_path / "queuebot.yml"
    config.write_text("auto_diagnose: false\n")
    settings = {"PROMETHEUS_URL": prometheus.url, "QUEUEBOT_CONFIG": str(config)}
    async with SlackSandbox(
        bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
    ) as sandbox:
        database, port = tmp_path / "queuebot.db", free_port()
        sandbox.request_url = f"http://127.0.0.1:{port}/slack/events"
        bot = await serve_process(sandbox, database, port, **settings)
        try:
            async with (
                aiohttp.ClientSession() as http,
                http.post(
                    f"http://127.0.0.1:{port}/webhooks/grafana",
                    data=encoded(reference()),
                    headers=webhook_headers(),
                ) as answer,
            ):
                assert answer.status == 202
            (parent,) = await sandbox.wait_for(lambda: sandbox.messages()[:1], timeout=10)
            await sandbox.wait_for(lambda: sandbox.calls("chat.getPermalink"), timeout=10)
            # The call takes effect; its answer is held until the bot is long gone.
            sandbox.faults.add(stalled, status=500, after=True, stall=10.0)
            click = await sandbox.click(
                sandbox.channel_id, parent.ts, ActionId.RUN_DIAGNOSTICS.value
            )
            assert click.status == 200
            await sandbox.wait_for(
                lambda: any(_TOOK_EFFECT[stalled] in r for r in _replies_now(sandbox, parent)),
                timeout=30,
            )
            bot.send_signal(signal.SIGKILL)
            await bot.wait()
            bot = await serve_process(sandbox, database, port, **settings)

            def finished() -> bool:
                replies = _replies_now(sandbox, parent)
                return any("Diagnostics:" in r for r in replies) and any(
                    "queue-" in r for r in replies
                )

            await sandbox.wait_for(finished, timeout=60)
            await drained(port)
        finally:
            await stop_process(bot)
        replies = _replies_now(sandbox, parent)
        assert sum("Diagnostics:" in r for r in replies) == 1, replies
        assert sum("queue-" in r for r in replies) == 1, replies
        assert not any("Running diagnostics" in r for r in replies), replies
        assert len(replies) == 2, replies
