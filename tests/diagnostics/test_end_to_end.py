"""Diagnostics end to end from actions-runner-controller's metrics: each simulated scenario, in
each metric shape real fleets have (every bucket, or `_sum`/`_count` only without runner
gauges; no `name` on job series), backfilled into a real Prometheus and judged by
`queuebot diagnose`; what a scrape gives without the runner-type label; and the Slack flow
(button → "Running diagnostics…" → report → chart)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.diagnostics.checks import diagnose
from bot.domain.clock import Clock
from bot.fleet.signals import collect
from bot.fleet.sources.prometheus import PrometheusClient
from bot.fleet.sources.querypack import QueryPack
from bot.slack.contract import ActionId
from queuebot_lab.sandbox.slack import ONCALL_USER, SECOND_USER, PostedMessage
from queuebot_lab.simulator import MetricsShape, Scenario, SimulationSpec, runner_type_names
from queuebot_lab.simulator.spec import UNBOUNDED_TYPE
from testkit.fixtures import PrometheusFactory
from testkit.fleets import FLEET_END, FLEET_TYPES, Fleets, in_session_loop
from testkit.harness import Stack, running_stack
from testkit.integration import require_binary
from testkit.payloads import reference
from testkit.prometheus import Prometheus

END = FLEET_END


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
@in_session_loop
@pytest.mark.parametrize("shape", list(MetricsShape))
@pytest.mark.parametrize("scenario", list(Scenario))
async def test_each_scenario_names_its_cause_and_runner_types(
    fleets: Fleets, scenario: Scenario, shape: MetricsShape
) -> None:
    """`queuebot diagnose --format json` names the staged cause and where it happens, from
    actions-runner-controller's metrics alone, as a full or a lean scrape holds them."""
    prometheus, truth = await fleets(scenario, shape)
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
    types = {t["name"]: t for t in report["runner_types"]}
    assert set(truth.affected) <= set(types) and len(types) == FLEET_TYPES
    # ARC has no measure of the longest current wait, and a lean scrape no runner gauges.
    assert {t["max_wait_seconds"] for t in types.values()} == {None}
    if shape is MetricsShape.ARC_LEAN:
        assert {t["max"] for t in types.values()} == {None}
    else:
        # A scale set without a maximum reports 2147483647: no maximum.
        unbounded = runner_type_names(FLEET_TYPES)[UNBOUNDED_TYPE]
        assert {name for name, t in types.items() if t["max"] is None} == {unbounded}


@pytest.mark.integration
@in_session_loop
async def test_text_report_bad_time_and_queries_from_the_yaml_file(
    fleets: Fleets, tmp_path: Any
) -> None:
    """The text form names the cause; a bad --at is refused; the YAML file's queries are
    the ones run, and a fleet they cannot find is said plainly."""
    prometheus, _ = await fleets(Scenario.CAPACITY_CAP)
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
@in_session_loop
class TestInSlack:
    async def test_button_runs_diagnostics_into_the_thread_with_a_chart(
        self, tmp_path: Any, fleets: Fleets
    ) -> None:
        """Run diagnostics: a "Running diagnostics…" reply becomes the report; a chart follows;
        a second click meanwhile starts no second run."""
        prometheus, truth = await fleets(Scenario.SURGE)
        config = tmp_path / "queuebot.yml"
        config.write_text("auto_diagnose: false\n")
        async with running_stack(
            tmp_path,
            clock=Clock.at(END),
            PROMETHEUS_URL=prometheus.url,
            QUEUEBOT_CONFIG=str(config),
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
        self, tmp_path: Any, fleets: Fleets
    ) -> None:
        """auto_diagnose (on by default): the report follows the alert into its thread."""
        prometheus, _ = await fleets(Scenario.SCALE_UP_FAILURE, MetricsShape.ARC_LEAN)
        async with running_stack(
            tmp_path, clock=Clock.at(END), PROMETHEUS_URL=prometheus.url
        ) as stack:
            assert (await stack.webhook(reference())).status == 202
            (parent,) = await stack.parents(1)
            await stack.sandbox.wait_for(
                lambda: _reply_with(stack, parent, "Most likely: Infrastructure problems"),
                timeout=30,
            )


@pytest.mark.integration
async def test_prometheus_down_is_said_in_the_thread(
    tmp_path: Any, prometheus_for: PrometheusFactory
) -> None:
    spec = SimulationSpec(Scenario.HEALTHY, hours=2, runner_types=2, seed=7, end=END)
    prometheus, _ = await prometheus_for(spec, MetricsShape.ARC_LEAN)
    await prometheus.stop()
    async with running_stack(tmp_path, PROMETHEUS_URL=prometheus.url) as stack:
        assert (await stack.webhook(reference())).status == 202
        (parent,) = await stack.parents(1)
        failed = await stack.sandbox.wait_for(
            lambda: _reply_with(stack, parent, "could not read the fleet"), timeout=30
        )
        assert "cannot reach Prometheus" in stack.text(failed)


# A scrape without the listener pods' scale-set label: ARC's own labels only, listeners named
# as before its in-place upgrades (the scale set's name and a generated suffix).
UNLABELLED = """# TYPE gha_assigned_jobs gauge
{assigned}
# TYPE gha_running_jobs gauge
{running}
# TYPE gha_started_jobs counter
{started}
# EOF
"""


@pytest.mark.integration
async def test_without_the_scale_set_label_job_series_are_not_measured(
    tmp_path: Path,
) -> None:
    """Gauges still name their runner type (the generated suffix dropped); job series, which
    carry no `name`, are "not measured" with what to change in the scrape, never guessed."""
    binary = require_binary("prometheus", "apt-get install -y prometheus")
    promtool = require_binary("promtool", "apt-get install -y prometheus")
    stamps = [int(END.timestamp()) - 60 * i for i in range(30, -1, -1)]
    gauge = 'name="linux-2xlarge-x7k2p",namespace="arc-runners",organization="pytorch"'
    job = 'organization="pytorch",repository="pytorch",job_name="build",event_name="push"'

    def series(metric: str, labels: str, value: Callable[[int], int]) -> str:
        return "\n".join(f"{metric}{{{labels}}} {value(i)} {t}" for i, t in enumerate(stamps))

    history = tmp_path / "fleet.om"
    history.write_text(
        UNLABELLED.format(
            assigned=series("gha_assigned_jobs", gauge, lambda i: 40 + i),
            running=series("gha_running_jobs", gauge, lambda i: 20),
            started=series("gha_started_jobs_total", job, lambda i: 100 + 3 * i),
        )
    )
    prometheus = Prometheus(binary, tmp_path / "prometheus", promtool=promtool)
    try:
        await prometheus.backfill(history)
        await prometheus.start()
        code, out, err = await asyncio.to_thread(_diagnose, prometheus, "--format", "json")
    finally:
        await prometheus.stop()
    assert code == 0, err
    report = json.loads(out)
    assert [(t["name"], t["queued"]) for t in report["runner_types"]] == [("linux-2xlarge", 50)]
    (starts,) = [m for m in report["missing"] if m.startswith("started_per_minute")]
    assert "carry no runner type" in starts and "scale-set-name" in starts


CAP = "autoscaling_limits"


@pytest.mark.integration
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
    prometheus_for: PrometheusFactory, scenario: Scenario, end: datetime, cause: str
) -> None:
    """Cases the simulated fleet once got wrong at quiet hours."""
    spec = SimulationSpec(
        scenario=scenario, hours=27, runner_types=6, seed=7, end=end, step_seconds=120
    )
    prometheus, _ = await prometheus_for(spec, MetricsShape.ARC_LEAN)
    async with aiohttp.ClientSession() as session:
        signals = await collect(PrometheusClient(session, prometheus.url), QueryPack(), end)
    report = diagnose(signals)
    assert report.primary_cause is not None and report.primary_cause.value == cause


@pytest.mark.integration
async def test_busy_runners_dipping_beneath_slower_jobs_started_as_usual_are_long_jobs(
    prometheus_for: PrometheusFactory,
) -> None:
    """A lean scrape (no median): on linux-12xlarge jobs take 3.3 times their usual mean and
    keep four times the usual runners busy, jobs start as usual, and the most busy at once dip
    (346, 328, 315) as long jobs end. New runners come as usual: the jobs completing are not
    only the long ones left behind, so the slowdown is named for this type too."""
    end = datetime(2026, 11, 27, tzinfo=UTC)
    spec = SimulationSpec(
        scenario=Scenario.SLOW_JOBS, hours=27, runner_types=6, seed=1, end=end, step_seconds=120
    )
    prometheus, truth = await prometheus_for(spec, MetricsShape.ARC_LEAN)
    async with aiohttp.ClientSession() as session:
        signals = await collect(PrometheusClient(session, prometheus.url), QueryPack(), end)
    report = diagnose(signals)
    assert truth.affected == {
        "linux-4xlarge": "long_running_jobs",
        "linux-12xlarge": "long_running_jobs",
    }
    (slower,) = [f for f in report.findings if f.cause.value == "long_running_jobs"]
    assert slower.verdict.value == "likely"
    assert set(slower.runner_types) >= set(truth.affected)
