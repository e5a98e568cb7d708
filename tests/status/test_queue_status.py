"""/queue-status end to end: signed slash commands to the running app, a real Prometheus filled
from `queuebot simulate`, a real Alertmanager for the silence, and the answer as it arrives at
the command's response_url in the local Slack workspace."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.domain.clock import Clock
from bot.domain.diagnosis import RunnerTypeState
from bot.domain.queue_status import FleetView, QueueStatus
from bot.render.renderer import Renderer
from bot.slack import blockkit
from bot.slack.contract import ActionId, SilenceInput
from bot.status.rate_limit import PER_WINDOW
from bot.status.reader import matching
from bot.status.request import NotUnderstood, StatusRequest, parse_request
from queuebot_lab.sandbox.slack import ONCALL_USER, SECOND_USER, PostedMessage
from queuebot_lab.sandbox.slack.models import Ephemeral
from queuebot_lab.simulator import Scenario, SimulationSpec, Truth, runner_type_names
from testkit.alertmanager import Alertmanager
from testkit.blocks import mrkdwn_texts
from testkit.github import HOOK_SECRET, deliver, job_delivery
from testkit.harness import Stack, running_stack
from testkit.payloads import reference
from testkit.prometheus import Prometheus
from testkit.servers import free_port

Make = Callable[[SimulationSpec], Awaitable[tuple[Prometheus, Truth]]]
COMMAND = "/queue-status"


#: When the fleet's history ends: the moment the bot reads it at (simulated and backfilled once
#: for the tests that share it).
END = datetime.now(UTC).replace(microsecond=0)


def _spec(scenario: Scenario) -> SimulationSpec:
    return SimulationSpec(
        scenario=scenario, hours=27, runner_types=6, seed=11, end=END, step_seconds=120
    )


def _other_alert() -> dict[str, Any]:
    """A second incident whose rule name tries to ping the channel and plant a link."""
    body = reference()
    body["groupKey"] = "other-group"
    body["alerts"][0]["labels"] = {
        **body["alerts"][0]["labels"],
        "alertname": "<!channel> GPU queue <https://evil.example|click>",
    }
    body["alerts"][0]["fingerprint"] = "fp-other"
    return body


def _blocks_text(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


async def _answer(stack: Stack, user: str = ONCALL_USER, before: int = 0) -> Ephemeral:
    """The next private answer to `user` after the `before` they already had."""
    return await stack.sandbox.wait_for(
        lambda: e[before] if len(e := stack.sandbox.ephemerals(user)) > before else None,
        timeout=20,
    )


async def _command(stack: Stack, text: str = "", user: str = ONCALL_USER) -> Ephemeral:
    before = len(stack.sandbox.ephemerals(user))
    result = await stack.sandbox.slash_command(COMMAND, text, user_id=user)
    assert result.status == 200
    # The ack is empty: the answer comes through the response_url, so nothing is shown twice.
    assert result.body.strip() == ""
    return await _answer(stack, user, before)


async def _incidents(stack: Stack) -> tuple[PostedMessage, PostedMessage]:
    assert (await stack.webhook(reference())).status == 202
    assert (await stack.webhook(_other_alert())).status == 202
    first, second = await stack.parents(2)
    await stack.settled()
    return first, second


async def _silence(stack: Stack, parent: PostedMessage) -> None:
    opened = len(stack.sandbox.views)
    await stack.sandbox.click(stack.sandbox.channel_id, parent.ts, ActionId.SILENCE.value)
    view = await stack.sandbox.wait_for(
        lambda: stack.sandbox.views[opened] if len(stack.sandbox.views) > opened else None
    )
    values = {
        SilenceInput.DURATION.value: {SilenceInput.DURATION.value: "2h"},
        SilenceInput.COMMENT.value: {SilenceInput.COMMENT.value: "deploy of the autoscaler"},
    }
    await stack.sandbox.submit_view(view.id, values, ONCALL_USER)
    await stack.sandbox.wait_for(
        lambda: "Silenced until" in stack.text(stack.sandbox.message(None, parent.ts) or parent),
        timeout=10,
    )


def _shared(stack: Stack) -> list[PostedMessage]:
    """Queue statuses posted in the channel for everyone."""
    return [m for m in stack.sandbox.messages() if "CI queue" in stack.text(m)]


def _permalink(stack: Stack, message: PostedMessage) -> str:
    return f"{stack.sandbox.url}/archives/{stack.sandbox.channel_id}/p{message.ts.replace('.', '')}"


def _listed_types(text: str) -> list[str]:
    """Runner types in the order the summary lists them (each line starts with its name)."""
    return re.findall(r"(?m)^`([^`]+)` \d+ queued", text)


@pytest.fixture
async def fleet(prometheus_for: Make) -> tuple[Prometheus, Truth]:
    return await prometheus_for(_spec(Scenario.CAPACITY_CAP))


@pytest.fixture
async def stack(
    tmp_path: Path, fleet: tuple[Prometheus, Truth], alertmanager: Alertmanager
) -> AsyncIterator[Stack]:
    config = tmp_path / "queuebot.yml"
    config.write_text("auto_diagnose: false\n")
    async with running_stack(
        tmp_path,
        clock=Clock.at(END),
        PROMETHEUS_URL=fleet[0].url,
        QUEUEBOT_CONFIG=str(config),
        GRAFANA_URL=alertmanager.url,
        GRAFANA_TOKEN="glsa_test_token",
    ) as running:
        yield running


@pytest.mark.integration
class TestWithTheFleet:
    async def test_summary_lists_queues_incidents_and_silences(
        self, stack: Stack, fleet: tuple[Prometheus, Truth]
    ) -> None:
        _, truth = fleet
        queue, other = await _incidents(stack)
        await _silence(stack, queue)
        # Each thread's link was asked for once, when its parent was posted; not again here.
        assert len(stack.sandbox.calls("chat.getPermalink")) == 2
        answer = await _command(stack)
        text = _blocks_text(answer.blocks)
        assert len(stack.sandbox.calls("chat.getPermalink")) == 2
        # Runner types with jobs waiting, the longest wait first, with the autoscaler's mark.
        listed = _listed_types(answer.blocks[2]["text"]["text"])
        for runner_type in truth.affected:
            assert runner_type in listed, (runner_type, listed)
        waits = [
            stack_line
            for stack_line in answer.blocks[2]["text"]["text"].splitlines()
            if stack_line.startswith("`")
        ]
        assert len(waits) == len(listed) and ":no_entry: at max" in text
        assert re.search(r"\*\d+ jobs? waiting\* on \d+ of 6 runner types", text)
        # Open incidents, each linked to its thread; the silenced one with its end and author.
        assert "Open incidents (2)" in text
        assert f"<{_permalink(stack, queue)}|" in text
        assert f"<{_permalink(stack, other)}|" in text
        assert "Active silences (1)" in text and "by @alice" in text
        assert "deploy of the autoscaler" in text and "until <!date^" in text
        # An alert's text can neither mention anyone nor plant a link.
        assert "<!channel>" not in text and "&lt;!channel&gt;" in text
        assert "<https://evil.example" not in text
        assert answer.blocks[-2]["elements"][0]["text"].startswith("Read <!date^")
        assert answer.blocks[-1]["elements"][0]["action_id"] == ActionId.SHARE_STATUS.value
        assert stack.sandbox.response_posts[-1].outcome == "ephemeral"
        # Only the asker saw it; nothing was posted in the channel.
        assert stack.sandbox.ephemerals(SECOND_USER) == []
        assert len(stack.sandbox.messages()) == 2

    async def test_a_prefix_shows_those_types_in_detail_with_a_chart(
        self, stack: Stack, fleet: tuple[Prometheus, Truth]
    ) -> None:
        _, truth = fleet
        (affected,) = truth.affected
        linux = [n for n in runner_type_names(6) if n.startswith("linux")]
        answer = await _command(stack, "linux")
        text = _blocks_text(answer.blocks)
        assert f"{len(linux)} runner types match `linux`" in text
        details = [b["text"]["text"] for b in answer.blocks if b["type"] == "section"][1:]
        shown = [re.match(r"\*`([^`]+)`\*", d)[1] for d in details]  # type: ignore[index]
        # Where jobs wait longest first.
        assert shown[0] == affected and sorted(shown) == sorted(linux)
        mine = details[0]
        assert ":no_entry: at the autoscaler maximum" in mine
        for words in ("*Queue:*", "longest wait", "utilised", "*Arrivals:*", "jobs/min"):
            assert words in mine, words
        assert "*Job duration:* p50" in mine and "(usual " in mine
        (image,) = [b for b in answer.blocks if b["type"] == "image"]
        chart = next(f for f in stack.sandbox.files if f.id == image["slack_file"]["id"])
        assert chart.completed and chart.content and chart.content.startswith(b"\x89PNG")
        assert chart.channel is None  # uploaded privately, shown only in this answer
        assert affected in image["alt_text"]
        # Any case, and dots for dashes, as runner types are often written.
        exact = await _command(stack, affected.upper().replace("-", "."))
        assert "1 runner type matches" in _blocks_text(exact.blocks)
        unknown = _blocks_text((await _command(stack, "windows.arm64")).blocks)
        assert "No runner type is named or starts with `windows.arm64`" in unknown
        assert f"`{affected}`" in unknown and ActionId.SHARE_STATUS.value not in unknown

    async def test_what_slack_refuses_is_left_out_and_said(self, stack: Stack) -> None:
        """No thread links (Slack gave none when the incidents were posted) and no chart
        upload: the answer comes anyway, and says so."""
        stack.sandbox.faults.add("chat.getPermalink", status=200, error="internal_error", count=2)
        queue, _ = await _incidents(stack)
        summary = _blocks_text((await _command(stack)).blocks)
        assert summary.count("no thread link") == 2 and "Open incidents (2)" in summary
        assert _permalink(stack, queue) not in summary
        stack.sandbox.faults.add("files.getUploadURLExternal", status=200, error="invalid_auth")
        detail = await _command(stack, "linux")
        assert [b for b in detail.blocks if b["type"] == "image"] == []
        assert "The chart could not be uploaded to Slack." in _blocks_text(detail.blocks)

    async def test_post_and_share_put_it_in_the_channel(self, stack: Stack) -> None:
        await _incidents(stack)
        result = await stack.sandbox.slash_command(COMMAND, "post")
        assert result.status == 200 and result.body.strip() == ""
        posted = await stack.sandbox.wait_for(lambda: _shared(stack)[:1], timeout=20)
        shared = _blocks_text(posted[0].blocks)
        assert f"shared by <@{ONCALL_USER}>" in shared and "Open incidents (2)" in shared
        assert ActionId.SHARE_STATUS.value not in shared
        # The Share in channel button of a private answer does the same, and removes it.
        private = await _command(stack, user=SECOND_USER)
        click = await stack.sandbox.click(
            stack.sandbox.channel_id, private.ts, ActionId.SHARE_STATUS.value, SECOND_USER
        )
        assert click.status == 200
        again = await stack.sandbox.wait_for(lambda: _shared(stack)[1:], timeout=20)
        assert f"shared by <@{SECOND_USER}>" in _blocks_text(again[0].blocks)
        await stack.sandbox.wait_for(lambda: stack.sandbox.ephemerals(SECOND_USER) == [])

    async def test_prometheus_stopped_still_answers_with_incidents(
        self, stack: Stack, fleet: tuple[Prometheus, Truth]
    ) -> None:
        queue, _ = await _incidents(stack)
        await fleet[0].stop()
        for text in ("", "linux"):
            answer = await _command(stack, text)
            shown = _blocks_text(answer.blocks)
            assert "could not be read" in shown and "cannot reach Prometheus" in shown
            if not text:
                assert f"<{_permalink(stack, queue)}|" in shown


async def test_prometheus_too_slow_is_said_in_one_line(tmp_path: Path) -> None:
    """A Prometheus that takes the connection and never answers: the answer comes anyway,
    after the 5-second budget, with the incidents."""
    held: list[asyncio.StreamWriter] = []

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    port = free_port()
    server = await asyncio.start_server(stall, "127.0.0.1", port)
    try:
        async with running_stack(tmp_path, PROMETHEUS_URL=f"http://127.0.0.1:{port}") as stack:
            assert (await stack.webhook(reference())).status == 202
            await stack.parents(1)
            answer = await _command(stack)
            shown = _blocks_text(answer.blocks)
            assert "did not answer within 5s" in shown and "Open incidents (1)" in shown
    finally:
        for writer in held:
            writer.close()
        server.close()
        with contextlib.suppress(Exception):
            await server.wait_closed()


async def test_without_metrics_incidents_and_silences_only(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack:
        assert (await stack.webhook(reference())).status == 202
        (parent,) = await stack.parents(1)
        await stack.settled()
        for text in ("", "linux.g5"):
            answer = await _command(stack, text)
            shown = _blocks_text(answer.blocks)
            assert (
                "No source of fleet data is configured" in shown
                and "`GITHUB_WEBHOOK_SECRET`" in shown
            )
        summary = await _command(stack)
        shown = _blocks_text(summary.blocks)
        assert f"<{_permalink(stack, parent)}|" in shown and "Active silences:* none" in shown


async def test_one_person_asking_too_often_is_told_to_wait(tmp_path: Path) -> None:
    """Past six asks a minute, the ack itself says how long to wait and nothing is read or
    posted; someone else is answered as usual."""
    async with running_stack(tmp_path) as stack:
        for _ in range(PER_WINDOW):
            result = await stack.sandbox.slash_command(COMMAND, "")
            assert result.status == 200 and result.body.strip() == ""
        await stack.sandbox.wait_for(lambda: len(stack.sandbox.response_posts) == PER_WINDOW)
        result = await stack.sandbox.slash_command(COMMAND, "")
        ack = result.json()
        assert ack["response_type"] == "ephemeral"
        assert re.search(r"ask again in \d+ s", ack["text"])
        result = await stack.sandbox.slash_command(COMMAND, "", user_id=SECOND_USER)
        assert result.body.strip() == ""
        await stack.sandbox.wait_for(lambda: len(stack.sandbox.response_posts) == PER_WINDOW + 1)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("help", None),
        ("--help", None),
        ("linux.g5 linux.4xlarge", "is not something I understand"),
        ("<!channel>", "is not something I understand"),
        ("report ²", "takes a number of days"),
        ("report " + "9" * 4401, "takes a number of days"),
        ("post report ٣", "takes a number of days"),
    ],
)
async def test_help_and_anything_else_get_the_usage_in_the_ack(
    tmp_path: Path, text: str, problem: str | None
) -> None:
    async with running_stack(tmp_path) as stack:
        result = await stack.sandbox.slash_command(COMMAND, text)
        assert result.status == 200
        ack = result.json()
        assert ack["response_type"] == "ephemeral"
        (shown,) = stack.sandbox.ephemerals(ONCALL_USER)
        assert f"{COMMAND} post" in shown.text and f"{COMMAND} linux.g5" in shown.text
        if problem:
            assert problem in shown.text
        assert "<!channel>" not in _blocks_text(shown.blocks)
        assert stack.sandbox.response_posts == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", StatusRequest()),
        ("  ", StatusRequest()),
        ("post", StatusRequest(public=True)),
        ("POST linux.g5", StatusRequest(query="linux.g5", public=True)),
        ("linux-g5-4xlarge-nvidia-gpu", StatusRequest(query="linux-g5-4xlarge-nvidia-gpu")),
        ("help", NotUnderstood()),
        ("?", NotUnderstood()),
        ("post a b", NotUnderstood("`/queue-status post a b` is not something I understand.")),
        ("`x`", NotUnderstood("`/queue-status 'x'` is not something I understand.")),
    ],
)
def test_what_the_command_text_asks_for(text: str, expected: StatusRequest | NotUnderstood) -> None:
    assert parse_request(text) == expected


def test_prefixes_ignore_case_and_separators() -> None:
    names = ["linux-g5-4xlarge-nvidia-gpu", "linux-g5-48xlarge", "linux-2xlarge", "windows-g5"]
    assert matching(names, "linux.g5") == ["linux-g5-48xlarge", "linux-g5-4xlarge-nvidia-gpu"]
    assert matching(names, "LINUX_2XLARGE") == ["linux-2xlarge"]
    contained = ["linux-g5-48xlarge", "linux-g5-4xlarge-nvidia-gpu", "windows-g5"]
    assert matching(names, "g5") == contained
    assert matching(names, "macos") == []


def test_metric_labels_and_alert_text_stay_inert() -> None:
    """A runner type named by a metric label cannot ping the channel or plant a link either."""
    hostile = "<!channel>`<https://evil.example|x>"
    state = RunnerTypeState(
        name=hostile, queued=3, max_wait_seconds=600, busy=4, registered=4, desired=4, max=4
    )
    at = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)
    status = QueueStatus(
        at=at,
        fleet=FleetView(types=(state,), window="10m"),
        incidents=(),
        firing_total=0,
        silenced=(),
    )
    renderer = Renderer()
    for shown in (
        renderer.queue_status(status),
        renderer.queue_status(status, shared_by="U0ONCALL"),
        renderer.queue_status(
            QueueStatus(at, status.fleet, (), 0, (), query=hostile, matched=0, details=())
        ),
    ):
        # Slack reads mentions and links in mrkdwn and in the fallback text, not plain_text.
        text = "\n".join([*mrkdwn_texts(shown.blocks), shown.text])
        assert "<!channel>" not in text and "<https://evil" not in text
        assert "&lt;!channel&gt;" in text
        assert blockkit.validate_message(shown.text, shown.blocks) == []


async def test_the_queue_from_github_job_events_with_since_when(tmp_path: Path) -> None:
    """With only GitHub's job events (no Prometheus), /queue-status shows each runner type's
    queue as the alert counts it: jobs queued 5 minutes or more, the longest wait, since when;
    the detail charts it from the events."""
    now = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)
    async with running_stack(
        tmp_path, clock=Clock.at(lambda: now), GITHUB_WEBHOOK_SECRET=HOOK_SECRET
    ) as stack:
        for n, minutes in enumerate((37, 12, 3)):
            body = job_delivery("queued", 500 + n, now - timedelta(minutes=minutes))
            status, _ = await deliver(stack.http, stack.url, body)
            assert status == 202
        summary = _blocks_text((await _command(stack)).blocks)
        assert "`linux.2xlarge`" in summary
        assert "2 queued · longest wait 37m (since 14:23 UTC)" in summary
        detail = await _command(stack, "linux.2x")
        assert "linux.2xlarge" in _blocks_text(detail.blocks)
        (chart,) = await stack.sandbox.wait_for(
            lambda: [f for f in stack.sandbox.files if f.completed], timeout=30
        )
        assert chart.content is not None and chart.content.startswith(b"\x89PNG")
