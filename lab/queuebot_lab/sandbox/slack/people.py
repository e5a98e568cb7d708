"""People acting in the sandbox: clicking buttons, running slash commands, submitting modals.

Each action builds the payload Slack would build from the sandbox's own state (the stored
message and its real button, the open view), issues a trigger_id and a response_url the
sandbox will honour, and hands it to the app.
"""

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from queuebot_lab.sandbox.slack import payloads
from queuebot_lab.sandbox.slack.interactions import AppLink, InteractionResult
from queuebot_lab.sandbox.slack.models import JSON, Channel, User, ViewState
from queuebot_lab.sandbox.slack.workspace import WebApiError, Workspace


class People:
    def __init__(self, workspace: Workspace, link: AppLink, base_url: Callable[[], str]) -> None:
        self.workspace = workspace
        self.link = link
        self.base_url = base_url

    def channel(self, ref: str) -> Channel:
        try:
            return self.workspace.channel(ref)
        except WebApiError:
            raise LookupError(f"the sandbox has no channel {ref!r}") from None

    def user(self, user_id: str) -> User:
        if user_id not in self.workspace.users:
            raise LookupError(f"the sandbox has no user {user_id!r}")
        return self.workspace.users[user_id]

    def response_url(self, target_id: str) -> str:
        return f"{self.base_url()}/response/{target_id}"

    async def click(
        self, channel_ref: str, ts: str, action_id: str, user_id: str
    ) -> InteractionResult:
        """`user_id` clicks the element `action_id` in message `ts` (or their ephemeral)."""
        ws = self.workspace
        channel, user = self.channel(channel_ref), self.user(user_id)
        message: JSON
        stored = ws.find(channel.id, ts)
        ephemeral = ws.find_ephemeral(channel.id, ts) if stored is None else None
        if stored is not None:
            message, blocks = stored.to_slack(), stored.blocks
        elif ephemeral is not None and ephemeral.user == user.id:
            message, blocks = ephemeral.to_slack(), ephemeral.blocks
        else:
            raise LookupError(f"no message {ts} that {user.id} can see in #{channel.name}")
        clicked = payloads.find_element(blocks, action_id)
        if clicked is None:
            present = [c.element.get("action_id") for c in payloads.elements(blocks)]
            raise LookupError(f"message {ts} has no element {action_id!r}; it has {present}")
        trigger = ws.issue_trigger(user.id)
        target = ws.issue_response_url(channel.id, user.id, ts, ephemeral is not None)
        payload = payloads.block_actions(
            ws.identity,
            user,
            channel,
            message,
            clicked,
            is_ephemeral=ephemeral is not None,
            trigger_id=trigger.id,
            response_url=self.response_url(target.id),
            action_ts=f"{time.time():.6f}",
        )
        form = {"payload": json.dumps(payload)}
        return await self.link.send("block_actions", payload, form, "interactive", False)

    async def slash_command(
        self, command: str, text: str, channel_ref: str, user_id: str
    ) -> InteractionResult:
        ws = self.workspace
        channel, user = self.channel(channel_ref), self.user(user_id)
        trigger = ws.issue_trigger(user.id)
        target = ws.issue_response_url(channel.id, user.id)
        fields = payloads.slash_command(
            ws.identity,
            user,
            channel,
            command,
            text,
            trigger_id=trigger.id,
            response_url=self.response_url(target.id),
        )
        result = await self.link.send("slash_commands", fields, fields, "slash_commands", True)
        await self.link.apply_command_ack(result)
        return result

    async def submit_view(
        self, view_id: str, values: Mapping[str, Mapping[str, Any]], user_id: str | None
    ) -> InteractionResult:
        ws = self.workspace
        view = ws.views.get(view_id)
        if view is None or view.state is not ViewState.OPEN:
            raise LookupError(f"no open view {view_id!r}")
        user = self.user(user_id or view.user)
        state = payloads.input_state(view, values)
        trigger = ws.issue_trigger(user.id)
        identity = ws.identity
        shown = view.to_slack(identity.team_id, identity.app_id, identity.bot_id)
        payload = payloads.view_submission(identity, user, shown, state, trigger.id)
        form = {"payload": json.dumps(payload)}
        result = await self.link.send("view_submission", payload, form, "interactive", True)
        await self.link.apply_submission_ack(view.id, result)
        return result
