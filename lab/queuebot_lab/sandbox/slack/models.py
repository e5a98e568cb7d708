"""The sandbox workspace's records: users, user groups, channels, messages, files, views, calls.

Plain dataclasses; `PostedMessage.to_slack()` gives the shape Slack puts into API answers and
interaction payloads, `UserGroup.to_slack()` the usergroup object of usergroups.list.
"""

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

JSON = dict[str, Any]


@dataclass
class User:
    id: str
    name: str
    real_name: str = ""
    is_bot: bool = False


@dataclass
class UserGroup:
    """A user group (Slack's "subteam"), mentioned as @handle.

    Disabling keeps the group and its members but stamps `date_delete`: "When a User Group has
    been disabled its date_delete parameter will be non-zero"
    (https://docs.slack.dev/reference/methods/usergroups.disable).
    """

    id: str
    team_id: str
    handle: str
    name: str
    users: list[str] = field(default_factory=list)
    date_create: int = 0
    date_delete: int = 0
    created_by: str = ""
    deleted_by: str | None = None

    @property
    def is_disabled(self) -> bool:
        return self.date_delete != 0

    def to_slack(self, include_users: bool = False, include_count: bool = False) -> JSON:
        """The usergroup object; `users` and `user_count` only when asked for, as Slack does."""
        out: JSON = {
            "id": self.id,
            "team_id": self.team_id,
            "is_usergroup": True,
            "is_subteam": True,
            "name": self.name,
            "description": "",
            "handle": self.handle,
            "is_external": False,
            "date_create": self.date_create,
            "date_update": self.date_delete or self.date_create,
            "date_delete": self.date_delete,
            "auto_type": None,
            "created_by": self.created_by,
            "updated_by": self.deleted_by or self.created_by,
            "deleted_by": self.deleted_by,
            "prefs": {"channels": [], "groups": []},
        }
        if include_users:
            out["users"] = list(self.users)
        if include_count:
            out["user_count"] = len(self.users)
        return out


@dataclass
class Channel:
    id: str
    name: str
    members: set[str] = field(default_factory=set)
    is_private: bool = False
    #: Archived channels take no messages; only incoming webhooks look at this so far.
    is_archived: bool = False


@dataclass
class MessageVersion:
    """One state of a message; the first is as posted, later ones are edits."""

    text: str
    blocks: list[JSON]
    edited_ts: str | None = None


@dataclass
class PostedMessage:
    channel: str
    ts: str
    user: str
    text: str
    blocks: list[JSON] = field(default_factory=list)
    bot_id: str | None = None
    app_id: str | None = None
    team: str = ""
    #: The parent's ts for a reply; the message's own ts for a parent that has replies.
    thread_ts: str | None = None
    parent_user_id: str | None = None
    metadata: JSON | None = None
    #: Shared files as Slack lists them in a message: id, name, title.
    files: list[JSON] = field(default_factory=list)
    #: Legacy secondary attachments, as an incoming webhook posted them.
    attachments: list[JSON] = field(default_factory=list)
    reply_ts: list[str] = field(default_factory=list)
    versions: list[MessageVersion] = field(default_factory=list)
    edited_by: str | None = None
    deleted: bool = False
    #: A reply posted with reply_broadcast: shown in the channel too.
    broadcast: bool = False
    #: A reply whose thread_ts named no message: Slack accepts it and shows it nowhere.
    orphan: bool = False

    @property
    def is_reply(self) -> bool:
        return self.thread_ts is not None and self.thread_ts != self.ts

    def to_slack(self) -> JSON:
        """The message as Slack returns it (chat.postMessage `message`, block_actions `message`)."""
        out: JSON = {"type": "message", "ts": self.ts, "user": self.user, "text": self.text}
        if self.team:
            out["team"] = self.team
        if self.bot_id:
            out["bot_id"] = self.bot_id
            out["app_id"] = self.app_id
        if self.blocks:
            out["blocks"] = self.blocks
        if self.thread_ts:
            out["thread_ts"] = self.thread_ts
        if self.is_reply and self.parent_user_id:
            out["parent_user_id"] = self.parent_user_id
        if self.broadcast:
            out["subtype"] = "thread_broadcast"
        if self.reply_ts:
            out["reply_count"] = len(self.reply_ts)
            out["latest_reply"] = self.reply_ts[-1]
        if self.metadata:
            out["metadata"] = self.metadata
        if self.files:
            out["files"] = self.files
        if self.attachments:
            out["attachments"] = self.attachments
            out["upload"] = True
        if len(self.versions) > 1:
            out["edited"] = {"user": self.edited_by, "ts": self.versions[-1].edited_ts}
        return out


@dataclass
class Ephemeral:
    """A message only `user` sees; Slack gives it a ts but no API reads it back."""

    channel: str
    user: str
    ts: str
    text: str
    blocks: list[JSON] = field(default_factory=list)
    thread_ts: str | None = None
    deleted: bool = False
    versions: list[MessageVersion] = field(default_factory=list)

    def to_slack(self) -> JSON:
        out: JSON = {"type": "message", "ts": self.ts, "text": self.text, "blocks": self.blocks}
        if self.thread_ts:
            out["thread_ts"] = self.thread_ts
        return out


@dataclass
class SandboxFile:
    id: str
    filename: str
    length: int
    user: str
    title: str | None = None
    alt_txt: str | None = None
    content: bytes | None = None
    completed: bool = False
    channel: str | None = None
    thread_ts: str | None = None
    initial_comment: str | None = None


class ViewState(StrEnum):
    OPEN = "open"
    CLOSED = "closed"


@dataclass
class OpenView:
    id: str
    user: str
    view: JSON
    hash: str
    external_id: str | None = None
    state: ViewState = ViewState.OPEN
    #: What the app answered to the last view_submission with response_action "errors".
    errors: dict[str, str] = field(default_factory=dict)
    history: list[JSON] = field(default_factory=list)

    def to_slack(self, team_id: str, app_id: str, bot_id: str) -> JSON:
        """The view object Slack returns from views.open/update and sends in view_submission."""
        return {
            "id": self.id,
            "team_id": team_id,
            "type": self.view.get("type", "modal"),
            "blocks": self.view.get("blocks", []),
            "private_metadata": self.view.get("private_metadata", ""),
            "callback_id": self.view.get("callback_id", ""),
            "external_id": self.external_id or "",
            "state": {"values": {}},
            "hash": self.hash,
            "title": self.view.get("title"),
            "close": self.view.get("close"),
            "submit": self.view.get("submit"),
            "clear_on_close": bool(self.view.get("clear_on_close", False)),
            "notify_on_close": bool(self.view.get("notify_on_close", False)),
            "previous_view_id": None,
            "root_view_id": self.id,
            "app_id": app_id,
            "app_installed_team_id": team_id,
            "bot_id": bot_id,
        }


@dataclass
class Trigger:
    id: str
    user: str
    issued_at: float
    used: bool = False


@dataclass
class ResponseTarget:
    """A response_url handed to the app, and what it may act on."""

    id: str
    channel: str
    user: str
    created_at: float
    #: The message the interaction came from (block_actions); None for slash commands.
    source_ts: str | None = None
    source_ephemeral: bool = False
    uses: int = 0


@dataclass
class ResponsePost:
    target: str
    body: JSON
    status: int
    outcome: str


@dataclass
class CallRecord:
    """One Web API call as the sandbox received and answered it."""

    method: str
    params: JSON
    status: int
    received_at: float
    ok: bool
    error: str | None = None
    http_verb: str = "POST"
