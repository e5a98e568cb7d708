"""Reading the fleet: every signal of the query pack now, at the same hour on previous days
(the baseline), and a little earlier (to tell a lasting gap from a passing one).

All queries run concurrently. A signal whose query fails is recorded as missing with the reason,
so the report says "no data" instead of guessing.
"""

from __future__ import annotations

import asyncio
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.fleet.measures import BY_WORKFLOW, Breakdown, Origin, Signal
from bot.fleet.sources.prometheus import PrometheusClient, PrometheusError
from bot.fleet.sources.querypack import QueryPack
from bot.store import QueuedJob

#: The baseline: the same time of day on this many previous days.
BASELINE_DAYS = 7
#: How many queries run at once against Prometheus.
CONCURRENCY = 24

WITH_BASELINE = (
    Signal.STARTED_PER_MINUTE,
    Signal.STARTED_BY_WORKFLOW,
    Signal.DURATION_P50,
    Signal.DURATION_P90,
    Signal.DURATION_P90_BY_WORKFLOW,
    Signal.CPU_THROTTLED,
    Signal.MAX_WAIT,
    Signal.QUEUED,
    Signal.ARRIVALS_PER_MINUTE,
    Signal.ARRIVALS_BY_WORKFLOW,
    Signal.ARRIVALS_HOUR,
    Signal.STARTED_HOUR,
    Signal.COMPLETED_PER_MINUTE,
    Signal.QUEUE_TIME_P90,
    Signal.QUEUE_TIME_MEAN,
    Signal.DURATION_MEAN,
    Signal.DURATION_MEAN_BY_WORKFLOW,
    Signal.FAILED_SHARE,
    Signal.JOBS_JUDGED,
    Signal.RUNNING,
    Signal.BUSY,
)
#: Read also this long ago, so that "for long" can be told from "just now".
EARLIER = (timedelta(minutes=15), timedelta(minutes=30))
WITH_EARLIER = (
    Signal.DESIRED,
    Signal.REGISTERED,
    Signal.BUSY,
    Signal.QUEUED,
    Signal.RUNNING,
    Signal.RUNNING_PEAK,
)
#: Kept for each of the usual days too, not only as their median: the usual queue's size is the
#: median of each day's (jobs waiting and how long), as the alert ranks queues.
DAILY = (Signal.QUEUED, Signal.MAX_WAIT, Signal.QUEUE_TIME_P90, Signal.QUEUE_TIME_MEAN)
#: Jobs a minute by workflow: their usual is a mean (see `mean_by_group`).
RATES_BY_WORKFLOW = (Signal.ARRIVALS_BY_WORKFLOW, Signal.STARTED_BY_WORKFLOW)
#: Read also an hour ago: whether a queue stood all the while and runners rose beneath it.
HOUR_AGO = timedelta(hours=1)
WITH_HOUR_AGO = (Signal.QUEUED, Signal.RUNNING_PEAK)

Values = dict[str, float]  # runner type → value
WorkflowValues = dict[str, dict[str, float]]  # runner type → workflow → value


def window_minutes(window: str) -> float:
    """`10m`, `90s`, `1h` in minutes (the rate window)."""
    unit = {"s": 1 / 60, "m": 1.0, "h": 60.0}.get(window[-1:], 1.0)
    try:
        return float(window[:-1]) * unit
    except ValueError:
        return 10.0


@dataclass
class FleetSignals:
    at: datetime
    window: str
    now: dict[Signal, Values] = field(default_factory=dict)
    baseline: dict[Signal, Values] = field(default_factory=dict)
    #: Those of DAILY on each of the usual days (the same days, in the same order, for each).
    daily: dict[Signal, list[Values]] = field(default_factory=dict)
    earlier: dict[Signal, list[Values]] = field(default_factory=dict)
    #: Those of WITH_HOUR_AGO an hour ago.
    hour_ago: dict[Signal, Values] = field(default_factory=dict)
    workflows: dict[Signal, WorkflowValues] = field(default_factory=dict)
    workflow_baseline: dict[Signal, WorkflowValues] = field(default_factory=dict)
    #: By job and by repository (job events only): runner type → job or repository → value.
    breakdowns: dict[Breakdown, dict[Signal, WorkflowValues]] = field(default_factory=dict)
    breakdown_baseline: dict[Breakdown, dict[Signal, WorkflowValues]] = field(default_factory=dict)
    #: The same time yesterday and a week before, each day on its own (job events only): for
    #: people to read beside the baseline, which is what the checks compare with.
    yesterday: dict[Signal, Values] = field(default_factory=dict)
    week_ago: dict[Signal, Values] = field(default_factory=dict)
    #: Signals that could not be read now, with the reason.
    missing: dict[Signal, str] = field(default_factory=dict)
    #: Where each value came from, per signal and runner type (one source: unset).
    origins: dict[Signal, dict[str, Origin]] = field(default_factory=dict)
    #: The longest-waiting jobs now, and when the oldest was created (job events only).
    longest: dict[str, list[QueuedJob]] = field(default_factory=dict)
    since: dict[str, float] = field(default_factory=dict)
    #: The sources this reading came from, and what could not be read at all.
    sources: tuple[Origin, ...] = ()
    #: Said in the report's notes: what a source could not read, and a baseline that is not
    #: the previous days'.
    problems: tuple[str, ...] = ()

    def origin(self, signal: Signal, runner_type: str) -> Origin | None:
        return self.origins.get(signal, {}).get(runner_type)

    def value(self, signal: Signal, runner_type: str) -> float | None:
        return self.now.get(signal, {}).get(runner_type)

    def base(self, signal: Signal, runner_type: str) -> float | None:
        return self.baseline.get(signal, {}).get(runner_type)

    def before(self, signal: Signal, runner_type: str) -> list[float]:
        """`signal` 15 and 30 minutes ago, where read."""
        return [then[runner_type] for then in self.earlier.get(signal, []) if runner_type in then]

    def quarter_hour_ago(self, signal: Signal, runner_type: str) -> float | None:
        """`signal` 15 minutes ago, where read."""
        before = self.before(signal, runner_type)
        return before[0] if before else None

    def an_hour_ago(self, signal: Signal, runner_type: str) -> float | None:
        """`signal` an hour ago, where read."""
        return self.hour_ago.get(signal, {}).get(runner_type)

    def days_before(self, signal: Signal, runner_type: str) -> tuple[float | None, float | None]:
        """`signal` the same time yesterday and a week before, each where it was read."""
        return (
            self.yesterday.get(signal, {}).get(runner_type),
            self.week_ago.get(signal, {}).get(runner_type),
        )

    def broken_down(
        self, by: Breakdown, signal: Signal, runner_type: str
    ) -> tuple[dict[str, float], dict[str, float]]:
        """`signal` of `runner_type` by job or repository, now and usually."""
        return (
            self.breakdowns.get(by, {}).get(signal, {}).get(runner_type, {}),
            self.breakdown_baseline.get(by, {}).get(signal, {}).get(runner_type, {}),
        )

    def runner_types(self) -> list[str]:
        names: set[str] = set()
        for signal in (Signal.QUEUED, Signal.REGISTERED, Signal.DESIRED, Signal.RUNNING):
            names.update(self.now.get(signal, {}))
        return sorted(names)


def _finite(value: float) -> bool:
    return not (math.isnan(value) or math.isinf(value))


def _by_type(samples: list[tuple[dict[str, str], float]]) -> Values:
    values: Values = {}
    for labels, value in samples:
        name = labels.get("name")
        if name is not None and _finite(value):
            values[name] = value
    return values


def _by_workflow(samples: list[tuple[dict[str, str], float]]) -> WorkflowValues:
    values: WorkflowValues = {}
    for labels, value in samples:
        name, workflow = labels.get("name"), labels.get("workflow")
        if name is not None and workflow and _finite(value):
            values.setdefault(name, {})[workflow] = value
    return values


def _median(days: list[Values]) -> Values:
    merged: dict[str, list[float]] = {}
    for day in days:
        for name, value in day.items():
            merged.setdefault(name, []).append(value)
    return {name: statistics.median(values) for name, values in merged.items()}


def _median_workflows(days: list[WorkflowValues]) -> WorkflowValues:
    merged: dict[str, list[Values]] = {}
    for day in days:
        for name, workflows in day.items():
            merged.setdefault(name, []).append(workflows)
    return {name: _median(per_day) for name, per_day in merged.items()}


def mean_by_group(days: list[WorkflowValues], *, every_day: bool = False) -> WorkflowValues:
    """Each group's usual (a workflow's jobs a minute, a repository's runners held): the mean
    over the days its runner type has any group (`every_day`: over all the days), a day
    without the group's own counting none. A job that comes a few times an hour is in few
    windows of ten minutes, and the median of those is none where it comes every day."""
    found: dict[str, dict[str, float]] = {}
    for name in {name for day in days for name in day}:
        measured = days if every_day else [day for day in days if name in day]
        per_type = found.setdefault(name, {})
        for day in measured:
            for group, value in day.get(name, {}).items():
                per_type[group] = per_type.get(group, 0.0) + value / len(measured)
    return found


async def collect(
    client: PrometheusClient,
    pack: QueryPack,
    at: datetime,
    *,
    baseline_days: int = BASELINE_DAYS,
    signals: Iterable[Signal] = tuple(Signal),
    with_baseline: Iterable[Signal] = WITH_BASELINE,
    with_earlier: Iterable[Signal] = WITH_EARLIER,
) -> FleetSignals:
    """Read `signals` of `pack` (all, by default) at `at`, the baseline of those in
    `with_baseline` and the earlier values of those in `with_earlier`."""
    reading = tuple(s for s in signals if pack.measures(s))
    baselined = tuple(s for s in with_baseline if s in reading)
    earlier = tuple(s for s in with_earlier if s in reading)
    gate = asyncio.Semaphore(CONCURRENCY)

    async def read(signal: Signal, when: datetime) -> list[tuple[dict[str, str], float]]:
        async with gate:
            samples = await client.instant(pack.query(signal), when)
        return [(s.labels, s.value) for s in samples]

    failures: dict[tuple[Signal, datetime], str] = {}

    async def guarded(signal: Signal, when: datetime) -> list[tuple[dict[str, str], float]]:
        try:
            return await read(signal, when)
        except PrometheusError as exc:
            failures[(signal, when)] = exc.detail
            return []

    async def usual_days(signal: Signal) -> list[list[tuple[dict[str, str], float]]]:
        # One range query a signal, stepping a day back from yesterday: Prometheus evaluates it
        # at exactly the instants the days' own queries would, selecting the series once.
        days: list[list[tuple[dict[str, str], float]]] = [[] for _ in range(baseline_days)]
        if not baseline_days:
            return days
        first = at - timedelta(days=baseline_days)
        try:
            async with gate:
                found = await client.range(
                    pack.query(signal), first, at - timedelta(days=1), timedelta(days=1)
                )
        except PrometheusError:
            return days
        for series in found:
            for when, value in series.points:
                day = round((at - when) / timedelta(days=1))
                if 1 <= day <= baseline_days:
                    days[day - 1].append((series.labels, value))
        return days

    jobs: dict[tuple[Signal, str, int], asyncio.Task[list[tuple[dict[str, str], float]]]] = {}
    on_usual_days: dict[Signal, asyncio.Task[list[list[tuple[dict[str, str], float]]]]] = {}
    async with asyncio.TaskGroup() as tasks:
        for signal in reading:
            jobs[(signal, "now", 0)] = tasks.create_task(guarded(signal, at))
        for signal in baselined:
            on_usual_days[signal] = tasks.create_task(usual_days(signal))
        for signal in earlier:
            for index, ago in enumerate(EARLIER):
                jobs[(signal, "earlier", index)] = tasks.create_task(guarded(signal, at - ago))
            if signal in WITH_HOUR_AGO:
                jobs[(signal, "hour", 0)] = tasks.create_task(guarded(signal, at - HOUR_AGO))

    fleet = FleetSignals(at=at, window=pack.window)
    for signal in reading:
        if (signal, at) in failures:
            fleet.missing[signal] = failures[(signal, at)]
        samples = jobs[(signal, "now", 0)].result()
        if samples and all("name" not in labels for labels, _ in samples):
            # actions-runner-controller's job series carry no scale set of their own.
            fleet.missing[signal] = (
                "its series carry no runner type: relabel the listener pods' label"
                " actions.github.com/scale-set-name into"
                f" `{pack.runner_type_label}` (docs/diagnostics.md)"
            )
        if signal in BY_WORKFLOW:
            fleet.workflows[signal] = _by_workflow(samples)
        else:
            fleet.now[signal] = _by_type(samples)
    for signal in baselined:
        days = on_usual_days[signal].result()
        if signal in BY_WORKFLOW:
            usual = mean_by_group if signal in RATES_BY_WORKFLOW else _median_workflows
            fleet.workflow_baseline[signal] = usual([_by_workflow(d) for d in days])
        else:
            fleet.baseline[signal] = _median([_by_type(d) for d in days])
            if signal in DAILY:
                fleet.daily[signal] = [_by_type(d) for d in days]
    for signal in earlier:
        fleet.earlier[signal] = [
            _by_type(jobs[(signal, "earlier", i)].result()) for i in range(len(EARLIER))
        ]
        if (signal, "hour", 0) in jobs:
            fleet.hour_ago[signal] = _by_type(jobs[(signal, "hour", 0)].result())
    return fleet


def no_fleet(fleet: FleetSignals, where: str) -> str:
    """Why no runner type was found: a failing query, or metrics that are not there."""
    if Signal.QUEUED in fleet.missing:
        return fleet.missing[Signal.QUEUED]
    return (
        f"Prometheus at {where} has no runner types: none of the query pack's queued, running,"
        " registered or desired queries returned a series (are actions-runner-controller's"
        " gha_* metrics scraped, or does the YAML file's `queries:` map yours?)"
    )
