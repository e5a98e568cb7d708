"""The runner supply's client (bot.fleet.sources.github_runners) over HTTP against
`GitHubSandbox` on a real port: pages, supply per runner type, the cache, GitHub's rate limits
and each refusal in words an admin acts on. Time is a clock the test moves; the sandbox's
request log proves what was asked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.domain.clock import Clock
from bot.fleet.sources.github_access import RunnerScope, ScopeKind
from bot.fleet.sources.github_http import (
    GitHubBadCredentials,
    GitHubError,
    GitHubMissingPermission,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubRejected,
    GitHubUnavailable,
)
from bot.fleet.sources.github_runners import GitHubRunnersClient
from bot.fleet.sources.runner_supply import TypeSupply
from queuebot_lab.sandbox.github import GitHubSandbox, GitHubTokenKind

TOKEN = "ghs_runnersTestToken0123456789"
ORG = RunnerScope(ScopeKind.ORG, "pytorch")
START = datetime(2026, 11, 24, 9, 0, 0, tzinfo=UTC)


@dataclass
class MovedClock:
    """The moment both sides see, moved by the test; the sandbox calls it, the client reads it
    through the product's clock (`product`)."""

    now: datetime = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    @property
    def product(self) -> Clock:
        return Clock.at(self)


@asynccontextmanager
async def github(
    *,
    clock: MovedClock | None = None,
    token_kind: GitHubTokenKind = GitHubTokenKind.APP,
    api_prefix: str = "",
) -> AsyncIterator[tuple[GitHubSandbox, aiohttp.ClientSession]]:
    """The sandbox serving, and a session for the client under test."""
    sandbox = GitHubSandbox(TOKEN, token_kind=token_kind, api_prefix=api_prefix, clock=clock)
    async with sandbox, aiohttp.ClientSession() as session:
        yield sandbox, session


def client_for(
    sandbox: GitHubSandbox,
    session: aiohttp.ClientSession,
    scope: RunnerScope = ORG,
    *,
    token: str = TOKEN,
    clock: MovedClock | None = None,
    max_pages: int = 100,
) -> GitHubRunnersClient:
    return GitHubRunnersClient(
        session,
        sandbox.url,
        token,
        scope,
        clock=(clock or MovedClock()).product,
        max_pages=max_pages,
    )


def assert_says_nothing_secret(error: GitHubError) -> None:
    assert TOKEN not in str(error) and TOKEN not in repr(error.args)


# -- pages ---------------------------------------------------------------------------------------


async def test_every_page_is_read_by_its_next_link() -> None:
    """250 runners are three pages of 100, each asked by the Link GitHub gave."""
    async with github() as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=250)
        fleet = await client_for(sandbox, session).fleet()
    assert len(fleet.runners) == 250 and fleet.total_count == 250
    assert fleet.pages == 3 and fleet.complete
    asked = [(r.path, r.query) for r in sandbox.listings()]
    assert asked == [
        ("/orgs/pytorch/actions/runners", {"per_page": "100"}),
        ("/organizations/21003710/actions/runners", {"per_page": "100", "page": "2"}),
        ("/organizations/21003710/actions/runners", {"per_page": "100", "page": "3"}),
    ]


async def test_requests_carry_githubs_headers() -> None:
    async with github() as (sandbox, session):
        await client_for(sandbox, session).fleet()
    headers = sandbox.requests[0].headers
    assert headers["Authorization"] == f"Bearer {TOKEN}"
    assert headers["Accept"] == "application/vnd.github+json"
    assert headers["X-GitHub-Api-Version"] == "2022-11-28"
    assert headers["User-Agent"].startswith("queuebot/")


async def test_a_list_longer_than_the_page_limit_stops_and_says_so() -> None:
    async with github() as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=250)
        fleet = await client_for(sandbox, session, max_pages=2).fleet()
    assert not fleet.complete and fleet.pages == 2
    assert len(fleet.runners) == 200 and fleet.total_count == 250
    assert len(sandbox.listings()) == 2


async def test_github_enterprise_server_is_asked_under_api_v3() -> None:
    async with github(api_prefix="/api/v3") as (sandbox, session):
        sandbox.add_runners("linux.4xlarge", idle=150)
        assert sandbox.url.endswith("/api/v3")
        fleet = await client_for(sandbox, session).fleet()
    assert len(fleet.runners) == 150
    assert [r.path for r in sandbox.listings()] == [
        "/api/v3/orgs/pytorch/actions/runners",
        "/api/v3/organizations/21003710/actions/runners",
    ]


async def test_a_repositorys_and_an_enterprises_runners() -> None:
    async with github(token_kind=GitHubTokenKind.CLASSIC) as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=120)
        repository = RunnerScope(ScopeKind.REPOSITORY, "pytorch/pytorch")
        assert len((await client_for(sandbox, session, repository).fleet()).runners) == 120
        enterprise = RunnerScope(ScopeKind.ENTERPRISE, "pytorch-enterprise")
        assert (await client_for(sandbox, session, enterprise).fleet()).scope == str(enterprise)
    assert [r.path for r in sandbox.listings()] == [
        "/repos/pytorch/pytorch/actions/runners",
        "/repositories/65600975/actions/runners",
        "/enterprises/pytorch-enterprise/actions/runners",
        "/enterprises/pytorch-enterprise/actions/runners",
    ]


async def test_a_next_link_to_another_host_is_not_followed() -> None:
    """The token goes to GITHUB_API_URL's host only, whatever a Link says."""

    async def elsewhere(request: web.Request) -> web.Response:
        link = '<http://elsewhere.invalid/orgs/pytorch/actions/runners?page=2>; rel="next"'
        return web.json_response({"total_count": 0, "runners": []}, headers={"Link": link})

    app = web.Application()
    app.router.add_get("/orgs/pytorch/actions/runners", elsewhere)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as session:
            url = str(server.make_url("")).rstrip("/")
            client = GitHubRunnersClient(session, url, TOKEN, ORG, clock=MovedClock().product)
            with pytest.raises(GitHubRejected, match="outside GITHUB_API_URL"):
                await client.fleet()
    finally:
        await server.close()


# -- supply per runner type ----------------------------------------------------------------------


async def test_supply_counts_online_offline_busy_and_idle_per_type() -> None:
    async with github() as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=3, busy=5, offline=2)
        sandbox.add_runners("linux.g5.4xlarge.nvidia.gpu", busy=1)
        fleet = await client_for(sandbox, session).fleet()
    supply = fleet.supply_for(["linux.2xlarge", "linux.g5.4xlarge.nvidia.gpu", "windows.4xlarge"])
    two = supply["linux.2xlarge"]
    assert (two.online, two.offline, two.busy, two.idle, two.total) == (8, 2, 5, 3, 10)
    gpu = supply["linux.g5.4xlarge.nvidia.gpu"]
    assert (gpu.online, gpu.busy, gpu.idle) == (1, 1, 0)
    assert supply["windows.4xlarge"].total == 0


async def test_a_runner_with_several_custom_labels_counts_under_each() -> None:
    async with github() as (sandbox, session):
        sandbox.add_runners(["linux.2xlarge", "linux.2xlarge.ephemeral"], idle=2)
        sandbox.add_runners("linux.2xlarge", busy=1)
        fleet = await client_for(sandbox, session).fleet()
    assert set(fleet.supply) == {"linux.2xlarge", "linux.2xlarge.ephemeral"}
    assert fleet.supply["linux.2xlarge"].total == 3
    assert fleet.supply["linux.2xlarge.ephemeral"].total == 2
    assert len(fleet.runners) == 3


async def test_runner_types_match_without_regard_to_case() -> None:
    """A label spelled two ways is one type, and a job's spelling finds it (as GitHub matches
    runs-on labels); a runner with both spellings counts once."""
    async with github() as (sandbox, session):
        sandbox.add_runners("Linux.2XLarge", idle=2)
        sandbox.add_runners(["linux.2xlarge", "LINUX.2XLARGE"], busy=1)
        fleet = await client_for(sandbox, session).fleet()
    (asked,) = fleet.supply_for(["linux.2xLARGE"]).values()
    assert (asked.total, asked.idle, asked.busy) == (3, 2, 1)
    assert list(fleet.supply) == ["linux.2xlarge"]


async def test_read_only_labels_name_no_runner_type() -> None:
    """`self-hosted`, the OS and the architecture are every runner's; also when an older
    GitHub leaves out the labels' `type`."""
    untyped = {
        "id": 900,
        "name": "old-ghes-runner",
        "os": "linux",
        "status": "online",
        "busy": False,
        "labels": [{"name": "self-hosted"}, {"name": "Linux"}, {"name": "X64"}, {"name": "gpu"}],
    }
    async with github() as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=1)
        sandbox.runners.append(untyped)
        fleet = await client_for(sandbox, session).fleet()
    assert set(fleet.supply) == {"linux.2xlarge", "gpu"}
    assert fleet.supply_for(["self-hosted", "X64"]) == {
        "self-hosted": TypeSupply("self-hosted"),
        "X64": TypeSupply("X64"),
    }


async def test_a_runner_that_cannot_be_read_is_left_out_and_counted() -> None:
    strange = {"id": 901, "name": "new-status", "os": "linux", "status": "draining", "busy": 0}
    async with github() as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=2)
        sandbox.runners.append(strange)
        fleet = await client_for(sandbox, session).fleet()
    assert len(fleet.runners) == 2 and fleet.unreadable == 1 and fleet.total_count == 3


# -- the cache -----------------------------------------------------------------------------------


async def test_callers_at_once_share_one_request() -> None:
    async with github() as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=230)
        client = client_for(sandbox, session)
        fleets = await asyncio.gather(*(client.fleet() for _ in range(40)))
    assert len(sandbox.listings()) == 3  # one listing: its three pages
    assert all(fleet is fleets[0] for fleet in fleets)


async def test_one_request_within_the_ttl_and_a_new_one_after() -> None:
    clock = MovedClock()
    async with github() as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=1)
        client = client_for(sandbox, session, clock=clock)
        first = await client.fleet()
        clock.advance(59)
        sandbox.add_runners("linux.2xlarge", busy=1)
        assert await client.fleet() is first
        assert len(sandbox.listings()) == 1
        clock.advance(1)
        fresh = await client.fleet()
    assert len(sandbox.listings()) == 2
    assert fresh.supply["linux.2xlarge"].busy == 1
    assert fresh.fetched_at == START + timedelta(seconds=60)
    assert fresh.stale_reason is None


async def test_a_caller_that_gives_up_does_not_cancel_the_others_listing() -> None:
    async with github() as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=1)
        client = client_for(sandbox, session)
        impatient = asyncio.create_task(client.fleet())
        patient = asyncio.create_task(client.fleet())
        await asyncio.sleep(0)
        impatient.cancel()
        fleet = await patient
    assert len(fleet.runners) == 1 and len(sandbox.listings()) == 1


async def test_a_failed_listing_is_not_repeated_at_once() -> None:
    clock = MovedClock()
    async with github() as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=1)
        sandbox.fail(502)
        client = client_for(sandbox, session, clock=clock)
        for _ in range(5):
            with pytest.raises(GitHubUnavailable, match="HTTP 502"):
                await client.fleet()
        assert len(sandbox.listings()) == 1
        clock.advance(15)
        assert len((await client.fleet()).runners) == 1
    assert len(sandbox.listings()) == 2


# -- rate limits ---------------------------------------------------------------------------------


async def test_retry_after_is_honoured_without_an_answer_to_stand_in() -> None:
    clock = MovedClock()
    async with github(clock=clock) as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=1)
        sandbox.throttle(status=429, retry_after=30)
        client = client_for(sandbox, session, clock=clock)
        with pytest.raises(GitHubRateLimited) as raised:
            await client.fleet()
        assert raised.value.retry_at == START + timedelta(seconds=30)
        assert "09:00:30 UTC" in str(raised.value)
        clock.advance(29)
        with pytest.raises(GitHubRateLimited):
            await client.fleet()
        assert len(sandbox.listings()) == 1
        clock.advance(1)
        assert len((await client.fleet()).runners) == 1
    assert len(sandbox.listings()) == 2


async def test_while_github_asks_to_wait_the_last_answer_stands_in_with_its_age() -> None:
    clock = MovedClock()
    async with github(clock=clock) as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=1)
        client = client_for(sandbox, session, clock=clock)
        first = await client.fleet()
        clock.advance(61)
        sandbox.throttle(status=403, retry_after=120)
        stale = await client.fleet()
        assert stale.fetched_at == first.fetched_at and stale.age(clock()) == timedelta(seconds=61)
        assert stale.stale_reason is not None and stale.stale_reason.endswith(
            "GitHub is not asked again before 09:03:01 UTC; the runners as listed at 09:00:00 UTC"
        )
        clock.advance(119)
        assert (await client.fleet()).stale_reason is not None
        assert len(sandbox.listings()) == 2
        clock.advance(1)
        assert (await client.fleet()).stale_reason is None
    assert len(sandbox.listings()) == 3


async def test_a_secondary_limit_without_retry_after_waits_a_minute_then_longer() -> None:
    clock = MovedClock()
    async with github(clock=clock) as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=1)
        sandbox.throttle(status=403, retry_after=None, times=2)
        client = client_for(sandbox, session, clock=clock)
        with pytest.raises(GitHubRateLimited, match="secondary rate limit"):
            await client.fleet()
        clock.advance(59)
        with pytest.raises(GitHubRateLimited):
            await client.fleet()
        clock.advance(1)
        with pytest.raises(GitHubRateLimited) as raised:
            await client.fleet()
        assert raised.value.retry_at == clock() + timedelta(minutes=2)
        assert len(sandbox.listings()) == 2
        clock.advance(120)
        assert len((await client.fleet()).runners) == 1


async def test_a_spent_budget_is_not_asked_before_its_reset() -> None:
    clock = MovedClock()
    async with github(clock=clock) as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=1)
        sandbox.spend(leaving=0)
        client = client_for(sandbox, session, clock=clock)
        with pytest.raises(GitHubRateLimited, match="hourly budget is spent") as raised:
            await client.fleet()
        assert raised.value.retry_at == sandbox.reset_at
        for _ in range(3):
            clock.advance(1000)
            with pytest.raises(GitHubRateLimited):
                await client.fleet()
        assert len(sandbox.listings()) == 1
        clock.advance(600)  # past the hour's reset
        assert len((await client.fleet()).runners) == 1


async def test_a_nearly_spent_budget_is_left_to_the_tokens_other_users() -> None:
    """With a twentieth of the limit left (250 of 5000), the last answer stands in."""
    clock = MovedClock()
    async with github(clock=clock) as (sandbox, session):
        sandbox.add_runners("linux.2xlarge", idle=1)
        sandbox.spend(leaving=252)
        client = client_for(sandbox, session, clock=clock)
        await client.fleet()  # leaves 251
        clock.advance(60)
        assert (await client.fleet()).stale_reason is None  # leaves 250
        clock.advance(60)
        stale = await client.fleet()
        assert len(sandbox.listings()) == 2
    assert stale.stale_reason is not None and "250 of 5000 requests left" in stale.stale_reason


# -- refusals ------------------------------------------------------------------------------------


async def test_a_bad_token_is_named_without_being_shown() -> None:
    async with github() as (sandbox, session):
        with pytest.raises(GitHubBadCredentials) as raised:
            await client_for(sandbox, session, token="ghp_revokedToken000000000000").fleet()
    message = str(raised.value)
    assert "refused GITHUB_TOKEN (401 Bad credentials)" in message
    assert "expired or revoked" in message and "ghp_revoked" not in message


@pytest.mark.parametrize(
    ("kind", "answer"),
    [
        (GitHubTokenKind.APP, "Resource not accessible by integration"),
        (GitHubTokenKind.FINE_GRAINED, "Resource not accessible by personal access token"),
    ],
)
async def test_a_missing_permission_is_named_as_githubs_settings_name_it(
    kind: GitHubTokenKind, answer: str
) -> None:
    async with github(token_kind=kind) as (sandbox, session):
        sandbox.missing_permission = True
        with pytest.raises(GitHubMissingPermission) as raised:
            await client_for(sandbox, session).fleet()
    assert str(raised.value) == (
        "GITHUB_TOKEN needs the organization permission 'Self-hosted runners: read' to list the"
        f" self-hosted runners of org pytorch (GitHub answered 403: {answer})"
    )
    assert raised.value.needed == "the organization permission 'Self-hosted runners: read'"
    assert_says_nothing_secret(raised.value)


async def test_a_classic_token_is_told_its_missing_scope_and_the_admin_rights() -> None:
    async with github(token_kind=GitHubTokenKind.CLASSIC) as (sandbox, session):
        sandbox.missing_permission = True
        with pytest.raises(GitHubMissingPermission) as raised:
            await client_for(sandbox, session).fleet()
    message = str(raised.value)
    assert message.startswith(
        "GITHUB_TOKEN needs the scope 'admin:org' (it is a classic token with the scopes: repo)"
    )
    assert "Must have admin rights" in message
    assert message.endswith("the token's owner must also be an owner of the organization")


async def test_a_repositorys_list_names_the_administration_permission() -> None:
    async with github() as (sandbox, session):
        sandbox.missing_permission = True
        repository = RunnerScope(ScopeKind.REPOSITORY, "pytorch/pytorch")
        with pytest.raises(GitHubMissingPermission) as raised:
            await client_for(sandbox, session, repository).fleet()
    assert "the repository permission 'Administration: read'" in str(raised.value)
    assert "repository pytorch/pytorch" in str(raised.value)


async def test_an_enterprises_list_tells_an_app_it_needs_a_classic_token() -> None:
    async with github() as (sandbox, session):
        enterprise = RunnerScope(ScopeKind.ENTERPRISE, "pytorch-enterprise")
        with pytest.raises(GitHubMissingPermission) as raised:
            await client_for(sandbox, session, enterprise).fleet()
    assert "the scope 'manage_runners:enterprise' (a classic token" in str(raised.value)


async def test_an_organization_the_token_cannot_see() -> None:
    async with github() as (sandbox, session):
        with pytest.raises(GitHubNotFound) as raised:
            await client_for(sandbox, session, RunnerScope(ScopeKind.ORG, "pytorh")).fleet()
    message = str(raised.value)
    assert "no organization 'pytorh' (404): check GITHUB_ORG" in message
    assert "GitHub App be installed on it" in message
    assert_says_nothing_secret(raised.value)


async def test_an_unreachable_github_is_unavailable() -> None:
    async with aiohttp.ClientSession() as session:
        client = GitHubRunnersClient(
            session, "http://127.0.0.1:9", TOKEN, ORG, clock=MovedClock().product
        )
        with pytest.raises(GitHubUnavailable, match=r"cannot reach GitHub at 127\.0\.0\.1:9"):
            await client.fleet()


async def test_a_github_that_does_not_answer_in_time_is_unavailable() -> None:
    answered = asyncio.Event()

    async def silent(request: web.Request) -> web.Response:
        await answered.wait()
        return web.json_response({})

    app = web.Application()
    app.router.add_get("/orgs/pytorch/actions/runners", silent)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as session:
            url = str(server.make_url("")).rstrip("/")
            client = GitHubRunnersClient(
                session, url, TOKEN, ORG, timeout=0.2, clock=MovedClock().product
            )
            with pytest.raises(GitHubUnavailable, match=r"no answer from .* within 0\.2s"):
                await client.fleet()
    finally:
        answered.set()
        await server.close()
