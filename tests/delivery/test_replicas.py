"""Two replicas, one message: two `queuebot serve` processes on one PostgreSQL, every
notification sent to both as Grafana in HA sends it, through a Slack that enforces its
per-channel posting limit; one replica killed with SIGKILL mid-storm."""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.incidents.service import STORM_THRESHOLD
from bot.slack.contract import ActionId, SilenceInput
from queuebot_lab.sandbox.slack import ONCALL_USER, PostedMessage, SlackSandbox
from testkit.alertmanager import Alertmanager
from testkit.harness import (
    BOT_TOKEN,
    CHANNEL_NAME,
    SIGNING_SECRET,
    drained,
    serve_process,
    stop_process,
    top_level,
    webhook_headers,
)
from testkit.payloads import encoded, reference, with_values
from testkit.postgres import PrivateCluster, fresh_database
from testkit.servers import free_port

pytestmark = pytest.mark.integration

#: Past the storm threshold: the first incidents get their own message, the rest one digest.
INCIDENTS = STORM_THRESHOLD + 6


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    async with fresh_database() as url:
        yield url


def _notifications() -> list[dict[str, Any]]:
    """Each incident firing, then changed (its longest wait 200 + n minutes), in order."""
    bodies = []
    for n in range(INCIDENTS):
        body = reference()
        body["groupKey"] = f"ha-{n}"
        bodies += [body, with_values(body, max_queue_time_mins=200 + n)]
    return bodies


def _text(message: PostedMessage) -> str:
    return json.dumps(message.blocks) + message.text


@pytest.mark.slow
async def test_two_replicas_post_a_storm_once_and_a_survivor_finishes_it(
    tmp_path: Path, postgres_url: str
) -> None:
    async with SlackSandbox(
        bot_token=BOT_TOKEN,
        signing_secret=SIGNING_SECRET,
        channel_name=CHANNEL_NAME,
        enforce_rate_limits=True,
    ) as sandbox:
        ports = [free_port(), free_port()]
        logs = [tmp_path / f"replica-{i}.log" for i in range(2)]
        # Slack's own pace (the documented default): the storm is still being posted when a
        # replica dies; the survivor takes over within the suite's short outbox lease.
        replicas = [
            await serve_process(
                sandbox, postgres_url, port, log_to=log, QUEUEBOT_SLACK_POSTS_PER_SECOND="0.95"
            )
            for port, log in zip(ports, logs, strict=True)
        ]
        try:
            async with aiohttp.ClientSession() as http:

                async def post(port: int, body: bytes) -> int:
                    async with http.post(
                        f"http://127.0.0.1:{port}/webhooks/grafana",
                        data=body,
                        headers=webhook_headers(),
                    ) as answer:
                        return answer.status

                # Both Grafana instances send every notification, at the same moment.
                for body in map(encoded, _notifications()):
                    assert await asyncio.gather(*(post(port, body) for port in ports)) == [
                        202,
                        202,
                    ]
            # Slack takes about one post a second: the storm is mid-delivery now.
            await sandbox.wait_for(lambda: len(sandbox.messages()) >= 4, timeout=30)
            replicas[0].send_signal(signal.SIGKILL)
            await replicas[0].wait()
            assert len(sandbox.messages()) < STORM_THRESHOLD

            every = {f"{200 + n} min" for n in range(INCIDENTS)}

            def done() -> bool:
                own, digests = top_level(sandbox)
                replies = [r for m in own for r in sandbox.replies(None, m.ts)]
                left = every - {value for r in replies for value in _values(r)}
                return (
                    len(own) >= STORM_THRESHOLD
                    and len(replies) >= STORM_THRESHOLD
                    and len(digests) == 1
                    and all(value in _text(digests[0]) for value in left)
                )

            await sandbox.wait_for(done, timeout=60)
            await drained(ports[1])
        finally:
            for replica in replicas:
                await stop_process(replica)
        own, digests = top_level(sandbox)
        # One parent per incident, one digest for the rest, nothing else in the channel.
        incidents = {(m.metadata or {}).get("event_payload", {}).get("incident") for m in own}
        assert len(own) == STORM_THRESHOLD and len(incidents) == STORM_THRESHOLD
        assert len(digests) == 1 and len(sandbox.messages()) == STORM_THRESHOLD + 1
        # Each parent's change replied once, with its own value: no reply doubled or crossed.
        shown = []
        for parent in own:
            (reply,) = sandbox.replies(None, parent.ts)
            (value,) = _values(reply)
            shown.append(value)
        assert len(set(shown)) == STORM_THRESHOLD
        assert all(value in _text(digests[0]) for value in every - set(shown))
        # Both replicas together kept to Slack's per-channel pace: Slack never had to refuse.
        posts = sandbox.calls("chat.postMessage")
        assert posts and all(call.status != 429 for call in posts), [
            (c.status, c.params.get("channel"), round(c.received_at, 2)) for c in posts
        ]


def _values(message: PostedMessage) -> set[str]:
    """The longest waits of the storm's changes a message shows ("2NN min")."""
    return set(re.findall(r"\b2\d\d min", _text(message)))


@pytest.mark.slow
async def test_postgresql_restarted_mid_storm_answers_503_then_loses_nothing(
    tmp_path: Path,
) -> None:
    """While PostgreSQL is down the webhook answers 503 (Grafana sends again) and /healthz is
    unhealthy, without naming the server's address; once it is back, what was accepted and
    what Grafana sent again is all posted, once."""
    cluster = PrivateCluster()
    try:
        await asyncio.to_thread(cluster.create)
        await asyncio.to_thread(cluster.start)
        async with (
            SlackSandbox(
                bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
            ) as sandbox,
            aiohttp.ClientSession() as http,
        ):
            port = free_port()
            bot = await serve_process(sandbox, cluster.url, port, log_to=tmp_path / "bot.log")

            async def post(body: dict[str, Any]) -> tuple[int, str]:
                async with http.post(
                    f"http://127.0.0.1:{port}/webhooks/grafana",
                    data=encoded(body),
                    headers=webhook_headers(),
                ) as answer:
                    return answer.status, await answer.text()

            async def health() -> int:
                async with http.get(f"http://127.0.0.1:{port}/healthz") as answer:
                    # Anyone may ask: where the database is stays in the log.
                    said = await answer.text()
                    assert str(cluster.port) not in said and "127.0.0.1" not in said, said
                    return answer.status

            try:
                bodies = _notifications()[:12]  # 6 incidents, each firing then changed
                for body in bodies[:6]:
                    assert (await post(body))[0] == 202
                await asyncio.to_thread(cluster.stop)
                status, reason = await post(bodies[6])
                assert status == 503 and "store" in reason.lower(), (status, reason)
                assert await health() == 503
                await asyncio.to_thread(cluster.start)
                # Grafana sends again what was refused, until it is taken.
                for body in bodies[6:]:
                    async with asyncio.timeout(30):
                        while (await post(body))[0] != 202:  # noqa: ASYNC110 - Grafana polls too
                            await asyncio.sleep(0.5)
                await sandbox.wait_for(
                    lambda: (
                        len(sandbox.messages()) == 6
                        and all(len(sandbox.replies(None, m.ts)) == 1 for m in sandbox.messages())
                    ),
                    timeout=60,
                )
                await drained(port)
                assert await health() == 200
            finally:
                await stop_process(bot)
        own, _ = top_level(sandbox)
        assert len(own) == 6 and len(sandbox.messages()) == 6
        shown = sorted(v for m in own for r in sandbox.replies(None, m.ts) for v in _values(r))
        assert shown == [f"{200 + n} min" for n in range(6)]
    finally:
        await asyncio.to_thread(cluster.remove)


async def test_clicks_alternating_between_replicas_all_work(
    tmp_path: Path, postgres_url: str, alertmanager: Alertmanager
) -> None:
    """Behind a load balancer each of Slack's requests may reach either replica: the click
    that opens the silence modal on one, its submission on the other, Unsilence on the first,
    /queue-status on the second."""
    async with SlackSandbox(
        bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
    ) as sandbox:
        ports = [free_port(), free_port()]
        grafana = {"GRAFANA_URL": alertmanager.url, "GRAFANA_TOKEN": "glsa_test_token"}
        replicas = [
            await serve_process(
                sandbox, postgres_url, port, log_to=tmp_path / f"replica-{port}.log", **grafana
            )
            for port in ports
        ]

        def via(replica: int) -> None:
            sandbox.request_url = f"http://127.0.0.1:{ports[replica]}/slack/events"

        def parent_text() -> str:
            return _text(sandbox.message(None, parent.ts) or parent)

        try:
            async with (
                aiohttp.ClientSession() as http,
                http.post(
                    f"http://127.0.0.1:{ports[0]}/webhooks/grafana",
                    data=encoded(reference()),
                    headers=webhook_headers(),
                ) as answer,
            ):
                assert answer.status == 202
            (parent,) = await sandbox.wait_for(lambda: sandbox.messages()[:1], timeout=10)
            via(0)
            opened = len(sandbox.views)
            click = await sandbox.click(sandbox.channel_id, parent.ts, ActionId.SILENCE.value)
            assert click.status == 200
            view = await sandbox.wait_for(
                lambda: sandbox.views[opened] if len(sandbox.views) > opened else None
            )
            via(1)
            values = {SilenceInput.DURATION.value: {SilenceInput.DURATION.value: "1h"}}
            submitted = await sandbox.submit_view(view.id, values, ONCALL_USER)
            assert submitted.status == 200
            await sandbox.wait_for(lambda: "Silenced until" in parent_text(), timeout=10)
            assert len(await alertmanager.active_silences()) == 1
            via(0)
            click = await sandbox.click(sandbox.channel_id, parent.ts, ActionId.UNSILENCE.value)
            assert click.status == 200
            await sandbox.wait_for(lambda: ActionId.SILENCE.value in parent_text(), timeout=10)
            assert await alertmanager.active_silences() == []
            via(1)
            asked = await sandbox.slash_command("/queue-status", "")
            assert asked.status == 200
            answer_text = await sandbox.wait_for(
                lambda: [json.dumps(e.blocks) for e in sandbox.ephemerals(ONCALL_USER)][-1:],
                timeout=10,
            )
            assert "Open incidents (1)" in answer_text[0]
        finally:
            for replica in replicas:
                await stop_process(replica)
