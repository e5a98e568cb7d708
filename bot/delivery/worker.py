"""The outbox worker: delivers what incidents owe to Slack, in order, until Slack takes it.

Each incident's deliveries go out one at a time in the order they were stored (a reply never
overtakes the parent it threads under, a report never its running notice), and one group key's
incidents go out in order too; different incidents go out side by side. Before sending, a
worker takes a lease on the item in the store, so two bots sharing a store never send the same
item twice; an attempt whose outcome is unknown is found again, not repeated
(`bot.delivery.recovery`).

What Slack says decides what happens next:
- down, rate-limited, or refusing the channel or the token: the delivery waits (Retry-After on
  429, exponential backoff with jitter otherwise, at most 5 minutes) and is tried again, so it
  goes out once the bot is invited or its token fixed; nothing accepted is dropped;
- any other refusal (a message Slack will not take), or an entry that cannot be read back: that
  delivery is marked failed and logged.
An edit, reply, note or file whose parent never made it posts the parent first.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
import uuid
from collections.abc import Callable

from pydantic import ValidationError

from bot.delivery.digest import DigestWriter
from bot.delivery.owed import NoteEdit, OwedFile, OwedMessage
from bot.delivery.pacing import Pacer
from bot.delivery.recovery import Recovery
from bot.delivery.thread import ThreadWriter
from bot.domain.clock import SYSTEM, Clock
from bot.domain.incidents import Incident, ThreadEvent
from bot.domain.timings import Timings
from bot.render.renderer import Renderer
from bot.render.templates import RenderError
from bot.slack.errors import SlackAuthError, SlackChannelError, SlackRejected, SlackUnavailable
from bot.slack.gateway import SlackGateway
from bot.store import OutboxItem, OutboxKind, OutboxState, Store, StoreError
from bot.telemetry.metrics import Metrics

log = logging.getLogger(__name__)

DEFAULT_TIMINGS = Timings()
MAX_PARALLEL_INCIDENTS = 16
MAX_BACKOFF_SECONDS = 300.0
#: The longest wait between tries while the outbox cannot be read.
MAX_OUTAGE_POLL_SECONDS = 30.0


def backoff(attempts: int) -> float:
    """Seconds before try `attempts + 1`: 0.5, 1, 2, 4 … up to 5 minutes, with ±50 % jitter."""
    base = min(0.5 * 2.0**attempts, MAX_BACKOFF_SECONDS)
    return base * random.uniform(0.5, 1.5)  # noqa: S311 - jitter, not a secret


class Deliverer:
    """Drains the outbox; `wake()` after enqueueing, `run()` as an owned background task."""

    def __init__(
        self,
        store: Store,
        slack: SlackGateway,
        renderer: Renderer,
        metrics: Metrics,
        *,
        on_parent_posted: Callable[[Incident], None] | None = None,
        pacer: Pacer | None = None,
        timings: Timings = DEFAULT_TIMINGS,
        clock: Clock = SYSTEM,
    ) -> None:
        self._metrics = metrics
        self._store = store
        #: An item's lease, renewed every third of it while the worker is busy with the item
        #: (waiting for the channel's pace, or for Slack's answer).
        self._lease = timings.outbox_lease
        self._poll = timings.outbox_poll
        self._clock = clock
        # The store's buckets: replicas on one store share Slack's per-channel limit.
        pacer = pacer or Pacer(timings.posts_per_second, clock=clock, store=store)
        recovery = Recovery(store, slack)
        self._thread = ThreadWriter(
            store, slack, renderer, pacer, recovery, on_parent_posted=on_parent_posted, clock=clock
        )
        self._digests = DigestWriter(store, slack, renderer, pacer, recovery, timings, clock)
        self._owner = uuid.uuid4().hex
        self._wakeup = asyncio.Event()
        self._active: dict[int, asyncio.Task[None]] = {}
        self._keys: dict[int, str] = {}
        self._slots = asyncio.Semaphore(MAX_PARALLEL_INCIDENTS)
        #: Why the last pass over the outbox failed; None once one succeeds.
        self.problem: str | None = None

    def wake(self) -> None:
        self._wakeup.set()

    async def run(self) -> None:
        """Deliver until cancelled. Nothing else stops it: whatever a pass raises (the store
        failing in any way, a bug) is logged and the pass tried again, less often while it
        keeps failing; /healthz says when the outbox is not being delivered."""
        failures = 0
        try:
            while True:
                self._wakeup.clear()
                try:
                    delay = await self._dispatch_due()
                    failures, self.problem = 0, None
                except Exception as exc:
                    failures += 1
                    # A store's words without a server's address (the log has it whole).
                    said = exc.public if isinstance(exc, StoreError) else str(exc)
                    self.problem = (
                        f"the outbox worker cannot read the outbox ({failures} tries in a row):"
                        f" {type(exc).__name__}: {said}"
                    )
                    self._metrics.inc("queuebot_delivery_worker_errors_total")
                    delay = min(self._poll * 2 ** (failures - 1), MAX_OUTAGE_POLL_SECONDS)
                    log.exception(
                        "the outbox cannot be read (%d tries in a row); trying again in %.0fs",
                        failures,
                        delay,
                    )
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a
                # cancellation that lands as the wait ends (python/cpython#86296), and the
                # worker would then outlive the app's shutdown.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wakeup.wait()
        finally:
            for task in self._active.values():
                task.cancel()
            await asyncio.gather(*self._active.values(), return_exceptions=True)
            with contextlib.suppress(StoreError):
                await self._store.release_leases(self._owner)

    async def _dispatch_due(self) -> float:
        now = self._clock.time()
        next_at = now + self._poll
        # One group key's incidents go out in order too, so a new incident's parent (which
        # links the previous one) never overtakes the previous incident's own messages.
        waiting_keys = {self._keys[incident_id] for incident_id in self._active}
        for due in await self._store.due_incidents(self._owner):
            if due.incident_id in self._active or due.group_key in waiting_keys:
                continue
            waiting_keys.add(due.group_key)
            if due.not_before > now:
                next_at = min(next_at, due.not_before)
                continue
            task = asyncio.create_task(
                self._drain(due.incident_id), name=f"deliver-{due.incident_id}"
            )
            self._active[due.incident_id] = task
            self._keys[due.incident_id] = due.group_key
            task.add_done_callback(functools.partial(self._finished, due.incident_id))
        return max(next_at - now, 0.01)

    def _finished(self, incident_id: int, task: asyncio.Task[None]) -> None:
        self._active.pop(incident_id, None)
        self._keys.pop(incident_id, None)
        if not task.cancelled() and task.exception() is not None:
            self._metrics.inc("queuebot_delivery_worker_errors_total")
            # Not woken again at once: a failing store would make that a busy loop.
            log.error("delivery for incident %s stopped", incident_id, exc_info=task.exception())
            return
        self.wake()

    async def _drain(self, incident_id: int) -> None:
        async with self._slots:
            while True:
                item = await self._store.next_item(incident_id)
                if item is None or item.not_before > self._clock.time():
                    return
                if not await self._store.claim_item(
                    item.id, self._owner, self._clock.time() + self._lease
                ):
                    return  # another bot on this store is delivering it
                holding = asyncio.create_task(self._hold(item.id), name=f"lease-{item.id}")
                try:
                    carry_on = await self._attempt(item)
                except Exception:
                    # The worker's one catch-all: a bug must neither stop other incidents nor
                    # become a busy retry loop. The item waits like any failed try.
                    delay = backoff(item.attempts)
                    log.exception(
                        "delivery failed unexpectedly, retried in %.1fs (incident=%s item=%s)",
                        delay,
                        item.incident_id,
                        item.id,
                    )
                    await self._store.defer_item(
                        item.id, self._clock.time() + delay, "unexpected error"
                    )
                    self._count(item, "retry")
                    return
                finally:
                    holding.cancel()
                if not carry_on:
                    return

    async def _hold(self, item_id: int) -> None:
        """Renew the lease on `item_id` until cancelled: a delivery may wait for its channel's
        pace longer than one lease, and must not be taken over meanwhile."""
        while True:
            await asyncio.sleep(self._lease / 3)
            try:
                await self._store.claim_item(item_id, self._owner, self._clock.time() + self._lease)
            except StoreError as exc:
                log.warning("cannot renew the lease on outbox item %s: %s", item_id, exc)

    async def _attempt(self, item: OutboxItem) -> bool:
        """Deliver one item; False when the incident's queue must wait."""
        incident = await self._store.get_incident(item.incident_id)
        if incident is None:
            await self._store.finish_item(item.id, OutboxState.FAILED, "incident not found")
            return True
        try:
            posted_ts = await self._deliver(item, incident)
        except (SlackUnavailable, SlackChannelError, SlackAuthError) as exc:
            retry_after = exc.retry_after if isinstance(exc, SlackUnavailable) else None
            delay = retry_after if retry_after is not None else backoff(item.attempts)
            await self._store.defer_item(item.id, self._clock.time() + delay, str(exc))
            self._count(item, "retry")
            level = logging.WARNING if isinstance(exc, SlackUnavailable) else logging.ERROR
            log.log(
                level,
                "Slack did not take a delivery, retried in %.1fs: %s"
                " (incident=%s item=%s kind=%s channel=%s)",
                delay,
                exc,
                incident.id,
                item.id,
                item.kind,
                incident.channel,
            )
            return False
        except (SlackRejected, RenderError, ValidationError) as exc:
            # ValidationError: what the entry holds cannot be read back (a row changed by
            # hand, or written by another version); trying again cannot help.
            await self._store.finish_item(item.id, OutboxState.FAILED, str(exc))
            self._count(item, "failed")
            log.error(
                "delivery abandoned: %s (incident=%s item=%s kind=%s channel=%s ts=%s)",
                exc,
                incident.id,
                item.id,
                item.kind,
                incident.channel,
                incident.parent_ts,
            )
            return True
        await self._store.finish_item(item.id, OutboxState.DONE, posted_ts=posted_ts or None)
        self._count(item, "done")
        if item.created_at:
            self._metrics.observe(
                "queuebot_delivery_latency_seconds",
                max(self._clock.time() - item.created_at, 0.0),
                kind=item.kind.value,
            )
        return True

    def _count(self, item: OutboxItem, result: str) -> None:
        self._metrics.inc("queuebot_slack_deliveries_total", kind=item.kind.value, result=result)

    async def _deliver(self, item: OutboxItem, incident: Incident) -> str:
        """Send one item; the ts of the message it posted or edited, when there is one."""
        if incident.digest_id is not None:
            # A storm's incident has no message of its own: its line is in the digest.
            if item.kind is OutboxKind.UPDATE_DIGEST:
                await self._digests.update(item, incident, incident.digest_id)
            return ""
        if item.kind is OutboxKind.POST_PARENT or not incident.parent_ts:
            # A parent that never made it (Slack refused it earlier) is posted before anything
            # that belongs under it; it shows the incident as it is now.
            incident = await self._thread.post_parent(item, incident)
        match item.kind:
            case OutboxKind.POST_PARENT:
                return incident.parent_ts or ""
            case OutboxKind.UPDATE_PARENT:
                await self._thread.update_parent(item, incident)
                return ""
            case OutboxKind.POST_REPLY:
                event = ThreadEvent.model_validate_json(item.payload)
                return await self._thread.reply(item, incident, event)
            case OutboxKind.POST_NOTE:
                note = OwedMessage.model_validate_json(item.payload)
                return await self._thread.note(item, incident, note)
            case OutboxKind.EDIT_NOTE:
                edit = NoteEdit.model_validate_json(item.payload)
                return await self._thread.note_edit(item, incident, edit)
            case OutboxKind.POST_FILE:
                upload = OwedFile.model_validate_json(item.payload)
                return await self._thread.file(item, incident, upload)
            case OutboxKind.UPDATE_DIGEST:
                return ""  # the incident left its storm's digest: nothing of its own to edit
