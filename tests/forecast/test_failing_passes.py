"""A runner type whose heads-up the store refuses stops no other type's, and a pass that keeps
failing is said on /healthz and counted on /metrics. On PostgreSQL, whose index refuses a row
for a runner type of 4,000 characters (a store written before deliveries were bounded)."""

from __future__ import annotations

import asyncio
import random
import string
from datetime import timedelta
from pathlib import Path

from bot.domain.clock import Clock
from bot.domain.jobs import JobEvent
from bot.web.routes import EDGES
from testkit.harness import running_stack
from testkit.jobs import job_event
from testkit.postgres import fresh_database
from tests.forecast.test_heads_up import (
    START,
    TYPE,
    _env,
    _heads_ups,
    _job,
    _queue_growing,
    _send,
    _text,
)

#: Letters and digits at random: PostgreSQL compresses an index entry, and a run of one letter
#: would fit after all.
LONG = "linux-" + "".join(random.Random(4000).choices(string.ascii_letters + string.digits, k=4000))


def _old_row(n: int) -> JobEvent:
    created = START - timedelta(minutes=40 - 5 * n)
    return job_event(1000 + n, LONG, created.timestamp(), None, None)


async def test_a_refused_heads_up_stops_no_other_and_shows_on_healthz(tmp_path: Path) -> None:
    async with (
        fresh_database() as url,
        running_stack(
            tmp_path, clock=Clock.at(START), QUEUEBOT_DATABASE=url, **_env(tmp_path)
        ) as stack,
    ):
        store = stack.app[EDGES].store
        for n in range(8):
            assert await store.record_job(_old_row(n), f"old-{n}", START.timestamp() + 86400)
        await _queue_growing(stack)
        (posted,) = await stack.sandbox.wait_for(lambda: _heads_ups(stack), timeout=10)
        assert f"Heads-up: {TYPE}" in _text(stack, posted)

        async def unhealthy() -> str:
            async with stack.http.get(f"{stack.url}/healthz") as answer:
                return await answer.text() if answer.status == 503 else ""

        reasons = ""
        for _ in range(100):
            reasons = await unhealthy()
            if reasons:
                break
            await asyncio.sleep(0.1)  # the checks run every 0.1 s
        assert "the early warning failed" in reasons and "passes in a row" in reasons
        assert LONG not in reasons
        async with stack.http.get(f"{stack.url}/metrics") as answer:
            scraped = await answer.text()
        assert 'queuebot_background_failures_total{task="early warning"}' in scraped
        assert len(_heads_ups(stack)) == 1


def _capped(env: dict[str, str], cap: int) -> None:
    config = Path(env["QUEUEBOT_CONFIG"])
    config.write_text(config.read_text() + f"    max_new_heads_ups: {cap}\n")


async def test_a_burst_of_new_runner_types_posts_the_cap_and_names_the_rest(
    tmp_path: Path,
) -> None:
    """Five runner types start heading for the alert at one check, the channel's cap is two:
    two heads-ups, the second naming the other three in one line."""
    env = _env(tmp_path)
    _capped(env, 2)
    names = [f"linux.burst-{n}" for n in range(5)]
    # Every job sent while the clock is before them all, so that one check sees them at once.
    now = [START - timedelta(hours=1)]
    async with running_stack(tmp_path, clock=Clock.at(lambda: now[0]), **env) as stack:
        for k, name in enumerate(names):
            for n in range(8):
                job = _job(100 * (k + 1) + n, START - timedelta(minutes=40 - 5 * n), name)
                await _send(stack, job, "queued")
        now[0] = START
        posted = await stack.sandbox.wait_for(
            lambda: _heads_ups(stack)[1:] and _heads_ups(stack), timeout=15
        )
        await stack.passes("early warning", 10)  # ten more checks: nothing more is posted
        assert len(_heads_ups(stack)) == 2
        last = _text(stack, posted[-1])
        named = [n for n in names if n in last]
        assert "And 3 more runner types heading for the alert" in last and len(named) == 4
