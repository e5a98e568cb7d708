"""GitHub's REST API asked within a share of the token's hourly budget: what a background task
that must leave the rest to others (the runners list, the backfill, an autoscaler sharing the
GitHub App) asks through.

The share is of the hourly limit GitHub's answers state (`X-RateLimit-Limit`; a personal
token's 5,000 until the first answer says), counted over a sliding hour of this process's own
requests. The request past it is not sent: `ShareSpent` says so, and the caller stops until
the hour slides on.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from bot.domain.clock import SYSTEM, Clock
from bot.fleet.sources.github_rest import GitHubReader
from bot.fleet.sources.github_runners import GitHubRejected, next_page

#: The hourly limit assumed until GitHub's first answer says it (a personal token's).
ASSUMED_HOURLY_LIMIT = 5000
_HOUR = 3600.0


class ShareSpent(Exception):
    """The share of the hourly budget is spent for now."""


class BudgetShare:
    """GET requests through `reader`, at most `share` of the hourly limit over any hour."""

    def __init__(self, reader: GitHubReader, share: float, clock: Clock = SYSTEM) -> None:
        self.reader, self.share, self._clock = reader, share, clock
        #: When each request of the last hour went out (the machine's Unix seconds).
        self._sent: deque[float] = deque()
        #: Requests sent so far.
        self.sent = 0

    def allowance(self) -> int:
        """Requests that may still go out now."""
        now = self._clock.time()
        while self._sent and self._sent[0] <= now - _HOUR:
            self._sent.popleft()
        limit = self.reader.budget.limit or ASSUMED_HOURLY_LIMIT
        return max(int(limit * self.share) - len(self._sent), 0)

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
        if self.allowance() < 1:
            raise ShareSpent("the share of GitHub's hourly budget is spent for now")
        self._sent.append(self._clock.time())
        self.sent += 1
        return await self.reader.get(url, owner=owner)
