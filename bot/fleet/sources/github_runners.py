"""Everything queuebot asks GitHub's REST API: the self-hosted runners of one organization,
repository or enterprise (`GET {GITHUB_API_URL}/orgs/{org}/actions/runners`, or
`/repos/{owner}/{repo}/…`, `/enterprises/{enterprise}/…`), for the supply per runner type
(`bot.fleet.sources.runner_supply`).

What it promises (the facts are docs.github.com's "Rate limits for the REST API" and "Using
pagination in the REST API"):

- At most one listing per `ttl` (60 s): diagnostics, /queue-status and a storm of clicks share
  the last answer, and callers who ask at the same moment share one request.
- Every page, `per_page=100`, by the `Link` header's `rel="next"` exactly as GitHub gives it
  (and only to GITHUB_API_URL's own host: the token goes nowhere else), up to `max_pages`; a
  longer list stops there, and the answer says it is not complete.
- GitHub's rate limits kept: every answer's `X-RateLimit-Remaining`/`-Reset` are read. Nothing
  is asked while a `Retry-After` runs, for a minute after a secondary limit that gave none
  (doubling while it persists), or while the hour's budget left is under what a listing takes
  plus a twentieth of the limit, left to the token's other users (an autoscaler sharing the
  GitHub App). Meanwhile callers get the last answer, marked stale, or GitHubRateLimited saying
  when to ask again.
- A listing that failed otherwise is not tried again for FAILURE_HOLD_SECONDS; callers in that
  time get its error.

Errors: `bot.fleet.sources.github_http`'s tree. Requests carry the
credentials given (`bot.fleet.sources.github_app`: a token, or a GitHub App's installation
token for the scope's owner); on a 401 an App's token is forgotten and the listing asked once
more with a new one. No error or log line carries a credential.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp

from bot.domain.clock import SYSTEM, Clock
from bot.fleet.sources.github_access import RunnerScope, denied_message, not_found_message
from bot.fleet.sources.github_app import GitHubCredentials, PersonalToken, credentials_of
from bot.fleet.sources.github_budget import RateBudget
from bot.fleet.sources.github_http import (
    GITHUB_TIMEOUT_SECONDS,
    GitHubBadCredentials,
    GitHubError,
    GitHubMissingPermission,
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
from bot.fleet.sources.runner_supply import RunnerFleet, SelfHostedRunner, parse_runners

log = logging.getLogger(__name__)

RUNNERS_TTL_SECONDS = 60.0
#: 100 pages of 100: ten thousand runners, more than PyTorch's whole fleet at its peak.
MAX_RUNNER_PAGES = 100
FAILURE_HOLD_SECONDS = 15.0
_PER_PAGE = 100


#: What to do after a 401: to a token, to a GitHub App whose new token was refused too.
_REMEDY = (
    "the token is wrong, expired or revoked; give queuebot a new one",
    "check that the App's installation there is not suspended",
)


def _clock_time(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%H:%M:%S} UTC"


class GitHubRunnersClient:
    """The runners of one scope, on a session the app owns (closed with the app)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        credentials: GitHubCredentials | str,
        scope: RunnerScope,
        *,
        ttl: float = RUNNERS_TTL_SECONDS,
        timeout: float = GITHUB_TIMEOUT_SECONDS,
        max_pages: int = MAX_RUNNER_PAGES,
        failure_hold: float = FAILURE_HOLD_SECONDS,
        clock: Clock = SYSTEM,
    ) -> None:
        self._session = session
        #: GITHUB_API_URL, and where GitHub is, for messages people read.
        self.base_url, self.where = api_base(base_url)
        self.scope = scope
        self._credentials = credentials_of(credentials)
        #: The org or user the runners belong to (an enterprise's slug for its own).
        self._owner = scope.name.partition("/")[0]
        self._ttl = timedelta(seconds=ttl)
        self._timeout = timeout
        self._max_pages = max_pages
        self._failure_hold = timedelta(seconds=failure_hold)
        self._clock = clock
        self._budget = RateBudget()
        self._cached: RunnerFleet | None = None
        self._failure: tuple[GitHubError, datetime] | None = None
        self._pages_needed = 1
        self._inflight: asyncio.Task[RunnerFleet] | None = None

    async def fleet(self) -> RunnerFleet:
        """The scope's runners: the cached answer while it is fresh, else one new listing
        shared by every caller meanwhile. Raises a GitHubError (`github_http`'s tree)."""
        now = self._clock.now()
        if self._cached is not None and self._fresh(now):
            return self._cached
        if self._inflight is None:
            if self._failure is not None and self._held(now):
                raise self._failure[0].with_traceback(None)
            if (wait := self._budget.wait(now, self._pages_needed)) is not None:
                return self._stale_or_raise(*wait)
            self._begin()
        assert self._inflight is not None
        # A caller that gives up does not cancel the listing the others wait for.
        return await asyncio.shield(self._inflight)

    def latest(self) -> RunnerFleet | None:
        """The latest answer had, however old (None before the first), never waited for: when
        it is no longer fresh, a new listing starts for the next caller, as `fleet` would start
        one (not while a failure is held, nor past the rate budget)."""
        now = self._clock.now()
        if (
            not self._fresh(now)
            and self._inflight is None
            and not self._held(now)
            and self._budget.wait(now, self._pages_needed) is None
        ):
            self._begin()
        return self._cached

    def _fresh(self, now: datetime) -> bool:
        """Whether the cached answer is young enough to give without asking GitHub."""
        cached = self._cached
        return cached is not None and timedelta(0) <= now - cached.fetched_at < self._ttl

    def _held(self, now: datetime) -> bool:
        """Whether GitHub's last failure is still given instead of asking again."""
        return self._failure is not None and now - self._failure[1] < self._failure_hold

    def _begin(self) -> None:
        self._inflight = asyncio.create_task(self._refresh(), name="github-runners")
        self._inflight.add_done_callback(self._settled)

    async def close(self) -> None:
        """Cancel a listing under way (the app is stopping)."""
        if self._inflight is not None:
            self._inflight.cancel()
            await asyncio.gather(self._inflight, return_exceptions=True)

    def _settled(self, task: asyncio.Task[RunnerFleet]) -> None:
        self._inflight = None
        if not task.cancelled():
            task.exception()  # retrieved: every caller has it, or none is left to

    def _stale_or_raise(self, until: datetime, why: str) -> RunnerFleet:
        reason = f"{why}; GitHub is not asked again before {_clock_time(until)}"
        if self._cached is None:
            raise GitHubRateLimited(reason, until)
        listed = _clock_time(self._cached.fetched_at)
        return replace(self._cached, stale_reason=f"{reason}; the runners as listed at {listed}")

    async def _refresh(self) -> RunnerFleet:
        try:
            fleet = await self._list()
        except GitHubRateLimited as exc:
            # The budget holds the pause; the last answer stands in until it ends.
            return self._stale_or_raise(exc.retry_at, str(exc))
        except GitHubError as exc:
            self._failure = (exc, self._clock.now())
            raise
        self._cached, self._failure = fleet, None
        self._pages_needed = fleet.pages
        return fleet

    async def _list(self) -> RunnerFleet:
        url: str | None = f"{self.base_url}{self.scope.path}?per_page={_PER_PAGE}"
        found: dict[int, SelfHostedRunner] = {}
        pages = unreadable = total = 0
        while url is not None:
            if pages == self._max_pages:
                log.warning(
                    "The runners of %s fill more than %d pages: %d of %d runners counted",
                    self.scope,
                    pages,
                    len(found),
                    total,
                )
                break
            body, headers = await self._get(url)
            pages += 1
            if not isinstance(body, dict) or not isinstance(body.get("runners"), list):
                raise GitHubRejected(f"{self.where} answered {url} without a runners list")
            if pages == 1 and isinstance(count := body.get("total_count"), int):
                total = count
            runners, bad = parse_runners(body["runners"])
            unreadable += bad
            # A runner that comes or goes between two pages shifts the others: one seen on
            # two pages counts once.
            found.update((runner.id, runner) for runner in runners)
            url = self._next_page(headers.get("Link", ""))
        return RunnerFleet(
            scope=str(self.scope),
            runners=tuple(found.values()),
            fetched_at=self._clock.now(),
            total_count=max(total, len(found)),
            pages=pages,
            complete=url is None,
            unreadable=unreadable,
        )

    def _next_page(self, link: str) -> str | None:
        return next_page(link, self.base_url, self.where)

    async def _get(self, url: str) -> tuple[Any, Mapping[str, str]]:
        where, credentials, owner = self.where, self._credentials, self._owner
        for renewed in (False, True):
            authorization = await credentials.authorization(owner)
            status, headers, text = await send(
                self._session, url, request_headers(authorization), self._timeout, where
            )
            # An App's token GitHub no longer takes is renewed once.
            if status != 401 or renewed or not credentials.refused(owner, authorization):
                break
        body = json_answer(self._budget, status, headers, text, where)
        if status == 200:
            return body, headers
        message = github_message(text)
        if status == 429 or (status == 403 and rate_limited(headers, message)):
            until = self._budget.pause(headers, message, self._clock.now())
            raise GitHubRateLimited(self._budget.pause_reason, until, status)
        if status == 401:
            raise GitHubBadCredentials(
                f"{where} refused {credentials.described} (401 {message}): {_REMEDY[0]}"
                if isinstance(credentials, PersonalToken)
                else f"{where} refused {credentials.described}'s new token for {owner}"
                f" (401 {message}): {_REMEDY[1]}",
                status,
            )
        # What github_access says of GITHUB_TOKEN is said of the credentials in use.
        if status == 403:
            detail, needed = denied_message(self.scope, message, headers)
            detail = detail.replace("GITHUB_TOKEN", credentials.described, 1)
            raise GitHubMissingPermission(detail, needed, status)
        if status == 404:
            detail = not_found_message(self.scope, where, headers)
            raise GitHubNotFound(detail.replace("GITHUB_TOKEN", credentials.described, 1), status)
        if status >= 500:
            raise GitHubUnavailable(f"{where} answered HTTP {status}: {message}", status)
        raise GitHubRejected(f"{where} answered HTTP {status}: {message}", status)
