"""`queuebot serve` told to stop (SIGTERM, as `docker stop`, Kubernetes and systemd send it):
it closes its door, finishes the request it is answering, and exits 0 on its own."""

from __future__ import annotations

import asyncio
import signal
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from bot.cli.main import STOP_GRACE_SECONDS
from bot.store import open_store
from queuebot_lab.sandbox.slack import SlackSandbox
from testkit.harness import (
    BOT_TOKEN,
    CHANNEL_NAME,
    SIGNING_SECRET,
    serve_process,
    stop_process,
    webhook_headers,
)
from testkit.inflight import group_held, refused
from testkit.payloads import encoded, reference
from testkit.postgres import fresh_database
from testkit.servers import free_port


async def post(url: str) -> int:
    async with (
        aiohttp.ClientSession() as http,
        http.post(url, data=encoded(reference()), headers=webhook_headers()) as answer,
    ):
        return answer.status


@asynccontextmanager
async def serving(tmp_path: Path) -> AsyncIterator[tuple[str, Process, int]]:
    """A `python -m bot serve` process on a fresh PostgreSQL database and the local Slack:
    the database, the process and its port (stopped at the end if still running)."""
    port = free_port()
    async with (
        fresh_database() as database,
        SlackSandbox(
            bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
        ) as sandbox,
    ):
        bot = await serve_process(sandbox, database, port, log_to=tmp_path / "queuebot.log")
        try:
            yield database, bot, port
        finally:
            await stop_process(bot)


@pytest.mark.slow
async def test_sigterm_finishes_the_request_in_flight_then_exits_0(tmp_path: Path) -> None:
    """A notification whose handler is running when SIGTERM comes: new connections are refused
    at once, the notification is still stored and answered 202, and the process exits 0."""
    group_key = reference()["groupKey"]
    async with serving(tmp_path) as (database, bot, port):
        async with group_held(database, group_key) as hold:
            posting = asyncio.create_task(post(f"http://127.0.0.1:{port}/webhooks/grafana"))
            await hold.waited_for()
            bot.send_signal(signal.SIGTERM)
            await refused("127.0.0.1", port)
            await hold.release()
            assert await posting == 202
        # Bounded by the grace given to requests and the closing after it, not podman's 10 s
        # (the container's test holds the bot to those).
        async with asyncio.timeout(2 * STOP_GRACE_SECONDS + 2):
            assert await bot.wait() == 0
        store = await open_store(database)
        try:
            async with store.transaction() as tx:
                assert await tx.current_incident(group_key) is not None
        finally:
            await store.close()


@pytest.mark.slow
async def test_a_request_stuck_past_the_grace_does_not_hold_the_stop(tmp_path: Path) -> None:
    """A handler that cannot finish (its store lock never comes) is cancelled after the
    grace: the process still exits 0 inside the 10 s `docker stop` gives (aiohttp alone would
    wait two minutes)."""
    async with (
        serving(tmp_path) as (database, bot, port),
        group_held(database, reference()["groupKey"]) as hold,
    ):
        posting = asyncio.create_task(post(f"http://127.0.0.1:{port}/webhooks/grafana"))
        await hold.waited_for()
        bot.send_signal(signal.SIGTERM)
        async with asyncio.timeout(10):
            assert await bot.wait() == 0
        with pytest.raises(aiohttp.ClientError):
            await posting
