"""Injected failures and Slack's message rate limit for the sandbox Web API.

A fault answers a Web API call instead of the workspace: 429 with `Retry-After` as Slack does
(https://docs.slack.dev/apis/web-api/rate-limits), a 5xx, or any Slack error with HTTP 200.
A fault `after` the call lets the call take effect and loses its answer, as when a connection
drops after Slack did the work: the caller cannot tell it happened. A `stall` holds the answer
that many seconds first, as a Slack too slow to answer does: the caller times out, or is still
waiting when it dies.

A fault names the Web API method it answers (`chat.postMessage`), none for every call, or
`incoming-webhook` for posts to incoming webhook URLs (`queuebot_lab.sandbox.slack.incoming`), which
are no Web API method but fail the same ways.
"""

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, Field

#: The pseudo-method a fault names to answer posts to incoming webhooks.
INCOMING_WEBHOOK = "incoming-webhook"
#: Error names for injected statuses when none is given.
DEFAULT_ERRORS: Mapping[int, str] = MappingProxyType(
    {429: "ratelimited", 500: "internal_error", 503: "service_unavailable"}
)


class FaultSpec(BaseModel):
    """A fault as the control endpoint receives it (POST /_sandbox/faults)."""

    method: str | None = None
    status: int = Field(default=429, ge=200, le=599)
    retry_after: int | None = Field(default=None, ge=0)
    count: int = Field(default=1, ge=1)
    error: str | None = None
    after: bool = False
    stall: float = Field(default=0.0, ge=0.0, le=600.0)


@dataclass
class Fault:
    method: str | None
    status: int
    retry_after: int | None
    remaining: int
    error: str
    after: bool = False
    stall: float = 0.0

    def matches(self, method: str) -> bool:
        return self.remaining > 0 and self.method in (None, method)

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "status": self.status,
            "retry_after": self.retry_after,
            "remaining": self.remaining,
            "error": self.error,
            "after": self.after,
            "stall": self.stall,
        }


@dataclass
class Answer:
    """An HTTP answer a fault or the rate limiter gives instead of the method."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    #: Seconds to hold the answer before giving it.
    stall: float = 0.0


class Faults:
    """The queue of injected faults; the first matching one answers the next call."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []

    def add(
        self,
        method: str | None = None,
        status: int = 429,
        retry_after: int | None = None,
        count: int = 1,
        error: str | None = None,
        after: bool = False,
        stall: float = 0.0,
    ) -> Fault:
        """Fail the next `count` calls of `method` (every method when None); `after`: let
        each call take effect first, then answer the failure; `stall`: hold the answer that
        many seconds."""
        name = error or DEFAULT_ERRORS.get(status) or ("fatal_error" if status >= 500 else None)
        if name is None:
            raise ValueError(f"a fault with HTTP {status} needs an error name")
        if status == 429 and retry_after is None:
            retry_after = 1
        fault = Fault(method, status, retry_after, count, name, after, stall)
        self._faults.append(fault)
        return fault

    def add_spec(self, spec: FaultSpec) -> Fault:
        return self.add(
            spec.method,
            spec.status,
            spec.retry_after,
            spec.count,
            spec.error,
            spec.after,
            spec.stall,
        )

    def clear(self) -> None:
        self._faults.clear()

    @property
    def pending(self) -> list[Fault]:
        return [f for f in self._faults if f.remaining > 0]

    def take(self, method: str) -> tuple[Answer, bool] | None:
        """The next fault for `method`: its answer, and whether the call happens first."""
        for fault in self._faults:
            if fault.matches(method):
                fault.remaining -= 1
                headers = {}
                if fault.retry_after is not None:
                    # slack_sdk parses Retry-After with int(): whole seconds only.
                    headers["Retry-After"] = str(fault.retry_after)
                answer = Answer(
                    fault.status, {"ok": False, "error": fault.error}, headers, fault.stall
                )
                return answer, fault.after
        return None


class MessageRateLimit:
    """Slack's posting limit: about one message per second per channel, short bursts allowed.

    https://docs.slack.dev/apis/web-api/rate-limits#limits-when-posting-messages
    A token bucket per channel; an empty bucket answers 429 with the whole seconds to wait.
    """

    def __init__(
        self, per_second: float = 1.0, burst: int = 3, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_second = per_second
        self.burst = burst
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, channel: str) -> Answer | None:
        now = self._clock()
        tokens, last = self._buckets.get(channel, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.per_second)
        if tokens >= 1.0:
            self._buckets[channel] = (tokens - 1.0, now)
            return None
        self._buckets[channel] = (tokens, now)
        wait = max(1, math.ceil((1.0 - tokens) / self.per_second))
        return Answer(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(wait)})
