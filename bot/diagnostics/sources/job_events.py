"""Fleet signals from GitHub's job events in the store: the source every GitHub Actions fleet has,
whatever autoscaler runs it.

At a moment T, per runner type:
- `queued` and `max_wait`: the jobs queued at T that have waited `queued_after_seconds` (5 min)
  or more, and the longest wait among them — the reference alert's own two numbers, computed as
  its rule computes them from the same events; with the longest-waiting jobs themselves;
- over the window before T: arrivals (jobs created), starts and completions per minute, queue
  time p50/p90 of the jobs started, job time mean/p50/p90 of the jobs completed, arrivals and
  job time by workflow;
- the same window on each of the previous days: the baseline (the median of the days).
Jobs of excluded runner types or other repositories (`jobs:` in the YAML file) do not count.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.diagnostics.measures import Signal
from bot.diagnostics.signals import Values, WorkflowValues
from bot.diagnostics.sources.jobs_config import JobsConfig
from bot.store import JobActivity, JobRow, QueuedJob, Store

#: The longest-waiting jobs kept per runner type, to name and link.
LONGEST = 5
#: Jobs running at a moment are looked for among those started this long before it (a job
#: running longer is not counted: GitHub-hosted jobs stop at 6 hours, most self-hosted too).
RUNNING_LOOKBACK_SECONDS = 6 * 3600.0
#: Counts per minute: a runner type (or workflow) without jobs in a window counts 0 there,
#: where a time (a wait, a job's run) is simply not measured.
RATES = frozenset(
    {
        Signal.ARRIVALS_PER_MINUTE,
        Signal.STARTED_PER_MINUTE,
        Signal.COMPLETED_PER_MINUTE,
        Signal.ARRIVALS_BY_WORKFLOW,
        Signal.STARTED_BY_WORKFLOW,
    }
)


@dataclass
class JobReading:
    """What the job events say at one moment."""

    at: datetime
    now: dict[Signal, Values] = field(default_factory=dict)
    baseline: dict[Signal, Values] = field(default_factory=dict)
    workflows: dict[Signal, WorkflowValues] = field(default_factory=dict)
    workflow_baseline: dict[Signal, WorkflowValues] = field(default_factory=dict)
    #: Queued and running jobs earlier (15 and 30 minutes before), to tell a growing queue
    #: and a supply that does not grow.
    earlier_queued: list[Values] = field(default_factory=list)
    earlier_running: list[Values] = field(default_factory=list)
    #: The longest-waiting jobs now, longest first, per runner type.
    longest: dict[str, list[QueuedJob]] = field(default_factory=dict)
    #: When the oldest job queued now was created (Unix seconds), per runner type.
    since: Values = field(default_factory=dict)

    def runner_types(self) -> set[str]:
        return {name for values in self.now.values() for name in values}


def _quantile(values: list[float], q: float) -> float:
    """The q-quantile, linearly interpolated (as numpy's default)."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def window_values(
    activity: JobActivity,
) -> tuple[dict[Signal, Values], dict[Signal, WorkflowValues]]:
    """A window's activity as per-minute rates and times, per runner type and workflow."""
    minutes = max((activity.until - activity.since) / 60.0, 1e-9)
    values: dict[Signal, Values] = defaultdict(dict)
    workflows: dict[Signal, WorkflowValues] = defaultdict(dict)

    def grouped(rows: Iterable[JobRow]) -> dict[str, list[JobRow]]:
        by_type: dict[str, list[JobRow]] = defaultdict(list)
        for row in rows:
            by_type[row.runner_type].append(row)
        return by_type

    for name, rows in grouped(activity.arrivals).items():
        values[Signal.ARRIVALS_PER_MINUTE][name] = len(rows) / minutes
        per_workflow: dict[str, float] = defaultdict(float)
        for row in rows:
            per_workflow[row.workflow] += 1 / minutes
        workflows[Signal.ARRIVALS_BY_WORKFLOW][name] = dict(per_workflow)
    for name, rows in grouped(activity.starts).items():
        waits = [max(row.seconds, 0.0) for row in rows]
        values[Signal.STARTED_PER_MINUTE][name] = len(rows) / minutes
        values[Signal.QUEUE_TIME_P50][name] = _quantile(waits, 0.5)
        values[Signal.QUEUE_TIME_P90][name] = _quantile(waits, 0.9)
        per_workflow = defaultdict(float)
        for row in rows:
            per_workflow[row.workflow] += 1 / minutes
        workflows[Signal.STARTED_BY_WORKFLOW][name] = dict(per_workflow)
    for name, rows in grouped(activity.completions).items():
        times = [max(row.seconds, 0.0) for row in rows]
        values[Signal.COMPLETED_PER_MINUTE][name] = len(rows) / minutes
        values[Signal.DURATION_MEAN][name] = statistics.fmean(times)
        values[Signal.DURATION_P50][name] = _quantile(times, 0.5)
        values[Signal.DURATION_P90][name] = _quantile(times, 0.9)
        values[Signal.FAILED_SHARE][name] = sum(row.failed for row in rows) / len(rows)
        by_workflow: dict[str, list[float]] = defaultdict(list)
        for row, seconds in zip(rows, times, strict=True):
            by_workflow[row.workflow].append(seconds)
        workflows[Signal.DURATION_MEAN_BY_WORKFLOW][name] = {
            w: statistics.fmean(s) for w, s in by_workflow.items()
        }
        workflows[Signal.DURATION_P90_BY_WORKFLOW][name] = {
            w: _quantile(s, 0.9) for w, s in by_workflow.items()
        }
    return dict(values), dict(workflows)


def _counted(activity: JobActivity, config: JobsConfig) -> JobActivity:
    def keep(rows: list[JobRow]) -> list[JobRow]:
        return [r for r in rows if config.counts(r.runner_type, r.repository)]

    return JobActivity(
        since=activity.since,
        until=activity.until,
        arrivals=keep(activity.arrivals),
        starts=keep(activity.starts),
        completions=keep(activity.completions),
    )


def _median(days: list[dict[str, float]], rate: bool) -> dict[str, float]:
    """The median of the days, per key; a day without a rate's key counts 0 for it."""
    merged: dict[str, list[float]] = defaultdict(list)
    names = {name for day in days for name in day}
    for day in days:
        for name in names:
            if name in day:
                merged[name].append(day[name])
            elif rate:
                merged[name].append(0.0)
    return {name: statistics.median(values) for name, values in merged.items()}


def _median_workflows(days: list[WorkflowValues], rate: bool) -> WorkflowValues:
    names = {name for day in days for name in day}
    return {name: _median([day.get(name, {}) for day in days], rate) for name in names}


async def queued_now(store: Store, config: JobsConfig, at: float) -> dict[str, list[QueuedJob]]:
    """The jobs queued at `at` per runner type, longest-waiting first."""
    jobs = await store.queued_jobs(at, config.queued_after_seconds, config.max_queued_age_seconds)
    by_type: dict[str, list[QueuedJob]] = defaultdict(list)
    for job in sorted(jobs, key=lambda j: j.created_at):
        if config.counts(job.runner_type, job.repository):
            by_type[job.runner_type].append(job)
    return dict(by_type)


async def running(store: Store, config: JobsConfig, at: float) -> Values:
    """Jobs a runner was working on at `at`, per runner type: the runners busy then."""
    found = await store.running_jobs(at, RUNNING_LOOKBACK_SECONDS)
    values: Values = defaultdict(float)
    for (runner_type, repository), count in found.items():
        if config.counts(runner_type, repository):
            values[runner_type] += count
    return dict(values)


async def read_jobs(
    store: Store,
    config: JobsConfig,
    at: datetime,
    window: timedelta,
    *,
    baseline_days: int = 7,
    earlier: Iterable[timedelta] = (timedelta(minutes=15), timedelta(minutes=30)),
) -> JobReading:
    """Everything the job events say at `at`, over `window`, with the baseline of the
    `baseline_days` previous days at the same time."""
    stamp, span = at.timestamp(), window.total_seconds()
    # Days before the history began are not quiet days: they are left out of the baseline.
    first = await store.first_job_created()
    days = [
        t
        for t in (stamp - d * 86400.0 for d in range(1, baseline_days + 1))
        if first is not None and t - span >= first
    ]
    earlier_at = [stamp - ago.total_seconds() for ago in earlier]
    queued, *earlier_queued = await asyncio.gather(
        queued_now(store, config, stamp), *(queued_now(store, config, t) for t in earlier_at)
    )
    activities = await asyncio.gather(*(store.job_activity(t - span, t) for t in [stamp, *days]))
    running_now, *running_then = await asyncio.gather(
        *(running(store, config, t) for t in [stamp, *earlier_at, *days])
    )
    now_values, now_workflows = window_values(_counted(activities[0], config))
    past = [window_values(_counted(a, config)) for a in activities[1:]]
    reading = JobReading(at=at)
    reading.now = now_values
    reading.workflows = now_workflows
    reading.now[Signal.QUEUED] = {name: float(len(jobs)) for name, jobs in queued.items()}
    reading.now[Signal.MAX_WAIT] = {
        name: stamp - jobs[0].created_at for name, jobs in queued.items()
    }
    reading.since = {name: jobs[0].created_at for name, jobs in queued.items()}
    reading.longest = {name: jobs[:LONGEST] for name, jobs in queued.items()}
    reading.earlier_queued = [
        {name: float(len(jobs)) for name, jobs in then.items()} for then in earlier_queued
    ]
    reading.now[Signal.RUNNING] = running_now
    reading.earlier_running = running_then[: len(earlier_at)]
    reading.baseline[Signal.RUNNING] = _median(running_then[len(earlier_at) :], rate=True)
    for signal in {s for values, _ in past for s in values} - {Signal.RUNNING}:
        days_values = [values.get(signal, {}) for values, _ in past]
        reading.baseline[signal] = _median(days_values, signal in RATES)
    for signal in {s for _, workflows in past for s in workflows}:
        days_workflows = [workflows.get(signal, {}) for _, workflows in past]
        reading.workflow_baseline[signal] = _median_workflows(days_workflows, signal in RATES)
    # A runner type seen at all (queued now, or busy on a usual day) and without jobs now
    # started none, completed none: 0, not unknown.
    known = reading.runner_types() | {n for values in reading.baseline.values() for n in values}
    counts = RATES - {Signal.ARRIVALS_BY_WORKFLOW, Signal.STARTED_BY_WORKFLOW}
    for signal in counts | {Signal.QUEUED, Signal.MAX_WAIT, Signal.RUNNING}:
        values = reading.now.setdefault(signal, {})
        for name in known:
            values.setdefault(name, 0.0)
    return reading
