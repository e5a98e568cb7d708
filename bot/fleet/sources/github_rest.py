"""Reading GitHub's REST API page by page for a long walk (the backfill): every request counted,
GitHub's rate limits kept by waiting, not by giving up.

- Before each request the token's budget (`RateBudget`) is asked: while a `Retry-After`, a
  secondary limit's pause or a spent hour runs, the reader sleeps until it ends (at most
  `max_wait`; longer, it raises GitHubRateLimited saying when to go on). A twentieth of the
  hour's limit is left to the token's other users, as the runners client leaves it.
- A rate-limited answer (429, or a 403 that is one) pauses as GitHub's docs say, then the same
  request is made again; 5xx, a timeout or a lost answer are tried again twice, a second and
  then four seconds later.
- `max_requests`: a budget of requests for the whole walk; the one past it raises
  RequestBudgetSpent before it goes out.
- Pages follow `Link: rel="next"` exactly as GitHub gives them, only under GITHUB_API_URL.
- Each request names the org or user it is about (`owner`): the credentials
  (`bot.fleet.sources.github_app`) authorize it for that owner, and its rate limit is that of
  the owner's installation when they are a GitHub App's. A 401 to an App's token forgets it and
  asks once more with a new one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

import aiohttp

from bot.domain.clock import SYSTEM, Clock
from bot.fleet.sources.github_app import GitHubCredentials, credentials_of
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
    json_answer,
    next_page,
    rate_limited,
    request_headers,
    send,
)

#: The longest a walk sleeps for GitHub's rate limit before it says when to go on instead.
MAX_WAIT_SECONDS = 3600.0
_RETRIES = (1.0, 4.0)


class RequestBudgetSpent(GitHubError):
    """The walk's own budget of requests (`--max-requests`) is spent."""


class GitHubReader:
    """GET requests to GITHUB_API_URL with the credentials given, on a session the caller
    owns."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        credentials: GitHubCredentials | str,
        *,
        max_requests: int | None = None,
        max_wait: float = MAX_WAIT_SECONDS,
        timeout: float = GITHUB_TIMEOUT_SECONDS,
        clock: Clock = SYSTEM,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._session = session
        self.base_url, self.where = api_base(base_url)
        self._credentials = credentials_of(credentials)
        self.max_requests = max_requests
        self._max_wait = timedelta(seconds=max_wait)
        self._timeout = timeout
        self._clock = clock
        self._sleep = sleep
        #: Each rate limit's budget (one per installation for an App), and the last one used.
        self._budgets: dict[str, RateBudget] = {}
        self._pool = ""
        #: Requests sent, and seconds slept for GitHub's limits.
        self.calls = 0
        self.waited = 0.0

    @property
    def budget(self) -> RateBudget:
        """The rate limit of the last request's credentials."""
        return self._budgets.setdefault(self._pool, RateBudget())

    def rate_pool(self, owner: str) -> str:
        """Whose rate limit a request about `owner` counts against (an App's installation's;
        one for every owner with a token)."""
        return self._credentials.rate_pool(owner)

    def budget_of(self, pool: str) -> RateBudget:
        """What GitHub's answers said of one rate limit (`rate_pool`)."""
        return self._budgets.setdefault(pool, RateBudget())

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    async def pages(self, url: str, *, owner: str) -> AsyncGenerator[Any, None]:
        """Each page's body, following `Link` to the last; `owner`: the org or user whose
        resources they are."""
        next_url: str | None = url
        while next_url is not None:
            body, headers = await self.get(next_url, owner=owner)
            yield body
            next_url = next_page(headers.get("Link", ""), self.base_url, self.where)

    async def get(self, url: str, *, owner: str) -> tuple[Any, Mapping[str, str]]:
        """The JSON of a 200 answer and its headers; `owner`: the org or user the request is
        about. Raises GitHubNotFound (404), GitHubDenied (403 that is no rate limit),
        GitHubBadCredentials, GitHubRejected, GitHubUnavailable once the retries are used,
        GitHubRateLimited past `max_wait`, RequestBudgetSpent; the credentials' own errors
        (an App not installed on `owner`)."""
        retries, renewed = list(_RETRIES), False
        while True:
            # The owner's rate limit is known once its installation is (an App's); the
            # token is had after any wait, so a long one does not outlast it.
            self._pool = self._credentials.rate_pool(owner)
            await self._wait_for_budget()
            authorization = await self._credentials.authorization(owner)
            self._pool = self._credentials.rate_pool(owner)
            if self.max_requests is not None and self.calls >= self.max_requests:
                raise RequestBudgetSpent(f"the {self.max_requests} requests allowed are spent")
            self.calls += 1
            try:
                status, headers, text = await self._send(url, authorization)
            except GitHubUnavailable:
                if not retries:
                    raise
                await self._nap(retries.pop(0))
                continue
            body = json_answer(self.budget, status, headers, text, self.where)
            if status == 200:
                return body, headers
            message = github_message(text)
            if status == 429 or (status == 403 and rate_limited(headers, message)):
                self.budget.pause(headers, message, self._clock.now())
                continue
            if status >= 500 and retries:
                await self._nap(retries.pop(0))
                continue
            # An App's token GitHub no longer takes is renewed once.
            if status == 401 and not renewed and self._credentials.refused(owner, authorization):
                renewed = True
                continue
            raise self._refusal(status, message)

    def _refusal(self, status: int, message: str) -> GitHubError:
        said = f"{self.where} answered HTTP {status}: {message}"
        if status == 401:
            return GitHubBadCredentials(
                f"{said}: {self._credentials.described} is wrong, expired or revoked", status
            )
        if status == 403:
            return GitHubDenied(said, status)
        if status == 404:
            return GitHubNotFound(said, status)
        if status >= 500:
            return GitHubUnavailable(said, status)
        return GitHubRejected(said, status)

    async def _wait_for_budget(self) -> None:
        now = self._clock.now()
        wait = self.budget.wait(now, 1)
        if wait is None:
            return
        until, why = wait
        if until - now > self._max_wait:
            raise GitHubRateLimited(f"{why}; go on after {until:%H:%M:%S} UTC", until)
        await self._nap((until - now).total_seconds() + 1.0)

    async def _nap(self, seconds: float) -> None:
        self.waited += seconds
        await self._sleep(seconds)

    async def _send(self, url: str, authorization: str) -> tuple[int, Mapping[str, str], str]:
        headers = request_headers(authorization)
        return await send(self._session, url, headers, self._timeout, self.where)


def moment(stamp: datetime) -> str:
    """A time as GitHub's `created` qualifier takes it."""
    return f"{stamp:%Y-%m-%dT%H:%M:%SZ}"
