"""Composing the capacity report from the store's job events (hand-made jobs whose numbers are
known), from a real Prometheus holding a simulated fleet whose maximum was lowered, and the
weekly schedule's moments."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from pathlib import Path

import aiohttp
import pytest

from bot.capacity.report import REUSE_SECONDS, CapacityReporter
from bot.capacity.settings import CapacitySettings, WeeklyPost
from bot.domain.clock import Clock
from bot.fleet.reading import FleetSources
from bot.fleet.sources.prometheus import PrometheusClient
from bot.render.renderer import Renderer
from bot.store import Store
from bot.store.sqlite import SQLiteStore
from queuebot_lab.simulator import MetricsShape, Scenario
from queuebot_lab.simulator.profiles import profile, runner_type_names
from testkit.fleets import FLEET_END, FLEET_TYPES, Fleets, in_session_loop
from testkit.jobs import BUSY, job_event, record, record_sample

#: A Monday morning; the window is the day before.
UNTIL = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
SINCE = UNTIL - timedelta(days=1)


async def _store(tmp_path: Path) -> Store:
    store = await SQLiteStore.open(str(tmp_path / "queuebot.db"))
    await record_sample(store, SINCE.timestamp(), UNTIL.timestamp())
    return store


async def test_the_report_measures_each_runner_types_week(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        settings = CapacitySettings(days=1, target_p95_minutes=10)
        reporter = CapacityReporter(FleetSources(store=store), settings, clock=Clock.at(UNTIL))
        composed = await reporter.compose()
    finally:
        await store.close()
    report = composed.report
    assert [t.runner_type for t in report.types] == [BUSY, "linux.4xlarge"]
    busy, other = report.types
    assert busy.jobs == 100 and (busy.p50_seconds, busy.p95_seconds) == (50.0, 94.0)
    assert busy.busy_hours == pytest.approx((50 * 600 + 50 * 1200) / 3600)
    assert busy.failed_jobs == 10
    # Job i runs from 61·i s: the even ones 600 s, the odd ones 1200 s.
    spans = [(61 * i, 61 * i + (600 if i % 2 == 0 else 1200)) for i in range(100)]
    assert busy.peak_busy == max(sum(a <= t < b for a, b in spans) for t in range(7000)) == 15
    assert [(w.workflow, round(w.share, 3)) for w in busy.workflows] == [
        ("trunk", 0.667),
        ("pull", 0.333),
    ]
    # Sunday 10:00 UTC had the longer waits (jobs 60-99), then Sunday 09:00.
    assert [(h.weekday, h.hour) for h in busy.worst_hours] == [(6, 10), (6, 9)]
    assert busy.hours_over_target == 0
    assert busy.recommended is not None and busy.recommended.reachable
    assert busy.recommended.p95_seconds <= 600.0
    assert busy.recommended.max_runners <= busy.peak_busy
    # The job still waiting counts with its wait so far; the one cancelled in the queue not.
    assert other.jobs == 2 and other.p95_seconds == 1800.0
    assert other.busy_hours == pytest.approx((3600 - 60) / 3600)
    assert any("No Prometheus" in note for note in report.notes)
    assert composed.chart is not None and composed.chart.startswith(b"\x89PNG")


async def test_only_the_runner_types_asked_for_are_reported(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        settings = CapacitySettings(days=1, runner_types=("*4XLARGE",))
        reporter = CapacityReporter(FleetSources(store=store), settings, clock=Clock.at(UNTIL))
        report = (await reporter.compose()).report
    finally:
        await store.close()
    assert [t.runner_type for t in report.types] == ["linux.4xlarge"]


async def test_without_any_source_the_report_says_what_is_missing() -> None:
    reporter = CapacityReporter(FleetSources(), CapacitySettings(), clock=Clock.at(UNTIL))
    composed = await reporter.compose()
    assert composed.report.types == () and composed.chart is None
    notes = " ".join(composed.report.notes)
    assert "GITHUB_WEBHOOK_SECRET" in notes and "No Prometheus" in notes


@pytest.mark.integration
@in_session_loop
async def test_prometheus_tells_the_maximum_the_hours_at_it_and_utilisation(
    fleets: Fleets,
) -> None:
    prometheus, truth = await fleets(Scenario.CAPACITY_CAP, MetricsShape.ARC)
    async with aiohttp.ClientSession() as session:
        sources = FleetSources(prometheus=PrometheusClient(session, prometheus.url))
        reporter = CapacityReporter(sources, CapacitySettings(days=1), clock=Clock.at(FLEET_END))
        report = (await reporter.compose()).report
    shown = {t.runner_type: t for t in report.types}
    assert not any(t.measured for t in report.types)
    message = Renderer().capacity_report(report)
    text = message.text + str(message.blocks)
    assert "queue times not measured" in text and "utilisation" in text and "0 jobs" not in text
    assert set(shown) == set(runner_type_names(FLEET_TYPES))
    assert truth.affected
    for index, name in enumerate(runner_type_names(FLEET_TYPES)):
        capacity = shown[name]
        assert capacity.utilisation is not None and 0.0 < capacity.utilisation <= 1.0
        if name in truth.affected:
            # The lowered maximum binds until the end: hours at it, and it is the last maximum.
            assert capacity.hours_at_max is not None and capacity.hours_at_max >= 0.5
            assert capacity.max_runners is not None
            assert capacity.max_runners < profile(name, index).max_runners
        elif profile(name, index).max_runners:
            assert capacity.max_runners == profile(name, index).max_runners
            assert capacity.hours_at_max == 0.0
        else:
            assert capacity.max_runners is None  # no maximum: ARC's 2147483647
    assert any("GITHUB_WEBHOOK_SECRET" in note for note in report.notes)


def test_a_weekly_post_is_due_at_its_latest_moment_in_its_time_zone() -> None:
    post = WeeklyPost(channel="#ci", weekday="Monday", at=time(9, 0), timezone="Europe/London")
    # 09:00 in London on Monday 23 November is 09:00 UTC (no summer time).
    assert post.due(UNTIL) == UNTIL
    assert post.due(UNTIL - timedelta(seconds=1)) == UNTIL - timedelta(days=7)
    assert post.due(UNTIL + timedelta(days=6)) == UNTIL
    assert post.slot(post.due(UNTIL)) == f"#ci@{int(UNTIL.timestamp())}"
    summer = datetime(2026, 7, 6, 12, 0, tzinfo=UTC)  # a Monday, London at UTC+1
    assert post.due(summer) == datetime(2026, 7, 6, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("weekday", "someday", "weekday must be one of"),
        ("timezone", "Mars/Olympus", "is not a time zone"),
        ("at", 540, 'write the time quoted, as "09:00"'),
    ],
)
def test_a_malformed_weekly_post_is_refused_with_the_reason(
    field: str, value: object, reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        WeeklyPost.model_validate({"channel": "#ci", field: value})


async def test_a_report_composed_minutes_ago_is_answered_again(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    now = [UNTIL]
    try:
        settings = CapacitySettings(days=1)
        reporter = CapacityReporter(
            FleetSources(store=store), settings, clock=Clock.at(lambda: now[0])
        )
        first = await reporter.compose()
        await record(store, [job_event(300, BUSY, UNTIL.timestamp() - 600, 1.0, 60.0)])
        now[0] += timedelta(seconds=REUSE_SECONDS - 1)
        assert await reporter.compose() is first
        assert (await reporter.compose(2)).report.types[0].jobs == 102
        now[0] += timedelta(seconds=2)
        again = await reporter.compose()
    finally:
        await store.close()
    # The window moved 301 s on: the sample's first six jobs left it, the new one is in it.
    assert again is not first and again.report.types[0].jobs == 100 - 6 + 1
