"""Fleet signals from GitHub's job events in the store: the source every GitHub Actions fleet has,
whatever autoscaler runs it.

At a moment T, per runner type:
- `queued` and `max_wait`: the jobs queued at T that have waited more than
  `queued_after_seconds` (5 min), and the longest wait among them — the reference alert's own
  two numbers, computed as its rule computes them from the same events; with the
  longest-waiting jobs themselves;
- over the window before T (bot.fleet.sources.job_window): arrivals, starts and
  completions per minute, queue time mean/p50/p90/max, job time mean/p50/p90, by workflow, job
  and repository;
- jobs failing: the share of the last hour's completions (failures are rare: a short window
  holds too few to tell a rise from chance), against the same hour of the usual days pooled;
- the same window on each of the previous days: the baseline (the median of the days), and the
  same time yesterday and a week before on their own, for people to read beside it. With less
  than a day of history, 3-6 hours earlier stand in for the usual, and the reading says so.
Jobs of excluded runner types or other repositories (`jobs:` in the YAML file) do not count.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.fleet.measures import Breakdown, Signal
from bot.fleet.signals import Values, WorkflowValues, mean_by_group
from bot.fleet.sources.job_window import (
    RATES,
    Groups,
    WindowNumbers,
    counted,
    failed_shares,
    median_values,
    usual,
    window_values,
)
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import JobActivity, JobRow, JobSpan, QueuedJob, Store

#: The longest-waiting jobs kept per runner type, to name and link.
LONGEST = 5
#: Jobs running at a moment are looked for among those started this long before it (a job
#: running longer is not counted: GitHub-hosted jobs stop at 6 hours, most self-hosted too).
RUNNING_LOOKBACK_SECONDS = 6 * 3600.0
DAY_SECONDS = 86400.0
#: With less than a day of history, these hours before stand in for the previous days: far
#: enough back to be before most trouble still going on now.
SHORT_HISTORY_HOURS = (3, 4, 5, 6)
#: Jobs failing are judged over at least this many seconds before the moment.
OUTCOME_SECONDS = 3600.0
SHORT_HISTORY_NOTE = (
    "Job history is shorter than a day: usual values are from 3-6 hours earlier,"
    " not from the same time on previous days."
)
#: Signals a runner type known at all has, 0 where it had no jobs (a time is not measured).
_ZERO_WITHOUT_JOBS = (RATES - {Signal.ARRIVALS_BY_WORKFLOW, Signal.STARTED_BY_WORKFLOW}) | {
    Signal.ARRIVALS_HOUR,
    Signal.STARTED_HOUR,
    Signal.QUEUED,
    Signal.MAX_WAIT,
    Signal.RUNNING,
}


@dataclass
class JobReading:
    """What the job events say at one moment."""

    at: datetime
    now: dict[Signal, Values] = field(default_factory=dict)
    baseline: dict[Signal, Values] = field(default_factory=dict)
    #: The jobs waiting and the longest wait on each of the usual days.
    daily: dict[Signal, list[Values]] = field(default_factory=dict)
    workflows: dict[Signal, WorkflowValues] = field(default_factory=dict)
    workflow_baseline: dict[Signal, WorkflowValues] = field(default_factory=dict)
    breakdowns: dict[Breakdown, Groups] = field(default_factory=dict)
    breakdown_baseline: dict[Breakdown, Groups] = field(default_factory=dict)
    #: The same time yesterday and a week before, where the history reaches back so far.
    yesterday: dict[Signal, Values] = field(default_factory=dict)
    week_ago: dict[Signal, Values] = field(default_factory=dict)
    #: Queued and running jobs earlier (15 and 30 minutes before), to tell a growing queue
    #: and a supply that does not grow.
    earlier_queued: list[Values] = field(default_factory=list)
    earlier_running: list[Values] = field(default_factory=list)
    #: The most jobs running at once in the window ending 15 and 30 minutes before.
    earlier_peaks: list[Values] = field(default_factory=list)
    #: Jobs queued and the most running at once an hour before, where asked for.
    hour_ago: dict[Signal, Values] = field(default_factory=dict)
    #: The longest-waiting jobs now, longest first, per runner type.
    longest: dict[str, list[QueuedJob]] = field(default_factory=dict)
    #: When the oldest job queued now was created (Unix seconds), per runner type.
    since: Values = field(default_factory=dict)
    #: Said in the report when the baseline is not the previous days'.
    note: str = ""

    def runner_types(self) -> set[str]:
        return {name for values in self.now.values() for name in values}


async def queued_now(store: Store, config: JobsConfig, at: float) -> dict[str, list[QueuedJob]]:
    """The jobs queued at `at` per runner type, longest-waiting first."""
    jobs = await store.queued_jobs(at, config.queued_after_seconds, config.max_queued_age_seconds)
    by_type: dict[str, list[QueuedJob]] = defaultdict(list)
    for job in sorted(jobs, key=lambda j: j.created_at):
        if config.counts(job.runner_type, job.repository):
            by_type[job.runner_type].append(job)
    return dict(by_type)


async def running(store: Store, config: JobsConfig, at: float) -> WorkflowValues:
    """Jobs a runner was working on at `at`, per runner type and repository: the runners each
    repository's jobs held then."""
    found = await store.running_jobs(at, RUNNING_LOOKBACK_SECONDS)
    values: WorkflowValues = defaultdict(dict)
    for (runner_type, repository), count in found.items():
        if config.counts(runner_type, repository):
            values[runner_type][repository] = float(count)
    return dict(values)


def _busy(by_repository: WorkflowValues) -> Values:
    """Runners busy per runner type, from those busy per type and repository."""
    return {name: sum(held.values()) for name, held in by_repository.items()}


def running_peaks(
    spans: Iterable[JobSpan], config: JobsConfig, ends: list[float], span: float
) -> list[Values]:
    """Per window ending at each of `ends` (`span` seconds long), the most jobs running at once
    per runner type."""
    changes: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for job in spans:
        if job.started_at is None or not config.counts(job.runner_type, job.repository):
            continue
        changes[job.runner_type].append((job.started_at, 1))
        if job.completed_at is not None:
            changes[job.runner_type].append((job.completed_at, -1))
    peaks: list[Values] = [{} for _ in ends]
    for name, steps in changes.items():
        steps.sort()
        for index, end in enumerate(ends):
            start, level, most = end - span, 0, 0
            for at, step in steps:
                if at > end:
                    break
                level += step
                # Before the window: the level it opens at; within it: the highest.
                most = level if at < start else max(most, level)
            peaks[index][name] = float(max(most, 0))
    return peaks


def days_before(stamp: float, days: int) -> float:
    """The same time `days` days before `stamp`."""
    return stamp - days * DAY_SECONDS


def usual_moments(
    stamp: float, span: float, first: float | None, baseline_days: int
) -> tuple[list[float], str]:
    """The ends of the windows whose median is the usual, and a note when they are not the
    same time on previous days. Days before the history began are not quiet days: they are
    left out."""
    if first is None:
        return [], ""
    days = [days_before(stamp, d) for d in range(1, baseline_days + 1)]
    days = [t for t in days if t - span >= first]
    if days:
        return days, ""
    hours = [t for t in (stamp - h * 3600.0 for h in SHORT_HISTORY_HOURS) if t - span >= first]
    return hours, SHORT_HISTORY_NOTE if hours else ""


def _per_minute(activity: JobActivity, rows: list[JobRow]) -> Values:
    """Jobs per minute over the activity's stretch, per runner type."""
    minutes = max((activity.until - activity.since) / 60.0, 1e-9)
    found: Values = defaultdict(float)
    for row in rows:
        found[row.runner_type] += 1.0 / minutes
    return dict(found)


def _counts(queued: dict[str, list[QueuedJob]]) -> Values:
    return {name: float(len(jobs)) for name, jobs in queued.items()}


def _waits(queued: dict[str, list[QueuedJob]], stamp: float) -> Values:
    """The longest wait per runner type (its jobs are longest-waiting first)."""
    return {name: stamp - jobs[0].created_at for name, jobs in queued.items()}


def _moment(
    numbers: WindowNumbers, queued: dict[str, list[QueuedJob]], busy: Values, stamp: float
) -> dict[Signal, Values]:
    """Every number of one moment per runner type: its window's, the queue's, the busy."""
    values = {signal: dict(by_type) for signal, by_type in numbers.values.items()}
    values[Signal.QUEUED] = _counts(queued)
    values[Signal.MAX_WAIT] = _waits(queued, stamp)
    values[Signal.RUNNING] = busy
    return values


def _fill(values: dict[Signal, Values], known: set[str]) -> None:
    """A runner type seen at all and without jobs at a moment started none, completed none:
    0, not unknown."""
    for signal in _ZERO_WITHOUT_JOBS:
        by_type = values.setdefault(signal, {})
        for name in known:
            by_type.setdefault(name, 0.0)


async def read_jobs(
    store: Store,
    config: JobsConfig,
    at: datetime,
    window: timedelta,
    *,
    baseline_days: int = 7,
    earlier: Iterable[timedelta] = (timedelta(minutes=15), timedelta(minutes=30)),
    hour_ago: timedelta | None = None,
) -> JobReading:
    """Everything the job events say at `at`, over `window`, with the baseline of the
    `baseline_days` previous days at the same time, and yesterday and a week before; with
    `hour_ago`, the queue and the most running at once that long before too."""
    stamp, span = at.timestamp(), window.total_seconds()
    days, note = usual_moments(stamp, span, await store.first_job_created(), baseline_days)
    # Yesterday and a week before are shown on their own where they are among the usual days.
    single = [t for t in (days_before(stamp, 1), days_before(stamp, 7)) if t in days]
    earlier_at = [stamp - ago.total_seconds() for ago in earlier]
    back = [stamp - hour_ago.total_seconds()] if hour_ago is not None else []
    queues = await asyncio.gather(
        *(queued_now(store, config, t) for t in [stamp, *earlier_at, *back, *days])
    )
    activities = await asyncio.gather(*(store.job_activity(t - span, t) for t in [stamp, *days]))
    outcomes = activities
    if span < OUTCOME_SECONDS:
        outcomes = await asyncio.gather(
            *(store.job_activity(t - OUTCOME_SECONDS, t) for t in [stamp, *days])
        )
    judged_now, *judged_past = [counted(activity, config) for activity in outcomes]
    judged = (judged_now, *judged_past)
    hourly = [_per_minute(activity, activity.arrivals) for activity in judged]
    hourly_starts = [_per_minute(activity, activity.starts) for activity in judged]
    ends = [stamp, *earlier_at, *back]
    # The jobs that may have run in the earliest window: started at most the lookback before.
    lookback = RUNNING_LOOKBACK_SECONDS + stamp - min(ends) + span
    held, spans = await asyncio.gather(
        asyncio.gather(*(running(store, config, t) for t in [stamp, *earlier_at, *days])),
        store.job_spans(stamp - lookback, stamp),
    )
    busy = [_busy(then) for then in held]
    peaks = running_peaks(spans, config, ends, span)
    now, *past = [window_values(counted(activity, config)) for activity in activities]
    queued, busy_days = queues[0], busy[1 + len(earlier_at) :]

    reading = JobReading(at=at, note=note)
    reading.now = _moment(now, queued, busy[0], stamp)
    reading.workflows = now.workflows
    reading.breakdowns = {by: dict(groups) for by, groups in now.breakdowns.items()}
    reading.breakdowns.setdefault(Breakdown.REPOSITORY, {})[Signal.RUNNING] = held[0]
    reading.since = {name: jobs[0].created_at for name, jobs in queued.items()}
    reading.longest = {name: jobs[:LONGEST] for name, jobs in queued.items()}
    reading.earlier_queued = [_counts(then) for then in queues[1 : 1 + len(earlier_at)]]
    reading.earlier_running = list(busy[1 : 1 + len(earlier_at)])
    reading.now[Signal.RUNNING_PEAK] = peaks[0]
    reading.earlier_peaks = peaks[1 : 1 + len(earlier_at)]
    if back:
        reading.hour_ago = {
            Signal.QUEUED: _counts(queues[1 + len(earlier_at)]),
            Signal.RUNNING_PEAK: peaks[-1],
        }
    base = usual(past)
    queued_days = queues[1 + len(earlier_at) + len(back) :]
    # The usual queue at this hour: a type queueing as it does every day is no incident.
    reading.daily = {
        Signal.QUEUED: [_counts(q) for q in queued_days],
        Signal.MAX_WAIT: [_waits(q, t) for q, t in zip(queued_days, days, strict=True)],
    }
    reading.baseline = {
        **base.values,
        Signal.RUNNING: median_values(busy_days, rate=True),
        **{s: median_values(each, rate=True) for s, each in reading.daily.items()},
    }
    reading.now[Signal.ARRIVALS_HOUR] = hourly[0]
    reading.baseline[Signal.ARRIVALS_HOUR] = median_values(hourly[1:], rate=True)
    reading.now[Signal.STARTED_HOUR] = hourly_starts[0]
    reading.baseline[Signal.STARTED_HOUR] = median_values(hourly_starts[1:], rate=True)
    share, jobs = failed_shares([judged_now])
    reading.now[Signal.FAILED_SHARE], reading.now[Signal.JOBS_JUDGED] = share, jobs
    if judged_past:
        reading.baseline[Signal.FAILED_SHARE] = failed_shares(judged_past)[0]
    reading.workflow_baseline = base.workflows
    reading.breakdown_baseline = {by: dict(groups) for by, groups in base.breakdowns.items()}
    by_repository = reading.breakdown_baseline.setdefault(Breakdown.REPOSITORY, {})
    by_repository[Signal.RUNNING] = mean_by_group(list(held[1 + len(earlier_at) :]), every_day=True)
    queued_then = {t: q for t, q in zip(days, queued_days, strict=True) if t in single}

    def day(t: float) -> dict[Signal, Values]:
        if t not in queued_then:
            return {}
        index = days.index(t)
        values = _moment(past[index], queued_then[t], busy_days[index], t)
        values[Signal.ARRIVALS_HOUR] = hourly[1 + index]
        values[Signal.STARTED_HOUR] = hourly_starts[1 + index]
        return values

    reading.yesterday = day(days_before(stamp, 1))
    reading.week_ago = day(days_before(stamp, 7))
    known = reading.runner_types() | {n for values in reading.baseline.values() for n in values}
    for values in (reading.now, reading.yesterday, reading.week_ago):
        if values:
            _fill(values, known)
    # A type known at all with no job running or waiting half an hour ago had none: 0.
    for then in (*reading.earlier_running, *reading.earlier_peaks, *reading.earlier_queued):
        for name in known:
            then.setdefault(name, 0.0)
    if days:
        # A type that queued on none of the usual days usually has no queue (nor on one day).
        for signal, each in reading.daily.items():
            for name in known:
                reading.baseline[signal].setdefault(name, 0.0)
                for one_day in each:
                    one_day.setdefault(name, 0.0)
    return reading
