"""Several organizations' runners lists against the GitHub stand-in: a client per organization,
their runners put together (a runner type two organizations have adds up) for diagnostics and
/metrics; an organization whose list fails leaves the others' answer, said as partial; the
backfill walks every organization."""

from __future__ import annotations

import asyncio
import io
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from bot.cli.backfill import run_backfill
from bot.clients import github_runners_client_for
from bot.config import load_settings
from bot.fleet.measures import Signal
from bot.fleet.reading import PARTIAL_RUNNERS, FleetSources, read_fleet
from bot.fleet.sources.github_http import GitHubError
from bot.fleet.sources.orgs import OrgRunners
from queuebot_lab.sandbox.github import GitHubSandbox
from testkit.github import HOOK_SECRET, deliver, job_delivery
from testkit.harness import running_stack
from tests.web.test_fleet_metrics import per_type, scrape

TOKEN = "ghs_orgRunnersTestToken0123456789"
SHARED = "linux.2xlarge"
LABS_ONLY = "linux.g5.4xlarge.nvidia.gpu"


def _fleet(github: GitHubSandbox) -> None:
    """pytorch: 3 of SHARED (2 idle, 1 busy); pytorch-labs: 2 more of SHARED (1 idle, 1
    offline) and 2 busy of LABS_ONLY."""
    github.add_org("pytorch-labs")
    github.add_runners(SHARED, idle=2, busy=1)
    github.add_runners(SHARED, idle=1, offline=1, org="pytorch-labs")
    github.add_runners(LABS_ONLY, busy=2, org="pytorch-labs")


def _runners(github: GitHubSandbox, orgs: str, session: aiohttp.ClientSession) -> OrgRunners:
    env = {"GITHUB_TOKEN": TOKEN, "GITHUB_ORG": orgs, "GITHUB_API_URL": github.url}
    built = github_runners_client_for(load_settings(env), session)
    assert isinstance(built, OrgRunners)
    return built


async def test_a_runner_type_two_organizations_have_adds_up() -> None:
    async with GitHubSandbox(TOKEN) as github, aiohttp.ClientSession() as session:
        _fleet(github)
        runners = _runners(github, "pytorch,pytorch-labs", session)
        fleet = await runners.fleet()
        await runners.close()
    shared = fleet.supply_for([SHARED])[SHARED]
    assert (shared.online, shared.offline, shared.busy, shared.idle) == (4, 1, 1, 3)
    assert fleet.supply_for([LABS_ONLY])[LABS_ONLY].busy == 2
    assert fleet.failed == () and fleet.scope == "orgs pytorch, pytorch-labs"
    # One listing per organization, each its own path.
    assert sorted(r.path for r in github.listings()) == [
        "/orgs/pytorch-labs/actions/runners",
        "/orgs/pytorch/actions/runners",
    ]


async def test_one_organization_failing_keeps_the_others_answer_said_partial() -> None:
    async with GitHubSandbox(TOKEN) as github, aiohttp.ClientSession() as session:
        _fleet(github)
        runners = _runners(github, "pytorch,ghost-org", session)
        fleet = await runners.fleet()
        reading = await read_fleet(FleetSources(runners=runners), datetime.now(UTC))
        await runners.close()
    assert fleet.supply_for([SHARED])[SHARED].online == 3
    (failed,) = fleet.failed
    assert failed.startswith("org ghost-org: ") and "404" in failed
    assert reading.value(Signal.REGISTERED, SHARED) == 3.0
    assert [p for p in reading.problems if p.startswith(PARTIAL_RUNNERS)] == [
        f"{PARTIAL_RUNNERS}{failed}"
    ]


async def test_no_organizations_answer_is_no_answer() -> None:
    async with GitHubSandbox(TOKEN) as github, aiohttp.ClientSession() as session:
        runners = _runners(github, "ghost-org,other-ghost", session)
        with pytest.raises(GitHubError) as raised:
            await runners.fleet()
        await runners.close()
    assert "org ghost-org: " in str(raised.value) and "org other-ghost: " in str(raised.value)


async def test_metrics_count_every_organizations_runners(tmp_path: Path) -> None:
    async with GitHubSandbox(TOKEN) as github:
        _fleet(github)
        env = {
            "GITHUB_WEBHOOK_SECRET": HOOK_SECRET,
            "GITHUB_TOKEN": TOKEN,
            "GITHUB_ORG": "pytorch,pytorch-labs",
            "GITHUB_API_URL": github.url,
        }
        async with running_stack(tmp_path, **env) as stack:
            for job_id, (org, runner_type) in enumerate(
                [("pytorch", SHARED), ("pytorch-labs", LABS_ONLY)], start=1
            ):
                body = job_delivery(
                    "queued",
                    job_id,
                    datetime.now(UTC),
                    labels=("self-hosted", runner_type),
                    repository=f"{org}/ci",
                )
                body["repository"]["owner"]["login"] = org
                body.pop("organization", None)
                status, answer = await deliver(stack.http, stack.url, body)
                assert status == 202, answer
            samples = await scrape(stack.url)
            for _ in range(100):  # the first scrape starts the listings; a later one has them
                if per_type(samples, "queuebot_runners_online").get(SHARED) == 4:
                    break
                await asyncio.sleep(0.05)
                samples = await scrape(stack.url)
    assert per_type(samples, "queuebot_runners_online") == {SHARED: 4, LABS_ONLY: 2}
    assert per_type(samples, "queuebot_runners_offline") == {SHARED: 1, LABS_ONLY: 0}
    assert per_type(samples, "queuebot_runners_busy") == {SHARED: 1, LABS_ONLY: 2}


async def test_the_backfill_walks_every_organization(tmp_path: Path) -> None:
    """Each organization's repositories are asked for; one GitHub does not know is said and
    skipped, never fatal."""
    async with GitHubSandbox(TOKEN) as github:
        env = {
            "GITHUB_TOKEN": TOKEN,
            "GITHUB_ORG": "pytorch,ghost-org",
            "GITHUB_API_URL": github.url,
            "QUEUEBOT_DATABASE": str(tmp_path / "queuebot.db"),
        }
        out = io.StringIO()
        code = await run_backfill(load_settings(env), days=1, max_requests=None, out=out)
    asked = [r.path for r in github.requests if r.path.endswith("/repos")]
    assert asked == ["/orgs/pytorch/repos", "/orgs/ghost-org/repos"]
    assert code == 0, out.getvalue()
    assert "backfill: skipped organization ghost-org: " in out.getvalue()
