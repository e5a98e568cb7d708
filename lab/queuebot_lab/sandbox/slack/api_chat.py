"""Sandbox Web API methods for messages: chat.*, conversations.*, users.info, auth.test.

Each answers what Slack answers (https://docs.slack.dev/reference/methods/<method>) and
refuses with Slack's error names.
"""

from queuebot_lab.sandbox.slack.blockkit import cut_text
from queuebot_lab.sandbox.slack.events import SandboxEvent, SandboxEventKind, ephemeral_posted
from queuebot_lab.sandbox.slack.models import JSON, Channel, PostedMessage
from queuebot_lab.sandbox.slack.params import Call
from queuebot_lab.sandbox.slack.workspace import WebApiError

#: chat.update: "msg_too_long: The text field cannot exceed 4,000 characters."
#: (https://docs.slack.dev/reference/methods/chat.update)
MAX_UPDATE_TEXT = 4000


def require_membership(call: Call, channel: Channel) -> None:
    """Posting needs the bot in the channel unless the app has chat:write.public.

    https://docs.slack.dev/reference/scopes/chat.write.public
    """
    identity = call.workspace.identity
    public_ok = "chat:write.public" in identity.scopes and not channel.is_private
    if identity.bot_user_id not in channel.members and not public_ok:
        raise WebApiError("not_in_channel")


def metadata_arg(call: Call) -> JSON | None:
    """chat.postMessage `metadata`: {"event_type": str, "event_payload": object}."""
    metadata = call.structured("metadata", "invalid_metadata_format")
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise WebApiError("invalid_metadata_format")
    if not isinstance(metadata.get("event_type"), str) or not isinstance(
        metadata.get("event_payload", {}), dict
    ):
        raise WebApiError("invalid_metadata_schema")
    return metadata


async def auth_test(call: Call) -> JSON:
    ws = call.workspace
    return {
        "url": f"{call.base_url}/",
        "team": ws.identity.team_name,
        "user": ws.users[ws.identity.bot_user_id].name,
        "team_id": ws.identity.team_id,
        "user_id": ws.identity.bot_user_id,
        "bot_id": ws.identity.bot_id,
        "app_id": ws.identity.app_id,
        "is_enterprise_install": False,
    }


async def chat_post_message(call: Call) -> JSON:
    ws = call.workspace
    channel = ws.channel(call.required("channel", "channel_not_found"))
    require_membership(call, channel)
    if markdown := call.arg("markdown_text"):
        if call.arg("text") or call.params.get("blocks"):
            raise WebApiError("markdown_text_conflict")
        call.params["blocks"] = [{"type": "markdown", "text": markdown}]
        call.params["text"] = markdown
    text, blocks = call.message_content()
    text, truncated = cut_text(text)
    metadata = metadata_arg(call)
    thread_ts = call.arg("thread_ts")
    broadcast = call.flag("reply_broadcast")
    message = ws.post(
        channel, ws.identity.bot_user_id, text, blocks, thread_ts, metadata, broadcast=broadcast
    )
    await call.hub.publish(
        SandboxEvent(SandboxEventKind.MESSAGE_POSTED, channel.id, message.ts, message.thread_ts)
    )
    answer: JSON = {"channel": channel.id, "ts": message.ts, "message": message.to_slack()}
    if truncated:
        answer["warning"] = "message_truncated"
        answer["response_metadata"] = {"warnings": ["message_truncated"]}
    return answer


def find_message(
    call: Call, ts_arg: str, missing: str = "message_not_found"
) -> tuple[Channel, PostedMessage]:
    """The message `ts_arg` names in the channel given by ID; Slack's `missing` error if none."""
    ws = call.workspace
    # "channel ... is used as an identifier for the target message": an ID, not a name.
    channel = ws.channel(call.required("channel", "channel_not_found"), by_name=False)
    message = ws.find(channel.id, call.required(ts_arg, missing))
    if message is None:
        raise WebApiError(missing)
    return channel, message


def own_message(call: Call, ts_arg: str, denied: str) -> tuple[Channel, PostedMessage]:
    """The message `ts_arg` names, which the bot must have posted (else Slack's `denied`)."""
    channel, message = find_message(call, ts_arg)
    if message.user != call.workspace.identity.bot_user_id:
        raise WebApiError(denied)
    return channel, message


async def chat_update(call: Call) -> JSON:
    ws = call.workspace
    channel, message = own_message(call, "ts", "cant_update_message")
    if "blocks" not in call.params or call.params["blocks"] is None:
        # Blocks not sent are kept: a text-only update leaves a block message looking
        # unchanged (slackapi/python-slack-sdk#523).
        call.params["blocks"] = message.blocks
    text, blocks = call.message_content()
    if len(text) > MAX_UPDATE_TEXT:
        raise WebApiError("msg_too_long")
    if "metadata" in call.params and call.params["metadata"] is not None:
        message.metadata = metadata_arg(call) if call.params["metadata"] not in ({}, "{}") else None
    ws.update(message, text, blocks, ws.identity.bot_user_id)
    await call.hub.publish(
        SandboxEvent(SandboxEventKind.MESSAGE_UPDATED, channel.id, message.ts, message.thread_ts)
    )
    return {"channel": channel.id, "ts": message.ts, "text": text, "message": message.to_slack()}


async def chat_post_ephemeral(call: Call) -> JSON:
    ws = call.workspace
    channel = ws.channel(call.required("channel", "channel_not_found"))
    user = call.required("user", "user_not_in_channel")
    require_membership(call, channel)
    if user not in channel.members:
        raise WebApiError("user_not_in_channel")
    text, blocks = call.message_content()
    ephemeral = ws.post_ephemeral(channel, user, text, blocks, call.arg("thread_ts"))
    await call.hub.publish(ephemeral_posted(ephemeral))
    return {"message_ts": ephemeral.ts}


async def chat_get_permalink(call: Call) -> JSON:
    channel, message = find_message(call, "message_ts")
    return {
        "channel": channel.id,
        "permalink": permalink(
            call.base_url, channel.id, message.ts, message.thread_ts if message.is_reply else None
        ),
    }


def permalink(base_url: str, channel_id: str, ts: str, thread_ts: str | None) -> str:
    """Slack's permalink form; a reply's link names its thread (chat.getPermalink examples)."""
    link = f"{base_url}/archives/{channel_id}/p{ts.replace('.', '')}"
    return f"{link}?thread_ts={thread_ts}&cid={channel_id}" if thread_ts else link


async def chat_delete(call: Call) -> JSON:
    channel, message = own_message(call, "ts", "cant_delete_message")
    message.deleted = True
    await call.hub.publish(SandboxEvent(SandboxEventKind.MESSAGE_DELETED, channel.id, message.ts))
    return {"channel": channel.id, "ts": message.ts}


def _listed(call: Call, messages: list[PostedMessage]) -> list[JSON]:
    """Messages as conversations.history/replies list them: within `oldest`/`latest`
    (exclusive unless `inclusive`), and with their metadata only on `include_all_metadata`
    (https://docs.slack.dev/reference/methods/conversations.history)."""
    oldest, latest = float(call.arg("oldest") or 0), float(call.arg("latest") or "inf")
    inclusive = call.flag("inclusive")
    shown = []
    for message in messages:
        at = float(message.ts)
        inside = (oldest <= at <= latest) if inclusive else (oldest < at < latest)
        if not inside:
            continue
        data = message.to_slack()
        if not call.flag("include_all_metadata"):
            data.pop("metadata", None)
        shown.append(data)
    return shown


async def conversations_replies(call: Call) -> JSON:
    ws = call.workspace
    channel, parent = find_message(call, "ts", "thread_not_found")
    if parent.is_reply and parent.thread_ts:
        parent = ws.find(channel.id, parent.thread_ts) or parent
    thread = [parent, *ws.replies(channel.id, parent.ts)]
    return {"messages": _listed(call, thread), "has_more": False}


async def conversations_history(call: Call) -> JSON:
    ws = call.workspace
    channel = ws.channel(call.required("channel", "channel_not_found"), by_name=False)
    limit = int(call.arg("limit") or 100)
    newest_first = sorted(ws.top_level(channel.id), key=lambda m: m.ts, reverse=True)
    listed = _listed(call, newest_first)
    return {"messages": listed[:limit], "has_more": len(listed) > limit}


def channel_object(call: Call, channel: Channel) -> JSON:
    return {
        "id": channel.id,
        "name": channel.name,
        "is_channel": not channel.is_private,
        "is_private": channel.is_private,
        "is_member": call.workspace.identity.bot_user_id in channel.members,
        "num_members": len(channel.members),
    }


async def conversations_info(call: Call) -> JSON:
    channel = call.workspace.channel(call.required("channel", "channel_not_found"), by_name=False)
    return {"channel": channel_object(call, channel)}


async def conversations_join(call: Call) -> JSON:
    channel = call.workspace.channel(call.required("channel", "channel_not_found"), by_name=False)
    if channel.is_private:
        raise WebApiError("method_not_supported_for_channel_type")
    channel.members.add(call.workspace.identity.bot_user_id)
    return {"channel": channel_object(call, channel)}


async def users_info(call: Call) -> JSON:
    user = call.workspace.users.get(call.required("user", "user_not_found"))
    if user is None:
        raise WebApiError("user_not_found")
    return {
        "user": {
            "id": user.id,
            "team_id": call.workspace.identity.team_id,
            "name": user.name,
            "real_name": user.real_name,
            "is_bot": user.is_bot,
            "profile": {"real_name": user.real_name, "display_name": user.name},
        }
    }
