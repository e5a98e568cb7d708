"""The outbox worker: delivers what incidents owe to Slack, in order, until Slack takes it.

Each incident's deliveries go out one at a time in the order they were stored (a reply never
overtakes the parent it threads under), and one group key's incidents go out in order too;
different incidents go out side by side. Before sending, a worker takes a lease on the item in
the store, so two bots sharing a store never send the same item twice.

What Slack says decides what happens next:
- down, rate-limited, or refusing the channel or the token: the delivery waits (Retry-After on
  429, exponential backoff with jitter otherwise, at most 5 minutes) and is tried again, so it
  goes out once the bot is invited or its token fixed; nothing accepted is dropped;
- any other refusal (a message Slack will not take): that delivery is marked failed and logged.
A parent edit is rendered from the incident's current state, so several edits owed at once
become one `chat.update`. An edit or reply whose parent never made it posts the parent first.

Each post carries its outbox id in the message metadata, and the time of every attempt is stored
before the call. When an attempt's outcome is unknown (Slack's answer lost, or a crash before it
was stored), the next attempt first looks for that id in the channel or the thread
(conversations.history/replies) and adopts what it finds instead of posting again: delivered
once. Only when the channel's id is not known yet (the very first post to a channel named by
`#name`), or the bot may not read history, does a retry send again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import random
import re
import time
import uuid
from collections.abc import Callable

from bot.delivery.pacing import Pacer
from bot.domain.incidents import Incident, ThreadEvent
from bot.render.renderer import Renderer, RenderError
from bot.slack.errors import SlackAuthError, SlackChannelError, SlackRejected, SlackUnavailable
from bot.slack.gateway import Posted, SlackGateway
from bot.slack.message import Message
from bot.store import OutboxItem, OutboxKind, OutboxState, Store, StoreError
from bot.telemetry.metrics import Metrics

log = logging.getLogger(__name__)

MAX_PARALLEL_INCIDENTS = 16
#: Message metadata event types: a parent, a thread reply (each with its outbox item id).
PARENT_EVENT = "queuebot_incident"
REPLY_EVENT = "queuebot_reply"
DIGEST_EVENT = "queuebot_digest"
#: A storm digest is edited at most this often (chat.update allows about 50 a minute).
DIGEST_EDIT_SECONDS = 3.0
_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{6,}")
MAX_BACKOFF_SECONDS = 300.0
#: How long a worker may hold an item; longer than any Slack call's timeout.
LEASE_SECONDS = 30.0
#: How often the worker looks at the outbox when nothing woke it (a safety net, not the path).
IDLE_POLL_SECONDS = 5.0


def _fingerprint(message: Message) -> str:
    return hashlib.sha256(json.dumps(message.blocks, sort_keys=True).encode()).hexdigest()


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
    ) -> None:
        self._metrics = metrics
        self._on_parent_posted = on_parent_posted
        self._pacer = pacer or Pacer()
        self._digest_locks: dict[int, asyncio.Lock] = {}
        self._digest_edited: dict[int, float] = {}
        #: What each digest page shows now, so an edit goes only to pages that changed.
        self._digest_shown: dict[tuple[int, int], str] = {}
        self._store = store
        self._slack = slack
        self._renderer = renderer
        self._owner = uuid.uuid4().hex
        self._wakeup = asyncio.Event()
        self._active: dict[int, asyncio.Task[None]] = {}
        self._keys: dict[int, str] = {}
        self._slots = asyncio.Semaphore(MAX_PARALLEL_INCIDENTS)

    def wake(self) -> None:
        self._wakeup.set()

    async def run(self) -> None:
        try:
            while True:
                self._wakeup.clear()
                try:
                    delay = await self._dispatch_due()
                except StoreError:
                    log.exception("the outbox cannot be read; trying again shortly")
                    delay = IDLE_POLL_SECONDS
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
        now = time.time()
        next_at = now + IDLE_POLL_SECONDS
        # One group key's incidents go out in order too, so a new incident's parent (which
        # links the previous one) never overtakes the previous incident's own messages.
        waiting_keys = {self._keys[incident_id] for incident_id in self._active}
        for due in await self._store.due_incidents():
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
            # Not woken again at once: a failing store would make that a busy loop.
            log.error("delivery for incident %s stopped", incident_id, exc_info=task.exception())
            return
        self.wake()

    async def _drain(self, incident_id: int) -> None:
        async with self._slots:
            while True:
                item = await self._store.next_item(incident_id)
                if item is None or item.not_before > time.time():
                    return
                if not await self._store.claim_item(
                    item.id, self._owner, time.time() + LEASE_SECONDS
                ):
                    return  # another bot on this store is delivering it
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
                    await self._store.defer_item(item.id, time.time() + delay, "unexpected error")
                    self._count(item, "retry")
                    return
                if not carry_on:
                    return

    async def _attempt(self, item: OutboxItem) -> bool:
        """Deliver one item; False when the incident's queue must wait."""
        incident = await self._store.get_incident(item.incident_id)
        if incident is None:
            await self._store.finish_item(item.id, OutboxState.FAILED, "incident not found")
            return True
        try:
            await self._deliver(item, incident)
        except (SlackUnavailable, SlackChannelError, SlackAuthError) as exc:
            retry_after = exc.retry_after if isinstance(exc, SlackUnavailable) else None
            delay = retry_after if retry_after is not None else backoff(item.attempts)
            await self._store.defer_item(item.id, time.time() + delay, str(exc))
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
        except (SlackRejected, RenderError) as exc:
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
        await self._store.finish_item(item.id, OutboxState.DONE)
        self._count(item, "done")
        if item.created_at:
            self._metrics.observe(
                "queuebot_delivery_latency_seconds",
                max(time.time() - item.created_at, 0.0),
                kind=item.kind.value,
            )
        return True

    def _count(self, item: OutboxItem, result: str) -> None:
        self._metrics.inc("queuebot_slack_deliveries_total", kind=item.kind.value, result=result)

    async def _deliver(self, item: OutboxItem, incident: Incident) -> None:
        if incident.digest_id is not None:
            # A storm's incident has no message of its own: its line is in the digest.
            if item.kind is OutboxKind.UPDATE_DIGEST:
                await self._update_digest(item, incident, incident.digest_id)
            return
        if item.kind is OutboxKind.POST_PARENT or not incident.parent_ts:
            # A parent that never made it (Slack refused it earlier) is posted before anything
            # that belongs under it; it shows the incident as it is now.
            incident = await self._post_parent(item, incident)
        if item.kind is OutboxKind.UPDATE_PARENT:
            if incident.parent_version >= incident.version:
                return  # the parent already shows this state
            if await self._store.has_later_update(incident.id, item.id):
                return  # a later edit will show it all at once
            await self._update_parent(incident)
        elif item.kind is OutboxKind.POST_REPLY:
            await self._reply(item, incident, ThreadEvent.model_validate_json(item.payload))

    async def _post_parent(self, item: OutboxItem, incident: Incident) -> Incident:
        if incident.parent_ts and incident.channel_id:
            return incident
        link = await self._previous_link(incident)
        shown = incident.model_copy(update={"previous_link": link})
        posted = await self._already_posted(item, incident, PARENT_EVENT)
        if posted is None:
            await self._pacer.wait(await self._channel_id(incident) or incident.channel)
            await self._store.mark_sending(item.id, time.time())
            posted = await self._slack.post_message(
                incident.channel,
                self._renderer.incident(shown),
                metadata={
                    "event_type": PARENT_EVENT,
                    "event_payload": {"incident": incident.id, "outbox": item.id},
                },
            )
        await self._store.set_parent(
            incident.id, posted.channel_id, posted.ts, incident.version, link
        )
        log.info(
            "incident posted (incident=%s channel=%s ts=%s)",
            incident.id,
            posted.channel_id,
            posted.ts,
        )
        posted_incident = shown.model_copy(
            update={
                "channel_id": posted.channel_id,
                "parent_ts": posted.ts,
                "parent_version": incident.version,
            }
        )
        if self._on_parent_posted is not None:
            self._on_parent_posted(posted_incident)
        return posted_incident

    async def _update_parent(self, incident: Incident) -> None:
        assert incident.channel_id and incident.parent_ts
        await self._slack.update_message(
            incident.channel_id, incident.parent_ts, self._renderer.incident(incident)
        )
        await self._store.set_parent_version(incident.id, incident.version)

    async def _reply(self, item: OutboxItem, incident: Incident, event: ThreadEvent) -> None:
        assert incident.channel_id and incident.parent_ts
        if await self._already_posted(item, incident, REPLY_EVENT) is not None:
            return
        await self._pacer.wait(incident.channel_id)
        await self._store.mark_sending(item.id, time.time())
        await self._slack.post_message(
            incident.channel_id,
            self._renderer.thread_event(event),
            thread_ts=incident.parent_ts,
            metadata={
                "event_type": REPLY_EVENT,
                "event_payload": {"incident": incident.id, "outbox": item.id},
            },
        )

    async def _already_posted(
        self, item: OutboxItem, incident: Incident, event_type: str
    ) -> Posted | None:
        """After an attempt whose outcome is unknown (a lost answer, a crash), the message
        Slack may already hold; None when it holds none and the item should be sent."""
        if item.sent_at is None:
            return None
        thread = incident.parent_ts if event_type == REPLY_EVENT else None
        channel_id = incident.channel_id if thread else None
        if channel_id is None:
            channel_id = await self._channel_id(incident)
        if channel_id is None:
            log.warning(
                "cannot check whether Slack took item %s before: channel %r not resolved yet;"
                " sending it (incident=%s)",
                item.id,
                incident.channel,
                incident.id,
            )
            return None
        try:
            ts = await self._slack.find_posted(
                channel_id, event_type, item.id, oldest=item.sent_at - 5.0, thread_ts=thread
            )
        except (SlackAuthError, SlackChannelError) as exc:
            # Without channels:history the bot cannot look; it sends again (at least once).
            log.warning("cannot check whether Slack took item %s before: %s", item.id, exc)
            return None
        if ts is None:
            return None
        log.info(
            "Slack already had item %s (incident=%s ts=%s); not sent again",
            item.id,
            incident.id,
            ts,
        )
        return Posted(channel_id=channel_id, ts=ts)

    async def _channel_id(self, incident: Incident) -> str | None:
        if incident.channel_id:
            return incident.channel_id
        if _CHANNEL_ID.fullmatch(incident.channel):
            return incident.channel
        return await self._store.channel_id_for(incident.channel)

    async def _update_digest(self, item: OutboxItem, incident: Incident, digest_id: int) -> None:
        """Post the storm digest, or edit it to show the storm now: at most one edit every
        DIGEST_EDIT_SECONDS, each showing everything that happened meanwhile."""
        async with self._digest_locks.setdefault(digest_id, asyncio.Lock()):
            digest = await self._store.get_digest(digest_id)
            if digest is None or (digest.ts and digest.shown_version >= digest.version):
                return
            if digest.ts and digest.channel_id:
                pause = self._digest_edited.get(digest_id, 0.0) + DIGEST_EDIT_SECONDS
                await asyncio.sleep(max(0.0, pause - time.monotonic()))
                digest = await self._store.get_digest(digest_id)
                assert digest is not None and digest.ts and digest.channel_id
                if digest.shown_version >= digest.version:
                    return
            version = digest.version  # what the members read next show, at least
            members = await self._store.digest_members(digest_id)
            pages = self._renderer.digest(digest.opened_at, members)
            if not (digest.ts and digest.channel_id):
                posted = await self._already_posted(item, incident, DIGEST_EVENT)
                if posted is None:
                    await self._pacer.wait(await self._channel_id(incident) or incident.channel)
                    await self._store.mark_sending(item.id, time.time())
                    posted = await self._slack.post_message(
                        incident.channel,
                        pages[0],
                        metadata={
                            "event_type": DIGEST_EVENT,
                            "event_payload": {"digest": digest_id, "outbox": item.id},
                        },
                    )
                await self._store.set_digest_posted(digest_id, posted.channel_id, posted.ts, 0)
                log.info("storm digest posted (digest=%s ts=%s)", digest_id, posted.ts)
                self._digest_shown[(digest_id, 0)] = _fingerprint(pages[0])
                digest = await self._store.get_digest(digest_id)
                assert digest is not None and digest.ts and digest.channel_id
            await self._show_pages(digest_id, digest.channel_id, digest.ts, digest.pages, pages)
            await self._store.set_digest_shown(digest_id, version)
            self._digest_edited[digest_id] = time.monotonic()

    async def _show_pages(
        self,
        digest_id: int,
        channel_id: str,
        ts: str,
        posted_pages: tuple[str, ...],
        pages: list[Message],
    ) -> None:
        """Edit the pages whose content changed; post the pages that are new, in the thread."""
        for index, page in enumerate(pages):
            shown = _fingerprint(page)
            if self._digest_shown.get((digest_id, index)) == shown:
                continue
            if index == 0:
                await self._slack.update_message(channel_id, ts, page)
            elif index - 1 < len(posted_pages):
                await self._slack.update_message(channel_id, posted_pages[index - 1], page)
            else:
                await self._pacer.wait(channel_id)
                reply = await self._slack.post_message(channel_id, page, thread_ts=ts)
                await self._store.add_digest_page(digest_id, reply.ts)
            self._digest_shown[(digest_id, index)] = shown

    async def _previous_link(self, incident: Incident) -> str | None:
        if incident.previous_id is None:
            return None
        previous = await self._store.get_incident(incident.previous_id)
        if previous is None or not (previous.channel_id and previous.parent_ts):
            return None
        try:
            return await self._slack.permalink(previous.channel_id, previous.parent_ts)
        except SlackRejected as exc:
            log.warning("no permalink for incident %s: %s", previous.id, exc)
            return None
