"""GET /healthz says whether the bot can do its job: its background tasks run, the store takes a
write, and Slack is being delivered to; and the outbox worker lives through whatever the store
throws at it."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from bot.store import open_store
from bot.telemetry.metrics import Metrics
from bot.web.health import Health
from testkit.harness import Stack, running_stack, watched
from testkit.payloads import reference, with_values


async def _health(stack: Stack) -> tuple[int, dict[str, Any]]:
    async with stack.http.get(f"{stack.url}/healthz") as response:
        return response.status, await response.json()


async def _unhealthy(stack: Stack, timeout: float = 10.0) -> dict[str, Any]:  # noqa: ASYNC109
    """Wait until /healthz answers 503 (a delay becomes too long as time passes); its body."""
    async with asyncio.timeout(timeout):
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


async def test_a_row_the_worker_cannot_read_stops_nothing_for_good(tmp_path: Path) -> None:
    """Not only the store's own errors: an outbox row the worker cannot make sense of (a time
    that is not a number) fails its passes; /healthz names it, and once the row is mended the
    owed reply goes out."""
    database = tmp_path / "queuebot.db"
    async with running_stack(tmp_path) as stack:
        assert (await stack.webhook(reference())).status == 202
        (parent,) = await stack.parents(1)
        await stack.settled()
        stack.sandbox.faults.add("chat.postMessage", status=500, count=1000)
        assert (await stack.webhook(reference("resolved"))).status == 202
        _sql(database, "UPDATE outbox SET not_before = 'soon' WHERE state = 'pending'")
        body = await _unhealthy(stack, timeout=20)
        assert any("outbox worker cannot read the outbox" in r for r in body["reasons"])
        stack.sandbox.faults.clear()
        _sql(database, "UPDATE outbox SET not_before = 0 WHERE state = 'pending'")
        (reply,) = await stack.replies(parent, 1, timeout=40)
        assert "Resolved" in stack.text(reply)
        assert await _health(stack) == (200, {"status": "ok"})


async def test_a_background_task_that_stopped_is_named(tmp_path: Path) -> None:
    """A background task that is no longer running makes /healthz unhealthy, by its name."""
    store = await open_store(str(tmp_path / "queuebot.db"))
    try:
        health = Health(store, Metrics(), background=lambda: {"outbox worker": False})
        assert await health.problems() == ["the outbox worker is not running"]
    finally:
        await store.close()


async def test_an_entry_that_cannot_be_read_back_is_given_up_and_the_next_goes_out(
    tmp_path: Path,
) -> None:
    """An owed reply whose stored form no longer parses (changed by hand) is marked failed,
    logged, and the incident's next delivery goes out after it: one bad entry blocks nothing."""
    database = tmp_path / "queuebot.db"
    async with running_stack(tmp_path) as stack:
        assert (await stack.webhook(reference())).status == 202
        (parent,) = await stack.parents(1)
        await stack.settled()
        # Slack asks the first reply to wait, so it is back in the store when it is changed.
        stack.sandbox.faults.add("chat.postMessage", status=429, retry_after=3)
        changed = with_values(reference(), max_queue_time_mins=175)
        assert (await stack.webhook(changed)).status == 202
        assert (await stack.webhook(reference("resolved"))).status == 202
        async with asyncio.timeout(10):
            while _one(database, _FIRST_REPLY_ATTEMPTS) < 1:  # noqa: ASYNC110 - the file, as an operator reads it
                await asyncio.sleep(0.05)
        _sql(database, _SPOIL_FIRST_REPLY)
        (reply,) = await stack.replies(parent, 1, timeout=20)
        await stack.settled(timeout=20)
        assert "Resolved" in stack.text(reply)
        assert len(stack.sandbox.replies(None, parent.ts)) == 1


_FIRST_REPLY = "SELECT MIN(id) FROM outbox WHERE state = 'pending' AND kind = 'post_reply'"
_FIRST_REPLY_ATTEMPTS = f"SELECT attempts FROM outbox WHERE id = ({_FIRST_REPLY})"  # noqa: S608
_SPOIL_FIRST_REPLY = f"UPDATE outbox SET payload = '{{' WHERE id = ({_FIRST_REPLY})"  # noqa: S608


def _one(database: Path, query: str) -> int:
    with sqlite3.connect(database) as db:
        (value,) = db.execute(query).fetchone()
    db.close()
    return int(value or 0)
