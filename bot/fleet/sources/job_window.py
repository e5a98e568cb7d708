"""One window of GitHub's job events in numbers, and the usual numbers of several windows.

Per runner type over a window: arrivals (jobs created), starts and completions per minute; the
queue time mean/p50/p90/max of the jobs started; the job time mean/p50/p90 and the share failing of
the jobs completed. Arrivals, starts and job times also by workflow, by job name and by
repository, to name what is behind a change. The usual numbers are the median of the windows
(the same time on previous days).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from bot.fleet.measures import Breakdown, Signal
from bot.fleet.signals import Values, WorkflowValues
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import JobActivity, JobRow

#: Counts per minute: a runner type (or workflow, job, repository) without jobs in a window
#: counts 0 there, where a time (a wait, a job's run) is simply not measured.
RATES = frozenset(
    {
        Signal.ARRIVALS_PER_MINUTE,
        Signal.STARTED_PER_MINUTE,
        Signal.COMPLETED_PER_MINUTE,
        Signal.ARRIVALS_BY_WORKFLOW,
        Signal.STARTED_BY_WORKFLOW,
    }
)

Groups = dict[Signal, WorkflowValues]  # signal → runner type → workflow, job or repository → value

_KEYS: dict[Breakdown, Callable[[JobRow], str]] = {
    Breakdown.JOB: lambda row: row.job,
    Breakdown.REPOSITORY: lambda row: row.repository,
    Breakdown.REPOSITORY_WORKFLOW: lambda row: f"{row.repository}: {row.workflow}",
}


@dataclass
class WindowNumbers:
    """A window's numbers per runner type, and by workflow, job and repository."""

    values: dict[Signal, Values] = field(default_factory=dict)
    workflows: Groups = field(default_factory=dict)
    breakdowns: dict[Breakdown, Groups] = field(default_factory=dict)


def quantile(values: list[float], q: float) -> float:
    """The q-quantile, linearly interpolated (as numpy's default)."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _grouped(rows: Iterable[JobRow], key: Callable[[JobRow], str]) -> dict[str, list[JobRow]]:
    groups: dict[str, list[JobRow]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    return groups


def _per_minute(rows: list[JobRow], key: Callable[[JobRow], str], minutes: float) -> Values:
    return {name: len(group) / minutes for name, group in _grouped(rows, key).items()}


def _times(rows: list[JobRow], key: Callable[[JobRow], str], q: float | None) -> Values:
    """The mean (`q` None) or a quantile of the rows' seconds, per key."""
    found = {}
    for name, group in _grouped(rows, key).items():
        seconds = [max(row.seconds, 0.0) for row in group]
        found[name] = statistics.fmean(seconds) if q is None else quantile(seconds, q)
    return found


def window_values(activity: JobActivity) -> WindowNumbers:
    """A window's activity as per-minute rates and times, per runner type and by workflow, job
    and repository."""
    minutes = max((activity.until - activity.since) / 60.0, 1e-9)
    numbers = WindowNumbers()
    values: dict[Signal, Values] = defaultdict(dict)
    workflows: Groups = defaultdict(dict)
    parts: dict[Breakdown, Groups] = {by: defaultdict(dict) for by in Breakdown}

    def workflow(row: JobRow) -> str:
        return row.workflow

    for name, rows in _grouped(activity.arrivals, lambda r: r.runner_type).items():
        values[Signal.ARRIVALS_PER_MINUTE][name] = len(rows) / minutes
        workflows[Signal.ARRIVALS_BY_WORKFLOW][name] = _per_minute(rows, workflow, minutes)
        for by, key in _KEYS.items():
            parts[by][Signal.ARRIVALS_PER_MINUTE][name] = _per_minute(rows, key, minutes)
    for name, rows in _grouped(activity.starts, lambda r: r.runner_type).items():
        waits = [max(row.seconds, 0.0) for row in rows]
        values[Signal.STARTED_PER_MINUTE][name] = len(rows) / minutes
        values[Signal.QUEUE_TIME_MEAN][name] = statistics.fmean(waits)
        values[Signal.QUEUE_TIME_P50][name] = quantile(waits, 0.5)
        values[Signal.QUEUE_TIME_P90][name] = quantile(waits, 0.9)
        values[Signal.QUEUE_TIME_MAX][name] = max(waits)
        workflows[Signal.STARTED_BY_WORKFLOW][name] = _per_minute(rows, workflow, minutes)
        for by, key in _KEYS.items():
            parts[by][Signal.STARTED_PER_MINUTE][name] = _per_minute(rows, key, minutes)
    for name, rows in _grouped(activity.completions, lambda r: r.runner_type).items():
        times = [max(row.seconds, 0.0) for row in rows]
        values[Signal.COMPLETED_PER_MINUTE][name] = len(rows) / minutes
        values[Signal.DURATION_MEAN][name] = statistics.fmean(times)
        values[Signal.DURATION_P50][name] = quantile(times, 0.5)
        values[Signal.DURATION_P90][name] = quantile(times, 0.9)
        values[Signal.FAILED_SHARE][name] = sum(row.failed for row in rows) / len(rows)
        workflows[Signal.DURATION_MEAN_BY_WORKFLOW][name] = _times(rows, workflow, None)
        workflows[Signal.DURATION_P90_BY_WORKFLOW][name] = _times(rows, workflow, 0.9)
        for by, key in _KEYS.items():
            parts[by][Signal.DURATION_MEAN][name] = _times(rows, key, None)
            parts[by][Signal.DURATION_P90][name] = _times(rows, key, 0.9)
    numbers.values = dict(values)
    numbers.workflows = dict(workflows)
    numbers.breakdowns = {by: dict(groups) for by, groups in parts.items()}
    return numbers


def failed_shares(activities: list[JobActivity]) -> tuple[Values, Values]:
    """The share of the jobs completed that failed, per runner type, over all the activities
    pooled (a few failures in each window add up to a rate), and how many jobs it is of."""
    failed: Values = defaultdict(float)
    jobs: Values = defaultdict(float)
    for activity in activities:
        for row in activity.completions:
            jobs[row.runner_type] += 1.0
            failed[row.runner_type] += float(row.failed)
    return {name: failed[name] / count for name, count in jobs.items()}, dict(jobs)


def counted(activity: JobActivity, config: JobsConfig) -> JobActivity:
    """The activity of the runner types and repositories that count."""

    def keep(rows: list[JobRow]) -> list[JobRow]:
        return [r for r in rows if config.counts(r.runner_type, r.repository)]

    return JobActivity(
        since=activity.since,
        until=activity.until,
        arrivals=keep(activity.arrivals),
        starts=keep(activity.starts),
        completions=keep(activity.completions),
    )


def median_values(days: list[dict[str, float]], rate: bool) -> dict[str, float]:
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


def _median_groups(days: list[Groups], rates: Callable[[Signal], bool]) -> Groups:
    found: Groups = {}
    for signal in {s for day in days for s in day}:
        per_day = [day.get(signal, {}) for day in days]
        names = {name for day in per_day for name in day}
        found[signal] = {
            name: median_values([day.get(name, {}) for day in per_day], rates(signal))
            for name in names
        }
    return found


def usual(windows: list[WindowNumbers]) -> WindowNumbers:
    """The median of several windows (the same time on previous days), each number on its own."""
    values = {
        signal: median_values([w.values.get(signal, {}) for w in windows], signal in RATES)
        for signal in {s for w in windows for s in w.values}
    }

    def rate(signal: Signal) -> bool:
        return signal in RATES

    def part_rate(signal: Signal) -> bool:
        return signal in (Signal.ARRIVALS_PER_MINUTE, Signal.STARTED_PER_MINUTE)

    return WindowNumbers(
        values=values,
        workflows=_median_groups([w.workflows for w in windows], rate),
        breakdowns={
            by: _median_groups([w.breakdowns.get(by, {}) for w in windows], part_rate)
            for by in Breakdown
        },
    )
