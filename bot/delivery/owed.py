"""What the services owe Slack: the outbox entries they add, inside their own store transaction.

Every message queuebot posts or edits in a channel goes this way, whoever decided it (a
notification, a silence, diagnostics), so that exactly-once, the order of an incident's
deliveries and the per-channel pace hold for all of it. The entry is committed together with
the change that made it owed; `bot.delivery.worker` sends it and reads it back with these same
models.
"""

from __future__ import annotations

import base64
from typing import Any

from pydantic import BaseModel, ConfigDict

from bot.domain.incidents import ThreadEvent
from bot.slack.message import Message
from bot.store import OutboxKind, Transaction


class OwedMessage(BaseModel):
    """A rendered message, as the outbox keeps it."""

    model_config = ConfigDict(frozen=True)

    text: str
    blocks: list[dict[str, Any]]

    @classmethod
    def of(cls, message: Message) -> OwedMessage:
        return cls(text=message.text, blocks=message.blocks)

    def message(self) -> Message:
        return Message(text=self.text, blocks=list(self.blocks))


class NoteEdit(BaseModel):
    """Replace the note that outbox entry `note` posted (a running notice becomes a report)."""

    model_config = ConfigDict(frozen=True)

    note: int
    message: OwedMessage


class OwedFile(BaseModel):
    """A file to share in the incident's thread; its bytes are kept as base64 text."""

    model_config = ConfigDict(frozen=True)

    filename: str
    title: str
    alt_text: str
    content_base64: str

    @classmethod
    def of(cls, content: bytes, *, filename: str, title: str, alt_text: str) -> OwedFile:
        encoded = base64.b64encode(content).decode("ascii")
        return cls(filename=filename, title=title, alt_text=alt_text, content_base64=encoded)

    @property
    def content(self) -> bytes:
        return base64.b64decode(self.content_base64)


async def parent(tx: Transaction, incident_id: int) -> int:
    """The incident's parent message (rendered from the incident when it goes out)."""
    return await tx.enqueue(incident_id, OutboxKind.POST_PARENT)


async def parent_edit(tx: Transaction, incident_id: int) -> int:
    """An edit of the parent message to show the incident as it is when the edit goes out."""
    return await tx.enqueue(incident_id, OutboxKind.UPDATE_PARENT)


async def reply(tx: Transaction, incident_id: int, event: ThreadEvent) -> int:
    """One reply in the incident's thread saying what happened."""
    return await tx.enqueue(incident_id, OutboxKind.POST_REPLY, event.model_dump_json())


async def digest_update(tx: Transaction, incident_id: int) -> int:
    """The storm digest listing the incident, posted or edited to show the storm now."""
    return await tx.enqueue(incident_id, OutboxKind.UPDATE_DIGEST)


async def note(tx: Transaction, incident_id: int, message: Message) -> int:
    """A message of queuebot's own in the thread; returns the entry a `note_edit` names."""
    return await tx.enqueue(
        incident_id, OutboxKind.POST_NOTE, OwedMessage.of(message).model_dump_json()
    )


async def note_edit(tx: Transaction, incident_id: int, note_id: int, message: Message) -> int:
    """Replace the note entry `note_id` posted; posted anew if that note never made it."""
    edit = NoteEdit(note=note_id, message=OwedMessage.of(message))
    return await tx.enqueue(incident_id, OutboxKind.EDIT_NOTE, edit.model_dump_json())


async def file(tx: Transaction, incident_id: int, upload: OwedFile) -> int:
    """A file shared in the incident's thread."""
    return await tx.enqueue(incident_id, OutboxKind.POST_FILE, upload.model_dump_json())
