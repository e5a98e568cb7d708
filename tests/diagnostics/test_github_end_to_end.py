"""Diagnostics end to end from GitHub alone: a simulated fleet's `workflow_job` deliveries, the
history loaded into the store and the last minutes sent signed to `POST /webhooks/github` as
GitHub sends them (some twice), its runners served by a GitHub REST stand-in over HTTP, and
`queuebot diagnose --at T --format json` reading both: no Prometheus anywhere."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.fleet.sources.jobs_config import JobsConfig
from queuebot_lab.sandbox.github import GitHubSandbox
from queuebot_lab.simulator import FleetJobs, Scenario, SimulationSpec
from queuebot_lab.simulator.deliveries import delivery, events, history_bodies, workflow_job_body
from testkit.github import HOOK_SECRET
from testkit.github_fleet import alert_numbers, diagnose_from_github, sandbox_runners, simulated
from testkit.harness import running_stack
from testkit.kept import kept_history

#: The last minutes of the fleet reach the bot through its webhook, the rest is loaded.
REPLAYED = timedelta(minutes=10)
TOKEN = "ghs_" + "e2e" * 12


def _busy_hour() -> datetime:
    """The latest 18:00 UTC that has passed: the fleet's busy hours, whenever the tests run."""
    now = datetime.now(UTC).replace(microsecond=0)
    today = now.replace(hour=18, minute=0, second=0)
    return today if today <= now else today - timedelta(days=1)


END = _busy_hour()


async def _replay(spec: SimulationSpec, fleet: FleetJobs, tmp_path: Path) -> int:
    """Load the history before the last minutes (or copy the store an earlier run loaded it
    into), then send those minutes' deliveries through the bot's webhook, signed, a few of
    them twice; how many deliveries were sent."""
    since = fleet.end - REPLAYED.total_seconds()
    jobs = list(fleet.jobs)
    await kept_history(
        tmp_path / "bot" / "queuebot.db",
        f"github end to end {spec!r} {since!r}",
        lambda: history_bodies(jobs, since),
        JobsConfig(),
        remember_until=fleet.end + 86400,
    )
    rng = random.Random(7)
    sent = 0
    async with running_stack(tmp_path / "bot", GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
        for _, action, job in events(jobs, since, fleet.end):
            headers, raw = delivery(workflow_job_body(job, action), HOOK_SECRET)
            for _ in range(2 if rng.random() < 0.03 else 1):
                async with stack.http.post(
                    f"{stack.url}/webhooks/github", data=raw, headers=headers
                ) as answer:
                    assert answer.status in (200, 202), await answer.text()
                sent += 1
    return sent


def _diagnose(database: Path, github: str) -> dict[str, Any]:
    env = {
        "PATH": os.environ["PATH"],
        "QUEUEBOT_DATABASE": str(database),
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_ORG": "pytorch",
        "GITHUB_API_URL": github,
    }
    result = subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "bot", "diagnose", "--at", END.isoformat(), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


@pytest.mark.integration
@pytest.mark.parametrize("scenario", list(Scenario))
async def test_each_cause_is_diagnosed_from_job_events_and_runners(
    tmp_path: Path, scenario: Scenario
) -> None:
    spec = SimulationSpec(
        scenario=scenario, hours=27, runner_types=6, seed=7, end=END, step_seconds=120
    )
    fleet = await asyncio.to_thread(simulated, spec)
    truth = fleet.truth
    assert await _replay(spec, fleet, tmp_path) > 100
    async with GitHubSandbox(TOKEN) as github:
        github.runners = sandbox_runners(fleet.runners)
        report = await asyncio.to_thread(_diagnose, tmp_path / "bot" / "queuebot.db", github.url)
        assert github.listings(), "the runners list was not read"

    assert set(report["sources"]) == {"GitHub job events", "GitHub runners"}
    assert report["primary_cause"] == truth.primary_cause
    # The alert's own numbers: queued exact, the longest wait within a minute.
    expected = alert_numbers(fleet, END.timestamp())
    shown = {t["name"]: t for t in report["runner_types"]}
    for name, (queued, longest) in expected.items():
        assert shown[name]["queued"] == queued, name
        assert abs(shown[name]["max_wait_seconds"] - longest) <= 60, name
    for name, state in shown.items():
        if name not in expected:
            assert not state["queued"], name
    if truth.primary_cause == "none":
        assert not any(f["verdict"] == "likely" for f in report["findings"])
        return
    likely = {f["cause"]: set(f["runner_types"]) for f in report["findings"]}
    worst = max(truth.affected, key=lambda name: expected.get(name, (0, 0.0)))
    assert worst in likely[truth.affected[worst]]


@pytest.mark.integration
@pytest.mark.parametrize("seed", [1, 2])
async def test_starved_runners_at_a_quiet_hour_are_told_by_the_last_hours_failing_jobs(
    tmp_path: Path, seed: int
) -> None:
    """At 06:00 a starved runner type completes a few dozen jobs in ten minutes, too few for
    its OOM-killed ones to stand out from chance, while its slow-starting runners are listed
    offline like failed ones: the last hour's failing jobs name the cause."""
    spec = SimulationSpec(
        scenario=Scenario.RESOURCE_STARVATION,
        hours=27,
        runner_types=6,
        seed=seed,
        end=END.replace(hour=6),
        step_seconds=120,
    )
    run = await diagnose_from_github(spec, tmp_path)
    assert (run.staged, run.named) == ("resource_constraints", "resource_constraints")


@pytest.mark.integration
async def test_a_maximum_lowered_within_the_hour_is_the_limit_it_holds_since(
    tmp_path: Path,
) -> None:
    """The maximum of two types lowered at 22:47, 73 minutes before midnight: the most busy at
    once fell from 309 to 145 (107 to 54) over the hour and has held at that one number since,
    starting jobs as fast as runners held there turn over. A lowered maximum, not runners
    failing."""
    spec = SimulationSpec(
        scenario=Scenario.CAPACITY_CAP,
        hours=27,
        runner_types=6,
        seed=1,
        end=datetime(2026, 11, 27, tzinfo=UTC),
        step_seconds=120,
    )
    run = await diagnose_from_github(spec, tmp_path)
    assert (run.staged, run.named, run.located) == ("autoscaling_limits",) * 2 + (True,)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("seed", "hour"),
    [
        # linux-4xlarge, -2xlarge and -12xlarge held at 87, 161 and 51, below their usual 129,
        # 307 and 68: three types short of their usual level at once, each turning over jobs
        # as fast as runners held there do.
        pytest.param(3, 0, id="three-types-held-below-usual"),
        # linux-2xlarge fell from 142 to 87 over the hour and has held at 87 since; its jobs
        # lately take 30 minutes against a usual 34, so 87 runners start 3 a minute.
        pytest.param(1, 6, id="held-since-a-fall-with-shorter-jobs"),
    ],
)
async def test_types_held_at_one_number_turning_over_are_limits_not_an_outage(
    tmp_path: Path, seed: int, hour: int
) -> None:
    """Busy runners held at one number exactly through the half hour, below their usual level,
    starting jobs as fast as runners held there turn over: maxima lowered, not runners failing
    across the fleet, however many types are so held."""
    spec = SimulationSpec(
        scenario=Scenario.CAPACITY_CAP,
        hours=27,
        runner_types=6,
        seed=seed,
        end=datetime(2026, 11, 27, hour, tzinfo=UTC),
        step_seconds=120,
    )
    run = await diagnose_from_github(spec, tmp_path)
    assert (run.staged, run.named, run.located) == ("autoscaling_limits",) * 2 + (True,)
