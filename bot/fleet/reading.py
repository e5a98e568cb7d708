"""Reading the fleet from every configured source at once, and putting the readings together.

Sources compose: GitHub's job events (in the store), GitHub's runners list, Prometheus. Each
signal of each runner type is taken from the first source that has it, in this order: job
events (exact, per job), the runners list (GitHub's own view of its runners), Prometheus
(the autoscaler's view: desired and maximum runners, pods' CPU and OOM kills, and whatever the
others lack). Where each value came from is kept, so the report can say it. A source that fails
is said in `missing`; only when no source knows any runner type is the fleet unreadable. A
usual that is not the previous days' (less than a day of job history) is said in the report's
notes, and so is a runners list missing some organizations'. The runner types the `jobs:`
settings leave out are left out of the runners list too.

The sources of one organization (`FleetSources.for_org`) count its repositories' jobs and its
own runners list; Prometheus, which tells runner types apart but not organizations, adds to
the runner types those two know.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TypeVar

from bot.fleet.measures import BY_WORKFLOW, Origin, Signal
from bot.fleet.signals import (
    EARLIER,
    HOUR_AGO,
    WITH_BASELINE,
    WITH_EARLIER,
    FleetSignals,
    collect,
    no_fleet,
    window_minutes,
)
from bot.fleet.sources.github_http import GitHubError
from bot.fleet.sources.job_events import JobReading, read_jobs
from bot.fleet.sources.jobs_config import JobsConfig
from bot.fleet.sources.orgs import org_jobs, runners_of
from bot.fleet.sources.prometheus import PrometheusClient
from bot.fleet.sources.querypack import QueryPack
from bot.fleet.sources.runner_supply import RunnerFleet, RunnersSource
from bot.store import Store, StoreError

_V = TypeVar("_V")
#: How a reading's problems begin for each organization whose runners are not in it, followed
#: by `org NAME: why`.
PARTIAL_RUNNERS = "GitHub's runners list is partial, without "
#: How long reading the fleet may take before what came in is used.
READ_TIMEOUT_SECONDS = 20.0


class FleetUnreadable(Exception):
    """No configured source knows any runner type: the message says why, source by source."""


@dataclass(frozen=True)
class FleetSources:
    """The configured sources; a None one is not configured."""

    store: Store | None = None
    jobs: JobsConfig = field(default_factory=JobsConfig)
    runners: RunnersSource | None = None
    prometheus: PrometheusClient | None = None
    pack: QueryPack = field(default_factory=QueryPack)
    #: The organization these sources are narrowed to (`for_org`); None: the whole fleet.
    org: str | None = None

    @property
    def configured(self) -> bool:
        return any(s is not None for s in (self.store, self.runners, self.prometheus))

    def for_org(self, org: str) -> FleetSources:
        """The same sources, counting only `org`'s jobs and runners."""
        return replace(
            self, jobs=org_jobs(self.jobs, [org]), runners=runners_of(self.runners, org), org=org
        )


def from_jobs(reading: JobReading, window: str) -> FleetSignals:
    """The job events' reading as fleet signals."""
    fleet = FleetSignals(at=reading.at, window=window)
    for signal, values in reading.now.items():
        if signal in BY_WORKFLOW:
            continue
        fleet.now[signal] = dict(values)
    fleet.baseline = {s: dict(v) for s, v in reading.baseline.items() if s not in BY_WORKFLOW}
    fleet.daily = {s: [dict(day) for day in each] for s, each in reading.daily.items()}
    fleet.workflows = {s: dict(v) for s, v in reading.workflows.items()}
    fleet.workflow_baseline = {s: dict(v) for s, v in reading.workflow_baseline.items()}
    fleet.breakdowns = {by: dict(groups) for by, groups in reading.breakdowns.items()}
    fleet.breakdown_baseline = {
        by: dict(groups) for by, groups in reading.breakdown_baseline.items()
    }
    fleet.yesterday = {s: dict(v) for s, v in reading.yesterday.items()}
    fleet.week_ago = {s: dict(v) for s, v in reading.week_ago.items()}
    fleet.earlier[Signal.QUEUED] = list(reading.earlier_queued)
    fleet.earlier[Signal.RUNNING] = list(reading.earlier_running)
    fleet.earlier[Signal.RUNNING_PEAK] = list(reading.earlier_peaks)
    fleet.hour_ago = {s: dict(v) for s, v in reading.hour_ago.items()}
    fleet.longest = dict(reading.longest)
    fleet.since = dict(reading.since)
    return fleet


def from_runners(
    supply: RunnerFleet,
    names: set[str],
    at: datetime,
    window: str,
    jobs: JobsConfig,
) -> FleetSignals:
    """GitHub's runners list as fleet signals, for the runner types `names` (all the types it
    has but those `jobs` leaves out, when none are known from elsewhere)."""
    fleet = FleetSignals(at=at, window=window)
    if names:
        types = supply.supply_for(sorted(names))
    else:
        types = {name: c for name, c in supply.supply.items() if not jobs.leaves_out(name)}
    for name, counts in types.items():
        fleet.now.setdefault(Signal.REGISTERED, {})[name] = float(counts.online)
        fleet.now.setdefault(Signal.OFFLINE, {})[name] = float(counts.offline)
        fleet.now.setdefault(Signal.BUSY, {})[name] = float(counts.busy)
        fleet.now.setdefault(Signal.IDLE, {})[name] = float(counts.idle)
    return fleet


def only_types(part: FleetSignals, names: set[str]) -> FleetSignals:
    """`part` with the values of the runner types `names` only."""
    return replace(
        part,
        now=_each(part.now, names),
        baseline=_each(part.baseline, names),
        yesterday=_each(part.yesterday, names),
        week_ago=_each(part.week_ago, names),
        hour_ago=_each(part.hour_ago, names),
        workflows=_each(part.workflows, names),
        workflow_baseline=_each(part.workflow_baseline, names),
        daily={s: [_kept(day, names) for day in days] for s, days in part.daily.items()},
        earlier={s: [_kept(then, names) for then in ago] for s, ago in part.earlier.items()},
    )


def _kept(values: dict[str, _V], names: set[str]) -> dict[str, _V]:
    return {name: value for name, value in values.items() if name in names}


def _each(by_signal: dict[Signal, dict[str, _V]], names: set[str]) -> dict[Signal, dict[str, _V]]:
    return {signal: _kept(values, names) for signal, values in by_signal.items()}


def merge(parts: list[tuple[Origin, FleetSignals]], at: datetime, window: str) -> FleetSignals:
    """One reading from several, each value from the first part that has it."""
    fleet = FleetSignals(at=at, window=window)
    for origin, part in parts:
        for signal, values in part.now.items():
            into = fleet.now.setdefault(signal, {})
            for name, value in values.items():
                if name not in into:
                    into[name] = value
                    fleet.origins.setdefault(signal, {})[name] = origin
                    for source, into_past in (
                        (part.baseline, fleet.baseline),
                        (part.yesterday, fleet.yesterday),
                        (part.week_ago, fleet.week_ago),
                    ):
                        if name in source.get(signal, {}):
                            into_past.setdefault(signal, {})[name] = source[signal][name]
                    if each := part.daily.get(signal):
                        days = fleet.daily.setdefault(signal, [])
                        days.extend({} for _ in range(len(each) - len(days)))
                        for day, into_day in zip(each, days, strict=False):
                            if name in day:
                                into_day[name] = day[name]
        for signal, workflows in part.workflows.items():
            into_w = fleet.workflows.setdefault(signal, {})
            for name, per_workflow in workflows.items():
                if name not in into_w:
                    into_w[name] = per_workflow
                    fleet.origins.setdefault(signal, {})[name] = origin
                    base = part.workflow_baseline.get(signal, {})
                    if name in base:
                        fleet.workflow_baseline.setdefault(signal, {})[name] = base[name]
        if part.breakdowns and not fleet.breakdowns:
            # Only the job events count by job and repository.
            fleet.breakdowns = part.breakdowns
            fleet.breakdown_baseline = part.breakdown_baseline
        for signal, earlier in part.earlier.items():
            if signal not in fleet.earlier and earlier:
                fleet.earlier[signal] = earlier
        for signal, then in part.hour_ago.items():
            if signal not in fleet.hour_ago and then:
                fleet.hour_ago[signal] = then
        for signal, reason in part.missing.items():
            fleet.missing.setdefault(signal, f"{origin.value}: {reason}")
        for name, jobs in part.longest.items():
            fleet.longest.setdefault(name, jobs)
        for name, since in part.since.items():
            fleet.since.setdefault(name, since)
        fleet.sources += (origin,)
    # What a source failed to read but another has is not missing.
    for signal in list(fleet.missing):
        if fleet.now.get(signal):
            del fleet.missing[signal]
    return fleet


async def read_fleet(
    sources: FleetSources,
    at: datetime,
    *,
    signals: Iterable[Signal] = tuple(Signal),
    with_baseline: Iterable[Signal] = WITH_BASELINE,
    with_earlier: Iterable[Signal] = WITH_EARLIER,
    within_seconds: float = READ_TIMEOUT_SECONDS,
) -> FleetSignals:
    """Every configured source at `at`, put together; FleetUnreadable when none knows any
    runner type. Prometheus is asked only `signals` (with the baseline and earlier values of
    those named), for a quick look such as /queue-status's. What a source has not answered
    within `within_seconds` is left out."""
    window = sources.pack.window
    span = timedelta(minutes=window_minutes(window))
    problems: list[str] = []
    note = ""
    jobs_part: FleetSignals | None = None
    prometheus_part: FleetSignals | None = None

    async def jobs() -> None:
        nonlocal jobs_part, note
        if sources.store is None:
            return
        try:
            reading = await read_jobs(
                sources.store, sources.jobs, at, span, earlier=EARLIER, hour_ago=HOUR_AGO
            )
        except StoreError as exc:
            problems.append(f"GitHub job events could not be read: {exc}")
            return
        jobs_part = from_jobs(reading, window)
        note = reading.note

    async def prometheus() -> None:
        nonlocal prometheus_part
        if sources.prometheus is None:
            return
        part = await collect(
            sources.prometheus,
            sources.pack,
            at,
            signals=signals,
            with_baseline=with_baseline,
            with_earlier=with_earlier,
        )
        if part.runner_types():
            prometheus_part = part
        else:
            problems.append(no_fleet(part, sources.prometheus.where))

    supply: RunnerFleet | None = None

    async def runners() -> None:
        nonlocal supply
        if sources.runners is None:
            return
        try:
            supply = await sources.runners.fleet()
        except GitHubError as exc:
            problems.append(f"GitHub's runners list could not be read: {exc}")
            return
        problems.extend(f"{PARTIAL_RUNNERS}{failed}" for failed in supply.failed)

    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within_seconds):
            await asyncio.gather(jobs(), prometheus(), runners())
    parts: list[tuple[Origin, FleetSignals]] = []
    if jobs_part is not None and jobs_part.runner_types():
        parts.append((Origin.JOB_EVENTS, jobs_part))
    names = {n for _, part in parts for n in part.runner_types()}
    if prometheus_part is not None:
        names |= set(prometheus_part.runner_types())
    if supply is not None:
        parts.append((Origin.RUNNERS, from_runners(supply, names, at, window, sources.jobs)))
    if prometheus_part is not None and sources.org is not None:
        # One organization's: only the runner types its jobs and runners have.
        prometheus_part = only_types(
            prometheus_part, {n for _, part in parts for n in part.runner_types()}
        )
    if prometheus_part is not None:
        parts.append((Origin.PROMETHEUS, prometheus_part))
    fleet = merge(parts, at, window)
    if not fleet.runner_types():
        reasons = "; ".join(problems) or "no source has seen any runner type yet"
        raise FleetUnreadable(reasons)
    # How the usual was found is said in the report; it is no reason the fleet is unreadable,
    # and says nothing when the job events did not count.
    counted = jobs_part is not None and bool(jobs_part.runner_types())
    fleet.problems = (*problems, note) if note and counted else tuple(problems)
    return fleet
