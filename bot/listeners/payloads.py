"""Pydantic models of the Slack requests queuebot's listeners read (parsed at the edge)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SlackUser(_Loose):
    id: str


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
