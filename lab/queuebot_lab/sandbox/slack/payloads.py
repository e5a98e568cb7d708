"""What Slack sends to the app's request URL: block_actions, slash commands, view_submission.

Shapes follow https://docs.slack.dev/reference/interaction-payloads/block_actions-payload,
https://docs.slack.dev/interactivity/implementing-slash-commands and
https://docs.slack.dev/reference/interaction-payloads/view-interactions-payload.
"""

import hashlib
import hmac
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from queuebot_lab.sandbox.slack.models import JSON, Channel, OpenView, User
from queuebot_lab.sandbox.slack.workspace import Identity

#: The legacy verification token Slack still puts into every payload (Bolt ignores it).
VERIFICATION_TOKEN = "sandbox-verification-token"  # noqa: S105


def sign(secret: str, timestamp: str, body: str) -> str:
    """`X-Slack-Signature` for a request body (https://docs.slack.dev/authentication/verifying-requests-from-slack)."""
    base = f"v0:{timestamp}:{body}".encode()
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Clicked:
    """An interactive element found in a message, and the block holding it."""

    element: JSON
    block_id: str


def elements(blocks: list[JSON]) -> Iterator[Clicked]:
    for block in blocks:
        block_id = str(block.get("block_id", ""))
        if block.get("type") == "actions":
            for element in block.get("elements", []):
                yield Clicked(element, block_id)
        elif isinstance(block.get("accessory"), dict):
            yield Clicked(block["accessory"], block_id)
        elif block.get("type") == "input" and isinstance(block.get("element"), dict):
            yield Clicked(block["element"], block_id)


def find_element(blocks: list[JSON], action_id: str) -> Clicked | None:
    return next((c for c in elements(blocks) if c.element.get("action_id") == action_id), None)


def user_object(user: User, team_id: str) -> JSON:
    return {"id": user.id, "username": user.name, "name": user.name, "team_id": team_id}


def team_object(identity: Identity) -> JSON:
    return {"id": identity.team_id, "domain": identity.team_domain}


def block_actions(
    identity: Identity,
    user: User,
    channel: Channel,
    message: JSON,
    clicked: Clicked,
    *,
    is_ephemeral: bool,
    trigger_id: str,
    response_url: str,
    action_ts: str,
) -> JSON:
    element = clicked.element
    action: JSON = {
        "action_id": element.get("action_id"),
        "block_id": clicked.block_id,
        "type": element.get("type"),
        "action_ts": action_ts,
    }
    for key in ("text", "value", "style"):
        if key in element:
            action[key] = element[key]
    return {
        "type": "block_actions",
        "user": user_object(user, identity.team_id),
        "api_app_id": identity.app_id,
        "token": VERIFICATION_TOKEN,
        "container": {
            "type": "message",
            "message_ts": message["ts"],
            "channel_id": channel.id,
            "is_ephemeral": is_ephemeral,
        },
        "trigger_id": trigger_id,
        "team": team_object(identity),
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel.id, "name": channel.name},
        "message": message,
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [action],
    }


def slash_command(
    identity: Identity,
    user: User,
    channel: Channel,
    command: str,
    text: str,
    *,
    trigger_id: str,
    response_url: str,
) -> dict[str, str]:
    """The form fields of a slash command request (also the Socket Mode payload)."""
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": identity.team_id,
        "team_domain": identity.team_domain,
        "channel_id": channel.id,
        "channel_name": channel.name,
        "user_id": user.id,
        "user_name": user.name,
        "command": command,
        "text": text,
        "api_app_id": identity.app_id,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    }


def input_state(view: OpenView, values: Mapping[str, Mapping[str, Any]]) -> JSON:
    """`view.state.values` for what the user entered: {block_id: {action_id: value}}.

    A value that is already a state entry (a dict with "type") is used as given; a plain
    value is shaped for the input's element type.
    """
    inputs = {
        (c.block_id, c.element.get("action_id")): c.element
        for c in elements(view.view.get("blocks", []))
    }
    state: JSON = {}
    for block_id, actions in values.items():
        for action_id, value in actions.items():
            element = inputs.get((block_id, action_id))
            if element is None:
                raise ValueError(f"view {view.id} has no input {block_id}/{action_id}")
            state.setdefault(block_id, {})[action_id] = state_entry(element, value)
    return state


def state_entry(element: JSON, value: Any) -> JSON:
    kind = element.get("type")
    if isinstance(value, dict) and "type" in value:
        return value
    if kind in ("static_select", "radio_buttons"):
        option = next(
            (o for o in element.get("options", []) if o.get("value") == value),
            {"text": {"type": "plain_text", "text": str(value)}, "value": str(value)},
        )
        return {"type": kind, "selected_option": option}
    # Pickers report their choice under their own key, not `value`
    # (https://docs.slack.dev/reference/interaction-payloads/view-interactions-payload).
    if kind == "datetimepicker":
        return {"type": kind, "selected_date_time": int(value)}
    if kind == "datepicker":
        return {"type": kind, "selected_date": str(value)}
    if kind == "timepicker":
        return {"type": kind, "selected_time": str(value)}
    if kind == "checkboxes":
        chosen = set(value)
        options = [o for o in element.get("options", []) if o.get("value") in chosen]
        return {"type": kind, "selected_options": options}
    return {"type": kind, "value": value}


def view_submission(
    identity: Identity, user: User, view: JSON, state: JSON, trigger_id: str
) -> JSON:
    return {
        "type": "view_submission",
        "team": team_object(identity),
        "user": user_object(user, identity.team_id),
        "api_app_id": identity.app_id,
        "token": VERIFICATION_TOKEN,
        "trigger_id": trigger_id,
        "view": {**view, "state": {"values": state}},
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }
