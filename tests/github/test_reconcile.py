"""Reconciliation while serving, on a fleet of the second model (`fleetmodel`) whose GitHub
deliveries were partly lost: a fifth of the `in_progress` and `completed` deliveries and every
delivery for 20 minutes went nowhere. The store then counts ghosts (jobs whose runner took them
long ago, still waiting in its numbers) and misses jobs it was never told of; the GitHub
stand-in holds what GitHub has. After the bot's reconciliation, /metrics gives each runner
type's queued jobs and longest wait exactly as the model's own jobs say, and so does what the
early warning reads."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.app import SERVICES, STORE
from bot.domain.clock import Clock
from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.forecast.reading import queue_states
from bot.store import Store, open_store
from fleetmodel import Case
from fleetmodel.github import newest_deliveries
from queuebot_lab.sandbox.github import GitHubSandbox
from queuebot_lab.sandbox.slack import ONCALL_USER
from testkit.blocks import mrkdwn_texts
from testkit.github import HOOK_SECRET
from testkit.harness import Stack, running_stack
from testkit.second_model import counts, drawn_for, lost, truth
from tests.web.test_fleet_metrics import Samples, per_type, scrape

TOKEN = "ghs_" + "reconcile" * 4


async def after_first_pass(stack: Stack) -> Samples:
    """/metrics once the bot's first reconciliation pass is done (within 3 minutes)."""
    reconciler = stack.app[SERVICES].reconciler
    assert reconciler is not None
    async with asyncio.timeout(180):
        while reconciler.record.passes < 1:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
    return await scrape(stack.url)


def assert_the_alerts_numbers(samples: Samples, expected: dict[str, tuple[int, float]]) -> None:
    """Each runner type's queued jobs on /metrics exactly, and its longest wait within the
    second GitHub's times are written in, as `expected` (the model's own jobs) says."""
    queued = per_type(samples, "queuebot_queued_jobs")
    longest = per_type(samples, "queuebot_queue_longest_wait_seconds")
    assert {name: int(n) for name, n in queued.items() if n} == counts(expected)
    for name, (_, wait) in expected.items():
        assert abs(longest[name] - wait) < 1.0, name


async def _queue_status(stack: Stack, text: str) -> str:
    """The text of the private answer to `/queue-status text`."""
    before = len(stack.sandbox.ephemerals(ONCALL_USER))
    result = await stack.sandbox.slash_command("/queue-status", text, user_id=ONCALL_USER)
    assert result.status == 200
    answer = await stack.sandbox.wait_for(
        lambda: e[before] if len(e := stack.sandbox.ephemerals(ONCALL_USER)) > before else None,
        timeout=20,
    )
    return "\n".join(mrkdwn_texts(answer.blocks))


async def early_warning_reads(store: Store, at: float) -> dict[str, tuple[int, float]]:
    """Each runner type's jobs waiting more than 5 minutes, as the early warning reads them."""
    found = {}
    for name, state in (await queue_states(store, JobsConfig(), at)).items():
        waits = [at - created for created in state.created if at - created > 300]
        if waits:
            found[name] = (len(waits), max(waits))
    return found


@pytest.mark.timeout(300)
async def test_reconciliation_reaches_the_alerts_numbers_despite_lost_deliveries(
    tmp_path: Path,
) -> None:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    fleet = drawn_for(end, Case.OUTAGE, seed=4, types=6, days=2)
    at = end.timestamp()
    expected = truth(fleet, at)
    database = tmp_path / "bot" / "queuebot.db"
    database.parent.mkdir(parents=True)
    store = await open_store(str(database))
    try:
        await load_history(store, lost(fleet, end, seed=4), JobsConfig(), remember_until=0.0)
        # What the lost deliveries left: ghosts and missing jobs, in the early warning too.
        before = await early_warning_reads(store, at)
        assert counts(before) != counts(expected)
    finally:
        await store.close()

    async with GitHubSandbox(TOKEN, org=fleet.plan.org) as github:
        github.history.add_bodies(newest_deliveries(fleet, until=at))
        # Reconciliation off: /queue-status shows what the lost deliveries left.
        async with running_stack(
            tmp_path / "bot",
            clock=Clock.at(end),
            GITHUB_WEBHOOK_SECRET=HOOK_SECRET,
            QUEUEBOT_RECONCILE_SECONDS="0",
        ) as stack:
            assert stack.app[SERVICES].reconciler is None
            summary = await _queue_status(stack, "")
            shown = [f"`{name}` {jobs} queued" in summary for name, (jobs, _) in expected.items()]
            assert not all(shown)
        async with running_stack(
            tmp_path / "bot",
            clock=Clock.at(end),
            GITHUB_WEBHOOK_SECRET=HOOK_SECRET,
            GITHUB_TOKEN=TOKEN,
            GITHUB_ORG=fleet.plan.org,
            GITHUB_API_URL=github.url,
            QUEUEBOT_RECONCILE_SECONDS="3600",
        ) as stack:
            samples = await after_first_pass(stack)
            assert_the_alerts_numbers(samples, expected)
            corrected = {
                dict(labels)["correction"]: value
                for (name, labels), value in samples.items()
                if name == "queuebot_jobs_corrected_total"
            }
            # Ghosts a runner had taken, runs a completion was lost for, jobs never told of.
            assert corrected["started"] > 0 and corrected["completed"] > 0
            assert corrected["found"] > 0
            after = await early_warning_reads(stack.app[STORE], at)
            assert counts(after) == counts(expected)
            # /queue-status shows each type's queue as GitHub has it, and its detail says
            # what was corrected.
            summary = await _queue_status(stack, "")
            for name, (jobs, _) in expected.items():
                assert f"`{name}` {jobs} queued" in summary, name
            busiest = max(expected, key=lambda name: expected[name][0])
            detail = await _queue_status(stack, busiest)
            assert "jobs corrected from GitHub in the last hour" in detail
            # Within a fifth of the stand-in's hourly 5,000 (the runners list is the scrape's).
            asked = [r for r in github.requests if not r.path.endswith("/actions/runners")]
            assert 0 < len(asked) <= 1000
