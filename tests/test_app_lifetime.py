"""The bot across restarts and in Socket Mode: accepted notifications survive, Slack still works."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from bot.sandbox.slack import ONCALL_USER
from bot.slack.contract import ActionId
from bot.store.schema import MIGRATIONS
from bot.store.sqlite import SQLiteStore
from tests.support.harness import running_stack, serve_bot, webhook_headers
from tests.support.payloads import reference

APP_TOKEN = "xapp-1-test-app-token"


class TestRestart:
    async def test_undelivered_notification_survives_a_restart(self, tmp_path: Path) -> None:
        """Accepted while Slack is down, the bot stopped: the next bot on the store delivers it."""
        async with running_stack(tmp_path) as stack:
            stack.sandbox.faults.add("chat.postMessage", status=503, count=1000)
            assert (await stack.webhook(reference())).status == 202
            await stack.sandbox.wait_for(lambda: stack.sandbox.calls("chat.postMessage"))
            assert stack.sandbox.messages() == []
        async with running_stack(tmp_path) as stack:
            # The first bot's last retry may have been scheduled a few seconds out.
            (parent,) = await stack.parents(1, timeout=30)
            assert "114 min" in stack.text(parent)

    async def test_schema_is_migrated_once(self, tmp_path: Path) -> None:
        """Opening the store twice keeps its data and its schema version."""
        path = str(tmp_path / "queuebot.db")
        async with running_stack(tmp_path) as stack:
            await stack.webhook(reference())
            await stack.parents(1)
            await stack.settled()
        store = await SQLiteStore.open(path)
        try:
            async with store.transaction() as tx:
                incident = await tx.current_incident(reference()["groupKey"])
            assert incident is not None and incident.parent_ts
        finally:
            await store.close()
        store = await SQLiteStore.open(path)
        await store.close()
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


class TestTwoReplicas:
    async def test_same_webhook_to_two_bots_makes_one_parent(self, tmp_path: Path) -> None:
        """Two bots on one store, each sent the same webhook at once: one message, no reply."""
        async with running_stack(tmp_path) as stack:
            database = tmp_path / "queuebot.db"
            async with serve_bot(stack.sandbox, database) as (_app, other_url):
                body = json.dumps(reference()).encode()
                headers = webhook_headers()
                posts = [
                    stack.http.post(f"{url}/webhooks/grafana", data=body, headers=headers)
                    for url in (stack.url, other_url) * 3
                ]
                answers = await asyncio.gather(*posts)
                assert [a.status for a in answers] == [202] * 6
                for answer in answers:
                    answer.release()
                await stack.parents(1)
                await stack.settled()
            assert len(stack.sandbox.calls("chat.postMessage")) == 1

    async def test_two_bots_retrying_together_send_once(self, tmp_path: Path) -> None:
        """Both bots wake for the same delayed delivery at the same moment: one post, not two."""
        async with running_stack(tmp_path) as stack:
            async with serve_bot(stack.sandbox, tmp_path / "queuebot.db"):
                # Longer than the idle poll, so the second bot also waits for this moment.
                stack.sandbox.faults.add("chat.postMessage", status=429, retry_after=6)
                await stack.webhook(reference())
                await stack.parents(1, timeout=20)
                await stack.settled()
            assert [c.ok for c in stack.sandbox.calls("chat.postMessage")] == [False, True]


class TestSocketMode:
    async def test_clicks_arrive_over_the_socket(self, tmp_path: Path) -> None:
        """With SLACK_APP_TOKEN set, the bot connects over Socket Mode and handles clicks there."""
        async with running_stack(tmp_path, SLACK_APP_TOKEN=APP_TOKEN) as stack:
            await stack.sandbox.wait_for(lambda: stack.sandbox.sockets.connected)
            await stack.webhook(reference())
            (parent,) = await stack.parents(1)
            result = await stack.sandbox.click(
                stack.sandbox.channel_id, parent.ts, ActionId.RUN_DIAGNOSTICS.value
            )
            assert result.transport == "socket" and result.status == 200
            await stack.sandbox.wait_for(lambda: stack.sandbox.ephemerals(ONCALL_USER))
