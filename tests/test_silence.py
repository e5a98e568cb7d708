"""Silence… and Unsilence, end to end: signed Slack requests in, a real Alertmanager serving
Grafana's silence API, the local Slack workspace showing what the channel sees."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.ids import ActionId, SilenceInput
from bot.sandbox import ONCALL_USER, SECOND_USER, Message
from bot.sandbox.grafana import GrafanaSandbox
from bot.sandbox.models import OpenView, ViewState
from tests.alertmanager import Alertmanager
from tests.harness import Stack, running_stack
from tests.payloads import reference

pytestmark = pytest.mark.integration

RULE_UID = "dez2aomgvru2oe"
EXPECTED_MATCHERS = [
    {"name": "__alert_rule_uid__", "value": RULE_UID, "isRegex": False, "isEqual": True},
    {"name": "type", "value": "alerting-infra", "isRegex": False, "isEqual": True},
]
#: The reference alert as Grafana's own Alertmanager holds it (with its private rule label).
GRAFANA_ALERT_LABELS = {
    "__alert_rule_uid__": RULE_UID,
    "alertname": "Jobs are queueing in the autoscaled machines",
    "grafana_folder": "pytorch-dev-infra",
    "type": "alerting-infra",
}


@pytest.fixture
async def stack(tmp_path: Path, alertmanager: Alertmanager) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path,
        GRAFANA_URL=alertmanager.url,
        GRAFANA_TOKEN="glsa_test_token",
        QUEUEBOT_SILENCE_CHECK_SECONDS="0.2",
    ) as running:
        yield running


async def _parent(stack: Stack) -> Message:
    assert (await stack.webhook(reference())).status == 202
    (parent,) = await stack.parents(1)
    return parent


async def _open_modal(stack: Stack, parent: Message, user: str = ONCALL_USER) -> OpenView:
    opened = len(stack.sandbox.views)
    result = await stack.sandbox.click(
        stack.sandbox.channel_id, parent.ts, ActionId.SILENCE.value, user
    )
    assert result.status == 200 and result.acked_in_time
    return await stack.sandbox.wait_for(
        lambda: stack.sandbox.views[opened] if len(stack.sandbox.views) > opened else None
    )


def _form(duration: str = "2h", comment: str = "", until: datetime | None = None) -> Any:
    values: dict[str, dict[str, Any]] = {
        SilenceInput.DURATION.value: {SilenceInput.DURATION.value: duration}
    }
    if comment:
        values[SilenceInput.COMMENT.value] = {SilenceInput.COMMENT.value: comment}
    if until is not None:
        values[SilenceInput.UNTIL.value] = {SilenceInput.UNTIL.value: int(until.timestamp())}
    return values


async def _silenced(stack: Stack, parent: Message, comment: str = "") -> OpenView:
    view = await _open_modal(stack, parent)
    result = await stack.sandbox.submit_view(view.id, _form(comment=comment), ONCALL_USER)
    assert result.status == 200 and result.acked_in_time
    await _wait_text(stack, parent, "Silenced until")
    return view


def _current(stack: Stack, parent: Message) -> Message:
    found = stack.sandbox.message(None, parent.ts)
    assert found is not None
    return found


async def _wait_text(stack: Stack, parent: Message, text: str, present: bool = True) -> Message:
    return await stack.sandbox.wait_for(
        lambda: (m := _current(stack, parent)) and ((text in stack.text(m)) == present) and m,
        timeout=10,
    )


def _action_ids(message: Message) -> list[str]:
    return [
        element.get("action_id", "")
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block.get("elements", [])
    ]


async def _reply_with(stack: Stack, parent: Message, text: str) -> Message:
    return await stack.sandbox.wait_for(
        lambda: next(
            (r for r in stack.sandbox.replies(None, parent.ts) if text in stack.text(r)), None
        ),
        timeout=10,
    )


class TestSilenceModal:
    async def test_click_opens_the_modal_with_grafanas_matchers(self, stack: Stack) -> None:
        """Silence… opens a modal at once, previewing exactly the matchers Grafana would use."""
        parent = await _parent(stack)
        view = await _open_modal(stack, parent)
        (call,) = stack.sandbox.calls("views.open")
        assert call.status == 200
        shown = str(view.view)
        assert f"__alert_rule_uid__={RULE_UID}, type=alerting-infra" in shown
        labels = [o["value"] for o in view.view["blocks"][1]["element"]["options"]]
        assert labels == ["30m", "1h", "2h", "4h", "8h", "24h", "until"]

    async def test_an_end_time_in_the_past_is_refused_in_the_modal(
        self, stack: Stack, alertmanager: Alertmanager
    ) -> None:
        """A custom end time that has passed is an error beside the input; nothing is created."""
        parent = await _parent(stack)
        view = await _open_modal(stack, parent)
        past = datetime.now(UTC) - timedelta(hours=1)
        result = await stack.sandbox.submit_view(view.id, _form("until", until=past), ONCALL_USER)
        assert result.json()["response_action"] == "errors"
        assert "future" in result.json()["errors"][SilenceInput.UNTIL.value]
        assert stack.sandbox.workspace.views[view.id].state is ViewState.OPEN
        assert await alertmanager.silences() == []


class TestSilence:
    async def test_submit_creates_the_silence_and_tells_the_channel(
        self, stack: Stack, alertmanager: Alertmanager
    ) -> None:
        """The silence exists with Grafana's matchers, end time, author and a link back; the
        parent says who silenced until when and offers Unsilence; the thread gets one line."""
        parent = await _parent(stack)
        before = datetime.now(UTC)
        await _silenced(stack, parent, comment="Scaling up linux.g5 <!channel>")
        (silence,) = await alertmanager.active_silences()
        assert silence["matchers"] == EXPECTED_MATCHERS
        ends = datetime.fromisoformat(silence["endsAt"].replace("Z", "+00:00"))
        assert before + timedelta(hours=2) - timedelta(seconds=5) <= ends
        assert ends <= datetime.now(UTC) + timedelta(hours=2)
        assert silence["createdBy"] == f"alice (Slack {ONCALL_USER})"
        permalink = stack.sandbox.calls("chat.getPermalink")[-1]
        assert permalink.params["message_ts"] == parent.ts
        assert silence["comment"].startswith("Scaling up linux.g5 <!channel>")
        assert "/archives/" in silence["comment"]

        edited = _current(stack, parent)
        assert "@alice" in stack.text(edited)
        assert ActionId.UNSILENCE.value in _action_ids(edited)
        assert ActionId.SILENCE.value not in _action_ids(edited)
        (line,) = await stack.replies(parent, 1)
        assert "*Silenced* by @alice until" in stack.text(line)
        assert "Scaling up linux.g5 &lt;!channel&gt;" in stack.text(line)
        assert "<!channel>" not in stack.text(line)
        async with stack.http.get(f"{stack.url}/metrics") as response:
            assert 'queuebot_silences_total{action="created"} 1' in await response.text()

    async def test_unsilence_expires_it(self, stack: Stack, alertmanager: Alertmanager) -> None:
        """Unsilence expires the silence in Grafana and puts Silence… back."""
        parent = await _parent(stack)
        await _silenced(stack, parent)
        (silence,) = await alertmanager.active_silences()
        result = await stack.sandbox.click(
            stack.sandbox.channel_id, parent.ts, ActionId.UNSILENCE.value, SECOND_USER
        )
        assert result.acked_in_time
        restored = await _wait_text(stack, parent, "Silenced until", present=False)
        assert (await alertmanager.silence(silence["id"]))["status"]["state"] == "expired"
        assert ActionId.SILENCE.value in _action_ids(restored)
        line = await _reply_with(stack, parent, "Unsilenced")
        assert "@bob" in stack.text(line) and "@alice" in stack.text(line)

    async def test_a_silence_already_gone_counts_as_expired(
        self, stack: Stack, alertmanager: Alertmanager
    ) -> None:
        """Unsilence of a silence Grafana no longer has still lifts it in Slack."""
        parent = await _parent(stack)
        await _silenced(stack, parent)
        await alertmanager.stop()
        # A fresh Alertmanager on the same port that never heard of the silence.
        for item in alertmanager.storage.iterdir():
            item.unlink()
        await alertmanager.start()
        await stack.sandbox.click(stack.sandbox.channel_id, parent.ts, ActionId.UNSILENCE.value)
        await _wait_text(stack, parent, "Silenced until", present=False)
        await _reply_with(stack, parent, "Unsilenced")

    async def test_expiry_in_grafana_is_noticed(
        self, stack: Stack, alertmanager: Alertmanager
    ) -> None:
        """A silence expired in Grafana's UI stops showing on the parent, and the thread says so."""
        parent = await _parent(stack)
        await _silenced(stack, parent)
        (silence,) = await alertmanager.active_silences()
        await alertmanager.expire(silence["id"])
        restored = await _wait_text(stack, parent, "Silenced until", present=False)
        assert ActionId.SILENCE.value in _action_ids(restored)
        await _reply_with(stack, parent, "expired in Grafana")

    async def test_a_silenced_alert_that_goes_away_resolves_the_incident(
        self, stack: Stack, alertmanager: Alertmanager
    ) -> None:
        """A silenced alert sends no resolved notice; its absence in Grafana resolves it."""
        now = datetime.now(UTC)
        await alertmanager.push_alert(GRAFANA_ALERT_LABELS, starts_at=now - timedelta(hours=1))
        parent = await _parent(stack)
        await _silenced(stack, parent)
        assert (await alertmanager.alerts())[0]["status"]["state"] == "suppressed"
        await asyncio.sleep(0.5)  # the watcher sees the alert while it is there
        await alertmanager.push_alert(
            GRAFANA_ALERT_LABELS,
            starts_at=now - timedelta(hours=1),
            ends_at=datetime.now(UTC) - timedelta(seconds=1),
        )
        resolved = await _wait_text(stack, parent, "Resolved after")
        assert ActionId.UNSILENCE.value not in _action_ids(resolved)
        await _reply_with(stack, parent, "no longer lists the alert")

    async def test_the_alert_still_firing_keeps_the_incident_open(
        self, stack: Stack, alertmanager: Alertmanager
    ) -> None:
        """While Grafana still lists the silenced alert, the incident stays firing and silenced."""
        await alertmanager.push_alert(GRAFANA_ALERT_LABELS)
        parent = await _parent(stack)
        await _silenced(stack, parent)
        await asyncio.sleep(1.0)  # several checks
        current = _current(stack, parent)
        assert "Silenced until" in stack.text(current)
        assert "Resolved" not in stack.text(current)


class TestWhoMay:
    @pytest.fixture
    async def stack(self, tmp_path: Path, alertmanager: Alertmanager) -> AsyncIterator[Stack]:
        config = tmp_path / "queuebot.yml"
        config.write_text("silence:\n  allowed_groups: [S0ONCALLS]\n")
        async with running_stack(
            tmp_path,
            GRAFANA_URL=alertmanager.url,
            GRAFANA_TOKEN="glsa_test_token",
            QUEUEBOT_CONFIG=str(config),
        ) as running:
            running.sandbox.add_usergroup("ci-oncall", [ONCALL_USER], usergroup_id="S0ONCALLS")
            yield running

    async def test_someone_outside_the_allowed_groups_is_refused(
        self, stack: Stack, alertmanager: Alertmanager
    ) -> None:
        """Bob is not in @ci-oncall: he is told whom to ask, no modal opens, nothing is made."""
        parent = await _parent(stack)
        await stack.sandbox.click(
            stack.sandbox.channel_id, parent.ts, ActionId.SILENCE.value, SECOND_USER
        )
        (notice,) = await stack.sandbox.wait_for(lambda: stack.sandbox.ephemerals(SECOND_USER))
        assert "not allowed to silence this; ask <!subteam^S0ONCALLS>" in notice.text
        assert stack.sandbox.calls("views.open") == []
        assert await alertmanager.silences() == []

    async def test_a_member_of_an_allowed_group_may(
        self, stack: Stack, alertmanager: Alertmanager
    ) -> None:
        """Alice is in @ci-oncall: her silence is created."""
        parent = await _parent(stack)
        await _silenced(stack, parent)
        assert len(await alertmanager.active_silences()) == 1
        assert stack.sandbox.calls("usergroups.users.list")


class TestFailures:
    async def test_alertmanager_down_is_told_and_changes_nothing(
        self, stack: Stack, alertmanager: Alertmanager
    ) -> None:
        """Grafana unreachable: the clicker reads why, the incident stays as it was."""
        parent = await _parent(stack)
        await stack.settled()
        view = await _open_modal(stack, parent)
        await alertmanager.stop()
        result = await stack.sandbox.submit_view(view.id, _form(), ONCALL_USER)
        assert result.acked_in_time
        (notice,) = await stack.sandbox.wait_for(lambda: stack.sandbox.ephemerals(ONCALL_USER))
        assert "could not be reached" in notice.text and "Nothing was silenced" in notice.text
        await stack.settled()
        assert len(_current(stack, parent).versions) == 1
        assert stack.sandbox.replies(None, parent.ts) == []
        assert stack.sandbox.calls("chat.update") == []

    async def test_two_people_silencing_at_once_make_one_silence(
        self, stack: Stack, alertmanager: Alertmanager
    ) -> None:
        """Two modals submitted together: one silence, one thread line, the other told why."""
        parent = await _parent(stack)
        first = await _open_modal(stack, parent, ONCALL_USER)
        second = await _open_modal(stack, parent, SECOND_USER)
        await asyncio.gather(
            stack.sandbox.submit_view(first.id, _form("1h"), ONCALL_USER),
            stack.sandbox.submit_view(second.id, _form("4h"), SECOND_USER),
        )
        (notice,) = await stack.sandbox.wait_for(
            lambda: stack.sandbox.ephemerals(ONCALL_USER) + stack.sandbox.ephemerals(SECOND_USER)
        )
        assert "Already silenced" in notice.text
        await stack.settled()
        assert len(await alertmanager.active_silences()) == 1
        assert len(stack.sandbox.replies(None, parent.ts)) == 1


async def test_a_refused_token_is_told_and_changes_nothing(tmp_path: Path) -> None:
    """Grafana answers 401: the clicker learns GRAFANA_TOKEN is at fault; nothing changes."""
    async with (
        GrafanaSandbox(token="glsa_right") as grafana,
        running_stack(tmp_path, GRAFANA_URL=grafana.url, GRAFANA_TOKEN="glsa_wrong") as stack,
    ):
        parent = await _parent(stack)
        view = await _open_modal(stack, parent)
        await stack.sandbox.submit_view(view.id, _form(), ONCALL_USER)
        (notice,) = await stack.sandbox.wait_for(lambda: stack.sandbox.ephemerals(ONCALL_USER))
        assert "HTTP 401" in notice.text and "`GRAFANA_TOKEN`" in notice.text
        assert "glsa_wrong" not in notice.text
        await stack.settled()
        assert grafana.silences == {}
        assert stack.sandbox.calls("chat.update") == []


async def test_without_grafana_the_button_says_how_to_set_it_up(tmp_path: Path) -> None:
    """No GRAFANA_URL: Silence… explains what to configure, and links Grafana's own page."""
    async with running_stack(tmp_path) as stack:
        parent = await _parent(stack)
        await stack.sandbox.click(stack.sandbox.channel_id, parent.ts, ActionId.SILENCE.value)
        (notice,) = await stack.sandbox.wait_for(lambda: stack.sandbox.ephemerals(ONCALL_USER))
        assert "`GRAFANA_URL`" in notice.text and "`GRAFANA_TOKEN`" in notice.text
        assert "silence it in Grafana" in notice.text
        assert stack.sandbox.calls("views.open") == []
