"""queuebot's /metrics and the shipped rules on fleets of the second model (`fleetmodel`,
written from GitHub's and actions-runner-controller's documentation, not from queuebot's own
simulator): each runner type's queued jobs exactly and its longest wait within a minute of what
the model's jobs say, and a real Prometheus with `deploy/prometheus/rules.yml` firing for the
types whose queue crosses (more than 5 jobs, the longest an hour or more), and only for them.

The history goes into the store as the fleet readings load it (each job's newest delivery), and
the bot's clock stands at the fleet's end, so its numbers and the model's are of one moment.
Each fleet is drawn for a fixed end (the same fleet every run) and moved, every time in it,
to end at this minute: the bot keeps 14 days of jobs by the machine's clock.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.domain.clock import Clock
from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import open_store
from fleetmodel import Case
from fleetmodel.github import newest_deliveries
from testkit.github import HOOK_SECRET
from testkit.harness import running_stack
from testkit.integration import require_binary
from testkit.second_model import drawn_for, truth
from tests.deploy.test_alert_loop import INSTALL, LoopPrometheus
from tests.web.test_fleet_metrics import per_type, scrape


@pytest.mark.parametrize(
    ("case", "seed", "crossing_types"),
    [
        (Case.LOWERED_MAX, 4, 1),  # one type crosses, another has a job queued
        (Case.MIX, 3, 2),
        (Case.OUTAGE, 4, 2),  # five types queue, two of them past the alert
        (Case.FAILING_STARTS, 2, 0),  # 90 jobs queued, none for an hour
        (Case.SURGE, 2, 0),  # 571 jobs queued, the longest 50 minutes
        (Case.HEALTHY, 5, 0),
    ],
    ids=lambda value: str(value),
)
async def test_metrics_and_rules_on_the_second_models_fleets(
    tmp_path: Path, case: Case, seed: int, crossing_types: int
) -> None:
    prometheus_binary = require_binary("prometheus", INSTALL)
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    fleet = drawn_for(end, case, seed=seed, types=6, days=2)
    at = end.timestamp()
    expected = truth(fleet, at)
    database = tmp_path / "bot" / "queuebot.db"
    database.parent.mkdir(parents=True)
    store = await open_store(str(database))
    try:
        bodies = newest_deliveries(fleet, until=at)
        await load_history(store, bodies, JobsConfig(), remember_until=0.0)
    finally:
        await store.close()
    clock = Clock.at(datetime.fromtimestamp(at, UTC))
    async with running_stack(
        tmp_path / "bot", clock=clock, GITHUB_WEBHOOK_SECRET=HOOK_SECRET
    ) as stack:
        samples = await scrape(stack.url)
        queued = per_type(samples, "queuebot_queued_jobs")
        longest = per_type(samples, "queuebot_queue_longest_wait_seconds")
        assert {name: count for name, count in queued.items() if count} == {
            name: jobs for name, (jobs, _) in expected.items()
        }
        for name, (_, wait) in expected.items():
            # GitHub's times are whole seconds.
            assert abs(longest[name] - wait) <= 60, name
        crossing = sorted(
            name for name, (jobs, wait) in expected.items() if jobs > 5 and wait >= 3600
        )
        prometheus = LoopPrometheus(
            prometheus_binary, tmp_path / "prom", stack.url.removeprefix("http://"), "127.0.0.1:9"
        )
        await prometheus.start()
        try:
            async with asyncio.timeout(30):
                while not await prometheus.query("queuebot_queued_jobs"):  # noqa: ASYNC110
                    await asyncio.sleep(0.2)
            await asyncio.sleep(2.5)  # two evaluations of the rules after the first scrape
            firing = await prometheus.query('ALERTS{alertstate="firing"}')
        finally:
            await prometheus.stop()
    assert sorted(alert["metric"]["runner_type"] for alert in firing) == crossing
    # The fleets are the same every run: what crosses is known.
    assert len(crossing) == crossing_types
