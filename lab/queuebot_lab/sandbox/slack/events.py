"""Change notification for the sandbox: waiters (`wait_for`) and subscribers (the demo's feed).

Every state change goes through `EventHub.publish`, which wakes `wait_for` through one
asyncio.Condition and copies the event into each subscriber's queue.
"""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from queuebot_lab.sandbox.slack.models import Ephemeral

_T = TypeVar("_T")


class SandboxEventKind(StrEnum):
    MESSAGE_POSTED = "message_posted"
    MESSAGE_UPDATED = "message_updated"
    MESSAGE_DELETED = "message_deleted"
    EPHEMERAL_POSTED = "ephemeral_posted"
    VIEW_OPENED = "view_opened"
    VIEW_UPDATED = "view_updated"
    VIEW_CLOSED = "view_closed"
    FILE_SHARED = "file_shared"
    RESPONSE_POSTED = "response_posted"
    INTERACTION_SENT = "interaction_sent"
    SOCKET_CONNECTED = "socket_connected"
    SOCKET_DISCONNECTED = "socket_disconnected"
    API_CALL = "api_call"


@dataclass(frozen=True)
class SandboxEvent:
    kind: SandboxEventKind
    channel: str | None = None
    ts: str | None = None
    thread_ts: str | None = None
    user: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


def ephemeral_posted(ephemeral: Ephemeral) -> SandboxEvent:
    """Nothing in the channel shows an ephemeral later, so its event carries the message."""
    return SandboxEvent(
        SandboxEventKind.EPHEMERAL_POSTED,
        ephemeral.channel,
        ephemeral.ts,
        ephemeral.thread_ts,
        ephemeral.user,
        {"text": ephemeral.text, "message": ephemeral.to_slack()},
    )


class EventHub:
    """Fans state changes out to `wait_for` callers and subscriber queues."""

    def __init__(self) -> None:
        self._condition = asyncio.Condition()
        self._subscribers: list[asyncio.Queue[SandboxEvent]] = []

    async def publish(self, event: SandboxEvent) -> None:
        for queue in self._subscribers:
            queue.put_nowait(event)
        async with self._condition:
            self._condition.notify_all()

    def subscribe(self) -> asyncio.Queue[SandboxEvent]:
        queue: asyncio.Queue[SandboxEvent] = asyncio.Queue()
        self._subscribers.append(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[SandboxEvent]) -> None:
        if queue in self._subscribers:
            self._subscribers.remove(queue)

    # A timeout argument, like asyncio.wait_for: every caller wants a bound, so it has a default.
    async def wait_for(self, predicate: Callable[[], _T], timeout: float = 5.0) -> _T:  # noqa: ASYNC109
        """Wait until `predicate()` is truthy, re-checking on every change; return its value."""
        result: list[_T] = []

        def check() -> bool:
            value = predicate()
            if value:
                result.append(value)
            return bool(value)

        async with self._condition:
            try:
                async with asyncio.timeout(timeout):  # not wait_for: python/cpython#86296
                    await self._condition.wait_for(check)
            except TimeoutError:
                raise TimeoutError(
                    f"sandbox state did not satisfy {getattr(predicate, '__name__', predicate)!r}"
                    f" within {timeout} s"
                ) from None
        return result[-1]
