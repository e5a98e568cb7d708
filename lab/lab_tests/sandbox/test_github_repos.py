"""`GitHubSandbox` lists each organization's repositories as `GET /orgs/{org}/repos` does on
api.github.com: only the ones it owns, for every organization it knows, 404 for any other
name, in GitHub's order and pages, asked over HTTP with a plain client."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import aiohttp

from queuebot_lab.sandbox.github import GitHubSandbox
from queuebot_lab.sandbox.github_repos import ORG_REPOS_DOCS

TOKEN = "ghs_sandboxReposTestToken0123456789"
LABS_ID = 88_000_001


@asynccontextmanager
async def two_orgs() -> AsyncIterator[tuple[GitHubSandbox, aiohttp.ClientSession]]:
    """pytorch (the sandbox's own) with 3 repositories, pytorch-labs with 35, a user's one,
    and meta-pytorch known but empty."""
    sandbox = GitHubSandbox(TOKEN)
    sandbox.add_org("pytorch-labs", LABS_ID)
    sandbox.add_org("meta-pytorch")
    for name in ("pytorch", "vision", "audio"):
        sandbox.history.repository(f"pytorch/{name}")
    for number in range(35):
        sandbox.history.repository(f"pytorch-labs/lab-{number:02}", private=number % 2 == 1)
    sandbox.history.repository("octocat/dotfiles")
    async with sandbox, aiohttp.ClientSession() as http:
        yield sandbox, http


async def get(http: aiohttp.ClientSession, url: str) -> tuple[int, Any, dict[str, str]]:
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/vnd.github+json"}
    async with http.get(url, headers=headers) as response:
        return response.status, await response.json(), dict(response.headers)


def names(body: Any) -> list[str]:
    assert isinstance(body, list)
    return [repository["full_name"] for repository in body]


def links(headers: dict[str, str]) -> dict[str, str]:
    found = re.findall(r'<([^>]*)>; rel="(\w+)"', headers.get("Link", ""))
    return {rel: target for target, rel in found}


async def test_each_organization_lists_the_repositories_it_owns() -> None:
    async with two_orgs() as (sandbox, http):
        _, own, _ = await get(http, f"{sandbox.url}/orgs/pytorch/repos")
        status, labs, _ = await get(http, f"{sandbox.url}/orgs/PyTorch-Labs/repos?per_page=100")
        _, empty, _ = await get(http, f"{sandbox.url}/orgs/meta-pytorch/repos")
    # Newest first: GitHub's default is `sort=created`, `direction=desc`.
    assert names(own) == ["pytorch/audio", "pytorch/vision", "pytorch/pytorch"]
    assert status == 200
    assert names(labs) == [f"pytorch-labs/lab-{n:02}" for n in reversed(range(35))]
    assert empty == []


async def test_an_organization_the_sandbox_does_not_know_is_not_found() -> None:
    """A user's name too: `/orgs/` is for organizations."""
    async with two_orgs() as (sandbox, http):
        answers = [
            await get(http, f"{sandbox.url}/orgs/{name}/repos") for name in ("nobody", "octocat")
        ]
        by_id = await get(http, f"{sandbox.url}/organizations/12345/repos")
    for status, body, headers in [*answers, by_id]:
        assert (status, body) == (
            404,
            {"message": "Not Found", "documentation_url": ORG_REPOS_DOCS, "status": "404"},
        )
        assert "X-RateLimit-Remaining" in headers


async def test_an_organizations_pages_are_linked_by_its_id_and_served() -> None:
    async with two_orgs() as (sandbox, http):
        _, first, headers = await get(http, f"{sandbox.url}/orgs/pytorch-labs/repos?per_page=10")
        found, rels = names(first), links(headers)
        assert set(rels) == {"next", "last"}
        assert rels["next"].startswith(f"{sandbox.url}/organizations/{LABS_ID}/repos?")
        next_url: str | None = rels["next"]
        while next_url is not None:
            status, page, headers = await get(http, next_url)
            assert status == 200
            found += names(page)
            next_url = links(headers).get("next")
        # The sandbox's own organization's pages are linked by its id too.
        _, _, own = await get(http, f"{sandbox.url}/orgs/pytorch/repos?per_page=1")
        assert links(own)["next"].startswith(f"{sandbox.url}/organizations/{sandbox.org_id}/")
    assert found == [f"pytorch-labs/lab-{n:02}" for n in reversed(range(35))]


async def test_type_sort_and_direction_as_github_takes_them() -> None:
    async with two_orgs() as (sandbox, http):
        sandbox.history.repository(
            "pytorch/aaa-oldest", created_at=datetime(2016, 8, 13, tzinfo=UTC)
        )
        base = f"{sandbox.url}/orgs/pytorch/repos"
        answers = {
            query: names((await get(http, f"{base}?{query}"))[1])
            for query in (
                "",
                "sort=created&direction=asc",
                "sort=full_name",
                "sort=full_name&direction=desc",
            )
        }
        labs = f"{sandbox.url}/orgs/pytorch-labs/repos?per_page=100"
        private = names((await get(http, f"{labs}&type=private"))[1])
        public = names((await get(http, f"{labs}&type=public"))[1])
        forks = names((await get(http, f"{labs}&type=forks"))[1])
        _, body, _ = await get(http, f"{base}?per_page=1")
    assert answers[""] == [
        "pytorch/audio",
        "pytorch/vision",
        "pytorch/pytorch",
        "pytorch/aaa-oldest",
    ]
    assert answers["sort=created&direction=asc"] == answers[""][::-1]
    assert answers["sort=full_name"] == [
        "pytorch/aaa-oldest", "pytorch/audio", "pytorch/pytorch", "pytorch/vision"
    ]  # fmt: skip
    assert answers["sort=full_name&direction=desc"] == answers["sort=full_name"][::-1]
    assert len(private) == 17 and len(public) == 18 and not set(private) & set(public)
    assert forks == []
    assert isinstance(body, list)
    (newest,) = body
    assert newest["owner"]["login"] == "pytorch" and newest["fork"] is False
    assert newest["created_at"] <= newest["pushed_at"]
