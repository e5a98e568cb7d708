"""After an attempt whose outcome is unknown, what Slack already holds.

Each post carries its outbox id in the message metadata (a shared file carries it in its name),
and the time of every attempt is stored before the call. When an attempt's answer was lost, or
the bot died before storing it, the next attempt first looks for that id in the channel or the
thread (conversations.history/replies) and adopts what it finds instead of posting again:
delivered once. Only when the channel's id is not known yet (the very first post to a channel
named by `#name`), or the bot may not read history, does a retry send again.
"""

from __future__ import annotations

import logging

from bot.domain.incidents import Incident, is_channel_id
from bot.slack.errors import SlackAuthError, SlackChannelError
from bot.slack.gateway import Posted, SlackGateway
from bot.store import Digest, OutboxItem, Store

log = logging.getLogger(__name__)

#: Message metadata event types: a parent, a thread reply, a storm digest.
PARENT_EVENT = "queuebot_incident"
REPLY_EVENT = "queuebot_reply"
DIGEST_EVENT = "queuebot_digest"
#: Slack's clock and ours may differ a little; look this much before the attempt.
CLOCK_SLACK_SECONDS = 5.0


async def known_channel_id(store: Store, channel: str) -> str | None:
    """The Slack id of `channel` (an id already, or a `#name` queuebot has posted to), or None
    when it is not known yet."""
    if is_channel_id(channel):
        return channel
    return await store.channel_id_for(channel)


def metadata(event_type: str, item: OutboxItem, **payload: int) -> dict[str, object]:
    """What a post carries so that a retry can find it."""
    return {"event_type": event_type, "event_payload": {**payload, "outbox": item.id}}


def file_name(item: OutboxItem, filename: str) -> str:
    """A shared file's name with its outbox id in it (`queue.png` → `queue-42.png`)."""
    stem, dot, suffix = filename.rpartition(".")
    return f"{stem}-{item.id}.{suffix}" if dot else f"{filename}-{item.id}"


class Recovery:
    def __init__(self, store: Store, slack: SlackGateway) -> None:
        self._store = store
        self._slack = slack

    async def channel_id(self, incident: Incident) -> str | None:
        """The channel's Slack id, when known: from the incident, its name, or an earlier post."""
        if incident.channel_id:
            return incident.channel_id
        return await known_channel_id(self._store, incident.channel)

    async def posted(
        self, item: OutboxItem, incident: Incident, event_type: str, thread_ts: str | None = None
    ) -> Posted | None:
        """The message an earlier attempt of `item` may have left in the channel (or in the
        thread `thread_ts`); None when there is none and the item should be sent."""
        if item.sent_at is None:
            return None
        channel_id = (incident.channel_id if thread_ts else None) or await self.channel_id(incident)
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
                channel_id,
                event_type,
                {"outbox": item.id},
                oldest=item.sent_at - CLOCK_SLACK_SECONDS,
                thread_ts=thread_ts,
            )
        except (SlackAuthError, SlackChannelError) as exc:
            # Without channels:history the bot cannot look; it sends again (at least once).
            log.warning("cannot check whether Slack took item %s before: %s", item.id, exc)
            return None
        return self._found(item, incident, channel_id, ts)

    async def digest_posted(self, incident: Incident, digest: Digest) -> Posted | None:
        """The storm digest an earlier attempt (for any of its incidents) may have posted."""
        channel_id = await self.channel_id(incident)
        if channel_id is None:
            return None
        try:
            ts = await self._slack.find_posted(
                channel_id,
                DIGEST_EVENT,
                {"digest": digest.id},
                oldest=digest.opened_at.timestamp() - CLOCK_SLACK_SECONDS,
            )
        except (SlackAuthError, SlackChannelError) as exc:
            log.warning("cannot check whether Slack took digest %s before: %s", digest.id, exc)
            return None
        if ts is None:
            return None
        log.info("Slack already had storm digest %s (ts=%s); not posted again", digest.id, ts)
        return Posted(channel_id=channel_id, ts=ts)

    async def shared(self, item: OutboxItem, incident: Incident, filename: str) -> Posted | None:
        """The file share an earlier attempt of `item` may have left in the thread."""
        if item.sent_at is None:
            return None
        assert incident.channel_id and incident.parent_ts
        try:
            ts = await self._slack.find_shared_file(
                incident.channel_id,
                incident.parent_ts,
                filename,
                oldest=item.sent_at - CLOCK_SLACK_SECONDS,
            )
        except (SlackAuthError, SlackChannelError) as exc:
            log.warning("cannot check whether Slack took file %s before: %s", filename, exc)
            return None
        return self._found(item, incident, incident.channel_id, ts)

    @staticmethod
    def _found(
        item: OutboxItem, incident: Incident, channel_id: str, ts: str | None
    ) -> Posted | None:
        if ts is None:
            return None
        log.info(
            "Slack already had item %s (incident=%s ts=%s); not sent again",
            item.id,
            incident.id,
            ts,
        )
        return Posted(channel_id=channel_id, ts=ts)
