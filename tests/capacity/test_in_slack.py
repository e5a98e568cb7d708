"""The capacity report in Slack: `/queue-status report` signed to the running app and answered
at its response_url in the local Slack workspace, and the weekly post, made once per scheduled
moment by two replicas on one PostgreSQL store, after a restart, and after Slack's answer to the
post was lost."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.capacity.report import CapacityReporter
from bot.capacity.schedule import WeeklyReports
from bot.capacity.settings import CapacitySettings, WeeklyPost
from bot.delivery.pacing import Pacer
from bot.delivery.report import REPORT_EVENT, ReportWriter
from bot.domain.clock import Clock
from bot.fleet.reading import FleetSources
from bot.render.renderer import Renderer
from bot.slack.contract import ActionId
from bot.slack.gateway import SlackGateway
from bot.store import Store
from bot.store.postgres import PostgresStore
from bot.store.sqlite import SQLiteStore
from bot.telemetry.metrics import Metrics
from queuebot_lab.sandbox.slack import ONCALL_USER, PostedMessage, SlackSandbox
from testkit.github import HOOK_SECRET
from testkit.harness import BOT_TOKEN, CHANNEL_NAME, SIGNING_SECRET, Stack, running_stack
from testkit.jobs import BUSY, record_sample
from testkit.postgres import fresh_database

COMMAND = "/queue-status"
#: A Monday, 09:00 UTC: when the weekly posts below are due.
DUE = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


def _text(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def _images(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in blocks if b.get("type") == "image"]


@contextlib.asynccontextmanager
async def _stack(tmp_path: Path) -> AsyncIterator[Stack]:
    store = await SQLiteStore.open(str(tmp_path / "queuebot.db"))
    await record_sample(store, (DUE - timedelta(days=1)).timestamp(), DUE.timestamp())
    await store.close()
    config = tmp_path / "queuebot.yml"
    config.write_text("capacity_report:\n  target_p95_minutes: 10\n  days: 7\n")
    async with running_stack(
        tmp_path,
        clock=Clock.at(DUE),
        GITHUB_WEBHOOK_SECRET=HOOK_SECRET,
        QUEUEBOT_CONFIG=str(config),
    ) as stack:
        yield stack


async def test_report_answers_privately_with_its_chart_and_shares(tmp_path: Path) -> None:
    async with _stack(tmp_path) as stack:
        result = await stack.sandbox.slash_command(COMMAND, "report 1")
        assert result.status == 200 and result.body.strip() == ""
        answer = await stack.sandbox.wait_for(
            lambda: (stack.sandbox.ephemerals(ONCALL_USER) or [None])[0], timeout=30
        )
        shown = _text(answer.blocks)
        assert "CI capacity, last day" in shown
        assert f"*{BUSY}* · 100 jobs · queue time p50 50 s, p95 1.6 min" in shown
        assert "*trunk* 67%" in shown and "Would have kept p95 under 10 min" in shown
        assert "*linux.4xlarge* · 2 jobs" in shown and "rocm" not in shown
        (image,) = _images(answer.blocks)
        assert image["slack_file"]["id"] and BUSY in image["alt_text"]
        # Share in channel posts it for everyone, shared by the clicker.
        click = await stack.sandbox.click(
            stack.sandbox.channel_id, answer.ts, ActionId.SHARE_STATUS.value
        )
        assert click.status == 200
        (shared,) = await stack.sandbox.wait_for(
            lambda: [m for m in stack.sandbox.messages() if "CI capacity" in _text(m.blocks)],
            timeout=30,
        )
        assert f"Shared by <@{ONCALL_USER}>" in _text(shared.blocks)
        assert ActionId.SHARE_STATUS.value not in _text(shared.blocks)


async def test_a_bad_window_gets_the_reason_in_the_ack(tmp_path: Path) -> None:
    async with _stack(tmp_path) as stack:
        for text in ("report 0", "report 31", "report week", "report 2 3"):
            result = await stack.sandbox.slash_command(COMMAND, text)
            assert result.status == 200
            assert "takes a number of days from 1 to 30" in result.body, text
        # Each is answered in its ack alone: no report is composed.
        answers = [_text(e.blocks) for e in stack.sandbox.ephemerals(ONCALL_USER)]
        assert len(answers) == 4 and not any("CI capacity" in a for a in answers)


def _reports(sandbox: SlackSandbox) -> list[PostedMessage]:
    return [m for m in sandbox.messages() if (m.metadata or {}).get("event_type") == REPORT_EVENT]


class _Replica:
    """One bot's schedule and writer of weekly reports, on its own connection to the store."""

    def __init__(self, store: Store, slack: SlackGateway, now: list[datetime]) -> None:
        post = WeeklyPost(channel=CHANNEL_NAME, weekday="monday", at=time(9, 0))
        settings = CapacitySettings(days=1, posts=(post,))
        self.writer = ReportWriter(store, slack, Renderer(), Pacer(store=store), poll=0.1)
        reporter = CapacityReporter(
            FleetSources(store=store), settings, clock=Clock.at(lambda: now[0])
        )
        self.schedule = WeeklyReports(
            store, reporter, on_saved=self.writer.wake, clock=Clock.at(lambda: now[0])
        )


async def test_a_weekly_report_is_posted_once_across_replicas_and_restarts() -> None:
    async with (
        fresh_database() as url,
        SlackSandbox(
            bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
        ) as sandbox,
    ):
        slack = SlackGateway(AsyncWebClient(token=BOT_TOKEN, base_url=sandbox.api_url), Metrics())
        stores = [await PostgresStore.open(url), await PostgresStore.open(url)]
        now = [DUE + timedelta(minutes=1)]
        await record_sample(stores[0], (DUE - timedelta(days=1)).timestamp(), DUE.timestamp())
        replicas = [_Replica(store, slack, now) for store in stores]
        tasks = [asyncio.create_task(r.schedule.run(0.05)) for r in replicas]
        tasks += [asyncio.create_task(r.writer.run()) for r in replicas]
        try:
            (posted,) = await sandbox.wait_for(lambda: _reports(sandbox), timeout=30)
            # The schedule looks again many times meanwhile (on the replica leading it);
            # nothing more is posted.
            looked = sum(r.schedule.record.passes for r in replicas) + 10
            async with asyncio.timeout(10):
                # Passes are counted in the replicas, not in Slack: looked at, not waited on.
                while sum(r.schedule.record.passes for r in replicas) < looked:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
            assert len(_reports(sandbox)) == 1
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        assert "CI capacity, last day" in _text(posted.blocks)
        assert _images(posted.blocks) and BUSY in _text(posted.blocks)
        # A restart: the slot's report is in the store, so nothing is composed or posted.
        restarted = _Replica(stores[1], slack, now)
        assert await restarted.schedule.check() == []
        await restarted.writer.post_unposted()
        assert len(_reports(sandbox)) == 1
        # The next week's moment gets its own post; a check later that day adds none.
        now[0] = DUE + timedelta(days=7, hours=1)
        assert len(await restarted.schedule.check()) == 1
        now[0] += timedelta(hours=2)
        assert await restarted.schedule.check() == []
        await restarted.writer.post_unposted()
        assert len(_reports(sandbox)) == 2
        # Past the grace after the moment (the bot was down too long), no late post is made.
        now[0] = DUE + timedelta(days=14, hours=7)
        assert await restarted.schedule.check() == []
        for store in stores:
            await store.close()


async def test_a_report_whose_answer_was_lost_is_found_not_posted_again(tmp_path: Path) -> None:
    store = await SQLiteStore.open(str(tmp_path / "queuebot.db"))
    async with SlackSandbox(
        bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
    ) as sandbox:
        slack = SlackGateway(AsyncWebClient(token=BOT_TOKEN, base_url=sandbox.api_url), Metrics())
        now = [DUE + timedelta(minutes=1)]
        replica = _Replica(store, slack, now)
        # Given by its id, as a channel whose id the bot has learnt.
        post = WeeklyPost(channel=sandbox.channel_id, weekday="monday", at=time(9, 0))
        settings = CapacitySettings(days=1, posts=(post,))
        reporter = CapacityReporter(
            FleetSources(store=store), settings, clock=Clock.at(lambda: now[0])
        )
        replica.schedule = WeeklyReports(store, reporter, clock=Clock.at(lambda: now[0]))
        assert len(await replica.schedule.check()) == 1
        # Slack takes the post, and the answer is lost on the way back.
        sandbox.faults.add("chat.postMessage", status=500, after=True)
        await replica.writer.post_unposted()
        assert len(_reports(sandbox)) == 1
        (unposted,) = await store.unposted_reports()
        assert unposted.sent_at is not None
        await replica.writer.post_unposted()
        (posted,) = _reports(sandbox)
        assert await store.unposted_reports() == []
        adopted = await store.report(unposted.slot)
        assert adopted is not None and adopted.ts == posted.ts
    await store.close()
