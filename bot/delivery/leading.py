"""The loop of a writer that one replica at a time runs: under a leader lease in the store, a
pass now, then again when woken or after `poll` seconds; a failed pass is tried again, never
fatal. The heads-up writer and the capacity report writer run it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from bot.domain.clock import SYSTEM, Clock
from bot.store import Store
from bot.telemetry.passes import PassRecord

log = logging.getLogger(__name__)

#: The lease is held for this many polls, so that a writer that died is replaced soon.
LEASE_POLLS = 3


async def lead_and_pass(
    store: Store,
    role: str,
    owner: str,
    wakeup: asyncio.Event,
    poll: float,
    one_pass: Callable[[], Awaitable[None]],
    record: PassRecord,
    clock: Clock = SYSTEM,
) -> None:
    """Run `one_pass` while holding `role` for `owner`, until cancelled; each pass's outcome
    goes to `record`."""
    while True:
        wakeup.clear()
        try:
            if await store.lead(role, owner, clock.time() + LEASE_POLLS * poll):
                await one_pass()
                record.succeeded()
        except Exception:
            record.failed()
            log.exception("%s: the pass failed; trying again", role)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(poll):
                await wakeup.wait()
