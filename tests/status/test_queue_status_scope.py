"""/queue-status keeps to the channel it is used in: an alert routed to a private channel shows
to nobody elsewhere, `post` publishes only the channel's own incidents, and the fleet-wide view
(every channel's, named by channel) is for the users and user groups the YAML file lists, and
only privately. Signed slash commands to the running app, answers as the local Slack workspace
receives them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from queuebot_lab.sandbox.slack import ONCALL_USER, SECOND_USER, PostedMessage
from queuebot_lab.sandbox.slack.models import Ephemeral
from testkit.harness import Stack, running_stack
from testkit.payloads import reference

COMMAND = "/queue-status"
PRIVATE_TITLE = "Jobs are queueing in autoscaled machines"
PUBLIC_TITLE = "High memory usage on the runner pool"
FLEET_GROUP = "S0FLEETWIDE"


def _public_alert() -> dict[str, Any]:
    """An incident for the default channel (no team, so no route takes it elsewhere)."""
    body = reference()
    body["groupKey"] = "public-group"
    alert = body["alerts"][0]
    alert["labels"] = {"alertname": PUBLIC_TITLE, "pool": "linux"}
    alert["annotations"] = {"summary": PUBLIC_TITLE}
    alert["fingerprint"] = "fp-public"
    body["commonLabels"] = alert["labels"]
    body["commonAnnotations"] = alert["annotations"]
    body["groupLabels"] = {"alertname": PUBLIC_TITLE}
    body["title"] = f"[FIRING:1] {PUBLIC_TITLE}"
    return body


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    config = tmp_path / "queuebot.yml"
    config.write_text(
        "routes:\n"
        "  - match: {Team: pytorch-dev-infra}\n"
        "    channel: '#infra-private'\n"
        f"queue_status:\n  fleet_wide_groups: [{FLEET_GROUP}]\n"
    )
    async with running_stack(tmp_path, QUEUEBOT_CONFIG=str(config)) as running:
        running.sandbox.add_channel("infra-private", members=[running.sandbox.bot_user_id])
        running.sandbox.add_usergroup("ci-leads", [ONCALL_USER], usergroup_id=FLEET_GROUP)
        assert (await running.webhook(reference())).status == 202
        assert (await running.webhook(_public_alert())).status == 202
        await running.sandbox.wait_for(lambda: running.sandbox.messages("infra-private"))
        await running.parents(1)
        await running.settled()
        yield running


def _text(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


async def _private(stack: Stack, user: str, channel: str | None = None) -> Ephemeral:
    before = len(stack.sandbox.ephemerals(user))
    result = await stack.sandbox.slash_command(COMMAND, "", channel=channel, user_id=user)
    assert result.status == 200
    return await stack.sandbox.wait_for(
        lambda: e[before] if len(e := stack.sandbox.ephemerals(user)) > before else None,
        timeout=20,
    )


async def _posted(stack: Stack, user: str) -> PostedMessage:
    before = len(stack.sandbox.messages())
    result = await stack.sandbox.slash_command(COMMAND, "post", user_id=user)
    assert result.status == 200
    return await stack.sandbox.wait_for(
        lambda: m[before] if len(m := stack.sandbox.messages()) > before else None, timeout=20
    )


async def test_a_member_elsewhere_sees_only_that_channels_incidents(stack: Stack) -> None:
    """bob, not in the private channel, asks in the default one: its own incident only."""
    answer = _text((await _private(stack, SECOND_USER)).blocks)
    assert PUBLIC_TITLE in answer and "Open incidents (1)" in answer
    assert PRIVATE_TITLE not in answer and "every channel" not in answer


async def test_a_channel_with_no_incident_lists_none(stack: Stack) -> None:
    stack.sandbox.add_channel("random", "C0RANDOM")
    answer = _text((await _private(stack, SECOND_USER, channel="C0RANDOM")).blocks)
    assert "Open incidents:* none" in answer
    assert PRIVATE_TITLE not in answer and PUBLIC_TITLE not in answer


async def test_post_publishes_only_the_channels_own_even_for_a_fleet_wide_viewer(
    stack: Stack,
) -> None:
    posted = _text((await _posted(stack, ONCALL_USER)).blocks)
    assert PUBLIC_TITLE in posted and "Open incidents (1)" in posted
    assert PRIVATE_TITLE not in posted and "every channel" not in posted


async def test_the_fleet_wide_view_lists_every_channel_named_privately(stack: Stack) -> None:
    """alice is in the group the YAML file lists: her private answer has both incidents, each
    with the channel it went to (a channel link, no ping)."""
    answer = _text((await _private(stack, ONCALL_USER)).blocks)
    assert "Open incidents in every channel (2)" in answer
    assert PRIVATE_TITLE in answer and PUBLIC_TITLE in answer
    private_id = stack.sandbox.workspace.channel("infra-private").id
    assert f"in <#{private_id}>" in answer and f"in <#{stack.sandbox.channel_id}>" in answer


async def test_the_channel_an_incident_went_to_sees_it(stack: Stack) -> None:
    """bob asks in the private channel (as a member would): its incident, not the other."""
    private = stack.sandbox.workspace.channel("infra-private")
    private.members.add(SECOND_USER)
    answer = _text((await _private(stack, SECOND_USER, channel=private.id)).blocks)
    assert PRIVATE_TITLE in answer and PUBLIC_TITLE not in answer
