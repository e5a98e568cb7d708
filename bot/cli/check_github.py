"""`queuebot check`'s lines on how queuebot authenticates to GitHub's REST API: for a GitHub App,
the installation found on each owner and the permissions it lacks for each feature; for a
token, what GitHub tells of it (a classic token's scopes, `X-OAuth-Scopes`).

The least each feature needs (docs.github.com, "Permissions required for GitHub Apps"):
the runners list, the organization permission "Self-hosted runners" (read) for an
organization's, the repository permission "Administration" (read) for a repository's; the
backfill and reconciliation, the repository permissions "Actions" (read) and "Metadata"
(read). A classic token needs `admin:org` for an organization's runners and `repo` to read
private repositories' Actions.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

import aiohttp

from bot.clients import github_credentials_for
from bot.config import Settings
from bot.fleet.sources.github_app import GitHubApp, GitHubCredentials
from bot.fleet.sources.github_http import (
    GITHUB_TIMEOUT_SECONDS,
    GitHubError,
    api_base,
    github_message,
    request_headers,
    send,
)

#: Each feature's permissions (GitHub's names: what installations and token exchanges list),
#: by whose runners are listed.
_RUNNERS = {
    "org": ("organization_self_hosted_runners", "organization", "Self-hosted runners"),
    "repo": ("administration", "repository", "Administration"),
}
_HISTORY = (("actions", "repository", "Actions"), ("metadata", "repository", "Metadata"))
_LEVELS = ("read", "write", "admin")


def lacking(permissions: Mapping[str, str], kind: str) -> list[str]:
    """What an installation given `permissions` lacks for each feature, in GitHub's words; the
    runners list of an org ("org") or a repository ("repo")."""
    needs = [(_RUNNERS[kind], "the runners list")] if kind in _RUNNERS else []
    needs += [(need, "backfill and reconciliation") for need in _HISTORY]
    return [
        f"the {of} permission '{words}: read' ({feature})"
        for (name, of, words), feature in needs
        if permissions.get(name) not in _LEVELS
    ]


def _owners(settings: Settings) -> tuple[str, list[str]]:
    """The kind of scope and the owners whose installations are asked for."""
    scope = settings.github_scope()
    if scope is None:
        return "", []
    kind, name = scope
    if kind == "repo":
        return kind, [name.partition("/")[0]]
    return kind, list(settings.github_orgs) if kind == "org" else [name]


async def github_access_lines(settings: Settings) -> list[str]:
    """One line per owner for a GitHub App, one for a token; none without either."""
    async with aiohttp.ClientSession() as session:
        credentials = github_credentials_for(settings, session)
        if isinstance(credentials, GitHubApp):
            kind, owners = _owners(settings)
            if not owners:
                return [
                    "github app: FAILED: GITHUB_APP_ID is set but no GITHUB_ORG or"
                    " GITHUB_REPOSITORY says whose installation to use"
                ]
            return [await _installation_line(credentials, owner, kind) for owner in owners]
        if credentials is None:
            return []
        return [await _token_line(settings, session, credentials)]


async def _installation_line(app: GitHubApp, owner: str, kind: str) -> str:
    try:
        installation = await app.installation(owner)
        token = await app.token_for(owner)
    except GitHubError as exc:
        return f"github app: FAILED: {exc}"
    permissions = {**installation.permissions, **token.permissions}
    selection = token.repository_selection or installation.repository_selection or "some"
    said = (
        f"{app.described}'s installation {installation.id} on {owner}"
        f" (found by {installation.found_by}; {selection} repositories)"
    )
    missing = lacking(permissions, kind)
    if missing:
        return f"github app: FAILED: {said} lacks {', '.join(missing)}"
    return f"github app: ok ({said} has every permission queuebot needs)"


async def _token_line(
    settings: Settings, session: aiohttp.ClientSession, credentials: GitHubCredentials
) -> str:
    """What one request of the backfill's first kind tells of GITHUB_TOKEN (asked once: the
    runners line has said already whether GitHub can be reached)."""
    kind, owners = _owners(settings)
    if kind not in _RUNNERS:
        return "github token: not checked (no GITHUB_ORG or GITHUB_REPOSITORY to ask about)"
    if kind == "repo" and settings.github_repository:
        path = f"/repos/{settings.github_repository}/actions/runs?per_page=1"
    else:
        path = f"/orgs/{quote(owners[0], safe='')}/repos?per_page=1"
    base, where = api_base(str(settings.github_api_url))
    headers = request_headers(await credentials.authorization(owners[0]))
    try:
        status, answered, text = await send(
            session, base + path, headers, GITHUB_TIMEOUT_SECONDS, where
        )
    except GitHubError as exc:
        return f"github token: FAILED: {exc}"
    if status != 200:
        return f"github token: FAILED: {where} answered {path} with {status} {github_message(text)}"
    if "X-OAuth-Scopes" not in answered:
        return (
            "github token: ok (not a classic token: GitHub does not tell its permissions; it"
            " needs the ones docs/diagnostics.md lists, and a refusal names a missing one)"
        )
    scopes = {s.strip() for s in answered["X-OAuth-Scopes"].split(",") if s.strip()}
    said = f"a classic token with the scopes: {', '.join(sorted(scopes)) or 'none'}"
    if kind == "org" and "admin:org" not in scopes:
        return f"github token: FAILED: {said}; the runners list needs admin:org"
    if "repo" not in scopes:
        return f"github token: ok ({said}; private repositories' history needs repo)"
    return f"github token: ok ({said})"
