"""A running stack driven from synchronous code (hypothesis, schemathesis): `live_stack` enters
`running_stack` on an event loop of its own, and `Live.run` runs a coroutine on it."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from testkit.harness import Stack, running_stack

T = TypeVar("T")


@dataclass
class Live:
    """A running stack and the event loop it runs on, for synchronous test code."""

    stack: Stack
    runner: asyncio.Runner

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.runner.run(coro)


@contextmanager
def live_stack(tmp_path: Path, **env: str) -> Iterator[Live]:
    """`running_stack` entered on an event loop that the caller drives with `Live.run`."""
    with asyncio.Runner() as runner:
        exits = AsyncExitStack()
        stack = runner.run(exits.enter_async_context(running_stack(tmp_path, **env)))
        try:
            yield Live(stack, runner)
        finally:
            runner.run(exits.aclose())
