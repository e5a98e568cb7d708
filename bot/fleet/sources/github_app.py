"""Who queuebot is to GitHub's REST API: the credentials every request carries, for the org or
user whose resources it asks about (`owner`).

- `PersonalToken` (GITHUB_TOKEN): the same token for every owner.
- `GitHubApp` (GITHUB_APP_ID and its private key): a JSON Web Token signed RS256, `iat` 60 s in
  the past, `exp` ten minutes after it, `iss` the App's id (docs.github.com, "Generating a JSON
  Web Token (JWT) for a GitHub App"); the App's installation on each owner found with it
  (`GET /orgs/{org}/installation`, else `GET /users/{user}/installation`; or the one
  GITHUB_APP_INSTALLATION_ID names, for every owner) and exchanged for an installation token
  (`POST /app/installations/{id}/access_tokens`, 201 `{"token", "expires_at", "permissions",
  "repository_selection"}`; "Generating an installation access token for a GitHub App").
  Installation tokens last an hour; each is kept per installation and renewed `RENEW_BEFORE`
  ahead of its end, by one exchange that every caller meanwhile waits for.

GitHub's answers to the App's own requests, as the errors of `bot.fleet.sources.github_runners`:
401 "A JSON web token could not be decoded" (a key that is not the App's), "'Expiration time'
claim ('exp') …" (this machine's clock is off) → GitHubBadCredentials; 404 "Integration not
found" (no such App) → GitHubBadCredentials; 404 for an owner → GitHubAppNotInstalled; 5xx →
GitHubUnavailable; a rate limit → GitHubRateLimited. No message carries the key, the JWT or a
token.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

import aiohttp
import jwt

from bot.domain.clock import SYSTEM, Clock
from bot.fleet.sources.github_budget import RateBudget
from bot.fleet.sources.github_http import (
    GITHUB_TIMEOUT_SECONDS,
    GitHubBadCredentials,
    GitHubDenied,
    GitHubError,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubRejected,
    GitHubUnavailable,
    api_base,
    github_message,
    rate_limited,
    request_headers,
    send,
)

#: An installation token is renewed this long before GitHub says it ends.
RENEW_BEFORE = timedelta(minutes=5)
#: GitHub: `iat` "60 seconds in the past" against clock drift; `exp` "no more than 10 minutes
#: into the future".
JWT_BACKDATE = timedelta(seconds=60)
JWT_LIFETIME = timedelta(minutes=9)

_K = TypeVar("_K")
_V = TypeVar("_V")


class GitHubCredentials(Protocol):
    """What every request to GitHub's REST API is authorized with."""

    @property
    def described(self) -> str:
        """Who GitHub refuses, in an admin's words: "GITHUB_TOKEN", "GitHub App 123"."""
        ...

    async def authorization(self, owner: str) -> str:
        """The Authorization header's value for a request about `owner`'s resources. Raises a
        GitHubError when none can be had."""
        ...

    def refused(self, owner: str, authorization: str) -> bool:
        """GitHub answered 401 to `authorization`: forget the token it came from. True when
        asking again may get one GitHub takes (an App's new token), False when not."""
        ...

    def rate_pool(self, owner: str) -> str:
        """Whose hourly rate limit a request about `owner` spends (known after
        `authorization`)."""
        ...


@dataclass(frozen=True)
class PersonalToken:
    """GITHUB_TOKEN: one token, whoever the request is about."""

    token: str = field(repr=False)
    described: str = "GITHUB_TOKEN"

    async def authorization(self, owner: str) -> str:
        return f"Bearer {self.token}"

    def refused(self, owner: str, authorization: str) -> bool:
        return False

    def rate_pool(self, owner: str) -> str:
        return "token"


def credentials_of(given: GitHubCredentials | str) -> GitHubCredentials:
    """Credentials as given, a bare token being a personal one."""
    return PersonalToken(given) if isinstance(given, str) else given


@dataclass(frozen=True)
class Installation:
    """The App's installation on an owner, as GitHub describes it."""

    id: int
    #: The account it is installed on, and how it was found (for `queuebot check`).
    account: str
    found_by: str
    permissions: Mapping[str, str] = field(default_factory=dict)
    repository_selection: str | None = None


@dataclass(frozen=True)
class InstallationToken:
    token: str = field(repr=False)
    expires_at: datetime
    permissions: Mapping[str, str] = field(default_factory=dict)
    repository_selection: str | None = None


class GitHubAppNotInstalled(GitHubNotFound):
    """The App has no installation on the owner asked about."""


def _moment(stamp: Any) -> datetime | None:
    """GitHub's `2016-07-11T22:14:10Z`, as an aware time."""
    try:
        moment = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class GitHubApp:
    """A GitHub App's installation tokens, per owner, on a session the caller owns."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        app_id: int,
        private_key: str,
        *,
        installation_id: int | None = None,
        timeout: float = GITHUB_TIMEOUT_SECONDS,
        clock: Clock = SYSTEM,
    ) -> None:
        self._session = session
        self.base_url, self.where = api_base(base_url)
        self.app_id = app_id
        self._key = private_key
        self.installation_id = installation_id
        self.described = f"GitHub App {app_id}"
        self._timeout = timeout
        self._clock = clock
        self._budget = RateBudget()
        self._installations: dict[str, Installation] = {}
        self._tokens: dict[int, InstallationToken] = {}
        self._lookups: dict[str, asyncio.Task[Installation]] = {}
        self._exchanges: dict[int, asyncio.Task[InstallationToken]] = {}

    def jwt(self) -> str:
        """The App's own credential, for the App's endpoints only."""
        # GitHub checks the JWT against real time: the machine's clock, never a moved moment.
        now = int(self._clock.time())
        claims = {
            "iat": now - int(JWT_BACKDATE.total_seconds()),
            "exp": now + int(JWT_LIFETIME.total_seconds()),
            "iss": str(self.app_id),
        }
        return jwt.encode(claims, self._key, algorithm="RS256")

    async def authorization(self, owner: str) -> str:
        return f"Bearer {(await self.token_for(owner)).token}"

    def refused(self, owner: str, authorization: str) -> bool:
        key = self._key_of(owner)
        token = self._tokens.get(key) if key is not None else None
        # Only the token refused is forgotten: one a concurrent caller got since stays.
        if key is not None and token is not None and f"Bearer {token.token}" == authorization:
            del self._tokens[key]
        return True

    def rate_pool(self, owner: str) -> str:
        key = self._key_of(owner)
        return f"installation {key}" if key is not None else f"owner {owner.lower()}"

    def _key_of(self, owner: str) -> int | None:
        """The installation a request about `owner` goes to, once known."""
        installation = self._installations.get(owner.lower())
        return self.installation_id or (installation.id if installation else None)

    async def token_for(self, owner: str) -> InstallationToken:
        """A token of the App's installation on `owner`, new enough to use."""
        key = self.installation_id or (await self.installation(owner)).id
        token = self._tokens.get(key)
        machine = datetime.fromtimestamp(self._clock.time(), UTC)
        if token is not None and machine < token.expires_at - RENEW_BEFORE:
            return token
        return await _shared(self._exchanges, key, lambda: self._exchange(key, owner))

    async def installation(self, owner: str) -> Installation:
        """The App's installation on `owner` (an org, else a user), found once."""
        if self.installation_id is not None:
            return Installation(self.installation_id, owner, "GITHUB_APP_INSTALLATION_ID")
        found = self._installations.get(owner.lower())
        if found is not None:
            return found
        return await _shared(self._lookups, owner.lower(), lambda: self._look_up(owner))

    async def _look_up(self, owner: str) -> Installation:
        name = quote(owner, safe="")
        for path in (f"/orgs/{name}/installation", f"/users/{name}/installation"):
            status, body, message = await self._ask("GET", path)
            if status == 200 and isinstance(body, dict) and isinstance(body.get("id"), int):
                installation = Installation(
                    body["id"],
                    str((body.get("account") or {}).get("login") or owner),
                    f"GET {path}",
                    dict(body.get("permissions") or {}),
                    body.get("repository_selection"),
                )
                self._installations[owner.lower()] = installation
                return installation
            if status != 404 or message == "Integration not found":
                raise self._refusal(status, message, f"the installation on {owner}")
        raise GitHubAppNotInstalled(
            f"{self.described} is not installed on {owner} ({self.where} answered 404 to GET"
            f" /orgs/{name}/installation and /users/{name}/installation): install it on {owner}"
            " (the App's settings, Install App) with the permissions docs/diagnostics.md lists",
            404,
        )

    async def _exchange(self, key: int, owner: str) -> InstallationToken:
        status, body, message = await self._ask("POST", f"/app/installations/{key}/access_tokens")
        if status == 404 and message != "Integration not found":
            self._installations.pop(owner.lower(), None)
            if self.installation_id is not None:
                raise GitHubNotFound(
                    f"{self.described} has no installation {key} at {self.where} (404): check"
                    " GITHUB_APP_INSTALLATION_ID, or unset it to find the installation per org",
                    404,
                )
            raise GitHubAppNotInstalled(
                f"{self.described}'s installation {key} on {owner} is gone (404): install it"
                f" on {owner} again (the App's settings, Install App)",
                404,
            )
        if status != 201:
            raise self._refusal(status, message, f"a token of installation {key}")
        expires = _moment(body.get("expires_at")) if isinstance(body, dict) else None
        if not isinstance(body, dict) or not isinstance(body.get("token"), str) or not expires:
            raise GitHubRejected(f"{self.where} answered 201 without a token and its expiry")
        token = InstallationToken(
            body["token"],
            expires,
            dict(body.get("permissions") or {}),
            body.get("repository_selection"),
        )
        self._tokens[key] = token
        return token

    async def _ask(self, method: str, path: str) -> tuple[int, Any, str]:
        """One request with the App's JWT: its status, JSON body and GitHub's message."""
        now = datetime.fromtimestamp(self._clock.time(), UTC)
        if (wait := self._budget.wait(now, 1)) is not None:
            raise GitHubRateLimited(wait[1], wait[0])
        headers = request_headers(f"Bearer {self.jwt()}")
        url = f"{self.base_url}{path}"
        status, answered, text = await send(
            self._session, url, headers, self._timeout, self.where, method=method
        )
        message = github_message(text)
        if status == 429 or (status == 403 and rate_limited(answered, message)):
            until = self._budget.pause(answered, message, now)
            raise GitHubRateLimited(self._budget.pause_reason, until, status)
        try:
            body = json.loads(text) if status in (200, 201) else None
        except ValueError:
            raise GitHubRejected(f"{self.where} answered {path} with no JSON", status) from None
        return status, body, message

    def _refusal(self, status: int, message: str, what: str) -> GitHubError:
        said = f"{self.where} refused {self.described} {what} ({status} {message})"
        if message == "Integration not found":
            return GitHubBadCredentials(
                f"{said}: there is no GitHub App {self.app_id} there; check GITHUB_APP_ID", status
            )
        if status == 401:
            if "could not be decoded" in message:
                hint = (
                    "the private key (GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_FILE) is"
                    f" not one of GitHub App {self.app_id}'s: generate one in the App's settings"
                )
            elif "claim" in message:
                hint = "this machine's clock is off from GitHub's: set it right (NTP)"
            else:
                hint = "check GITHUB_APP_ID and the App's private key"
            return GitHubBadCredentials(f"{said}: {hint}", status)
        if status == 403:
            return GitHubDenied(f"{said}: the installation may be suspended", status)
        if status >= 500:
            return GitHubUnavailable(said, status)
        return GitHubRejected(said, status)


async def _shared(
    tasks: dict[_K, asyncio.Task[_V]], key: _K, make: Callable[[], Coroutine[Any, Any, _V]]
) -> _V:
    """One `make()` at a time per key; every caller meanwhile waits for the same one."""
    task = tasks.get(key)
    if task is None:
        task = asyncio.create_task(make())
        tasks[key] = task

        def settled(done: asyncio.Task[_V]) -> None:
            if tasks.get(key) is done:
                del tasks[key]
            if not done.cancelled():
                done.exception()  # retrieved: every caller has it

        task.add_done_callback(settled)
    # A caller that gives up does not cancel what the others wait for.
    return await asyncio.shield(task)
