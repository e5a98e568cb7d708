"""`GitHubSandbox` answers the runner lists as GitHub's REST API does: bodies, pages and their
Link header, rate-limit headers, and every refusal, asked over HTTP with a plain client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from queuebot_lab.sandbox.github import GitHubSandbox, GitHubTokenKind

TOKEN = "ghs_sandboxTestToken0123456789"
START = datetime(2026, 11, 24, 9, 0, 0, 500000, tzinfo=UTC)
RESET = int(datetime(2026, 11, 24, 10, 0, 0, tzinfo=UTC).timestamp())


@dataclass
class Clock:
    now: datetime = START

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: Any


@asynccontextmanager
async def serving(**options: Any) -> AsyncIterator[tuple[GitHubSandbox, aiohttp.ClientSession]]:
    async with GitHubSandbox(TOKEN, **options) as sandbox, aiohttp.ClientSession() as http:
        yield sandbox, http


async def get(http: aiohttp.ClientSession, url: str, token: str | None = TOKEN) -> Answer:
    headers = {"Accept": "application/vnd.github+json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with http.get(url, headers=headers) as response:
        return Answer(response.status, dict(response.headers), await response.json())


async def test_the_list_is_githubs_body_with_every_runners_labels() -> None:
    async with serving() as (sandbox, http):
        (runner,) = sandbox.add_runners("linux.2xlarge", busy=1)
        answer = await get(http, f"{sandbox.url}/orgs/pytorch/actions/runners")
    assert answer.status == 200
    assert answer.headers["Content-Type"] == "application/json; charset=utf-8"
    assert answer.body == {
        "total_count": 1,
        "runners": [
            {
                "id": runner.id,
                "name": runner.name,
                "os": "linux",
                "status": "online",
                "busy": True,
                "ephemeral": True,
                "runner_group_id": 1,
                "labels": [
                    {"id": 5, "name": "self-hosted", "type": "read-only"},
                    {"id": 7, "name": "X64", "type": "read-only"},
                    {"id": 11, "name": "Linux", "type": "read-only"},
                    {"id": 100, "name": "linux.2xlarge", "type": "custom"},
                ],
            }
        ],
    }
    assert "Link" not in answer.headers


async def test_a_page_is_30_runners_unless_asked_and_at_most_100() -> None:
    async with serving() as (sandbox, http):
        sandbox.add_runners("linux.2xlarge", idle=250)
        base = f"{sandbox.url}/orgs/pytorch/actions/runners"
        assert len((await get(http, base)).body["runners"]) == 30
        assert len((await get(http, f"{base}?per_page=500")).body["runners"]) == 100
        last = await get(http, f"{base}?per_page=100&page=3")
    assert len(last.body["runners"]) == 50 and last.body["total_count"] == 250


async def test_links_name_prev_next_last_first_as_github_orders_them() -> None:
    async with serving() as (sandbox, http):
        sandbox.add_runners("linux.2xlarge", idle=250)
        base = f"{sandbox.url}/orgs/PyTorch/actions/runners"
        first = await get(http, f"{base}?per_page=100")
        middle = await get(http, f"{base}?per_page=100&page=2")
        last = await get(http, f"{base}?per_page=100&page=3")
        linked = f"{sandbox.url}/organizations/21003710/actions/runners?per_page=100&page="
    assert first.headers["Link"] == f'<{linked}2>; rel="next", <{linked}3>; rel="last"'
    assert middle.headers["Link"] == (
        f'<{linked}1>; rel="prev", <{linked}3>; rel="next", <{linked}3>; rel="last",'
        f' <{linked}1>; rel="first"'
    )
    assert last.headers["Link"] == f'<{linked}2>; rel="prev", <{linked}1>; rel="first"'


async def test_the_linked_pages_are_served() -> None:
    async with serving() as (sandbox, http):
        sandbox.add_runners("linux.2xlarge", idle=150)
        first = await get(http, f"{sandbox.url}/repos/pytorch/pytorch/actions/runners?per_page=100")
        following = first.headers["Link"].split(">")[0][1:]
        assert "/repositories/65600975/actions/runners?per_page=100&page=2" in following
        second = await get(http, following)
    assert second.status == 200 and len(second.body["runners"]) == 50


async def test_every_answer_carries_the_rate_limit() -> None:
    async with serving(clock=Clock()) as (sandbox, http):
        first = await get(http, f"{sandbox.url}/orgs/pytorch/actions/runners")
        second = await get(http, f"{sandbox.url}/orgs/nobody/actions/runners")
    assert {k: v for k, v in first.headers.items() if k.startswith("X-RateLimit")} == {
        "X-RateLimit-Limit": "5000",
        "X-RateLimit-Remaining": "4999",
        "X-RateLimit-Reset": str(RESET),
        "X-RateLimit-Used": "1",
        "X-RateLimit-Resource": "core",
    }
    assert second.status == 404 and second.headers["X-RateLimit-Remaining"] == "4998"


async def test_a_spent_budget_is_refused_until_the_reset() -> None:
    clock = Clock()
    async with serving(clock=clock) as (sandbox, http):
        sandbox.spend(leaving=0)
        refused = await get(http, f"{sandbox.url}/orgs/pytorch/actions/runners")
        clock.now = datetime.fromtimestamp(RESET, UTC)
        renewed = await get(http, f"{sandbox.url}/orgs/pytorch/actions/runners")
    assert refused.status == 403
    assert refused.body["message"].startswith("API rate limit exceeded for")
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    assert refused.headers["X-RateLimit-Reset"] == str(RESET)
    assert renewed.status == 200 and renewed.headers["X-RateLimit-Remaining"] == "4999"


@pytest.mark.parametrize(("status", "retry_after"), [(429, 30), (403, None)])
async def test_a_secondary_limit(status: int, retry_after: int | None) -> None:
    async with serving() as (sandbox, http):
        sandbox.throttle(status=status, retry_after=retry_after)
        limited = await get(http, f"{sandbox.url}/orgs/pytorch/actions/runners")
        after = await get(http, f"{sandbox.url}/orgs/pytorch/actions/runners")
    assert limited.status == status
    assert limited.body["message"].startswith("You have exceeded a secondary rate limit.")
    assert limited.headers.get("Retry-After") == (None if retry_after is None else "30")
    assert after.status == 200


@pytest.mark.parametrize(
    ("token", "message"), [("ghp_wrong", "Bad credentials"), (None, "Requires authentication")]
)
async def test_a_wrong_or_missing_token(token: str | None, message: str) -> None:
    async with serving() as (sandbox, http):
        answer = await get(http, f"{sandbox.url}/orgs/pytorch/actions/runners", token)
    assert answer.status == 401
    assert answer.body == {
        "message": message,
        "documentation_url": "https://docs.github.com/rest",
        "status": "401",
    }
    assert answer.headers["X-RateLimit-Limit"] == "60"


@pytest.mark.parametrize(
    ("kind", "path", "message", "permission"),
    [
        (
            GitHubTokenKind.APP,
            "/orgs/pytorch",
            "Resource not accessible by integration",
            "organization_self_hosted_runners=read",
        ),
        (
            GitHubTokenKind.FINE_GRAINED,
            "/repos/pytorch/pytorch",
            "Resource not accessible by personal access token",
            "administration=read",
        ),
    ],
)
async def test_a_missing_permission_names_itself(
    kind: GitHubTokenKind, path: str, message: str, permission: str
) -> None:
    async with serving(token_kind=kind) as (sandbox, http):
        sandbox.missing_permission = True
        answer = await get(http, f"{sandbox.url}{path}/actions/runners")
    assert answer.status == 403
    assert answer.body["message"] == message and answer.body["status"] == "403"
    assert answer.body["documentation_url"].startswith(
        "https://docs.github.com/rest/actions/self-hosted-runners#list-self-hosted-runners-for-"
    )
    assert answer.headers["X-Accepted-GitHub-Permissions"] == permission


async def test_a_classic_token_hears_its_scopes() -> None:
    async with serving(token_kind=GitHubTokenKind.CLASSIC) as (sandbox, http):
        granted = await get(http, f"{sandbox.url}/orgs/pytorch/actions/runners")
        sandbox.missing_permission = True
        refused = await get(http, f"{sandbox.url}/orgs/pytorch/actions/runners")
    assert granted.status == 200 and granted.headers["X-OAuth-Scopes"] == "admin:org, repo"
    assert refused.status == 403
    assert refused.body["message"] == "Must have admin rights to Repository."
    assert refused.headers["X-OAuth-Scopes"] == "repo"
    assert refused.headers["X-Accepted-OAuth-Scopes"] == "admin:org"


async def test_an_enterprise_list_takes_a_classic_token_only() -> None:
    async with serving() as (sandbox, http):
        answer = await get(http, f"{sandbox.url}/enterprises/pytorch-enterprise/actions/runners")
    assert answer.status == 403


async def test_unknown_names_and_paths_are_not_found() -> None:
    async with serving(api_prefix="/api/v3") as (sandbox, http):
        unknown = await get(http, f"{sandbox.url}/orgs/nobody/actions/runners")
        outside = await get(
            http, f"{sandbox.url.removesuffix('/api/v3')}/orgs/pytorch/actions/runners"
        )
        served = await get(http, f"{sandbox.url}/orgs/pytorch/actions/runners")
    assert unknown.status == 404 and unknown.body["message"] == "Not Found"
    assert outside.status == 404
    assert served.status == 200
    assert [r.status for r in sandbox.requests] == [404, 404, 200]


async def test_runners_given_as_dicts_are_served_as_given() -> None:
    raw = {"id": 7, "name": "as-given", "os": "linux", "status": "online", "busy": False}
    async with serving() as (sandbox, http):
        sandbox.runners.append(raw)
        answer = await get(http, f"{sandbox.url}/orgs/pytorch/actions/runners?name=as-given")
    assert answer.body == {"total_count": 1, "runners": [raw]}


def test_the_reset_is_an_hour_after_the_window_opens() -> None:
    sandbox = GitHubSandbox(TOKEN, clock=Clock())
    sandbox.spend(leaving=10)
    assert sandbox.reset_at == START.replace(microsecond=0) + timedelta(hours=1)
