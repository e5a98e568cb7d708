"""queuebot as a GitHub App (bot.fleet.sources.github_app), over HTTP against the GitHub
stand-in: the JWT's claims, the installation found per owner, installation tokens kept, renewed
before they end and shared by concurrent callers, a refused token renewed once, a JWT GitHub
refuses and an App not installed said in an admin's words, the runners of two organizations
and the reader, each owner asked with its own installation's token. The commands and settings
are tests/github/test_github_app_commands.py's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from bot.domain.clock import Clock
from bot.fleet.sources.github_access import RunnerScope, ScopeKind
from bot.fleet.sources.github_app import GitHubApp, GitHubAppNotInstalled
from bot.fleet.sources.github_http import (
    GitHubBadCredentials,
    GitHubMissingPermission,
    GitHubNotFound,
)
from bot.fleet.sources.github_rest import GitHubReader
from bot.fleet.sources.github_runners import GitHubRunnersClient
from queuebot_lab.sandbox.github import GitHubSandbox
from queuebot_lab.sandbox.github_apps import SandboxApp
from testkit.github import job_delivery

APP_ID = 424242
TOKEN = "ghp_personalTokenNotUsedByTheApp000000000"
START = datetime(2026, 11, 24, 9, 0, 0, tzinfo=UTC)


def pem_of(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


def _rsa() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


KEY = _rsa()
PRIVATE = pem_of(KEY)
PUBLIC = (
    KEY.public_key()
    .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    .decode()
)


@dataclass
class MovedClock:
    """The moment both sides see, moved by the test."""

    now: datetime = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@asynccontextmanager
async def stand_in(
    clock: MovedClock | None = None, *, org: str = "pytorch"
) -> AsyncIterator[GitHubSandbox]:
    """The stand-in serving, the App installed on `org`."""
    sandbox = GitHubSandbox(TOKEN, org=org, clock=clock)
    sandbox.app = SandboxApp(APP_ID, PUBLIC)
    sandbox.app.install(org)
    async with sandbox:
        yield sandbox


def app_for(
    sandbox: GitHubSandbox,
    session: aiohttp.ClientSession,
    clock: MovedClock | None = None,
    *,
    app_id: int = APP_ID,
    private_key: str = PRIVATE,
) -> GitHubApp:
    """The product's App, its clock the test's (or the machine's): the machine's time moved
    with the stand-in's, as the JWT and the tokens' expiry are read against it."""
    moment = (
        Clock(moment=clock, seconds=lambda: clock.now.timestamp()) if clock is not None else Clock()
    )
    return GitHubApp(session, sandbox.url, app_id, private_key, clock=moment)


def installed(sandbox: GitHubSandbox) -> SandboxApp:
    assert sandbox.app is not None
    return sandbox.app


def asked(sandbox: GitHubSandbox, suffix: str) -> list[str]:
    return [r.path for r in sandbox.requests if r.path.endswith(suffix)]


async def test_the_jwt_carries_the_claims_github_asks_for() -> None:
    """RS256, iat 60 s back, exp ten minutes after iat, iss the App's id; GitHub takes it."""
    clock = MovedClock(datetime.now(UTC).replace(microsecond=0))
    async with stand_in(clock) as sandbox, aiohttp.ClientSession() as session:
        app = app_for(sandbox, session, clock)
        token = app.jwt()
        found = await app.installation("pytorch")
    assert found.id == installed(sandbox).installations["pytorch"].id
    assert jwt.get_unverified_header(token)["alg"] == "RS256"
    claims = jwt.decode(token, PUBLIC, algorithms=["RS256"])
    stamp = int(clock.now.timestamp())
    assert claims == {"iat": stamp - 60, "exp": stamp + 540, "iss": str(APP_ID)}
    assert claims["exp"] - claims["iat"] == 600


async def test_the_installation_is_found_per_org_and_per_user() -> None:
    async with stand_in() as sandbox, aiohttp.ClientSession() as session:
        labs = installed(sandbox).install("pytorch-labs")
        octocat = installed(sandbox).install("octocat", user=True)
        app = app_for(sandbox, session)
        found = [await app.installation(o) for o in ("pytorch", "pytorch-labs", "octocat")]
        again = await app.installation("PyTorch-Labs")
    assert [i.id for i in found[1:]] == [labs.id, octocat.id]
    assert found[0].id != labs.id and again == found[1]
    assert found[2].found_by == "GET /users/octocat/installation"
    assert found[0].permissions["organization_self_hosted_runners"] == "read"
    # A user's installation is asked of /orgs first, then /users; each owner once.
    assert asked(sandbox, "/installation") == [
        "/orgs/pytorch/installation",
        "/orgs/pytorch-labs/installation",
        "/orgs/octocat/installation",
        "/users/octocat/installation",
    ]


async def test_a_token_is_kept_and_renewed_five_minutes_before_it_ends() -> None:
    clock = MovedClock()
    async with stand_in(clock) as sandbox, aiohttp.ClientSession() as session:
        app = app_for(sandbox, session, clock)
        first = await app.authorization("pytorch")
        clock.advance(minutes=54)
        assert await app.authorization("pytorch") == first
        clock.advance(minutes=1, seconds=1)
        renewed = await app.authorization("pytorch")
    assert renewed != first and renewed.startswith("Bearer ghs_")
    assert len(asked(sandbox, "/access_tokens")) == 2


async def test_concurrent_callers_share_one_lookup_and_one_exchange() -> None:
    async with stand_in() as sandbox, aiohttp.ClientSession() as session:
        app = app_for(sandbox, session)
        said = await asyncio.gather(*(app.authorization("pytorch") for _ in range(20)))
    assert len(set(said)) == 1
    assert len(asked(sandbox, "/installation")) == 1
    assert len(asked(sandbox, "/access_tokens")) == 1


async def test_a_token_github_no_longer_takes_is_renewed_once() -> None:
    async with stand_in() as sandbox, aiohttp.ClientSession() as session:
        sandbox.add_runners("linux.2xlarge", idle=3)
        app = app_for(sandbox, session)
        client = GitHubRunnersClient(
            session, sandbox.url, app, RunnerScope(ScopeKind.ORG, "pytorch"), ttl=0
        )
        await client.fleet()
        installed(sandbox).revoke((await app.authorization("pytorch")).removeprefix("Bearer "))
        fleet = await client.fleet()
    assert fleet.supply_for(["linux.2xlarge"])["linux.2xlarge"].idle == 3
    assert [r.status for r in sandbox.listings()] == [200, 401, 200]
    assert len(asked(sandbox, "/access_tokens")) == 2


async def test_a_token_refused_even_when_new_is_said_without_the_token() -> None:
    async with stand_in() as sandbox, aiohttp.ClientSession() as session:
        installed(sandbox).token_lifetime = timedelta(0)  # every token is dead on arrival
        reader = GitHubReader(session, sandbox.url, app_for(sandbox, session))
        with pytest.raises(GitHubBadCredentials) as raised:
            await reader.get(reader.url("/orgs/pytorch/repos"), owner="pytorch")
    assert [r.status for r in sandbox.requests if r.path.endswith("/repos")] == [401, 401]
    assert "GitHub App 424242 is wrong, expired or revoked" in str(raised.value)
    assert "ghs_" not in str(raised.value)


async def test_an_app_not_installed_on_an_org_says_so() -> None:
    async with stand_in() as sandbox, aiohttp.ClientSession() as session:
        app = app_for(sandbox, session)
        client = GitHubRunnersClient(
            session, sandbox.url, app, RunnerScope(ScopeKind.ORG, "meta-pytorch")
        )
        with pytest.raises(GitHubAppNotInstalled) as raised:
            await client.fleet()
    assert isinstance(raised.value, GitHubNotFound)
    assert str(raised.value).startswith(
        "GitHub App 424242 is not installed on meta-pytorch (GitHub at 127.0.0.1:"
    )
    assert "install it on meta-pytorch" in str(raised.value)
    assert sandbox.listings() == []


@pytest.mark.parametrize(
    ("given", "behind", "said"),
    [
        ({"private_key": pem_of(_rsa())}, 0, "is not one of GitHub App 424242's"),
        ({"app_id": 7}, 0, "there is no GitHub App 7 there; check GITHUB_APP_ID"),
        ({}, 20, "this machine's clock is off from GitHub's"),
        ({}, -5, "this machine's clock is off from GitHub's"),
    ],
)
async def test_a_jwt_github_refuses_is_told_in_an_admins_words(
    given: dict[str, Any], behind: int, said: str
) -> None:
    """Another key, another App, a clock 20 minutes behind (exp passed) or 5 ahead (exp too
    far)."""
    clock = MovedClock()
    async with stand_in(clock) as sandbox, aiohttp.ClientSession() as session:
        ours = MovedClock(clock.now - timedelta(minutes=behind))
        app = app_for(sandbox, session, ours, **given)
        with pytest.raises(GitHubBadCredentials) as raised:
            await app.authorization("pytorch")
    assert said in str(raised.value)
    assert "BEGIN" not in str(raised.value) and "eyJ" not in str(raised.value)


async def test_the_runners_of_two_orgs_are_listed_with_each_orgs_token() -> None:
    async with stand_in() as sandbox, aiohttp.ClientSession() as session:
        sandbox.add_org("pytorch-labs")
        installed(sandbox).install("pytorch-labs")
        sandbox.add_runners("linux.2xlarge", idle=2)
        sandbox.add_runners("linux.2xlarge", busy=5, org="pytorch-labs")
        app = app_for(sandbox, session)
        fleets = [
            await GitHubRunnersClient(
                session, sandbox.url, app, RunnerScope(ScopeKind.ORG, org)
            ).fleet()
            for org in ("pytorch", "pytorch-labs")
        ]
        # A token of pytorch's installation is refused on pytorch-labs, as GitHub refuses it.
        stray = GitHubRunnersClient(
            session, sandbox.url, (await app.authorization("pytorch")).removeprefix("Bearer "),
            RunnerScope(ScopeKind.ORG, "pytorch-labs"),
        )  # fmt: skip
        with pytest.raises(GitHubMissingPermission, match="Resource not accessible by integra"):
            await stray.fleet()
    assert [f.supply_for(["linux.2xlarge"])["linux.2xlarge"].total for f in fleets] == [2, 5]
    tokens = [r.headers["Authorization"] for r in sandbox.listings()]
    assert tokens[0] != tokens[1] and all(t.startswith("Bearer ghs_") for t in tokens)
    assert [r.status for r in sandbox.listings()] == [200, 200, 403]
    assert len(asked(sandbox, "/access_tokens")) == 2


async def test_the_reader_asks_each_owner_with_its_installations_token_and_budget() -> None:
    async with stand_in() as sandbox, aiohttp.ClientSession() as session:
        installed(sandbox).install("octocat", user=True).rate_limit = 15000
        for number, repository in enumerate(("pytorch/pytorch", "octocat/dotfiles")):
            created = START + timedelta(minutes=number)
            sandbox.history.add_bodies(
                [job_delivery("queued", 1000 + number * 10, created, repository=repository)]
            )
        reader = GitHubReader(session, sandbox.url, app_for(sandbox, session))
        path = "/repos/{}/actions/runs/{}/jobs"
        body, _ = await reader.get(reader.url(path.format("pytorch/pytorch", 100)), owner="pytorch")
        assert reader.budget.limit == 5000
        other, _ = await reader.get(
            reader.url(path.format("octocat/dotfiles", 101)), owner="octocat"
        )
        assert reader.budget.limit == 15000
        # A repository is asked about with its owner's token: another's is not given it.
        with pytest.raises(GitHubNotFound):
            await reader.get(reader.url(path.format("octocat/dotfiles", 101)), owner="pytorch")
    assert body["jobs"][0]["id"] == 1000 and other["jobs"][0]["id"] == 1010
    authorizations = [r.headers["Authorization"] for r in sandbox.requests if "/runs/" in r.path]
    assert authorizations[0] != authorizations[1] and authorizations[2] == authorizations[0]


# -- the stand-in answers as GitHub does ---------------------------------------------------------


def _signed(claims: dict[str, Any], key: rsa.RSAPrivateKey = KEY) -> str:
    return jwt.encode(claims, pem_of(key), algorithm="RS256")


async def test_the_stand_in_refuses_jwts_with_githubs_answers() -> None:
    clock = MovedClock()
    now = int(clock.now.timestamp())
    good = {"iat": now - 60, "exp": now + 540, "iss": str(APP_ID)}
    cases = [
        ("not-a-jwt", 401, "A JSON web token could not be decoded"),
        (_signed(good, _rsa()), 401, "A JSON web token could not be decoded"),
        (_signed(good | {"iss": "7"}), 404, "Integration not found"),
        (
            _signed(good | {"exp": now - 1}),
            401,
            "'Expiration time' claim ('exp') must be a numeric value representing the future"
            " time at which the assertion expires",
        ),
        (
            _signed(good | {"exp": now + 601}),
            401,
            "'Expiration time' claim ('exp') is too far in the future",
        ),
    ]
    async with stand_in(clock) as sandbox, aiohttp.ClientSession() as session:
        answers = []
        for credential, _, _ in cases:
            headers = {"Authorization": f"Bearer {credential}"}
            async with session.get(
                f"{sandbox.url}/orgs/pytorch/installation", headers=headers
            ) as r:
                answers.append((r.status, (await r.json())["message"]))
        headers = {"Authorization": f"Bearer {_signed(good)}"}
        async with session.get(f"{sandbox.url}/orgs/elsewhere/installation", headers=headers) as r:
            missing = (r.status, (await r.json())["message"])
        url = f"{sandbox.url}/app/installations/{installed(sandbox).installations['pytorch'].id}"
        async with session.post(f"{url}/access_tokens", headers=headers) as r:
            created = (r.status, await r.json())
    assert answers == [(status, message) for _, status, message in cases]
    assert missing == (404, "Not Found")
    assert created[0] == 201 and created[1]["token"].startswith("ghs_")
    assert created[1]["expires_at"] == "2026-11-24T10:00:00Z"
    assert created[1]["repository_selection"] == "all"
    assert created[1]["permissions"] == {
        "organization_self_hosted_runners": "read",
        "actions": "read",
        "metadata": "read",
    }


async def test_the_stand_in_refuses_an_installation_token_past_its_hour() -> None:
    clock = MovedClock()
    async with stand_in(clock) as sandbox, aiohttp.ClientSession() as session:
        token = (await app_for(sandbox, session, clock).token_for("pytorch")).token
        url = f"{sandbox.url}/orgs/pytorch/actions/runners"
        headers = {"Authorization": f"Bearer {token}"}
        async with session.get(url, headers=headers) as live:
            assert live.status == 200
        clock.advance(hours=1)
        async with session.get(url, headers=headers) as dead:
            assert (dead.status, (await dead.json())["message"]) == (401, "Bad credentials")
