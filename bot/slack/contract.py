"""The contract between what queuebot renders and what its listeners receive: action and
callback ids, the modal's input ids, button values and the slash command.

Templates, renderers and listener registration all take them from here, so an id is written down
exactly once.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ActionId(StrEnum):
    """`action_id` of every interactive element queuebot puts into a message."""

    RUN_DIAGNOSTICS = "queuebot_run_diagnostics"
    SILENCE = "queuebot_silence"
    UNSILENCE = "queuebot_unsilence"
    OPEN_RUNBOOK = "queuebot_open_runbook"
    VIEW_ALERT = "queuebot_view_alert"
    OPEN_DASHBOARD = "queuebot_open_dashboard"
    SHARE_STATUS = "queuebot_share_status"
    #: On a heads-up: the runner type's `/queue-status` detail, for the clicker.
    SHOW_QUEUE = "queuebot_show_queue"


class CallbackId(StrEnum):
    """`callback_id` of every modal queuebot opens."""

    SILENCE_MODAL = "queuebot_silence_modal"


class SilenceInput(StrEnum):
    """`block_id`s of the Silence… modal's inputs, and their elements' `action_id`s too
    (action ids must not repeat within a view)."""

    DURATION = "silence_duration"
    UNTIL = "silence_until"
    COMMENT = "silence_comment"


#: The slash command declared in manifest.yml.
QUEUE_STATUS_COMMAND = "/queue-status"


class ButtonValue(BaseModel):
    """What a button carries: a version and the incident id, nothing the handler must trust."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    v: Literal[1] = 1
    #: A store row id: a signed 64-bit integer on both backends.
    incident: int = Field(ge=1, le=2**63 - 1)

    def encode(self) -> str:
        return self.model_dump_json()

    @classmethod
    def decode(cls, raw: str) -> ButtonValue:
        """Raises pydantic.ValidationError for a value queuebot did not make."""
        return cls.model_validate_json(raw)
