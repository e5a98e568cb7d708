"""The running stack for HTTP tests: the local Slack workspace and the bot, on real ports."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer
from prometheus_client.parser import text_string_to_metric_families
from slack_sdk.web.async_client import AsyncWebClient

from bot.app import create_app
from bot.config import Settings, load_settings
from bot.delivery.recovery import DIGEST_EVENT, PARENT_EVENT
from bot.domain.clock import SYSTEM, Clock
from bot.web.routes import EDGES
from queuebot_lab.sandbox.slack import PostedMessage, SlackSandbox
from testkit.timing import fast_environment, slack_scale

BOT_TOKEN = "xoxb-test-bot-token"
SIGNING_SECRET = "test-signing-secret"
#: The webhook token every test bot requires unless the test sets its own webhook auth.
WEBHOOK_TOKEN = "test-webhook-token"
_WEBHOOK_AUTH = ("QUEUEBOT_WEBHOOK_TOKEN", "QUEUEBOT_WEBHOOK_HMAC_SECRET", "QUEUEBOT_WEBHOOK_AUTH")
CHANNEL_NAME = "queue-alerts"


@dataclass
class Answer:
    status: int
    body: dict[str, Any]


def top_level(sandbox: SlackSandbox) -> tuple[list[PostedMessage], list[PostedMessage]]:
    """The channel's top-level messages the bot posted: incidents' own, and storm digests."""
    kinds = [((m.metadata or {}).get("event_type"), m) for m in sandbox.messages()]
    own = [m for kind, m in kinds if kind == PARENT_EVENT]
    return own, [m for kind, m in kinds if kind == DIGEST_EVENT]


def webhook_auth(env: dict[str, str]) -> dict[str, str]:
    """The test default, QUEUEBOT_WEBHOOK_TOKEN=WEBHOOK_TOKEN, unless `env` sets webhook auth."""
    return {} if any(name in env for name in _WEBHOOK_AUTH) else {_WEBHOOK_AUTH[0]: WEBHOOK_TOKEN}


def webhook_headers(
    headers: dict[str, str] | None = None, token: str | None = WEBHOOK_TOKEN
) -> dict[str, str]:
    """What a test's Grafana sends: JSON, with `token` unless `headers` say otherwise."""
    credentials = {"Authorization": f"Bearer {token}"} if token else {}
    return {"Content-Type": "application/json", **credentials, **(headers or {})}


@dataclass
class Stack:
    sandbox: SlackSandbox
    app: web.Application
    url: str
    http: aiohttp.ClientSession
    #: The token the bot requires, when the test left webhook auth at the default.
    token: str | None = WEBHOOK_TOKEN

    async def webhook(
        self, body: dict[str, Any] | bytes, headers: dict[str, str] | None = None
    ) -> Answer:
        """Post `body` to the Grafana webhook as the test's Grafana (see `webhook_headers`)."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        async with self.http.post(
            f"{self.url}/webhooks/grafana",
            data=io.BytesIO(data),
            headers=webhook_headers(headers, self.token),
        ) as response:
            text = await response.text()
            return Answer(response.status, json.loads(text) if text.startswith("{") else {})

    async def parents(self, count: int, timeout: float = 5.0) -> list[PostedMessage]:  # noqa: ASYNC109
        """Wait until the alert channel holds `count` top-level messages; return them."""
        return await self.sandbox.wait_for(
            lambda: m if len(m := self.sandbox.messages()) >= count else None, timeout
        )

    async def replies(
        self,
        parent: PostedMessage,
        count: int,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> list[PostedMessage]:
        return await self.sandbox.wait_for(
            lambda: r if len(r := self.sandbox.replies(None, parent.ts)) >= count else None,
            timeout,
        )

    async def settled(self, timeout: float = 15.0) -> None:  # noqa: ASYNC109
        """Wait until the bot owes Slack nothing (its outbox is empty). The deadline only
        bounds a wait that normally ends within a tenth of a second: on two cores shared by
        three workers and their servers, a drain of a few writes has taken over 5 s."""
        store = self.app[EDGES].store
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while await store.due_incidents():
            if loop.time() > deadline:
                raise AssertionError("the outbox did not drain")
            await asyncio.sleep(0.02)

    async def silence_checks(self, count: int, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Wait until the silence watcher has done `count` more passes than it had so far."""
        await watched(self.url, "queuebot_silence_checks_total", count, timeout)

    async def passes(self, task: str, count: int, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Wait until the background `task` ("early warning", …) has done `count` more passes
        than it had so far."""
        await watched(self.url, "queuebot_background_passes_total", count, timeout, task=task)

    def text(self, message: PostedMessage) -> str:
        """The current text of every block of a message, as the bot last wrote it."""
        return json.dumps(message.blocks, ensure_ascii=False) + "\n" + message.text


def settings_for(database: Path, sandbox: SlackSandbox, **env: str) -> Settings:
    return load_settings(
        {
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_URL": sandbox.api_url,
            "QUEUEBOT_CHANNEL": f"#{CHANNEL_NAME}",
            "QUEUEBOT_DATABASE": str(database),
            **fast_environment(),
            **webhook_auth(env),
            **env,
        },
        for_serve=True,
    )


@asynccontextmanager
async def running_stack(
    tmp_path: Path,
    *,
    clock: Clock = SYSTEM,
    **env: str,
) -> AsyncIterator[Stack]:
    # The bot refuses a database in a folder that does not exist: the test's folder is made.
    await asyncio.to_thread(tmp_path.mkdir, parents=True, exist_ok=True)
    sandbox = SlackSandbox(
        bot_token=BOT_TOKEN,
        signing_secret=SIGNING_SECRET,
        channel_name=CHANNEL_NAME,
        app_token=env.get("SLACK_APP_TOKEN"),
        rate_scale=slack_scale(),
    )
    await sandbox.start()
    try:
        async with (
            serve_bot(sandbox, tmp_path / "queuebot.db", clock=clock, **env) as (app, url),
            aiohttp.ClientSession() as http,
        ):
            sandbox.request_url = f"{url}/slack/events"
            token = webhook_auth(env).get("QUEUEBOT_WEBHOOK_TOKEN")
            yield Stack(sandbox, app, url, http, token)
    finally:
        await sandbox.stop()


@asynccontextmanager
async def serve_bot(
    sandbox: SlackSandbox, database: Path, *, clock: Clock = SYSTEM, **env: str
) -> AsyncIterator[tuple[web.Application, str]]:
    """One bot process's worth: the app on its own port, using `database` and `sandbox`."""
    settings = settings_for(database, sandbox, **env)
    client = AsyncWebClient(token=BOT_TOKEN, base_url=sandbox.api_url)
    app = create_app(settings, slack_client=client, clock=clock)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield app, str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


async def serve_process(
    sandbox: SlackSandbox,
    database: Path | str,
    port: int,
    *,
    log_to: Path | None = None,
    **settings: str,
) -> asyncio.subprocess.Process:
    """`queuebot serve` as a real process on `port`, against `sandbox` and the store `database`
    (a SQLite file, or a PostgreSQL URL), with extra `settings` in its environment; returns once
    it answers /healthz. Its log is appended to `log_to` (by default `queuebot.log` beside a
    SQLite file), across restarts."""
    env = {
        "PATH": os.environ["PATH"],
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": sandbox.api_url,
        "QUEUEBOT_CHANNEL": f"#{CHANNEL_NAME}",
        "QUEUEBOT_DATABASE": str(database),
        "HOST": "127.0.0.1",
        "PORT": str(port),
        **fast_environment(),
        **webhook_auth(settings),
        **settings,
    }
    log_file = log_to or Path(database).parent / "queuebot.log"
    with log_file.open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "serve",
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log,
        )
    async with aiohttp.ClientSession() as http:
        for _ in range(200):
            try:
                async with http.get(f"http://127.0.0.1:{port}/healthz") as answer:
                    if answer.status == 200:
                        return process
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    process.kill()
    await process.wait()
    raise AssertionError("queuebot serve did not start")


async def drained(port: int, timeout: float = 30.0) -> None:  # noqa: ASYNC109
    """Wait until a `queuebot serve` process owes Slack nothing (its /metrics says so): another
    process can only be asked."""
    async with asyncio.timeout(timeout):
        while await outbox_pending(port):  # noqa: ASYNC110
            await asyncio.sleep(0.1)


async def outbox_pending(port: int) -> float:
    """Slack deliveries a `queuebot serve` process still owes, read from its /metrics."""
    return await metric(f"http://127.0.0.1:{port}", "queuebot_outbox_pending")


async def metric(url: str, sample: str, **labels: str) -> float:
    """The `sample` with exactly `labels` of the bot's /metrics at `url`; 0 for a labelled
    series not counted yet."""
    async with aiohttp.ClientSession() as http, http.get(f"{url}/metrics") as answer:
        text = await answer.text()
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == sample and found.labels == labels:
                return float(found.value)
    if labels:
        return 0.0
    raise AssertionError(f"/metrics has no {sample}")


async def counted(url: str, sample: str, value: float, within: float = 10.0, **labels: str) -> None:
    """Wait until the counter `sample` with `labels` of the bot at `url` reaches `value`."""
    async with asyncio.timeout(within):
        while await metric(url, sample, **labels) < value:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def watched(
    url: str,
    sample: str,
    more: float,
    timeout: float = 10.0,  # noqa: ASYNC109
    **labels: str,
) -> None:
    """Wait until the counter `sample` (with `labels`) of the bot at `url` has grown by `more`:
    the bot's own background work, seen to happen instead of slept through."""
    async with asyncio.timeout(timeout):
        target = await metric(url, sample, **labels) + more
        while await metric(url, sample, **labels) < target:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def stop_process(process: asyncio.subprocess.Process) -> None:
    """Stop a `queuebot serve` process as an operator would (SIGINT), killing it if it hangs."""
    if process.returncode is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        async with asyncio.timeout(10):
            await process.wait()
    except TimeoutError:
        process.kill()
        await process.wait()
