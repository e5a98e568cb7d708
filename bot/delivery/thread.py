"""Writing an incident's own messages: the parent, its edits, and everything in its thread.

The parent is rendered from the incident as it is when it goes out, so several edits owed at
once become one `chat.update`; its permalink is stored with it, once, for whoever links to the
thread later. Replies, notes and files go into the parent's thread, paced per channel, each
found again rather than sent twice after an attempt whose outcome is unknown
(`bot.delivery.recovery`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from bot.delivery.owed import NoteEdit, OwedFile, OwedMessage
from bot.delivery.pacing import Pacer
from bot.delivery.recovery import PARENT_EVENT, REPLY_EVENT, Recovery, file_name, metadata
from bot.domain.clock import SYSTEM, Clock
from bot.domain.incidents import Incident, ThreadEvent
from bot.render.renderer import Renderer
from bot.slack.errors import SlackError, SlackMessageGone
from bot.slack.gateway import Posted, SlackGateway
from bot.slack.message import Message
from bot.store import OutboxItem, Store

log = logging.getLogger(__name__)


class ThreadWriter:
    """Delivers one outbox item of an incident that has (or is about to have) a parent."""

    def __init__(
        self,
        store: Store,
        slack: SlackGateway,
        renderer: Renderer,
        pacer: Pacer,
        recovery: Recovery,
        *,
        on_parent_posted: Callable[[Incident], None] | None = None,
        clock: Clock = SYSTEM,
    ) -> None:
        self._store = store
        self._clock = clock
        self._slack = slack
        self._renderer = renderer
        self._pacer = pacer
        self._recovery = recovery
        self._on_parent_posted = on_parent_posted

    async def post_parent(self, item: OutboxItem, incident: Incident) -> Incident:
        """Post the parent message unless it is there; the incident as now posted."""
        if incident.parent_ts and incident.channel_id:
            return incident
        link = await self._previous_link(incident)
        shown = incident.model_copy(update={"previous_link": link})
        posted = await self._recovery.posted(item, incident, PARENT_EVENT)
        if posted is None:
            await self._pacer.wait(incident.channel)
            await self._store.mark_sending(item.id, self._clock.time())
            posted = await self._slack.post_message(
                incident.channel,
                self._renderer.incident(shown),
                metadata=metadata(PARENT_EVENT, item, incident=incident.id),
            )
        self._pacer.same(incident.channel, posted.channel_id)
        await self._store.set_parent(
            incident.id, posted.channel_id, posted.ts, incident.version, link
        )
        permalink = await self._permalink(posted, incident.id)
        if permalink is not None:
            await self._store.set_permalink(incident.id, permalink)
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
                "permalink": permalink,
            }
        )
        if self._on_parent_posted is not None:
            self._on_parent_posted(posted_incident)
        return posted_incident

    async def update_parent(self, item: OutboxItem, incident: Incident) -> None:
        if incident.parent_version >= incident.version:
            return  # the parent already shows this state
        if await self._store.has_later_update(incident.id, item.id):
            return  # a later edit will show it all at once
        assert incident.channel_id and incident.parent_ts
        await self._slack.update_message(
            incident.channel_id, incident.parent_ts, self._renderer.incident(incident)
        )
        await self._store.set_parent_version(incident.id, incident.version)
        if incident.permalink is None:
            # Slack did not give it when the parent was posted; ask again while here.
            posted = Posted(incident.channel_id, incident.parent_ts)
            if permalink := await self._permalink(posted, incident.id):
                await self._store.set_permalink(incident.id, permalink)

    async def reply(self, item: OutboxItem, incident: Incident, event: ThreadEvent) -> str:
        return await self._in_thread(item, incident, self._renderer.thread_event(event))

    async def note(self, item: OutboxItem, incident: Incident, owed: OwedMessage) -> str:
        return await self._in_thread(item, incident, owed.message())

    async def note_edit(self, item: OutboxItem, incident: Incident, edit: NoteEdit) -> str:
        """Edit the note in place; post it anew when that note never made it or is gone."""
        assert incident.channel_id
        ts = await self._store.posted_ts(edit.note)
        if ts is not None:
            try:
                await self._slack.update_message(incident.channel_id, ts, edit.message.message())
                return ts
            except SlackMessageGone:
                log.info("note %s is gone from Slack; posting its edit anew", edit.note)
        return await self._in_thread(item, incident, edit.message.message())

    async def file(self, item: OutboxItem, incident: Incident, upload: OwedFile) -> str:
        assert incident.channel_id and incident.parent_ts
        name = file_name(item, upload.filename)
        found = await self._recovery.shared(item, incident, name)
        if found is not None:
            return found.ts
        await self._pacer.wait(incident.channel)
        await self._store.mark_sending(item.id, self._clock.time())
        await self._slack.upload_file(
            incident.channel_id,
            upload.content,
            filename=name,
            title=upload.title,
            alt_text=upload.alt_text,
            thread_ts=incident.parent_ts,
        )
        return ""

    async def _in_thread(self, item: OutboxItem, incident: Incident, message: Message) -> str:
        assert incident.channel_id and incident.parent_ts
        found = await self._recovery.posted(item, incident, REPLY_EVENT, incident.parent_ts)
        if found is not None:
            return found.ts
        await self._pacer.wait(incident.channel)
        await self._store.mark_sending(item.id, self._clock.time())
        posted = await self._slack.post_message(
            incident.channel_id,
            message,
            thread_ts=incident.parent_ts,
            metadata=metadata(REPLY_EVENT, item, incident=incident.id),
        )
        return posted.ts

    async def _previous_link(self, incident: Incident) -> str | None:
        if incident.previous_id is None:
            return None
        previous = await self._store.get_incident(incident.previous_id)
        return previous.permalink if previous is not None else None

    async def _permalink(self, posted: Posted, incident_id: int) -> str | None:
        try:
            return await self._slack.permalink(posted.channel_id, posted.ts)
        except SlackError as exc:
            log.warning("no permalink for incident %s: %s", incident_id, exc)
            return None
