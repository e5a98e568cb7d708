"""`queuebot backfill` into an empty store, against the GitHub stand-in holding a fleet of the
second model (`fleetmodel`): the store ends up with the jobs a store fed every delivery has, so
the diagnostics' usual and the capacity report's job spans are the same; a walk stopped by its
request budget goes on where it stopped; a repository the token cannot read is skipped."""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.fleet.sources.job_events import read_jobs
from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import Store, open_store
from fleetmodel import Case
from fleetmodel.github import newest_deliveries
from queuebot_lab.sandbox.github import GitHubSandbox
from testkit.second_model import drawn_for

TOKEN = "ghs_" + "backfill" * 5


def _fleet(end: datetime, days: int) -> tuple[str, list[dict[str, Any]]]:
    fleet = drawn_for(end, Case.SURGE, seed=27, types=2, days=days)
    return fleet.plan.org, newest_deliveries(fleet, until=end.timestamp())


def _env(github: GitHubSandbox, database: Path, org: str) -> dict[str, str]:
    """The settings `queuebot backfill` runs with: the stand-in, the org, the store."""
    env = {
        **os.environ,
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_ORG": org,
        "GITHUB_API_URL": github.url,
        "QUEUEBOT_DATABASE": str(database),
    }
    for name in ("QUEUEBOT_CONFIG", "GITHUB_WEBHOOK_SECRET", "GITHUB_REPOSITORY"):
        env.pop(name, None)
    return env


async def _backfill(github: GitHubSandbox, database: Path, org: str, *args: str) -> tuple[int, str]:
    env = _env(github, database, org)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "backfill", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await process.communicate()
    return process.returncode or 0, err.decode()


async def _killed_halfway(github: GitHubSandbox, database: Path, org: str, after: int) -> None:
    """A walk killed (SIGKILL: no chance to tidy up) once it has sent `after` requests."""
    env = _env(github, database, org)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "backfill", env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    # The stand-in's request log is what tells how far the other process got.
    while len(github.requests) < after and process.returncode is None:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    assert process.returncode is None, "the walk ended before it could be killed"
    process.kill()
    await process.wait()


async def _spans(store: Store, since: float, until: float) -> list[tuple[Any, ...]]:
    spans = await store.job_spans(since, until)
    found = [
        (s.runner_type, s.repository, s.created_at, s.started_at, s.completed_at) for s in spans
    ]
    return sorted(found, key=repr)


@pytest.mark.timeout(400)
async def test_backfill_gives_the_store_a_fed_store_has(tmp_path: Path) -> None:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    org, bodies = _fleet(end, days=2)
    config = JobsConfig()
    fed = await open_store(str(tmp_path / "fed.db"))
    await load_history(fed, bodies, config, remember_until=end.timestamp() + 86400)

    # GitHub's hourly 5,000, renewed every 20 s: the walk needs more and waits for the reset.
    async with GitHubSandbox(TOKEN, org=org, rate_window=timedelta(seconds=20)) as github:
        github.history.add_bodies(bodies)
        github.history.repository(f"{org}/private-infra", hidden=True)
        database = tmp_path / "backfilled.db"
        await _killed_halfway(github, database, org, after=2500)
        killed_at = len(github.requests)
        # A budget too small for the walk: it stops, says so, and keeps what it read.
        code, said = await _backfill(github, database, org, "--days", "7", "--max-requests", "40")
        assert code == 75, said
        assert "stopped early" in said and "run it again" in said
        calls_first = len(github.requests) - killed_at
        code, said = await _backfill(github, database, org, "--days", "7")
        assert code == 0, said
        assert f"skipped {org}/private-infra" in said
        assert "done:" in said
        # Days read in full are not asked for again: the second walk asked less than anew.
        calls_second = len(github.requests) - calls_first - killed_at
        code, _ = await _backfill(github, database, org, "--days", "7")
        calls_third = len(github.requests) - calls_first - calls_second - killed_at
        assert code == 0 and calls_third < calls_second
        # More than one hour's budget was needed, and GitHub never refused for it.
        assert len(github.requests) > github.rate_limit
        assert all(r.status != 403 for r in github.requests)

    backfilled = await open_store(str(database))
    try:
        since = (end - timedelta(days=7)).timestamp()
        assert await _spans(backfilled, since, end.timestamp()) == await _spans(
            fed, since, end.timestamp()
        )
        window = timedelta(minutes=30)
        theirs = await read_jobs(fed, config, end, window)
        ours = await read_jobs(backfilled, config, end, window)
        assert ours.baseline == theirs.baseline and ours.baseline
        assert ours.now == theirs.now
    finally:
        await backfilled.close()
        await fed.close()
