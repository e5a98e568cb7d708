"""Writing a storm digest: one message listing the incidents of an alert storm, kept current.

The digest is posted once, then edited to show the storm now, at most one edit every
`Timings.digest_edit` seconds (chat.update allows about 50 a minute), each edit showing
everything that happened meanwhile. Past its first page the list continues in thread
replies; only the pages whose content changed are edited. A page posted by an attempt whose
outcome is unknown is found by the digest and page number it carries rather than posted
twice. One worker at a time, on any replica, posts or edits a digest: it holds the digest in
the store while it writes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import uuid

from bot.delivery.pacing import Pacer
from bot.delivery.recovery import DIGEST_EVENT, Recovery, metadata
from bot.domain.clock import SYSTEM, Clock
from bot.domain.incidents import Incident
from bot.domain.timings import Timings
from bot.render.renderer import Renderer
from bot.slack.errors import SlackError
from bot.slack.gateway import SlackGateway
from bot.slack.message import Message
from bot.store import Digest, OutboxItem, Store

log = logging.getLogger(__name__)

#: Thread replies continuing a digest carry this event type, the digest and the page number.
DIGEST_PAGE_EVENT = "queuebot_digest_page"


def _fingerprint(message: Message) -> str:
    return hashlib.sha256(json.dumps(message.blocks, sort_keys=True).encode()).hexdigest()


CLAIM_POLL_SECONDS = 0.5


class DigestWriter:
    def __init__(
        self,
        store: Store,
        slack: SlackGateway,
        renderer: Renderer,
        pacer: Pacer,
        recovery: Recovery,
        timings: Timings,
        clock: Clock = SYSTEM,
    ) -> None:
        self._store = store
        self._edit_every = timings.digest_edit
        #: How long this worker may hold a storm's digest (posting it or editing its pages)
        #: before another may take it over; renewed page by page. Replicas deliver different
        #: incidents of one storm side by side, so without it two could edit at once and the
        #: older content land last.
        self._claim = timings.digest_claim
        self._clock = clock
        self._slack = slack
        self._renderer = renderer
        self._pacer = pacer
        self._recovery = recovery
        self._locks: dict[int, asyncio.Lock] = {}
        self._edited: dict[int, float] = {}
        self._owner = uuid.uuid4().hex
        #: What each digest page shows now, as this process last wrote it, so an edit goes only
        #: to pages that changed; forgotten when another writer has held the digest since.
        self._shown: dict[tuple[int, int], str] = {}

    async def update(self, item: OutboxItem, incident: Incident, digest_id: int) -> None:
        """Post the storm digest, or edit it to show the storm now."""
        async with self._locks.setdefault(digest_id, asyncio.Lock()):
            digest = await self._store.get_digest(digest_id)
            if digest is None or (digest.ts and digest.shown_version >= digest.version):
                return
            if digest.ts and digest.channel_id:
                pause = self._edited.get(digest_id, 0.0) + self._edit_every
                await asyncio.sleep(max(0.0, pause - self._clock.monotonic()))
            members = await self._store.digest_members(digest_id)
            # Every worker names the same incident (the storm's first) to hold the digest by; one
            # that dies holding it lets it lapse.
            key = min((m.id for m in members), default=incident.id)
            purpose = f"digest:{digest_id}"
            while not await self._store.claim(key, purpose, self._owner, self._until()):
                await asyncio.sleep(CLAIM_POLL_SECONDS)
                digest = await self._store.get_digest(digest_id)
                if digest is None or (digest.ts and digest.shown_version >= digest.version):
                    return  # the holder showed what this item owed
            try:
                await self._write(item, incident, digest_id, key)
            finally:
                await self._store.release(key, purpose, self._owner)
            self._edited[digest_id] = self._clock.monotonic()

    def _until(self) -> float:
        return self._clock.time() + self._claim

    async def _write(self, item: OutboxItem, incident: Incident, digest_id: int, key: int) -> None:
        digest = await self._store.get_digest(digest_id)
        assert digest is not None
        if digest.ts and digest.shown_version >= digest.version:
            return
        if digest.editor != self._owner:
            # Another writer held the digest since this one did (or died editing it): what this
            # process remembers showing may no longer be what the pages show.
            for shown in [k for k in self._shown if k[0] == digest_id]:
                del self._shown[shown]
            await self._store.set_digest_editor(digest_id, self._owner)
        version = digest.version  # what the members read next show, at least
        members = await self._store.digest_members(digest_id)
        pages = self._renderer.digest(digest.opened_at, members)
        if not (digest.ts and digest.channel_id):
            digest = await self._post(item, incident, digest, pages[0])
        assert digest.ts and digest.channel_id
        for index, page in enumerate(pages):
            if not await self._store.renew(key, f"digest:{digest_id}", self._owner, self._until()):
                log.warning("storm digest %s: taken over before page %s", digest_id, index + 1)
                return
            await self._show_page(digest, digest.channel_id, digest.ts, index, page)
        await self._store.set_digest_shown(digest_id, version)

    async def _post(
        self, item: OutboxItem, incident: Incident, digest: Digest, first: Message
    ) -> Digest:
        """Post the digest's first page, unless an earlier attempt did (then it is edited to the
        storm now like any page this process did not write)."""
        # Each incident of the storm owes the digest: an earlier attempt may have been any of
        # theirs, so the digest is looked for by its own id, not by this item's.
        posted = await self._recovery.digest_posted(incident, digest)
        if posted is None:
            await self._pacer.wait(incident.channel)
            await self._store.mark_sending(item.id, self._clock.time())
            posted = await self._slack.post_message(
                incident.channel, first, metadata=metadata(DIGEST_EVENT, item, digest=digest.id)
            )
            self._shown[(digest.id, 0)] = _fingerprint(first)
        self._pacer.same(incident.channel, posted.channel_id)
        await self._store.set_digest_posted(digest.id, posted.channel_id, posted.ts, 0)
        try:
            permalink = await self._slack.permalink(posted.channel_id, posted.ts)
            await self._store.set_digest_permalink(digest.id, permalink)
        except SlackError as exc:
            log.warning("no permalink for storm digest %s: %s", digest.id, exc)
        log.info("storm digest posted (digest=%s ts=%s)", digest.id, posted.ts)
        now = await self._store.get_digest(digest.id)
        assert now is not None
        return now

    async def _show_page(
        self, digest: Digest, channel_id: str, ts: str, index: int, page: Message
    ) -> None:
        """Edit the page if its content changed; post it in the thread if it is new."""
        shown = _fingerprint(page)
        if self._shown.get((digest.id, index)) == shown:
            return
        if index == 0:
            await self._slack.update_message(channel_id, ts, page)
        elif index - 1 < len(digest.pages):
            await self._slack.update_message(channel_id, digest.pages[index - 1], page)
        else:
            await self._post_page(digest, channel_id, ts, index, page)
        self._shown[(digest.id, index)] = shown

    async def _post_page(
        self, digest: Digest, channel_id: str, ts: str, index: int, page: Message
    ) -> None:
        carrying = {"digest": digest.id, "page": index}
        found = await self._slack.find_posted(
            channel_id,
            DIGEST_PAGE_EVENT,
            carrying,
            oldest=digest.opened_at.timestamp() - 60.0,
            thread_ts=ts,
        )
        if found is None:
            await self._pacer.wait(digest.channel)
            posted = await self._slack.post_message(
                channel_id,
                page,
                thread_ts=ts,
                metadata={"event_type": DIGEST_PAGE_EVENT, "event_payload": carrying},
            )
            found = posted.ts
        else:
            # An earlier attempt (perhaps a replica that died) posted it as the storm was then.
            await self._slack.update_message(channel_id, found, page)
        await self._store.add_digest_page(digest.id, found)
