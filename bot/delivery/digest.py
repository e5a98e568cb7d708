"""Writing a storm digest: one message listing the incidents of an alert storm, kept current.

The digest is posted once, then edited to show the storm now, at most one edit every
DIGEST_EDIT_SECONDS (chat.update allows about 50 a minute), each edit showing everything that
happened meanwhile. Past its first page the list continues in thread replies; only the pages
whose content changed are edited. A page posted by an attempt whose outcome is unknown is found
by the digest and page number it carries rather than posted twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import uuid

from bot.delivery.pacing import Pacer
from bot.delivery.recovery import DIGEST_EVENT, Recovery, metadata
from bot.domain.incidents import Incident
from bot.render.renderer import Renderer
from bot.slack.errors import SlackError
from bot.slack.gateway import SlackGateway
from bot.slack.message import Message
from bot.store import Digest, OutboxItem, Store

log = logging.getLogger(__name__)

#: A storm digest is edited at most this often (chat.update allows about 50 a minute).
DIGEST_EDIT_SECONDS = 3.0
#: Thread replies continuing a digest carry this event type, the digest and the page number.
DIGEST_PAGE_EVENT = "queuebot_digest_page"


def _fingerprint(message: Message) -> str:
    return hashlib.sha256(json.dumps(message.blocks, sort_keys=True).encode()).hexdigest()


#: How long a worker may take to post a storm's digest before another may try (it looks for
#: the first's message in the channel before posting).
POST_CLAIM = 30.0
CLAIM_POLL_SECONDS = 0.5


class DigestWriter:
    def __init__(
        self,
        store: Store,
        slack: SlackGateway,
        renderer: Renderer,
        pacer: Pacer,
        recovery: Recovery,
    ) -> None:
        self._store = store
        self._slack = slack
        self._renderer = renderer
        self._pacer = pacer
        self._recovery = recovery
        self._locks: dict[int, asyncio.Lock] = {}
        self._edited: dict[int, float] = {}
        self._owner = uuid.uuid4().hex
        #: What each digest page shows now, so an edit goes only to pages that changed.
        self._shown: dict[tuple[int, int], str] = {}

    async def update(self, item: OutboxItem, incident: Incident, digest_id: int) -> None:
        """Post the storm digest, or edit it to show the storm now."""
        async with self._locks.setdefault(digest_id, asyncio.Lock()):
            digest = await self._store.get_digest(digest_id)
            if digest is None or (digest.ts and digest.shown_version >= digest.version):
                return
            if digest.ts and digest.channel_id:
                pause = self._edited.get(digest_id, 0.0) + DIGEST_EDIT_SECONDS
                await asyncio.sleep(max(0.0, pause - time.monotonic()))
                digest = await self._store.get_digest(digest_id)
                assert digest is not None and digest.ts and digest.channel_id
                if digest.shown_version >= digest.version:
                    return
            version = digest.version  # what the members read next show, at least
            members = await self._store.digest_members(digest_id)
            pages = self._renderer.digest(digest.opened_at, members)
            if not (digest.ts and digest.channel_id):
                digest = await self._post_once(item, incident, digest, members, pages[0])
            assert digest.ts and digest.channel_id
            await self._show_pages(digest, digest.channel_id, digest.ts, pages)
            await self._store.set_digest_shown(digest_id, version)
            self._edited[digest_id] = time.monotonic()

    async def _post_once(
        self,
        item: OutboxItem,
        incident: Incident,
        digest: Digest,
        members: list[Incident],
        first: Message,
    ) -> Digest:
        """Post the digest unless another worker (on any replica) is posting it: each of the
        storm's incidents owes the digest, and replicas deliver different incidents side by
        side. The claim is held on the digest's first incident, which every worker names the
        same; a worker that dies holding it lets it lapse."""
        key = min((m.id for m in members), default=incident.id)
        purpose = f"digest-post:{digest.id}"
        while not await self._store.claim(key, purpose, self._owner, time.time() + POST_CLAIM):
            await asyncio.sleep(CLAIM_POLL_SECONDS)
            posted = await self._store.get_digest(digest.id)
            if posted is not None and posted.ts and posted.channel_id:
                return posted
        try:
            posted = await self._store.get_digest(digest.id)
            if posted is not None and posted.ts and posted.channel_id:
                return posted
            return await self._post(item, incident, digest, first)
        finally:
            await self._store.release(key, purpose, self._owner)

    async def _post(
        self, item: OutboxItem, incident: Incident, digest: Digest, first: Message
    ) -> Digest:
        # Each incident of the storm owes the digest: an earlier attempt may have been any of
        # theirs, so the digest is looked for by its own id, not by this item's.
        posted = await self._recovery.digest_posted(incident, digest)
        if posted is None:
            await self._pacer.wait(incident.channel)
            await self._store.mark_sending(item.id, time.time())
            posted = await self._slack.post_message(
                incident.channel, first, metadata=metadata(DIGEST_EVENT, item, digest=digest.id)
            )
        self._pacer.same(incident.channel, posted.channel_id)
        await self._store.set_digest_posted(digest.id, posted.channel_id, posted.ts, 0)
        try:
            permalink = await self._slack.permalink(posted.channel_id, posted.ts)
            await self._store.set_digest_permalink(digest.id, permalink)
        except SlackError as exc:
            log.warning("no permalink for storm digest %s: %s", digest.id, exc)
        log.info("storm digest posted (digest=%s ts=%s)", digest.id, posted.ts)
        self._shown[(digest.id, 0)] = _fingerprint(first)
        now = await self._store.get_digest(digest.id)
        assert now is not None
        return now

    async def _show_pages(
        self, digest: Digest, channel_id: str, ts: str, pages: list[Message]
    ) -> None:
        """Edit the pages whose content changed; post the pages that are new, in the thread."""
        for index, page in enumerate(pages):
            shown = _fingerprint(page)
            if self._shown.get((digest.id, index)) == shown:
                continue
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
