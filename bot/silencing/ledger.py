"""The incident store's side of silences: who is working on one, and recording what happened.

Everything that changes an incident's silence — Silence…, Unsilence, the watcher — first takes the
incident's silencing claim, so they never act on one silence at the same time (on any replica).
Every change is written with the thread line and parent edit it owes, in one transaction.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import datetime

from bot.delivery import owed
from bot.domain.clock import SYSTEM, Clock
from bot.domain.incidents import IncidentStatus, ThreadEvent, ThreadEventKind
from bot.domain.silences import Silence
from bot.store import Store, Transaction

#: Longer than any silencing can take: every Grafana call of it timing out, one after another.
SILENCING_CLAIM_SECONDS = 300.0
#: How long a second person's silencing waits for the first one's to finish.
CLAIM_WAIT_SECONDS = 15.0
#: The store claim's purpose.
SILENCING = "silencing"


class ClaimLost(Exception):
    """The claim ran out before the work was recorded; someone else may have acted since."""


class SilenceLedger:
    def __init__(
        self, store: Store, on_enqueued: Callable[[], None], clock: Clock = SYSTEM
    ) -> None:
        self._store = store
        self._on_enqueued = on_enqueued
        self._clock = clock

    async def claim(self, incident_id: int, *, wait: float = 0.0) -> str | None:
        """A claim token, or None if another holds the claim for longer than `wait` seconds."""
        owner = uuid.uuid4().hex
        deadline = self._clock.monotonic() + wait
        while not await self._store.claim(
            incident_id, SILENCING, owner, self._clock.time() + SILENCING_CLAIM_SECONDS
        ):
            if self._clock.monotonic() >= deadline:
                return None
            await asyncio.sleep(0.1)
        return owner

    async def release(self, incident_id: int, owner: str) -> None:
        await self._store.release(incident_id, SILENCING, owner)

    async def _owe(self, tx: Transaction, incident_id: int, event: ThreadEvent | None) -> None:
        if event is not None:
            await owed.reply(tx, incident_id, event)
        await owed.parent_edit(tx, incident_id)

    async def record(self, incident_id: int, owner: str, silence: Silence, at: datetime) -> None:
        """The incident is silenced; raises ClaimLost if `owner` no longer holds the claim."""
        async with self._store.transaction() as tx:
            current = await tx.incident(incident_id)
            if current is None or not await tx.holds(incident_id, SILENCING, owner):
                raise ClaimLost
            await tx.save_incident(
                current.model_copy(update={"silence": silence, "version": current.version + 1})
            )
            event = ThreadEvent(
                kind=ThreadEventKind.SILENCED, at=at, group=current.group, silence=silence
            )
            await self._owe(tx, incident_id, event)
        self._on_enqueued()

    async def lift(self, incident_id: int, silence: Silence, event: ThreadEvent) -> bool:
        """The silence no longer holds; False if the incident no longer has it."""
        async with self._store.transaction() as tx:
            current = await tx.incident(incident_id)
            if current is None or current.silence is None or current.silence.ids != silence.ids:
                return False
            await tx.save_incident(
                current.model_copy(update={"silence": None, "version": current.version + 1})
            )
            await self._owe(tx, incident_id, event)
        self._on_enqueued()
        return True

    async def revise(self, incident_id: int, revised: Silence, event: ThreadEvent | None) -> None:
        """Store what the watcher learnt; an `event` (an end time changed) is also shown."""
        async with self._store.transaction() as tx:
            current = await tx.incident(incident_id)
            if current is None or current.silence is None or current.silence.ids != revised.ids:
                return
            if event is None:
                await tx.save_incident(current.model_copy(update={"silence": revised}))
                return
            await tx.save_incident(
                current.model_copy(update={"silence": revised, "version": current.version + 1})
            )
            await self._owe(tx, incident_id, event)
        self._on_enqueued()

    async def resolve(self, incident_id: int, silence: Silence, at: datetime, note: str) -> bool:
        """The silenced alert is gone from Grafana: the incident resolved without a notice."""
        async with self._store.transaction() as tx:
            current = await tx.incident(incident_id)
            if current is None or current.status is not IncidentStatus.FIRING:
                return False
            if current.silence is None or current.silence.ids != silence.ids:
                return False
            resolved = current.model_copy(
                update={
                    "status": IncidentStatus.RESOLVED,
                    "resolved_at": at,
                    "version": current.version + 1,
                }
            )
            await tx.save_incident(resolved)
            event = ThreadEvent(
                kind=ThreadEventKind.RESOLVED,
                at=at,
                group=current.group,
                duration=resolved.duration,
                note=note,
            )
            await self._owe(tx, incident_id, event)
        self._on_enqueued()
        return True
