"""Fleet signals from GitHub's job events: the queue per runner type is the alert's own two
numbers, computed as its rule computes them from the same events, however the deliveries came;
a window's arrivals, starts, waits and job times; the baseline of the previous days."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.diagnostics.measures import Signal
from bot.diagnostics.sources.job_events import read_jobs
from bot.diagnostics.sources.jobs_config import JobsConfig
from bot.domain.jobs import RunnerTypeRule, WorkflowJobDelivery, job_event
from bot.store.sqlite import SQLiteStore
from tests.support.github import job_delivery

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

    def deliveries(self) -> list[dict[str, object]]:
        found = [job_delivery("queued", self.id, self.created, labels=self.labels)]
        if self.started is not None:
            found.append(
                job_delivery(
                    "in_progress", self.id, self.created, started=self.started, labels=self.labels
                )
            )
        if self.completed is not None:
            found.append(
                job_delivery(
                    "completed",
                    self.id,
                    self.created,
                    started=self.started,
                    completed=self.completed,
                    labels=self.labels,
                    taken=not self.cancelled,
                    conclusion="cancelled" if self.cancelled else "success",
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
