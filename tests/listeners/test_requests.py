"""Slack requests to /slack/events: verification, button clicks and the slash command."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.slack.contract import ActionId
from queuebot_lab.sandbox.slack import ONCALL_USER, payloads
from testkit.harness import SIGNING_SECRET, Stack, running_stack, serve_bot
from testkit.payloads import reference


async def _posted(stack: Stack) -> str:
    await stack.webhook(reference())
    (parent,) = await stack.parents(1)
    return parent.ts


def _signed(body: str, secret: str = SIGNING_SECRET, at: float | None = None) -> dict[str, str]:
    stamp = str(int(time.time() if at is None else at))
    digest = hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": f"v0={digest}",
        "Content-Type": "application/x-www-form-urlencoded",
    }


def _block_actions(stack: Stack, ts: str, action_id: str) -> dict[str, Any]:
    """The block_actions payload Slack sends when alice clicks `action_id` on message `ts`."""
    sandbox = stack.sandbox
    ws, people = sandbox.workspace, sandbox.people
    channel, user = people.channel(sandbox.channel_id), people.user(ONCALL_USER)
    stored = ws.find(channel.id, ts)
    assert stored is not None
    clicked = payloads.find_element(stored.blocks, action_id)
    assert clicked is not None
    target = ws.issue_response_url(channel.id, user.id, ts, False)
    return payloads.block_actions(
        ws.identity,
        user,
        channel,
        stored.to_slack(),
        clicked,
        is_ephemeral=False,
        trigger_id=ws.issue_trigger(user.id).id,
        response_url=people.response_url(target.id),
        action_ts=f"{time.time():.6f}",
    )


class TestVerification:
    @pytest.mark.parametrize("case", ["unsigned", "bad-signature", "stale"])
    async def test_unverified_requests_are_refused(self, tmp_path: Path, case: str) -> None:
        """Unsigned, wrongly signed and 6-minute-old requests get 401 and do nothing."""
        body = urlencode({"command": "/queue-status", "text": "", "user_id": ONCALL_USER})
        headers = {
            "unsigned": {"Content-Type": "application/x-www-form-urlencoded"},
            "bad-signature": _signed(body, secret="not-the-secret"),
            "stale": _signed(body, at=time.time() - 360),
        }[case]
        async with running_stack(tmp_path) as stack:
            async with stack.http.post(
                f"{stack.url}/slack/events", data=body, headers=headers
            ) as response:
                assert response.status == 401
            assert stack.sandbox.calls("auth.test") == []

    async def test_a_replayed_request_is_refused(self, tmp_path: Path) -> None:
        """A signed request captured and sent again within Slack's five minutes gets 401 and
        is not handled a second time."""
        async with running_stack(tmp_path) as stack:
            ts = await _posted(stack)
            sandbox = stack.sandbox
            body = urlencode(
                {"payload": json.dumps(_block_actions(stack, ts, ActionId.RUN_DIAGNOSTICS.value))}
            )
            headers = _signed(body)
            statuses = []
            for _ in range(2):
                async with stack.http.post(
                    f"{stack.url}/slack/events", data=body, headers=headers
                ) as response:
                    statuses.append(response.status)
            assert statuses == [200, 401]
            await stack.settled()
            answers = await sandbox.wait_for(lambda: sandbox.ephemerals() or None)
            assert len(answers) == 1

    async def test_a_request_replayed_to_another_bot_on_the_same_store_is_refused(
        self, tmp_path: Path
    ) -> None:
        """The record of signatures seen is in the store: a request captured at one bot and
        sent to a second one sharing its database gets 401 there."""
        async with running_stack(tmp_path) as stack:
            ts = await _posted(stack)
            body = urlencode(
                {"payload": json.dumps(_block_actions(stack, ts, ActionId.RUN_DIAGNOSTICS.value))}
            )
            headers = _signed(body)
            async with serve_bot(stack.sandbox, tmp_path / "queuebot.db") as (_, other):
                statuses = []
                for url in (stack.url, other):
                    async with stack.http.post(
                        f"{url}/slack/events", data=body, headers=headers
                    ) as response:
                        statuses.append(response.status)
            assert statuses == [200, 401]


class TestButtons:
    async def test_diagnostics_without_metrics_say_how_to_set_them_up(self, tmp_path: Path) -> None:
        """No source of fleet data: Run diagnostics acks at once and says privately what to
        set."""
        async with running_stack(tmp_path) as stack:
            ts = await _posted(stack)
            action = ActionId.RUN_DIAGNOSTICS.value
            result = await stack.sandbox.click(stack.sandbox.channel_id, ts, action)
            assert result.status == 200
            (notice,) = await stack.sandbox.wait_for(
                lambda: stack.sandbox.ephemerals(ONCALL_USER) or None
            )
            assert "`GITHUB_WEBHOOK_SECRET`" in notice.text
            assert "`PROMETHEUS_URL`" in notice.text
            assert "`GRAFANA_PROMETHEUS_DATASOURCE_UID`" in notice.text
            assert stack.sandbox.replies(None, ts) == []
            assert len(stack.sandbox.response_posts) == 1
            assert stack.sandbox.calls("chat.postEphemeral") == []
            assert len(stack.sandbox.messages()) == 1

    @pytest.mark.parametrize("action", [ActionId.OPEN_RUNBOOK, ActionId.VIEW_ALERT])
    async def test_link_buttons_are_acked(self, tmp_path: Path, action: ActionId) -> None:
        """Link buttons send block_actions too; they are acked and nothing else happens."""
        async with running_stack(tmp_path) as stack:
            ts = await _posted(stack)
            result = await stack.sandbox.click(stack.sandbox.channel_id, ts, action.value)
            assert result.status == 200
            # A later click that does answer: by the time its answer shows, the link
            # click's would have too.
            await stack.sandbox.click(stack.sandbox.channel_id, ts, ActionId.SILENCE.value)
            (only,) = await stack.sandbox.wait_for(lambda: stack.sandbox.ephemerals() or None)
            assert "Silence" in only.text
            assert len(stack.sandbox.response_posts) == 1

    async def test_click_without_channel_or_response_url(self, tmp_path: Path) -> None:
        """A click with nowhere to answer is still acked, and the bot stays up."""
        async with running_stack(tmp_path) as stack:
            payload = {
                "type": "block_actions",
                "user": {"id": ONCALL_USER},
                "container": {"type": "message"},
                "actions": [{"action_id": ActionId.SILENCE.value, "value": "{]"}],
                "team": {"id": "T0QUEUEBOT"},
            }
            body = urlencode({"payload": json.dumps(payload)})
            async with stack.http.post(
                f"{stack.url}/slack/events", data=body, headers=_signed(body)
            ) as response:
                assert response.status == 200
            assert (await stack.webhook(reference())).status == 202


@pytest.mark.parametrize("action", [ActionId.RUN_DIAGNOSTICS, ActionId.SILENCE, ActionId.UNSILENCE])
async def test_a_signed_button_naming_an_incident_past_any_row_is_answered(
    tmp_path: Path, action: ActionId
) -> None:
    """A signed click whose value names incident 2^63 (no store row can have it): acked, the
    clicker told privately, and the bot goes on taking alerts."""
    async with running_stack(tmp_path) as stack:
        assert (await stack.webhook(reference())).status == 202
        (parent,) = await stack.parents(1)
        payload = _block_actions(stack, parent.ts, ActionId.RUN_DIAGNOSTICS.value)
        payload["actions"][0]["action_id"] = action.value
        payload["actions"][0]["value"] = json.dumps({"v": 1, "incident": 2**63})
        body = urlencode({"payload": json.dumps(payload)})
        async with stack.http.post(
            f"{stack.url}/slack/events", data=body, headers=_signed(body)
        ) as response:
            assert response.status == 200
        (told,) = await stack.sandbox.wait_for(lambda: stack.sandbox.response_posts, timeout=10)
        assert "Traceback" not in str(told) and "not made by queuebot" not in str(told)
        second = reference()
        second["groupKey"] = "second"
        assert (await stack.webhook(second)).status == 202
        await stack.parents(2)
