"""Fleet signals from GitHub's job events: the queue per runner type is the alert's own two
numbers, computed as its rule computes them from the same events, however the deliveries came;
a window's arrivals, starts, waits and job times, by workflow, job and repository; the baseline
of the previous days, and yesterday and a week before on their own; the alert's excluded types;
a history shorter than a day."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.diagnostics.checks import diagnose
from bot.domain.diagnosis import Cause
from bot.domain.jobs import RunnerTypeRule, WorkflowJobDelivery, job_event
from bot.fleet.measures import Breakdown, Signal
from bot.fleet.reading import FleetSources, FleetUnreadable, from_runners, read_fleet
from bot.fleet.sources.job_events import SHORT_HISTORY_NOTE, read_jobs
from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.fleet.sources.runner_supply import (
    RunnerFleet,
    RunnerLabel,
    RunnerStatus,
    SelfHostedRunner,
)
from bot.render.diagnosis_text import text_report
from bot.store.sqlite import SQLiteStore
from testkit.github import job_delivery

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
RULE = RunnerTypeRule()


@dataclass
class Job:
    id: int
    labels: tuple[str, ...]
    created: datetime
    started: datetime | None
    completed: datetime | None
    cancelled: bool = False
    workflow: str = "pull"
    name: str = "build"
    repository: str = "pytorch/pytorch"

    def deliveries(self) -> list[dict[str, object]]:
        same = {
            "labels": self.labels,
            "workflow": self.workflow,
            "name": self.name,
            "repository": self.repository,
        }
        found = [job_delivery("queued", self.id, self.created, **same)]
        if self.started is not None:
            found.append(
                job_delivery("in_progress", self.id, self.created, started=self.started, **same)
            )
        if self.completed is not None:
            found.append(
                job_delivery(
                    "completed",
                    self.id,
                    self.created,
                    started=self.started,
                    completed=self.completed,
                    taken=not self.cancelled,
                    conclusion="cancelled" if self.cancelled else "success",
                    **same,
                )
            )
        return found


def _jobs(seed: int, count: int) -> list[Job]:
    rng = random.Random(seed)
    types = [("self-hosted", "linux.2xlarge"), ("linux.4xlarge",), ("self-hosted", "linux.g5")]
    jobs = []
    for n in range(count):
        created = T0 + timedelta(seconds=rng.uniform(0, 6 * 3600))
        fate = rng.random()
        started = completed = None
        cancelled = False
        if fate < 0.75:
            started = created + timedelta(seconds=rng.expovariate(1 / 900))
            if rng.random() < 0.8:
                completed = started + timedelta(seconds=rng.uniform(60, 7200))
        elif fate < 0.85:
            completed = created + timedelta(seconds=rng.uniform(60, 7200))
            cancelled = True
        # the rest are never taken: lost, or still waiting
        jobs.append(Job(1000 + n, rng.choice(types), created, started, completed, cancelled))
    return jobs


def _the_rule(jobs: list[Job], at: datetime) -> dict[str, tuple[int, float]]:
    """The reference alert's numbers at `at`: per machine type, jobs queued more than 5
    minutes (less than a week), and the longest wait in seconds."""
    found: dict[str, list[float]] = {}
    for job in jobs:
        left = job.started if job.started is not None else job.completed
        if job.created > at - timedelta(minutes=5) or job.created < at - timedelta(days=7):
            continue
        if left is not None and left <= at:
            continue
        machine = job.labels[1] if len(job.labels) > 1 else job.labels[0]
        found.setdefault(machine, []).append((at - job.created).total_seconds())
    return {name: (len(waits), max(waits)) for name, waits in found.items()}


async def _store_with(tmp_path: Path, jobs: list[Job], seed: int) -> SQLiteStore:
    store = await SQLiteStore.open(str(tmp_path / "queuebot.db"))
    deliveries = [d for job in jobs for d in job.deliveries()]
    rng = random.Random(seed)
    # Late, twice and out of order, as GitHub's deliveries come.
    deliveries += rng.sample(deliveries, len(deliveries) // 5)
    rng.shuffle(deliveries)
    for n, body in enumerate(deliveries):
        parsed = WorkflowJobDelivery.model_validate(body)
        await store.record_job(job_event(parsed, RULE), f"delivery-{n}", 1e12)
    return store


async def test_the_queue_is_the_alerts_own_numbers_whatever_the_order(tmp_path: Path) -> None:
    jobs = _jobs(seed=5, count=400)
    store = await _store_with(tmp_path, jobs, seed=9)
    try:
        for minutes in (20, 95, 180, 301, 359, 420, 600):
            at = T0 + timedelta(minutes=minutes)
            reading = await read_jobs(store, JobsConfig(), at, timedelta(minutes=10))
            got = {
                name: (int(reading.now[Signal.QUEUED][name]), reading.now[Signal.MAX_WAIT][name])
                for name in reading.now[Signal.QUEUED]
                if reading.now[Signal.QUEUED][name]
            }
            want = _the_rule(jobs, at)
            assert {n: c for n, (c, _) in got.items()} == {n: c for n, (c, _) in want.items()}
            for name, (_, wait) in want.items():
                assert abs(got[name][1] - wait) < 1.0, (minutes, name)
    finally:
        await store.close()


async def test_excluded_types_and_other_repositories_do_not_count(tmp_path: Path) -> None:
    jobs = _jobs(seed=5, count=200)
    store = await _store_with(tmp_path, jobs, seed=9)
    try:
        at = T0 + timedelta(minutes=180)
        config = JobsConfig(exclude=("g5",))
        reading = await read_jobs(store, config, at, timedelta(minutes=10))
        assert "linux.g5" not in reading.runner_types()
        others = JobsConfig(repositories=("pytorch/vision",))
        assert (await read_jobs(store, others, at, timedelta(minutes=10))).runner_types() == set()
    finally:
        await store.close()


async def test_a_window_and_its_baseline(tmp_path: Path) -> None:
    """Ten jobs in the ten minutes before noon each day for a week, then thirty today: three
    jobs a minute against a usual one; today's waits and the usual job time."""
    store = await SQLiteStore.open(str(tmp_path / "queuebot.db"))
    job_id = 1
    try:
        for day in range(8):
            count = 30 if day == 7 else 10
            noon = T0 - timedelta(days=7 - day)
            for n in range(count):
                created = noon - timedelta(minutes=9) + timedelta(seconds=n)
                started = created + timedelta(minutes=2)
                completed = started + timedelta(minutes=3 if day == 7 else 1)
                for body in Job(
                    job_id, ("linux.2xlarge",), created, started, completed
                ).deliveries():
                    parsed = WorkflowJobDelivery.model_validate(body)
                    await store.record_job(
                        job_event(parsed, RULE), f"d-{job_id}-{body['action']}", 1e12
                    )
                job_id += 1
        reading = await read_jobs(store, JobsConfig(), T0, timedelta(minutes=10))
        assert reading.now[Signal.ARRIVALS_PER_MINUTE]["linux.2xlarge"] == 3.0
        assert reading.baseline[Signal.ARRIVALS_PER_MINUTE]["linux.2xlarge"] == 1.0
        assert reading.now[Signal.QUEUE_TIME_P50]["linux.2xlarge"] == 120.0
        assert reading.baseline[Signal.DURATION_MEAN]["linux.2xlarge"] == 60.0
    finally:
        await store.close()


async def _record(store: SQLiteStore, jobs: list[Job]) -> None:
    bodies = [body for job in jobs for body in job.deliveries()]
    await load_history(store, bodies, JobsConfig(), remember_until=1e12)


def _done(job_id: int, created: datetime, wait: float, run: float, **fields: str) -> Job:
    started = created + timedelta(seconds=wait)
    return Job(
        job_id, ("linux.2xlarge",), created, started, started + timedelta(seconds=run), **fields
    )


async def test_the_alerts_excluded_types_are_left_out_by_default(tmp_path: Path) -> None:
    """rocm, xpu, s390x, b200, h100 and macos types do not count unless `exclude: []`."""
    store = await SQLiteStore.open(str(tmp_path / "queuebot.db"))
    try:
        created = T0 - timedelta(minutes=20)
        await _record(
            store,
            [
                Job(n + 1, ("self-hosted", name), created, None, None)
                for n, name in enumerate(["linux.rocm.gpu.2", "macos-m1-stable", "linux.2xlarge"])
            ],
        )
        default = await read_jobs(store, JobsConfig(), T0, timedelta(minutes=10))
        assert default.runner_types() == {"linux.2xlarge"}
        every = JobsConfig.model_validate({"exclude": []})
        counted = await read_jobs(store, every, T0, timedelta(minutes=10))
        assert counted.runner_types() == {"linux.2xlarge", "linux.rocm.gpu.2", "macos-m1-stable"}
    finally:
        await store.close()


async def test_queue_time_max_and_the_breakdowns_by_job_and_repository(tmp_path: Path) -> None:
    """Waits of 1, 2 and 10 minutes: p50 2 minutes, max 10; arrivals and job times counted by
    job name and by repository beside the workflow."""
    store = await SQLiteStore.open(str(tmp_path / "queuebot.db"))
    start = T0 - timedelta(minutes=9)
    try:
        await _record(
            store,
            [
                _done(1, start, 60, 30, name="build", repository="pytorch/pytorch"),
                _done(2, start, 120, 30, name="build", repository="pytorch/pytorch"),
                _done(3, start - timedelta(minutes=8), 600, 90, name="test", workflow="trunk",
                      repository="pytorch/vision"),
            ],
        )  # fmt: skip
        reading = await read_jobs(store, JobsConfig(), T0, timedelta(minutes=10))
        name = "linux.2xlarge"
        assert reading.now[Signal.QUEUE_TIME_P50][name] == 120.0
        assert reading.now[Signal.QUEUE_TIME_MAX][name] == 600.0
        by_job = reading.breakdowns[Breakdown.JOB]
        by_repository = reading.breakdowns[Breakdown.REPOSITORY]
        assert by_job[Signal.ARRIVALS_PER_MINUTE][name] == {"build": 0.2}
        assert by_job[Signal.STARTED_PER_MINUTE][name] == {"build": 0.2, "test": 0.1}
        assert by_job[Signal.DURATION_MEAN][name] == {"build": 30.0, "test": 90.0}
        assert by_repository[Signal.STARTED_PER_MINUTE][name] == {
            "pytorch/pytorch": 0.2,
            "pytorch/vision": 0.1,
        }
        assert reading.workflows[Signal.STARTED_BY_WORKFLOW][name] == {"pull": 0.2, "trunk": 0.1}
    finally:
        await store.close()


async def test_yesterday_and_a_week_ago_beside_the_usual(tmp_path: Path) -> None:
    """Ten jobs in the window on most days, twenty yesterday, five a week before: the usual is
    1/min, yesterday 2/min, a week ago 0.5/min; yesterday three jobs were still queued."""
    store = await SQLiteStore.open(str(tmp_path / "queuebot.db"))
    counts = {1: 20, 7: 5}
    # The history begins before the week's first window.
    jobs, job_id = [_done(1000, T0 - timedelta(days=8), 60, 60)], 1
    for days in range(8):
        at = T0 - timedelta(days=days)
        for n in range(counts.get(days, 10)):
            jobs.append(_done(job_id, at - timedelta(minutes=9, seconds=-n), 60, 60))
            job_id += 1
    for n in range(3):
        queued = T0 - timedelta(days=1, minutes=40 + n)
        jobs.append(Job(job_id, ("linux.2xlarge",), queued, T0 - timedelta(hours=20), None))
        job_id += 1
    try:
        await _record(store, jobs)
        reading = await read_jobs(store, JobsConfig(), T0, timedelta(minutes=10))
        name = "linux.2xlarge"
        assert reading.baseline[Signal.ARRIVALS_PER_MINUTE][name] == 1.0
        assert reading.yesterday[Signal.ARRIVALS_PER_MINUTE][name] == 2.0
        assert reading.week_ago[Signal.ARRIVALS_PER_MINUTE][name] == 0.5
        assert reading.yesterday[Signal.QUEUED][name] == 3.0
        assert reading.yesterday[Signal.MAX_WAIT][name] == 42 * 60.0
        assert reading.week_ago[Signal.QUEUED][name] == 0.0
        assert reading.note == ""

        fleet = await read_fleet(FleetSources(store=store), T0)
        assert fleet.days_before(Signal.ARRIVALS_PER_MINUTE, name) == (2.0, 0.5)
    finally:
        await store.close()


async def test_a_surge_names_its_workflow_job_and_repository(tmp_path: Path) -> None:
    """Four jobs a minute where one is usual, nearly all one job of one repository: the
    finding says which, with yesterday and a week ago beside the usual."""
    store = await SQLiteStore.open(str(tmp_path / "queuebot.db"))
    # The history begins before the week's first window.
    jobs, job_id = [_done(1000, T0 - timedelta(days=8), 60, 60)], 1
    for days in range(8):
        at = T0 - timedelta(days=days)
        usual = [("pull", "build", "pytorch/pytorch"), ("trunk", "test", "pytorch/pytorch")] * 5
        surge = [("pull", "lint", "pytorch/vision")] * 34 if days == 0 else []
        for n, (workflow, job, repository) in enumerate(usual + surge):
            created = at - timedelta(minutes=9, seconds=-n)
            # Today the surge's jobs wait: a queue, not a blip.
            started = None if days == 0 and n >= len(usual) else created + timedelta(minutes=1)
            jobs.append(
                Job(job_id, ("linux.2xlarge",), created, started,
                    started + timedelta(minutes=1) if started else None,
                    workflow=workflow, name=job, repository=repository)
            )  # fmt: skip
            job_id += 1
    try:
        await _record(store, jobs)
        report = diagnose(await read_fleet(FleetSources(store=store), T0))
    finally:
        await store.close()
    assert report.primary_cause is Cause.INCREASED_WORKLOAD
    surge = report.findings[0].evidence[0]
    assert surge.workflows == ("pull",)
    assert (surge.job, surge.repository) == ("lint", "pytorch/vision")
    assert (surge.baseline, surge.yesterday, surge.week_ago) == (1.0, 1.0, 1.0)
    text = text_report(report)
    assert "usual 1; yesterday 1, a week ago 1), from workflows pull;" in text
    assert "mostly job lint, repo pytorch/vision" in text


async def test_a_history_shorter_than_a_day_compares_with_hours_before(tmp_path: Path) -> None:
    """Eight hours of jobs: the usual is from 3-6 hours earlier, and the report says so."""
    store = await SQLiteStore.open(str(tmp_path / "queuebot.db"))
    jobs = [
        _done(n + 1, T0 - timedelta(hours=8) + timedelta(minutes=n), 60, 300) for n in range(8 * 60)
    ]
    try:
        await _record(store, jobs)
        reading = await read_jobs(store, JobsConfig(), T0, timedelta(minutes=10))
        assert reading.baseline[Signal.ARRIVALS_PER_MINUTE]["linux.2xlarge"] == 1.0
        assert reading.yesterday == {} and reading.week_ago == {}
        assert reading.note == SHORT_HISTORY_NOTE
        report = diagnose(await read_fleet(FleetSources(store=store), T0))
    finally:
        await store.close()
    assert SHORT_HISTORY_NOTE in report.notes
    assert f"Note: {SHORT_HISTORY_NOTE}" in text_report(report)


async def test_the_short_history_note_is_no_reason_the_fleet_is_unreadable(
    tmp_path: Path,
) -> None:
    """Hours of jobs, all of an excluded runner type: unreadable, and the note is not a reason."""
    store = await SQLiteStore.open(str(tmp_path / "queuebot.db"))
    start = T0 - timedelta(hours=8)
    try:
        await _record(
            store,
            [
                Job(n + 1, ("linux.rocm.gpu.2",), start + timedelta(minutes=n), None, None)
                for n in range(60)
            ],
        )
        with pytest.raises(FleetUnreadable) as raised:
            await read_fleet(FleetSources(store=store), T0)
    finally:
        await store.close()
    assert "shorter than a day" not in str(raised.value)


def test_the_runners_list_leaves_out_the_same_types() -> None:
    """With no runner type known from elsewhere, the runners list shows every type it has but
    those `jobs:` leaves out."""
    runners = tuple(
        SelfHostedRunner(
            id=n + 1,
            name=f"runner-{n}",
            os="Linux",
            status=RunnerStatus.ONLINE,
            busy=False,
            labels=(RunnerLabel(name="self-hosted"), RunnerLabel(name=label)),
        )
        for n, label in enumerate(["linux.2xlarge", "linux.rocm.gpu.2"])
    )
    supply = RunnerFleet("org pytorch", runners, T0, total_count=2)
    assert set(from_runners(supply, set(), T0, "10m", JobsConfig()).runner_types()) == {
        "linux.2xlarge"
    }
    every = from_runners(supply, set(), T0, "10m", JobsConfig(exclude=()))
    assert set(every.runner_types()) == {"linux.2xlarge", "linux.rocm.gpu.2"}
