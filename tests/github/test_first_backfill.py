"""`queuebot serve` with QUEUEBOT_BACKFILL_ON_START_DAYS reads the job history GitHub has in the
background the first time it starts on a store, and never again once that walk went through:
the store then holds the jobs a store fed every delivery holds."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.app import SERVICES, STORE
from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import open_store
from fleetmodel import Case
from fleetmodel.github import newest_deliveries
from queuebot_lab.sandbox.github import GitHubSandbox
from testkit.github import HOOK_SECRET
from testkit.harness import running_stack
from testkit.second_model import drawn_for
from tests.github.test_backfill import _spans

TOKEN = "ghs_" + "firststart" * 4


def _history_asked(github: GitHubSandbox) -> int:
    return sum(1 for r in github.requests if not r.path.endswith("/actions/runners"))


@pytest.mark.timeout(200)
async def test_the_first_start_reads_the_history_once(tmp_path: Path) -> None:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    fleet = drawn_for(end, Case.SURGE, seed=5, types=2, days=1)
    bodies = newest_deliveries(fleet, until=end.timestamp())
    fed = await open_store(str(tmp_path / "fed.db"))
    await load_history(fed, bodies, JobsConfig(), remember_until=end.timestamp() + 86400)
    env = {
        "GITHUB_WEBHOOK_SECRET": HOOK_SECRET,
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_ORG": fleet.plan.org,
        "QUEUEBOT_BACKFILL_ON_START_DAYS": "2",
        "QUEUEBOT_RECONCILE_SECONDS": "0",
    }
    since, until = (end - timedelta(days=2)).timestamp(), end.timestamp()
    try:
        async with GitHubSandbox(TOKEN, org=fleet.plan.org) as github:
            github.history.add_bodies(bodies)
            async with running_stack(tmp_path / "bot", GITHUB_API_URL=github.url, **env) as stack:
                first = stack.app[SERVICES].first_backfill
                assert first is not None
                async with asyncio.timeout(150):
                    while first.done is None:  # noqa: ASYNC110
                        await asyncio.sleep(0.1)
                assert first.done is True
                backfilled = await _spans(stack.app[STORE], since, until)
                assert backfilled == await _spans(fed, since, until) and backfilled
            asked = _history_asked(github)
            assert asked > 0
            # Started again on the same store: nothing is read again.
            async with running_stack(tmp_path / "bot", GITHUB_API_URL=github.url, **env) as stack:
                again = stack.app[SERVICES].first_backfill
                assert again is not None
                chores = stack.app[SERVICES].chores
                await asyncio.wait_for(asyncio.gather(*chores), timeout=30)
                assert again.done is None
            assert _history_asked(github) == asked
    finally:
        await fed.close()
