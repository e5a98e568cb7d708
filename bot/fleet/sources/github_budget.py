"""GitHub's REST rate limits as its answers tell them: the token's hourly budget
(`X-RateLimit-Limit`, `-Remaining`, `-Reset`) and the pauses a rate-limited answer asks for
(`Retry-After`, else the hour's reset, else GitHub's advice for secondary limits: a minute,
then exponentially longer while it persists)
(https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

#: GitHub: after a secondary limit without Retry-After, "wait for at least one minute", then
#: "an exponentially increasing amount of time" while it persists.
SECONDARY_WAIT = timedelta(minutes=1)
MAX_SECONDARY_WAIT = timedelta(minutes=16)


def _number(headers: Mapping[str, str], name: str) -> int | None:
    try:
        return int(headers.get(name, ""))
    except ValueError:
        return None


def _retry_after(headers: Mapping[str, str], now: datetime) -> datetime | None:
    raw = headers.get("Retry-After", "").strip()
    if raw.isdigit():
        return now + timedelta(seconds=int(raw))
    try:
        return parsedate_to_datetime(raw).astimezone(UTC) if raw else None
    except (TypeError, ValueError):
        return None


@dataclass
class RateBudget:
    """What GitHub's answers said of the token's rate limit, and any pause it asked for."""

    limit: int | None = None
    remaining: int | None = None
    reset: datetime | None = None
    paused_until: datetime | None = None
    pause_reason: str = ""
    strikes: int = 0

    def note(self, headers: Mapping[str, str]) -> None:
        remaining, reset = _number(headers, "X-RateLimit-Remaining"), None
        if (epoch := _number(headers, "X-RateLimit-Reset")) is not None:
            reset = datetime.fromtimestamp(epoch, UTC)
        if remaining is not None and reset is not None:
            self.limit = _number(headers, "X-RateLimit-Limit")
            self.remaining, self.reset = remaining, reset

    def pause(self, headers: Mapping[str, str], message: str, now: datetime) -> datetime:
        """A rate-limited answer: when GitHub may be asked again, as its docs say to wait."""
        if (until := _retry_after(headers, now)) is not None:
            why = f"GitHub asked for a pause ({message})"
        elif self.remaining == 0 and self.reset is not None and self.reset > now:
            until, why = self.reset, f"GITHUB_TOKEN's hourly budget is spent ({message})"
        else:
            wait = min(SECONDARY_WAIT * 2**self.strikes, MAX_SECONDARY_WAIT)
            until, why = now + wait, f"GitHub's secondary rate limit ({message})"
        self.strikes += 1
        self.paused_until, self.pause_reason = until, why
        return until

    def wait(self, now: datetime, needed: int) -> tuple[datetime, str] | None:
        """Until when, and why, no listing of `needed` pages may start now; None if it may."""
        if self.paused_until is not None and now < self.paused_until:
            return self.paused_until, self.pause_reason
        if self.remaining is None or self.reset is None or now >= self.reset:
            return None
        kept = math.ceil((self.limit or 0) / 20)
        if self.remaining >= needed + kept:
            return None
        of = f" of {self.limit}" if self.limit else ""
        return self.reset, (
            f"GITHUB_TOKEN has {self.remaining}{of} requests left this hour; a listing takes"
            f" {needed} and {kept} are left to the token's other users"
        )
