"""GitHub's REST API asked within a share of the token's hourly budget: what a background task
that must leave the rest to others (the runners list, the backfill, an autoscaler sharing the
GitHub App) asks through.

The share is of each rate limit's hourly limit as GitHub's answers state it
(`X-RateLimit-Limit`; a personal token's 5,000 until the first answer says): a GitHub App's
installations each have their own, a token one for every owner. It is counted over a sliding
hour of this process's own requests, retries included. The request past it is not sent:
`ShareSpent` says whose, and the caller leaves that owner until the hour slides on.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from bot.domain.clock import SYSTEM, Clock
from bot.fleet.sources.github_http import GitHubRejected, next_page
from bot.fleet.sources.github_rest import GitHubReader

#: The hourly limit assumed until GitHub's first answer says it (a personal token's).
ASSUMED_HOURLY_LIMIT = 5000
_HOUR = 3600.0


class ShareSpent(Exception):
    """The share of the hourly budget of the rate limit of an owner (the exception's one
    argument) is spent for now."""

    def __init__(self, owner: str) -> None:
        super().__init__(owner)
        self.owner = owner


class BudgetShare:
    """GET requests through `reader`, at most `share` of each rate limit's hourly budget over
    any hour (an App has one per installation; a token one for every owner)."""

    def __init__(self, reader: GitHubReader, share: float, clock: Clock = SYSTEM) -> None:
        self.reader, self.share, self._clock = reader, share, clock
        #: When each request of the last hour went out, by rate limit (the machine's seconds).
        self._sent: dict[str, deque[float]] = {}
        #: Requests sent so far.
        self.sent = 0

    def allowance(self, owner: str | None = None) -> int:
        """Requests about `owner` that may still go out now; with no owner, those of every
        rate limit asked so far together (or of one, before any)."""
        if owner is not None:
            return self._left(self.reader.rate_pool(owner))
        return sum(self._left(pool) for pool in (list(self._sent) or [""]))

    def _left(self, pool: str) -> int:
        now = self._clock.time()
        sent = self._sent.setdefault(pool, deque())
        while sent and sent[0] <= now - _HOUR:
            sent.popleft()
        limit = self.reader.budget_of(pool).limit or ASSUMED_HOURLY_LIMIT
        return max(int(limit * self.share) - len(sent), 0)

    async def get(self, path: str, owner: str) -> Any:
        """The JSON of `path` (under GITHUB_API_URL), about `owner`'s resources."""
        body, _ = await self._get_url(self.reader.url(path), owner)
        return body

    async def listed(self, path: str, key: str, owner: str) -> list[Any]:
        """The items under `key` of every page of a list, by `Link: rel="next"`."""
        found: list[Any] = []
        url: str | None = self.reader.url(path)
        while url is not None:
            body, headers = await self._get_url(url, owner)
            if not isinstance(body, dict) or not isinstance(body.get(key), list):
                raise GitHubRejected(f"{self.reader.where} answered {path} without {key}")
            found += body[key]
            url = next_page(headers.get("Link", ""), self.reader.base_url, self.reader.where)
        return found

    async def _get_url(self, url: str, owner: str) -> tuple[Any, Any]:
        if self.allowance(owner) < 1:
            raise ShareSpent(owner)
        before = self.reader.calls
        try:
            return await self.reader.get(url, owner=owner)
        finally:
            # What went out, retries of a 5xx and a renewed token's second try included.
            sent = max(self.reader.calls - before, 1)
            pool = self._sent.setdefault(self.reader.rate_pool(owner), deque())
            pool.extend([self._clock.time()] * sent)
            self.sent += sent
