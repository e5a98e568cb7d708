"""Incidents: a group key's alerts from first firing to resolution, and what their threads say.

`Incident` is what the store keeps and the renderer shows; `ThreadEvent` is one reply owed to an
incident's thread (a change, a resolution, a silence).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from bot.domain.alerts import Alert, AlertGroup
from bot.domain.silences import Person, Silence

#: A Slack channel's id (C… public, G… older private, D… a direct message), as Slack gives it.
_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{6,}")


def is_channel_id(channel: str) -> bool:
    """Whether `channel` is a Slack channel id rather than a `#name`."""
    return _CHANNEL_ID.fullmatch(channel) is not None


class IncidentStatus(StrEnum):
    FIRING = "firing"
    RESOLVED = "resolved"


class ThreadEventKind(StrEnum):
    CHANGED = "changed"
    RESOLVED = "resolved"
    FIRED_AGAIN = "fired_again"
    SILENCED = "silenced"
    UNSILENCED = "unsilenced"
    SILENCE_ENDED = "silence_ended"


class ValueChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    alert: str
    key: str
    old: float | None
    new: float | None


class ThreadEvent(BaseModel):
    """Something worth one reply in the incident's thread."""

    model_config = ConfigDict(frozen=True)

    kind: ThreadEventKind
    at: datetime
    #: The alerts the reply speaks of, as they were when it happened (the reply may go out
    #: later, after the incident has moved on).
    group: AlertGroup
    changes: tuple[ValueChange, ...] = ()
    joined: tuple[Alert, ...] = ()
    left: tuple[Alert, ...] = ()
    summary: str | None = None
    duration: timedelta | None = None
    quiet_for: timedelta | None = None
    #: Silence events: the silence, and who lifted it (UNSILENCED).
    silence: Silence | None = None
    actor: Person | None = None
    #: Why, when the bot learnt it rather than being told (a silence expired in Grafana, an
    #: alert gone while silenced).
    note: str | None = None


class Incident(BaseModel):
    """One incident: a group key's alerts from first firing to resolution, and its Slack thread.

    `group` is the latest *firing* snapshot, so the values that fired stay visible once resolved.
    `version` counts changes of what the parent message shows; `parent_version` is the version
    the parent message in Slack shows now.
    """

    id: int
    group_key: str
    generation: int = 1
    channel: str
    channel_id: str | None = None
    parent_ts: str | None = None
    status: IncidentStatus
    group: AlertGroup
    started_at: datetime
    resolved_at: datetime | None = None
    fired_count: int = 1
    previous_id: int | None = None
    previous_link: str | None = None
    version: int = 1
    parent_version: int = 0
    silence: Silence | None = None
    #: The storm digest listing this incident instead of a parent message of its own.
    digest_id: int | None = None
    #: A link to the parent message (its thread), stored when it was posted.
    permalink: str | None = None

    @property
    def duration(self) -> timedelta | None:
        """How long the last firing lasted (from its start, not the incident's first)."""
        if self.resolved_at is None:
            return None
        return max(self.resolved_at - self.group.started_at, timedelta(0))
