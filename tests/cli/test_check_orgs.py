"""`queuebot check` with several GitHub organizations: the runner types the store's jobs of the
last day have (what `jobs.runner_type` gives), each organization's runners listed, and an
organization GitHub does not list said as failed."""

from __future__ import annotations

import time
from pathlib import Path

from bot.store.sqlite import SQLiteStore
from queuebot_lab.sandbox.github import GitHubSandbox
from queuebot_lab.sandbox.slack import SlackSandbox
from testkit.harness import BOT_TOKEN
from testkit.jobs import job_event, record
from tests.cli.test_cli import _check, _check_env

TOKEN = "ghs_checkOrgsToken0123456789abcdef"
LABS_SECRET = "labs-hook-secret-never-printed"


async def _jobs(database: Path) -> None:
    """The last day: 3 jobs of linux.2xlarge, 2 of a rocm type, 1 of pytorch-labs's GPU type;
    and one of two days ago, not counted."""
    now = time.time()
    events = [job_event(n, "linux.2xlarge", now - 3600 * (n + 1), 30.0, 60.0) for n in range(3)]
    events += [job_event(10 + n, "linux.rocm.gpu", now - 7200, None, None) for n in range(2)]
    events.append(
        job_event(20, "linux.g5.4xlarge", now - 600, None, None, repository="pytorch-labs/ci")
    )
    events.append(job_event(30, "linux.old", now - 2 * 86400, 1.0, 1.0))
    store = await SQLiteStore.open(str(database))
    try:
        await record(store, events)
    finally:
        await store.close()


async def test_check_prints_the_runner_types_of_the_last_days_jobs(tmp_path: Path) -> None:
    await _jobs(tmp_path / "queuebot.db")
    async with SlackSandbox(bot_token=BOT_TOKEN) as sandbox, GitHubSandbox(TOKEN) as github:
        github.add_org("pytorch-labs")
        github.add_runners("linux.2xlarge", idle=2)
        github.add_runners("linux.g5.4xlarge", busy=1, org="pytorch-labs")
        env = _check_env(
            sandbox,
            tmp_path,
            GITHUB_ORG="pytorch,pytorch-labs",
            GITHUB_WEBHOOK_SECRET_PYTORCH_LABS=LABS_SECRET,
            GITHUB_TOKEN=TOKEN,
            GITHUB_API_URL=github.url,
        )
        code, out = await _check(env)
    assert code == 0, out
    assert b"github job events: ok (6 jobs queued in the last 24 hours;" in out
    assert (
        b"github runner types: 3 in the last 24 hours' jobs (jobs each): linux.2xlarge 3,"
        b" linux.rocm.gpu 2 (left out by jobs.exclude), linux.g5.4xlarge 1\n"
    ) in out
    assert b"github runners: ok (3 runners in 2 runner types, orgs pytorch, pytorch-labs)" in out
    assert LABS_SECRET.encode() not in out and TOKEN.encode() not in out


async def test_check_fails_for_an_organization_whose_runners_are_not_listed(
    tmp_path: Path,
) -> None:
    async with SlackSandbox(bot_token=BOT_TOKEN) as sandbox, GitHubSandbox(TOKEN) as github:
        github.add_runners("linux.2xlarge", idle=2)
        env = _check_env(
            sandbox,
            tmp_path,
            GITHUB_ORG="pytorch,ghost-org",
            GITHUB_TOKEN=TOKEN,
            GITHUB_API_URL=github.url,
        )
        code, out = await _check(env)
    assert code == 1
    (line,) = [line for line in out.splitlines() if line.startswith(b"github runners:")]
    assert line.startswith(
        b"github runners: FAILED in part (2 runners in 1 runner types, orgs pytorch, ghost-org);"
        b" org ghost-org: "
    )
    assert b"(404)" in line
