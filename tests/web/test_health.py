"""GET /healthz says whether the bot can do its job: its background tasks run, the store takes a
write, and Slack is being delivered to; and the outbox worker lives through whatever the store
throws at it."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from tests.support.harness import Stack, running_stack, watched
from tests.support.payloads import reference


async def _health(stack: Stack) -> tuple[int, dict[str, Any]]:
    async with stack.http.get(f"{stack.url}/healthz") as response:
        return response.status, await response.json()


async def _unhealthy(stack: Stack) -> dict[str, Any]:
    """Wait until /healthz answers 503 (a delay becomes too long as time passes); its body."""
    async with asyncio.timeout(10):
        while True:
            status, body = await _health(stack)
            if status == 503:
                return body
            await asyncio.sleep(0.05)


def _sql(database: Path, statement: str) -> None:
    """What an operator's own `sqlite3 queuebot.db` session does to the file meanwhile."""
    with sqlite3.connect(database, isolation_level=None) as other:
        other.execute("PRAGMA busy_timeout = 5000")
        other.execute(statement)
    other.close()


async def test_a_working_bot_is_healthy(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack:
        assert await _health(stack) == (200, {"status": "ok"})


async def test_the_outbox_worker_outlives_a_store_error_and_health_says_so(
    tmp_path: Path,
) -> None:
    """SQLite failing under the worker (here: its table gone while someone works on the file)
    stops nothing for good: /healthz names the problem meanwhile, and once the file is right
    again the worker delivers what comes next."""
    database = tmp_path / "queuebot.db"
    async with running_stack(tmp_path) as stack:
        assert (await stack.webhook(reference())).status == 202
        (parent,) = await stack.parents(1)
        _sql(database, "ALTER TABLE outbox RENAME TO outbox_aside")
        await watched(stack.url, "queuebot_delivery_worker_errors_total", 1, timeout=20)
        status, body = await _health(stack)
        assert status == 503
        assert any("no such table: outbox" in reason for reason in body["reasons"])
        assert (await stack.webhook(reference("resolved"))).status == 503
        _sql(database, "ALTER TABLE outbox_aside RENAME TO outbox")
        assert (await stack.webhook(reference("resolved"))).status == 202
        (reply,) = await stack.replies(parent, 1, timeout=20)
        assert "Resolved" in stack.text(reply)
        assert await _health(stack) == (200, {"status": "ok"})


async def test_a_delivery_owed_too_long_is_unhealthy(tmp_path: Path) -> None:
    """Slack refusing for longer than the limit shows on /healthz; delivered, it is healthy."""
    async with running_stack(tmp_path, QUEUEBOT_HEALTH_MAX_OUTBOX_AGE_SECONDS="0.5") as stack:
        stack.sandbox.faults.add("chat.postMessage", status=500, count=1000)
        assert (await stack.webhook(reference())).status == 202
        body = await _unhealthy(stack)
        assert any("Slack delivery owed has waited" in reason for reason in body["reasons"])
        stack.sandbox.faults.clear()
        await stack.parents(1, timeout=20)
        await stack.settled()
        assert await _health(stack) == (200, {"status": "ok"})
