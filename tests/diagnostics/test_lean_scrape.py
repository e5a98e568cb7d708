"""Diagnostics on a lean scrape of actions-runner-controller (`_sum`/`_count` only, no runner
gauges): where busy runners come from the jobs counted, a maximum lowered within the hour,
slower jobs at night and runners starved of resources each name every type they queue."""

from __future__ import annotations

from datetime import UTC, datetime

import aiohttp
import pytest

from bot.diagnostics.checks import diagnose
from bot.domain.diagnosis import Report
from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals, collect
from bot.fleet.sources.prometheus import PrometheusClient
from bot.fleet.sources.querypack import QueryPack
from queuebot_lab.simulator import MetricsShape, Scenario, SimulationSpec
from testkit.fixtures import PrometheusFactory
from testkit.fleet_reading import finding
from testkit.github_fleet import named_with_their_cause

pytestmark = pytest.mark.integration


async def _lean(
    prometheus_for: PrometheusFactory, scenario: Scenario, seed: int, end: datetime
) -> tuple[Report, dict[str, str], FleetSignals]:
    spec = SimulationSpec(
        scenario=scenario, hours=27, runner_types=6, seed=seed, end=end, step_seconds=120
    )
    prometheus, truth = await prometheus_for(spec, MetricsShape.ARC_LEAN)
    async with aiohttp.ClientSession() as session:
        signals = await collect(PrometheusClient(session, prometheus.url), QueryPack(), end)
    return diagnose(signals), truth.affected, signals


async def test_a_maximum_lowered_within_the_hour_above_the_usual_level_is_a_limit(
    prometheus_for: PrometheusFactory,
) -> None:
    # linux-12xlarge's maximum was lowered to 32: 62 busy at once an hour before, 32 at each
    # reading since while 73 jobs wait, the hour's starts what 32 runners turn over. 32 is
    # above the 24 usually busy at 06:00, and the hour's arrivals only 1.1x usual: before, it
    # read as runners coming too slowly ("no ceiling the work fills").
    report, affected, signals = await _lean(
        prometheus_for, Scenario.CAPACITY_CAP, 1, datetime(2026, 11, 27, 6, tzinfo=UTC)
    )
    assert affected == {
        "linux-2xlarge": "autoscaling_limits",
        "linux-12xlarge": "autoscaling_limits",
    }
    name = "linux-12xlarge"
    assert signals.value(Signal.RUNNING, name) == 32
    assert (signals.base(Signal.RUNNING, name) or 0) < 32
    assert (signals.an_hour_ago(Signal.RUNNING_PEAK, name) or 0) >= 60
    assert named_with_their_cause(report, affected)
    infrastructure = finding(report, "infrastructure")
    assert infrastructure.verdict.value != "likely", infrastructure


async def test_slower_jobs_at_night_with_the_queue_shrinking_are_long_jobs(
    prometheus_for: PrometheusFactory,
) -> None:
    # Every job takes three times its usual time since before midnight: 1095 busy where 283
    # are usual on linux-2xlarge, the most at once dipping from 1127 to 1095 as demand falls
    # for the night and the queue shrank over the hour (155 to 121). Before, the dip read as
    # runners not replaced and the fleet's primary cause as infrastructure.
    report, affected, signals = await _lean(
        prometheus_for, Scenario.SLOW_JOBS, 5, datetime(2026, 11, 27, tzinfo=UTC)
    )
    assert set(affected) == {"linux-2xlarge", "linux-4xlarge", "linux-12xlarge"}
    queued = signals.value(Signal.QUEUED, "linux-2xlarge")
    then = signals.an_hour_ago(Signal.QUEUED, "linux-2xlarge")
    assert queued is not None and then is not None and queued < then
    assert report.primary_cause is not None
    assert report.primary_cause.value == "long_running_jobs"
    assert named_with_their_cause(report, affected)
    slower = finding(report, "long_running_jobs")
    assert all(not e.why.startswith("busy runners fallen") for e in slower.evidence)


async def test_jobs_failing_twice_as_often_on_a_queueing_type_are_starved_runners(
    prometheus_for: PrometheusFactory,
) -> None:
    # Runners starved of memory on two types: on linux-4xlarge 16 % of 152 jobs failed where
    # 7 % is usual (2.1x, more than chance explains), busy runners no more than usual while
    # jobs wait. Before, only linux-2xlarge (4x) read as resources, and linux-4xlarge as
    # runners not coming.
    report, affected, _ = await _lean(
        prometheus_for, Scenario.RESOURCE_STARVATION, 2, datetime(2026, 11, 27, 6, tzinfo=UTC)
    )
    assert affected == {
        "linux-2xlarge": "resource_constraints",
        "linux-4xlarge": "resource_constraints",
    }
    assert report.primary_cause is not None
    assert report.primary_cause.value == "resource_constraints"
    assert named_with_their_cause(report, affected)
    failing = [
        e for e in finding(report, "resource_constraints").evidence if e.measure == "jobs failing"
    ]
    shares = {e.runner_type: (e.now, e.baseline) for e in failing}
    now, usual = shares["linux-4xlarge"]
    assert now is not None and usual is not None and 2 * usual <= now < 2.5 * usual
