"""Pydantic models of the Slack requests queuebot's listeners read (parsed at the edge)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.domain.silences import Duration
from bot.slack.contract import ButtonValue, SilenceInput

log = logging.getLogger(__name__)


#: Silences longer than this are more likely a typo than a plan.
MAX_SILENCE = timedelta(days=31)


class BadSilenceInput(ValueError):
    """What is wrong with one input of the Silence… modal, said to the person filling it in."""

    def __init__(self, block: SilenceInput, message: str) -> None:
        super().__init__(message)
        self.block = block


def silence_end(choice: Duration, until: datetime | None, now: datetime) -> datetime:
    """When a silence chosen in the modal ends; BadSilenceInput names the input at fault."""
    span = choice.span
    if span is not None:
        if until is not None:
            raise BadSilenceInput(
                SilenceInput.DURATION,
                "You picked an end time: choose “Until a date and time…” here, or clear it.",
            )
        return now + span
    if until is None:
        raise BadSilenceInput(SilenceInput.UNTIL, "Pick the date and time the silence ends.")
    if until <= now:
        raise BadSilenceInput(SilenceInput.UNTIL, "That time has passed; pick one in the future.")
    if until - now > MAX_SILENCE:
        raise BadSilenceInput(SilenceInput.UNTIL, "A silence from Slack lasts at most 31 days.")
    return until


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SlackUser(_Loose):
    id: str
    username: str | None = None
    name: str | None = None


class SlackChannel(_Loose):
    id: str


class ClickedAction(_Loose):
    action_id: str
    value: str | None = None


class Container(_Loose):
    type: str
    message_ts: str | None = None
    thread_ts: str | None = None


class BlockActions(_Loose):
    """A `block_actions` payload (https://docs.slack.dev/reference/interaction-payloads/block_actions-payload)."""

    user: SlackUser
    channel: SlackChannel | None = None
    container: Container
    actions: list[ClickedAction] = Field(min_length=1)
    trigger_id: str | None = None
    response_url: str | None = None


class ModalContext(BaseModel):
    """The Silence… modal's `private_metadata`: where the click came from (ours, versioned)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    v: Literal[1] = 1
    incident: int = Field(ge=1)
    channel: str | None = None
    response_url: str | None = None
    #: `matchers_digest` of the matchers the modal showed: only those may be sent.
    shown: str | None = None

    def encode(self) -> str:
        return self.model_dump_json(exclude_none=True)


class SubmittedView(_Loose):
    id: str
    callback_id: str
    private_metadata: str = ""
    state: dict[str, Any] = Field(default_factory=dict)


class ViewSubmission(_Loose):
    """A `view_submission` payload (https://docs.slack.dev/reference/interaction-payloads/view-interactions-payload)."""

    user: SlackUser
    view: SubmittedView

    def context(self) -> ModalContext:
        """Raises ValueError when the metadata is not what queuebot put there."""
        try:
            return ModalContext.model_validate_json(self.view.private_metadata)
        except ValidationError as exc:
            raise ValueError("the modal's metadata is not queuebot's") from exc

    def entry(self, block: SilenceInput) -> dict[str, Any]:
        values = self.view.state.get("values", {})
        entry = values.get(block.value, {}).get(block.value, {}) if isinstance(values, dict) else {}
        return entry if isinstance(entry, dict) else {}


class SilenceForm(BaseModel):
    """What the person filled in: a duration choice, maybe a date and time, maybe a comment."""

    model_config = ConfigDict(frozen=True)

    duration: Duration
    until: datetime | None = None
    comment: str = Field("", max_length=2000)

    @classmethod
    def from_view(cls, submission: ViewSubmission) -> SilenceForm:
        """Raises BadSilenceInput when the inputs are malformed."""
        chosen = submission.entry(SilenceInput.DURATION).get("selected_option") or {}
        at = submission.entry(SilenceInput.UNTIL).get("selected_date_time")
        comment = submission.entry(SilenceInput.COMMENT).get("value") or ""
        try:
            return cls(
                duration=Duration(str(chosen.get("value")) if isinstance(chosen, dict) else ""),
                until=datetime.fromtimestamp(int(at), UTC) if at is not None else None,
                comment=str(comment),
            )
        except (ValueError, TypeError, OverflowError, ValidationError) as exc:
            raise BadSilenceInput(SilenceInput.DURATION, "Choose how long to silence for.") from exc


def clicked(body: dict[str, Any]) -> tuple[BlockActions, int | None] | None:
    """The click and the incident its button names (None: not a button queuebot made)."""
    try:
        payload = BlockActions.model_validate(body)
    except ValidationError:
        log.warning("block_actions payload without user or actions: %s", list(body))
        return None
    try:
        return payload, ButtonValue.decode(payload.actions[0].value or "").incident
    except ValidationError:
        log.warning("button value not made by queuebot (user=%s)", payload.user.id)
        return payload, None
