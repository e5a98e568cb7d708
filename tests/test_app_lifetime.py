"""The bot across restarts and in Socket Mode: accepted notifications survive, Slack still works."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from aiohttp import web

from bot.app import OUTBOUND, SERVICES, STORE, create_app
from bot.config import ConfigError
from bot.slack.contract import ActionId
from bot.store.schema import MIGRATIONS
from bot.store.sqlite import SQLiteStore
from queuebot_lab.sandbox.slack import ONCALL_USER, SlackSandbox
from testkit.harness import (
    BOT_TOKEN,
    CHANNEL_NAME,
    SIGNING_SECRET,
    running_stack,
    serve_bot,
    settings_for,
    webhook_headers,
)
from testkit.payloads import reference

APP_TOKEN = "xapp-1-test-app-token"


@pytest.mark.slow
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


class TestFailedStart:
    async def test_a_start_that_fails_leaves_nothing_running_and_the_store_closed(
        self, tmp_path: Path
    ) -> None:
        """Socket Mode refused (a revoked app token) after the store, the clients, the services
        and the background tasks started: all of them are stopped again, the store closed."""
        sandbox = SlackSandbox(
            bot_token=BOT_TOKEN,
            signing_secret=SIGNING_SECRET,
            channel_name=CHANNEL_NAME,
            app_token=APP_TOKEN,
        )
        await sandbox.start()
        try:
            database = tmp_path / "queuebot.db"
            # Prometheus configured: the outbound HTTP session is made, and must be closed.
            settings = settings_for(
                database,
                sandbox,
                SLACK_APP_TOKEN="xapp-1-revoked",
                PROMETHEUS_URL="http://127.0.0.1:9",
            )
            app = create_app(settings)
            before = {task for task in asyncio.all_tasks() if not task.done()}
            runner = web.AppRunner(app)
            with pytest.raises(ConfigError, match=r"refused SLACK_APP_TOKEN \(invalid_auth\)"):
                await runner.setup()
            parts = app[SERVICES]
            assert parts.tasks and all(task.done() for task in parts.tasks.values())
            assert {task for task in asyncio.all_tasks() if not task.done()} <= before
            session = app[OUTBOUND].session
            assert session is not None and session.closed
            # SQLite keeps its write-ahead log while a connection is open.
            wal = await asyncio.to_thread(Path(f"{database}-wal").exists)
            assert await asyncio.to_thread(database.exists) and not wal
            # aiosqlite says so in one of two ways, by the call made.
            with pytest.raises(ValueError, match=r"no active connection|Connection closed"):
                await app[STORE].first_job_created()
            assert sandbox.calls("apps.connections.open")
        finally:
            await sandbox.stop()
