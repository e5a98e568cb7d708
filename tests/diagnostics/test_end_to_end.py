"""Diagnostics end to end: each simulated scenario backfilled into a real Prometheus, judged by
`queuebot diagnose`, and the Slack flow (button → "Running diagnostics…" → report → chart)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from bot.diagnostics.checks import diagnose
from bot.diagnostics.signals import collect
from bot.diagnostics.sources.prometheus import PrometheusClient
from bot.diagnostics.sources.querypack import QueryPack
from bot.sandbox.prometheus import FleetPrometheus
from bot.sandbox.slack import ONCALL_USER, SECOND_USER, PostedMessage
from bot.simulator import Scenario, SimulationSpec, Truth
from bot.slack.contract import ActionId
from tests.support.harness import Stack, running_stack
from tests.support.payloads import reference
from tests.support.prometheus import Prometheus

Make = Callable[[SimulationSpec], Awaitable[tuple[Prometheus, Truth]]]


def _busy_hour() -> datetime:
    """The latest 18:00 UTC that has passed: the fleet's busy hours, whenever the tests run
    (what diagnostics make of each hour of the day is bench/diagnosis_accuracy.py's)."""
    now = datetime.now(UTC).replace(microsecond=0)
    today = now.replace(hour=18, minute=0, second=0)
    return today if today <= now else today - timedelta(days=1)


#: When the simulated fleets end, and the time diagnostics read them at.
END = _busy_hour()


def _spec(scenario: Scenario, seed: int = 7) -> SimulationSpec:
    return SimulationSpec(
        scenario=scenario, hours=27, runner_types=6, seed=seed, end=END, step_seconds=120
    )


def _diagnose(
    prometheus: Prometheus, *extra: str, config: str | None = None
) -> tuple[int, str, str]:
    env = {"PATH": os.environ["PATH"], "PROMETHEUS_URL": prometheus.url}
    if config is not None:
        env["QUEUEBOT_CONFIG"] = config
    at = [] if "--at" in extra else ["--at", END.isoformat()]
    result = subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "bot", "diagnose", *at, *extra],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    return result.returncode, result.stdout, result.stderr


@pytest.mark.integration
@pytest.mark.parametrize("scenario", list(Scenario))
async def test_each_scenario_names_its_cause_and_runner_types(
    prometheus_for: Make, scenario: Scenario
) -> None:
    """`queuebot diagnose --format json` names the staged cause and where it happens."""
    prometheus, truth = await prometheus_for(_spec(scenario))
    code, out, err = await asyncio.to_thread(_diagnose, prometheus, "--format", "json")
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    assert report["primary_cause"] == truth.primary_cause
    likely = {
        f["cause"]: set(f["runner_types"]) for f in report["findings"] if f["verdict"] == "likely"
    }
    for runner_type, cause in truth.affected.items():
        assert runner_type in likely.get(cause, set()), (runner_type, cause, likely)
    if scenario is Scenario.HEALTHY:
        assert likely == {}
    names = {t["name"] for t in report["runner_types"]}
    assert set(truth.affected) <= names and len(names) == 6


@pytest.mark.integration
async def test_text_report_bad_time_and_queries_from_the_yaml_file(
    prometheus_for: Make, tmp_path: Any
) -> None:
    """The text form names the cause; a bad --at is refused; the YAML file's queries are
    the ones run, and a fleet they cannot find is said plainly."""
    prometheus, _ = await prometheus_for(_spec(Scenario.CAPACITY_CAP))
    code, out, _ = await asyncio.to_thread(_diagnose, prometheus)
    assert code == 0 and "Most likely: Autoscaling configuration limits" in out
    code, _, err = await asyncio.to_thread(_diagnose, prometheus, "--at", "yesterday-ish")
    assert code == 2 and "neither an ISO 8601 time" in err
    config = tmp_path / "queuebot.yml"
    absent = "sum by (name) (my_fleet_queue_depth)"
    config.write_text(
        "queries:\n"
        + "".join(f"  {k}: {absent}\n" for k in ("queued", "running", "registered", "desired"))
    )
    code, _, err = await asyncio.to_thread(_diagnose, prometheus, config=str(config))
    assert code == 1 and "has no runner types" in err


def _reply_with(stack: Stack, parent: PostedMessage, text: str) -> PostedMessage | None:
    return next((r for r in stack.sandbox.replies(None, parent.ts) if text in stack.text(r)), None)


@pytest.mark.integration
class TestInSlack:
    async def test_button_runs_diagnostics_into_the_thread_with_a_chart(
        self, tmp_path: Any, prometheus_for: Make
    ) -> None:
        """Run diagnostics: a "Running diagnostics…" reply becomes the report; a chart follows;
        a second click meanwhile starts no second run."""
        prometheus, truth = await prometheus_for(_spec(Scenario.SURGE))
        config = tmp_path / "queuebot.yml"
        config.write_text("auto_diagnose: false\n")
        async with running_stack(
            tmp_path, clock=lambda: END, PROMETHEUS_URL=prometheus.url, QUEUEBOT_CONFIG=str(config)
        ) as stack:
            assert (await stack.webhook(reference())).status == 202
            (parent,) = await stack.parents(1)
            await stack.settled()
            assert stack.sandbox.replies(None, parent.ts) == []
            first, second = await asyncio.gather(
                stack.sandbox.click(
                    stack.sandbox.channel_id, parent.ts, ActionId.RUN_DIAGNOSTICS.value
                ),
                stack.sandbox.click(
                    stack.sandbox.channel_id,
                    parent.ts,
                    ActionId.RUN_DIAGNOSTICS.value,
                    SECOND_USER,
                ),
            )
            assert first.status == second.status == 200
            report = await stack.sandbox.wait_for(
                lambda: _reply_with(stack, parent, "Most likely: Increased workload"), timeout=30
            )
            assert report.versions[0].text.startswith(":hourglass_flowing_sand: Running")
            for runner_type in truth.affected:
                assert runner_type in stack.text(report)
            (chart,) = await stack.sandbox.wait_for(
                lambda: [f for f in stack.sandbox.files if f.completed], timeout=30
            )
            assert chart.content is not None and chart.content.startswith(b"\x89PNG")
            assert chart.thread_ts == parent.ts
            replies = stack.sandbox.replies(None, parent.ts)
            assert sum("Diagnostics" in stack.text(r) for r in replies) == 1
            (busy,) = await stack.sandbox.wait_for(
                lambda: (
                    stack.sandbox.ephemerals(ONCALL_USER) + stack.sandbox.ephemerals(SECOND_USER)
                )
            )
            assert "already running" in busy.text

    async def test_a_new_incident_is_diagnosed_by_itself(
        self, tmp_path: Any, prometheus_for: Make
    ) -> None:
        """auto_diagnose (on by default): the report follows the alert into its thread."""
        prometheus, _ = await prometheus_for(_spec(Scenario.SCALE_UP_FAILURE))
        async with running_stack(
            tmp_path, clock=lambda: END, PROMETHEUS_URL=prometheus.url
        ) as stack:
            assert (await stack.webhook(reference())).status == 202
            (parent,) = await stack.parents(1)
            await stack.sandbox.wait_for(
                lambda: _reply_with(stack, parent, "Most likely: Infrastructure problems"),
                timeout=30,
            )

    async def test_prometheus_down_is_said_in_the_thread(
        self, tmp_path: Any, prometheus_for: Make
    ) -> None:
        prometheus, _ = await prometheus_for(_spec(Scenario.HEALTHY))
        await prometheus.stop()
        async with running_stack(tmp_path, PROMETHEUS_URL=prometheus.url) as stack:
            assert (await stack.webhook(reference())).status == 202
            (parent,) = await stack.parents(1)
            failed = await stack.sandbox.wait_for(
                lambda: _reply_with(stack, parent, "could not read the fleet"), timeout=30
            )
            assert "cannot reach Prometheus" in stack.text(failed)


CAP = "autoscaling_limits"


@pytest.mark.parametrize(
    ("scenario", "end", "cause"),
    [
        # A capped runner type at night: 21 job starts where 12 are usual is chance, not a surge.
        (
            Scenario.CAPACITY_CAP,
            datetime(2026, 11, 24, 1, 37, 40, tzinfo=UTC),
            "autoscaling_limits",
        ),
        # ...and its p90 of a few jobs a bucket above the usual one is not a slowdown.
        (Scenario.CAPACITY_CAP, datetime(2026, 11, 23, 2, 7, 13, tzinfo=UTC), CAP),
        # A real slowdown with few jobs: the median moved too.
        (Scenario.SLOW_JOBS, datetime(2026, 11, 23, 8, 7, 13, tzinfo=UTC), "long_running_jobs"),
    ],
)
async def test_quiet_hours_are_not_mistaken_for_a_cause(
    scenario: Scenario, end: datetime, cause: str
) -> None:
    """Cases the simulated fleet once got wrong at quiet hours, read the way Prometheus would."""
    spec = SimulationSpec(
        scenario=scenario, hours=27, runner_types=6, seed=7, end=end, step_seconds=120
    )
    fleet = FleetPrometheus(spec)
    await fleet.start()
    try:
        async with aiohttp.ClientSession() as session:
            signals = await collect(PrometheusClient(session, fleet.url), QueryPack(), end)
    finally:
        await fleet.stop()
    report = diagnose(signals)
    assert report.primary_cause is not None and report.primary_cause.value == cause
