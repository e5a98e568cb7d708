"""Silence… and Unsilence, end to end: signed Slack requests in, a real Alertmanager serving
Grafana's silence API, the local Slack workspace showing what the channel sees."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.assembly import RESOLVE_AFTER_CHECKS
from bot.slack.contract import ActionId, SilenceInput
from queuebot_lab.sandbox.grafana import GrafanaSandbox
from queuebot_lab.sandbox.slack import ONCALL_USER, SECOND_USER, PostedMessage
from queuebot_lab.sandbox.slack.models import OpenView, ViewState
from testkit.alertmanager import Alertmanager
from testkit.harness import Stack, running_stack
from testkit.payloads import reference, refired

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


async def _parent(stack: Stack) -> PostedMessage:
    assert (await stack.webhook(reference())).status == 202
    (parent,) = await stack.parents(1)
    return parent


async def _open_modal(stack: Stack, parent: PostedMessage, user: str = ONCALL_USER) -> OpenView:
    opened = len(stack.sandbox.views)
    result = await stack.sandbox.click(
        stack.sandbox.channel_id, parent.ts, ActionId.SILENCE.value, user
    )
    assert result.status == 200
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


async def _silenced(stack: Stack, parent: PostedMessage, comment: str = "") -> OpenView:
    view = await _open_modal(stack, parent)
    result = await stack.sandbox.submit_view(view.id, _form(comment=comment), ONCALL_USER)
    assert result.status == 200
    await _wait_text(stack, parent, "Silenced until")
    return view


def _current(stack: Stack, parent: PostedMessage) -> PostedMessage:
    found = stack.sandbox.message(None, parent.ts)
    assert found is not None
    return found


async def _wait_text(
    stack: Stack, parent: PostedMessage, text: str, present: bool = True
) -> PostedMessage:
    return await stack.sandbox.wait_for(
        lambda: (m := _current(stack, parent)) and ((text in stack.text(m)) == present) and m,
        timeout=10,
    )


def _action_ids(message: PostedMessage) -> list[str]:
    return [
        element.get("action_id", "")
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block.get("elements", [])
    ]


async def _reply_with(stack: Stack, parent: PostedMessage, text: str) -> PostedMessage:
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
        preview = view.view["blocks"][-1]["text"]["text"]
        assert preview == f'```__alert_rule_uid__="{RULE_UID}"\ntype="alerting-infra"```'
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
        assert result.status == 200
        restored = await _wait_text(stack, parent, "Silenced until", present=False)
        assert (await alertmanager.silence(silence["id"]))["status"]["state"] == "expired"
        assert ActionId.SILENCE.value in _action_ids(restored)
        line = await _reply_with(stack, parent, "Unsilenced")
        assert "@bob" in stack.text(line) and "@alice" in stack.text(line)

    async def test_a_silence_already_gone_counts_as_expired(
        self, tmp_path: Path, alertmanager: Alertmanager
    ) -> None:
        """Unsilence of a silence Grafana no longer has still lifts it in Slack. The silence
        watcher, which would notice the silence gone by itself (and say it expired in Grafana),
        looks only hourly here: the click, not the race with it, is what is tested."""
        async with running_stack(
            tmp_path,
            GRAFANA_URL=alertmanager.url,
            GRAFANA_TOKEN="glsa_test_token",
            QUEUEBOT_SILENCE_CHECK_SECONDS="3600",
        ) as stack:
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
        await stack.silence_checks(2)  # the watcher has seen the alert while it is there
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
        # Past the checks the alert must be missing for before its incident resolves.
        await stack.silence_checks(RESOLVE_AFTER_CHECKS + 2)
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
        assert result.status == 200
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


class FlakyGrafana:
    """A proxy in front of Alertmanager that fails the way a real Grafana path can."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        #: (method, path suffix) → what to do: "fail" (503 without forwarding), "html" (200
        #: login page without forwarding), "lost" (forward, then answer 502).
        self.faults: dict[tuple[str, str], str] = {}
        self._server: TestServer | None = None
        self._http: aiohttp.ClientSession | None = None

    async def _handle(self, request: web.Request) -> web.Response:
        assert self._http is not None
        fault = next(
            (
                f
                for (m, tail), f in self.faults.items()
                if m == request.method and request.path.endswith(tail)
            ),
            None,
        )
        if fault == "fail":
            return web.json_response({"message": "upstream unavailable"}, status=503)
        if fault == "html":
            return web.Response(text="<html>Sign in</html>", content_type="text/html")
        async with self._http.request(
            request.method,
            self.upstream + request.path_qs,
            data=await request.read(),
            headers={"Content-Type": request.headers.get("Content-Type", "application/json")},
        ) as answer:
            body = await answer.read()
            if fault == "lost":
                return web.Response(text="Bad Gateway", status=502)
            return web.Response(body=body, status=answer.status, content_type="application/json")

    async def __aenter__(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._http = aiohttp.ClientSession()
        self._server = TestServer(app, host="127.0.0.1")
        await self._server.start_server()
        return str(self._server.make_url("")).rstrip("/")

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None and self._http is not None
        await self._server.close()
        await self._http.close()


class TestUnreliableGrafana:
    @pytest.fixture
    async def flaky(self, alertmanager: Alertmanager) -> AsyncIterator[tuple[FlakyGrafana, str]]:
        proxy = FlakyGrafana(alertmanager.url)
        async with proxy as url:
            yield proxy, url

    async def test_an_unreadable_alert_list_resolves_nothing(
        self, tmp_path: Path, alertmanager: Alertmanager, flaky: tuple[FlakyGrafana, str]
    ) -> None:
        """The alert list failing, then answering a login page, proves nothing: the incident
        stays firing and silenced, and the watcher keeps working afterwards."""
        proxy, url = flaky
        await alertmanager.push_alert(GRAFANA_ALERT_LABELS)
        async with running_stack(
            tmp_path,
            GRAFANA_URL=url,
            GRAFANA_TOKEN="glsa_test_token",
            QUEUEBOT_SILENCE_CHECK_SECONDS="0.1",
        ) as stack:
            parent = await _parent(stack)
            await _silenced(stack, parent)
            for fault in ("fail", "html"):
                proxy.faults = {("GET", "/alerts"): fault}
                # Past the checks the alert must be missing for before its incident resolves.
                await stack.silence_checks(RESOLVE_AFTER_CHECKS + 2)
                current = _current(stack, parent)
                assert "Silenced until" in stack.text(current)
                assert "Resolved" not in stack.text(current)
            proxy.faults = {}
            (silence,) = await alertmanager.active_silences()
            await alertmanager.expire(silence["id"])
            await _wait_text(stack, parent, "Silenced until", present=False)

    async def test_a_lost_create_answer_is_found_and_taken_back(
        self, tmp_path: Path, alertmanager: Alertmanager, flaky: tuple[FlakyGrafana, str]
    ) -> None:
        """Grafana made the silence but its answer was lost: queuebot finds it by its marker
        and expires it, so "nothing was silenced" is true and a retry makes only one."""
        proxy, url = flaky
        proxy.faults = {("POST", "/silences"): "lost"}
        async with running_stack(
            tmp_path, GRAFANA_URL=url, GRAFANA_TOKEN="glsa_test_token"
        ) as stack:
            parent = await _parent(stack)
            view = await _open_modal(stack, parent)
            await stack.sandbox.submit_view(view.id, _form(), ONCALL_USER)
            (notice,) = await stack.sandbox.wait_for(lambda: stack.sandbox.ephemerals(ONCALL_USER))
            assert "Nothing was silenced" in notice.text
            assert await alertmanager.active_silences() == []
            assert len(await alertmanager.silences()) == 1  # made, then expired
            proxy.faults = {}
            await _silenced(stack, await _current_parent(stack, parent))
            assert len(await alertmanager.active_silences()) == 1


async def _current_parent(stack: Stack, parent: PostedMessage) -> PostedMessage:
    await stack.settled()
    return _current(stack, parent)


class TestLifecycle:
    async def test_someone_not_allowed_cannot_unsilence(
        self, tmp_path: Path, alertmanager: Alertmanager
    ) -> None:
        """Unsilence checks who may, like Silence…: Bob is refused and the silence holds."""
        config = tmp_path / "queuebot.yml"
        config.write_text(f"silence:\n  allowed_users: [{ONCALL_USER}]\n")
        async with running_stack(
            tmp_path,
            GRAFANA_URL=alertmanager.url,
            GRAFANA_TOKEN="glsa_test_token",
            QUEUEBOT_CONFIG=str(config),
        ) as stack:
            parent = await _parent(stack)
            await _silenced(stack, parent)
            await stack.sandbox.click(
                stack.sandbox.channel_id, parent.ts, ActionId.UNSILENCE.value, SECOND_USER
            )
            (notice,) = await stack.sandbox.wait_for(lambda: stack.sandbox.ephemerals(SECOND_USER))
            assert f"not allowed to silence this; ask <@{ONCALL_USER}>" in notice.text
            assert len(await alertmanager.active_silences()) == 1
            assert "Silenced until" in stack.text(_current(stack, parent))

    async def test_firing_again_after_resolving_is_not_shown_as_silenced(
        self, stack: Stack
    ) -> None:
        """Grafana notifies a firing only when no silence holds it back, so a reopened
        incident offers Silence… again."""
        parent = await _parent(stack)
        await _silenced(stack, parent)
        assert (await stack.webhook(reference("resolved"))).status == 202
        await _wait_text(stack, parent, "Resolved after")
        resolved_at = datetime.fromisoformat(reference("resolved")["alerts"][0]["endsAt"])
        again = refired(reference(), resolved_at + timedelta(minutes=10))
        assert (await stack.webhook(again)).status == 202
        reopened = await _wait_text(stack, parent, "Firing again")
        assert "Silenced until" not in stack.text(reopened)
        assert ActionId.SILENCE.value in _action_ids(reopened)
