"""Sandbox Web API methods for modals: views.open and views.update.

https://docs.slack.dev/reference/methods/views.open
https://docs.slack.dev/reference/methods/views.update
"""

import json

from queuebot_lab.sandbox.slack.blockkit import texts, view_problems
from queuebot_lab.sandbox.slack.events import SandboxEvent, SandboxEventKind
from queuebot_lab.sandbox.slack.models import JSON, OpenView
from queuebot_lab.sandbox.slack.params import Call
from queuebot_lab.sandbox.slack.workspace import WebApiError

#: views.open / views.update: "view_too_large: ... greater than 250kb".
MAX_VIEW_BYTES = 250 * 1024


def view_arg(call: Call) -> JSON:
    view = call.structured("view")
    if not isinstance(view, dict):
        raise WebApiError("invalid_arguments", response_metadata={"messages": ["invalid `view`"]})
    if len(json.dumps(view).encode()) > MAX_VIEW_BYTES:
        raise WebApiError("view_too_large")
    if problems := texts(view_problems(view)):
        # Slack answers a malformed view with invalid_arguments and the schema messages
        # (e.g. "[ERROR] must be less than 25 characters [json-pointer:/view/title/text]").
        raise WebApiError(
            "invalid_arguments",
            response_metadata={"messages": [f"[ERROR] {p}" for p in problems]},
        )
    return view


def view_answer(call: Call, view: OpenView) -> JSON:
    identity = call.workspace.identity
    return {"view": view.to_slack(identity.team_id, identity.app_id, identity.bot_id)}


async def views_open(call: Call) -> JSON:
    view = view_arg(call)
    trigger_id = call.arg("trigger_id") or call.arg("interactivity_pointer")
    if trigger_id is None:
        raise WebApiError("invalid_trigger_id")
    trigger = call.workspace.exchange_trigger(trigger_id)
    opened = call.workspace.open_view(trigger.user, view)
    await call.hub.publish(
        SandboxEvent(SandboxEventKind.VIEW_OPENED, user=trigger.user, detail={"view_id": opened.id})
    )
    return view_answer(call, opened)


async def views_update(call: Call) -> JSON:
    view_id, external_id = call.arg("view_id"), call.arg("external_id")
    if view_id is None and external_id is None:
        raise WebApiError(
            "invalid_arguments",
            response_metadata={"messages": ["view_id or external_id is required"]},
        )
    view = view_arg(call)
    target = call.workspace.find_view(view_id, external_id)
    expected = call.arg("hash")
    if expected is not None and expected != target.hash:
        raise WebApiError("hash_conflict")
    target.history.append(target.view)
    target.view = view
    target.hash = call.workspace.new_hash()
    await call.hub.publish(
        SandboxEvent(SandboxEventKind.VIEW_UPDATED, user=target.user, detail={"view_id": target.id})
    )
    return view_answer(call, target)
