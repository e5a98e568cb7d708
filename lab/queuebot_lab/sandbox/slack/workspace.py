"""The sandbox's workspace state and the Slack rules that govern changing it.

Owns the team, the bot, users, user groups, channels, messages and threads, ephemerals, files,
views, trigger ids and response URLs. Operations raise `WebApiError` with Slack's error names.
"""

import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from queuebot_lab.sandbox.slack.models import (
    JSON,
    CallRecord,
    Channel,
    Ephemeral,
    MessageVersion,
    OpenView,
    PostedMessage,
    ResponsePost,
    ResponseTarget,
    SandboxFile,
    Trigger,
    User,
    UserGroup,
)

#: Slack: "trigger_id ... expires in 3 seconds" (https://docs.slack.dev/surfaces/modals).
TRIGGER_TTL = 3.0
#: Slack: a response_url works "up to 5 times within 30 minutes"
#: (https://docs.slack.dev/interactivity/handling-user-interaction#message_responses).
RESPONSE_URL_USES = 5
RESPONSE_URL_TTL = 30 * 60.0
#: The system user Slack names as creator of groups no person made (usergroups.list example,
#: https://docs.slack.dev/reference/methods/usergroups.list).
SLACKBOT_USER = "USLACKBOT"


class WebApiError(Exception):
    """A refusal in Slack's words: `{"ok": false, "error": <error>, **extra}` with `status`."""

    def __init__(self, error: str, status: int = 200, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.status = status
        self.extra = extra

    def body(self) -> JSON:
        return {"ok": False, "error": self.error, **self.extra}


@dataclass(frozen=True)
class Identity:
    team_id: str
    team_name: str
    team_domain: str
    bot_user_id: str
    bot_id: str
    app_id: str
    bot_token: str
    app_token: str | None
    scopes: tuple[str, ...]


class Workspace:
    """All state of one sandbox workspace. Not thread-safe; lives on one event loop."""

    def __init__(
        self,
        identity: Identity,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.identity = identity
        self.clock = clock
        self.monotonic = monotonic
        self.users: dict[str, User] = {}
        self.usergroups: dict[str, UserGroup] = {}
        self.channels: dict[str, Channel] = {}
        self.messages: dict[str, dict[str, PostedMessage]] = {}
        self.ephemerals: list[Ephemeral] = []
        self.files: dict[str, SandboxFile] = {}
        self.views: dict[str, OpenView] = {}
        self.triggers: dict[str, Trigger] = {}
        self.responses: dict[str, ResponseTarget] = {}
        self.response_posts: list[ResponsePost] = []
        self.calls: list[CallRecord] = []
        self._last_ts_us = 0
        self._serial = 0
        self.add_user(identity.bot_user_id, "queuebot", "queuebot", is_bot=True)

    # -- people and places ---------------------------------------------------------------------

    def add_user(self, user_id: str, name: str, real_name: str = "", is_bot: bool = False) -> User:
        user = User(user_id, name, real_name or name, is_bot)
        self.users[user_id] = user
        return user

    def add_usergroup(
        self,
        handle: str,
        users: Iterable[str] = (),
        usergroup_id: str | None = None,
        name: str | None = None,
    ) -> UserGroup:
        handle = handle.lstrip("@")
        group = UserGroup(
            id=usergroup_id or self.new_id("S"),
            team_id=self.identity.team_id,
            handle=handle,
            name=name or handle,
            users=list(dict.fromkeys(users)),
            date_create=int(self.clock()),
            created_by=SLACKBOT_USER,
        )
        self.usergroups[group.id] = group
        return group

    def usergroup(self, usergroup_id: str, include_disabled: bool = False) -> UserGroup:
        """The group `usergroup_id` names; a disabled one only when `include_disabled`."""
        group = self.usergroups.get(usergroup_id)
        if group is None or (group.is_disabled and not include_disabled):
            # https://docs.slack.dev/reference/methods/usergroups.users.list documents
            # no_such_subteam for an unknown ID and no error of its own for a disabled group
            # asked for without include_disabled; the sandbox treats such a group as not found.
            raise WebApiError("no_such_subteam")
        return group

    def disable_usergroup(self, usergroup_id: str, by_user: str = SLACKBOT_USER) -> UserGroup:
        group = self.usergroup(usergroup_id, include_disabled=True)
        if not group.is_disabled:
            group.date_delete = max(int(self.clock()), 1)
            group.deleted_by = by_user
        return group

    def add_channel(
        self, name: str, channel_id: str | None = None, members: Iterable[str] = ()
    ) -> Channel:
        channel = Channel(channel_id or self.new_id("C"), name.lstrip("#"), set(members))
        self.channels[channel.id] = channel
        self.messages.setdefault(channel.id, {})
        return channel

    def channel(self, ref: str, by_name: bool = True) -> Channel:
        """The channel `ref` names: an ID, or (where Slack allows it) a name with or without '#'."""
        if ref in self.channels:
            return self.channels[ref]
        if by_name:
            name = ref.removeprefix("#")
            for channel in self.channels.values():
                if channel.name == name:
                    return channel
        raise WebApiError("channel_not_found")

    # -- ids -----------------------------------------------------------------------------------

    def new_id(self, prefix: str) -> str:
        self._serial += 1
        return f"{prefix}0SBX{self._serial:06d}"

    def next_ts(self) -> str:
        """A message ts: microseconds since the epoch, unique and strictly increasing."""
        now_us = int(self.clock() * 1_000_000)
        self._last_ts_us = max(now_us, self._last_ts_us + 1)
        seconds, micros = divmod(self._last_ts_us, 1_000_000)
        return f"{seconds}.{micros:06d}"

    # -- messages ------------------------------------------------------------------------------

    def check_slack_files(self, blocks: list[JSON] | None) -> None:
        """Image blocks may show an uploaded image by `slack_file` id or URL: it must be a
        png, jpg or gif upload that finished (Slack refuses the message otherwise,
        https://docs.slack.dev/reference/block-kit/composition-objects/slack-file-object)."""
        for block in blocks or []:
            file_ref = block.get("slack_file") if block.get("type") == "image" else None
            if not isinstance(file_ref, dict):
                continue
            if ("id" in file_ref) == ("url" in file_ref):
                raise WebApiError("invalid_blocks", errors=["slack_file needs one of id or url"])
            wanted = str(file_ref.get("id") or file_ref.get("url") or "")
            # A url is url_private or a permalink; both name the file id after the team id.
            found = next(
                (f for f in self.files.values() if wanted == f.id or f"-{f.id}/" in wanted), None
            )
            if found is None or not found.completed:
                raise WebApiError("invalid_blocks", errors=[f"invalid slack file: {wanted}"])
            if not found.filename.lower().endswith((".png", ".jpg", ".jpeg", ".gif")):
                raise WebApiError("invalid_blocks", errors=[f"slack file is no image: {wanted}"])

    def find(self, channel_id: str, ts: str) -> PostedMessage | None:
        message = self.messages.get(channel_id, {}).get(ts)
        return None if message is None or message.deleted else message

    def top_level(self, channel_id: str) -> list[PostedMessage]:
        return [
            m
            for m in self.messages.get(channel_id, {}).values()
            if not m.deleted and not m.orphan and (not m.is_reply or m.broadcast)
        ]

    def replies(self, channel_id: str, ts: str) -> list[PostedMessage]:
        parent = self.find(channel_id, ts)
        if parent is None:
            return []
        found = (self.find(channel_id, reply_ts) for reply_ts in parent.reply_ts)
        return [m for m in found if m is not None]

    def post(
        self,
        channel: Channel,
        user: str,
        text: str,
        blocks: list[JSON],
        thread_ts: str | None = None,
        metadata: JSON | None = None,
        files: list[JSON] | None = None,
        broadcast: bool = False,
    ) -> PostedMessage:
        """Store a new message, filing a reply under the thread's root as Slack does."""
        bot = user == self.identity.bot_user_id
        message = PostedMessage(
            channel=channel.id,
            ts=self.next_ts(),
            user=user,
            text=text,
            blocks=with_block_ids(blocks),
            bot_id=self.identity.bot_id if bot else None,
            app_id=self.identity.app_id if bot else None,
            team=self.identity.team_id,
            metadata=metadata,
            files=list(files or []),
        )
        message.versions.append(MessageVersion(message.text, message.blocks))
        if thread_ts:
            parent = self.find(channel.id, thread_ts)
            if parent is not None and parent.is_reply and parent.thread_ts:
                # A reply's ts as thread_ts lands in the same thread (docs: "avoid using a
                # reply's ts value; use its parent instead").
                parent = self.find(channel.id, parent.thread_ts)
            if parent is None:
                # Slack accepts a thread_ts that names no message and shows the reply nowhere
                # (slackapi/python-slack-sdk#840).
                message.thread_ts, message.orphan = thread_ts, True
            else:
                message.thread_ts = parent.thread_ts = parent.ts
                message.parent_user_id = parent.user
                message.broadcast = broadcast
                parent.reply_ts.append(message.ts)
        self.messages.setdefault(channel.id, {})[message.ts] = message
        return message

    def update(
        self, message: PostedMessage, text: str, blocks: list[JSON], by_user: str
    ) -> PostedMessage:
        message.text = text
        message.blocks = with_block_ids(blocks)
        message.edited_by = by_user
        message.versions.append(MessageVersion(text, message.blocks, self.next_ts()))
        return message

    def post_ephemeral(
        self, channel: Channel, user: str, text: str, blocks: list[JSON], thread_ts: str | None
    ) -> Ephemeral:
        ephemeral = Ephemeral(channel.id, user, self.next_ts(), text, with_block_ids(blocks))
        ephemeral.thread_ts = thread_ts
        ephemeral.versions.append(MessageVersion(text, ephemeral.blocks))
        self.ephemerals.append(ephemeral)
        return ephemeral

    def find_ephemeral(self, channel_id: str, ts: str) -> Ephemeral | None:
        for ephemeral in self.ephemerals:
            if ephemeral.channel == channel_id and ephemeral.ts == ts and not ephemeral.deleted:
                return ephemeral
        return None

    # -- triggers and response URLs --------------------------------------------------------------

    def issue_trigger(self, user: str) -> Trigger:
        # Slack's format: "132456.7890123.abcdef" (views.open invalid_trigger_id).
        trigger_id = f"{int(self.clock())}.{self._serial + 1}.{secrets.token_hex(16)}"
        self._serial += 1
        trigger = Trigger(trigger_id, user, self.monotonic())
        self.triggers[trigger_id] = trigger
        return trigger

    def exchange_trigger(self, trigger_id: str) -> Trigger:
        trigger = self.triggers.get(trigger_id)
        if trigger is None:
            raise WebApiError("invalid_trigger_id")
        if trigger.used:
            raise WebApiError("exchanged_trigger_id")
        if self.monotonic() - trigger.issued_at > TRIGGER_TTL:
            raise WebApiError("expired_trigger_id")
        trigger.used = True
        return trigger

    def issue_response_url(
        self, channel: str, user: str, source_ts: str | None = None, ephemeral: bool = False
    ) -> ResponseTarget:
        target = ResponseTarget(
            secrets.token_urlsafe(18), channel, user, self.monotonic(), source_ts, ephemeral
        )
        self.responses[target.id] = target
        return target

    def use_response_url(self, target_id: str) -> ResponseTarget:
        target = self.responses.get(target_id)
        if target is None:
            raise WebApiError("invalid_url", status=404)
        expired = self.monotonic() - target.created_at > RESPONSE_URL_TTL
        if expired or target.uses >= RESPONSE_URL_USES:
            raise WebApiError("expired_url", status=404)
        target.uses += 1
        return target

    # -- views -----------------------------------------------------------------------------------

    def open_view(self, user: str, view: JSON) -> OpenView:
        external_id = view.get("external_id") or None
        if external_id and any(v.external_id == external_id for v in self.views.values()):
            raise WebApiError("duplicate_external_id")
        opened = OpenView(self.new_id("V"), user, view, self.new_hash(), external_id)
        self.views[opened.id] = opened
        return opened

    def new_hash(self) -> str:
        return f"{int(self.clock())}.{secrets.token_hex(4)}"

    def find_view(self, view_id: str | None, external_id: str | None) -> OpenView:
        for view in self.views.values():
            if (view_id and view.id == view_id) or (
                external_id and view.external_id == external_id
            ):
                return view
        raise WebApiError("not_found")


def with_block_ids(blocks: list[JSON]) -> list[JSON]:
    """Slack gives every block without a block_id a generated one; clicks report it back."""
    out: list[JSON] = []
    for index, block in enumerate(blocks):
        if "block_id" in block:
            out.append(dict(block))
        else:
            out.append({**block, "block_id": f"sbx{index:02d}{secrets.token_hex(2)}"})
    return out
