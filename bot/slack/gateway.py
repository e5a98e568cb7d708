"""Everything queuebot says to Slack's Web API, on an injected `AsyncWebClient`.

Failures raise the named errors of `bot.slack.errors`. Messages go out with `link_names` off and
unfurling off: nothing queuebot posts can notify anyone or pull in a preview of a URL an alert
carried.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.slack.errors import (
    SlackRateLimited,
    SlackRejected,
    SlackUnavailable,
    error_for,
    retry_after,
)
from bot.slack.message import ChartFile, Message
from bot.telemetry.metrics import Metrics

#: A response_url that has not answered by then is Slack in trouble.
SLACK_RESPONSE_TIMEOUT_SECONDS = 15


@dataclass(frozen=True)
class Posted:
    channel_id: str
    ts: str


class SlackGateway:
    """The bot's calls to Slack, on an injected `AsyncWebClient`."""

    def __init__(self, client: AsyncWebClient, metrics: Metrics | None = None) -> None:
        self.client = client
        self._metrics = metrics

    def _count(self, method: str, outcome: str) -> None:
        if self._metrics is not None:
            self._metrics.inc("queuebot_slack_calls_total", method=method, outcome=outcome)
            if outcome == "ratelimited":
                self._metrics.inc("queuebot_slack_rate_limited_total", method=method)

    async def _call(self, method: str, *, read: bool = False, **params: Any) -> dict[str, Any]:
        try:
            if read:
                response = await self.client.api_call(method, http_verb="GET", params=params)
            else:
                response = await self.client.api_call(method, json=params)
        except SlackApiError as exc:
            error = error_for(method, exc)
            self._count(
                method,
                "ratelimited"
                if isinstance(error, SlackRateLimited)
                else (error.error if isinstance(error, SlackRejected) else error.detail),
            )
            raise error from exc
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            self._count(method, "unreachable")
            raise SlackUnavailable(method, f"{type(exc).__name__}: {exc}") from exc
        self._count(method, "ok")
        data = response.data
        return data if isinstance(data, dict) else {}

    async def post_message(
        self,
        channel: str,
        message: Message,
        *,
        thread_ts: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Posted:
        params: dict[str, Any] = {
            "channel": channel,
            "text": message.text,
            "blocks": message.blocks,
            "link_names": False,
            "unfurl_links": False,
            "unfurl_media": False,
        }
        if thread_ts:
            params["thread_ts"] = thread_ts
        if metadata:
            params["metadata"] = metadata
        data = await self._call("chat.postMessage", **params)
        return Posted(channel_id=str(data.get("channel", channel)), ts=str(data["ts"]))

    async def update_message(self, channel_id: str, ts: str, message: Message) -> None:
        await self._call(
            "chat.update",
            channel=channel_id,
            ts=ts,
            text=message.text,
            blocks=message.blocks,
            link_names=False,
        )

    async def post_ephemeral(
        self, channel: str, user: str, message: Message, *, thread_ts: str | None = None
    ) -> None:
        params: dict[str, Any] = {
            "channel": channel,
            "user": user,
            "text": message.text,
            "blocks": message.blocks,
        }
        if thread_ts:
            params["thread_ts"] = thread_ts
        await self._call("chat.postEphemeral", **params)

    async def respond(
        self, response_url: str, message: Message | None, *, public: bool = False
    ) -> None:
        """Answer an interaction through its response_url: privately, or for everyone in the
        channel when `public`; `message` None deletes the message the interaction came from.

        Works in any channel the click came from, whether or not the bot is a member
        (https://docs.slack.dev/interactivity/handling-user-interaction#message_responses).
        """
        try:
            webhook = AsyncWebhookClient(response_url, timeout=SLACK_RESPONSE_TIMEOUT_SECONDS)
            if message is None:
                response = await webhook.send_dict({"delete_original": True})
            else:
                response = await webhook.send(
                    text=message.text,
                    blocks=message.blocks,
                    response_type="in_channel" if public else "ephemeral",
                    replace_original=False,
                )
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise SlackUnavailable("response_url", f"{type(exc).__name__}: {exc}") from exc
        if response.status_code == 429:
            raise SlackRateLimited("response_url", retry_after(response.headers))
        if response.status_code >= 500:
            raise SlackUnavailable("response_url", f"http_{response.status_code}")
        if response.status_code != 200:
            raise SlackRejected("response_url", response.body or f"http_{response.status_code}")

    async def find_posted(
        self,
        channel_id: str,
        event_type: str,
        carrying: Mapping[str, object],
        *,
        oldest: float,
        thread_ts: str | None = None,
    ) -> str | None:
        """The ts of the bot's message whose metadata has `event_type` and carries every item
        of `carrying` in its payload, posted since `oldest`, in the channel or in a thread;
        None if Slack has no such message."""
        for message in await self._recent(channel_id, oldest, thread_ts):
            metadata = message.get("metadata") or {}
            payload = metadata.get("event_payload") or {}
            if metadata.get("event_type") == event_type and all(
                payload.get(key) == value for key, value in carrying.items()
            ):
                return str(message.get("ts"))
        return None

    async def find_shared_file(
        self, channel_id: str, thread_ts: str, filename: str, *, oldest: float
    ) -> str | None:
        """The ts of the thread message sharing a file named `filename` since `oldest`; None
        if Slack has none (a file share carries no metadata, so its name identifies it)."""
        for message in await self._recent(channel_id, oldest, thread_ts):
            files = message.get("files") or []
            if any(isinstance(f, dict) and f.get("name") == filename for f in files):
                return str(message.get("ts"))
        return None

    async def _recent(
        self, channel_id: str, oldest: float, thread_ts: str | None
    ) -> list[dict[str, Any]]:
        params: dict[str, Any] = {
            "channel": channel_id,
            "oldest": f"{oldest:.6f}",
            "include_all_metadata": True,
            "limit": 200,
        }
        if thread_ts:
            params["ts"] = thread_ts
        method = "conversations.replies" if thread_ts else "conversations.history"
        data = await self._call(method, read=True, **params)
        messages = data.get("messages") or []
        return [m for m in messages if isinstance(m, dict)]

    async def permalink(self, channel_id: str, ts: str) -> str:
        data = await self._call("chat.getPermalink", read=True, channel=channel_id, message_ts=ts)
        return str(data["permalink"])

    async def auth_test(self) -> dict[str, Any]:
        return await self._call("auth.test")

    async def channel_info(self, channel_id: str) -> dict[str, Any]:
        """conversations.info's channel (`is_member` says whether the bot is in it)."""
        data = await self._call("conversations.info", read=True, channel=channel_id)
        channel = data.get("channel")
        return channel if isinstance(channel, dict) else {}

    async def upload_file(
        self,
        channel_id: str | None,
        content: bytes,
        *,
        filename: str,
        title: str,
        alt_text: str,
        thread_ts: str | None = None,
    ) -> str:
        """Share a file in a channel or thread, or with `channel_id` None keep it private to
        the app (for an image block's `slack_file`); returns the file's id (files_upload_v2:
        getUploadURLExternal, upload, completeUploadExternal;
        https://docs.slack.dev/messaging/working-with-files)."""
        try:
            response = await self.client.files_upload_v2(
                channel=channel_id,
                thread_ts=thread_ts,
                content=content,
                filename=filename,
                title=title,
                alt_txt=alt_text,
                request_file_info=False,
            )
        except SlackApiError as exc:
            self._count("files.upload_v2", "error")
            raise error_for("files.upload_v2", exc) from exc
        except (TimeoutError, aiohttp.ClientError, OSError, SlackRequestError) as exc:
            # SlackRequestError: the upload URL itself refused the bytes.
            self._count("files.upload_v2", "unreachable")
            raise SlackUnavailable("files.upload_v2", f"{type(exc).__name__}: {exc}") from exc
        self._count("files.upload_v2", "ok")
        uploaded = response.get("file")
        return str(uploaded.get("id", "")) if isinstance(uploaded, dict) else ""

    async def private_image(
        self, content: bytes, *, filename: str, title: str, alt_text: str
    ) -> ChartFile | None:
        """An image uploaded privately to the app, for a message's image block (`slack_file`);
        None when Slack named no file. Raises SlackError as `upload_file` does."""
        file_id = await self.upload_file(
            None, content, filename=filename, title=title, alt_text=alt_text
        )
        return ChartFile(file_id, title, alt_text) if file_id else None

    async def open_view(self, trigger_id: str, view: dict[str, Any]) -> str:
        """Open a modal (within 3 s of the click that issued `trigger_id`); returns its id."""
        data = await self._call("views.open", trigger_id=trigger_id, view=view)
        opened = data.get("view")
        return str(opened.get("id", "")) if isinstance(opened, dict) else ""

    async def display_name(self, user_id: str) -> str:
        """What people call `user_id` in Slack: display name, else real name, else handle."""
        data = await self._call("users.info", read=True, user=user_id)
        raw_user = data.get("user")
        user: dict[str, Any] = raw_user if isinstance(raw_user, dict) else {}
        raw_profile = user.get("profile")
        profile: dict[str, Any] = raw_profile if isinstance(raw_profile, dict) else {}
        for name in (profile.get("display_name"), profile.get("real_name"), user.get("name")):
            if isinstance(name, str) and name.strip():
                return name.strip()
        return user_id

    async def usergroup_members(self, usergroup_id: str) -> set[str]:
        data = await self._call("usergroups.users.list", read=True, usergroup=usergroup_id)
        users = data.get("users")
        return {str(u) for u in users} if isinstance(users, list) else set()
