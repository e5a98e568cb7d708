"""A capacity report's runner types from the window's jobs: counted, measured, replayed for the
sizes and charted. Pure and CPU-bound (a busy fortnight is a million jobs, replayed many times
over): the bot runs it in a worker process of its own (`composed_from`, which reads the jobs
there too), so neither the work nor the million objects it makes share an interpreter with the
event loop that answers webhooks; without one (an in-memory store, a test), in a thread.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from bot.capacity.advice import advise
from bot.capacity.chart import capacity_chart
from bot.capacity.fleet_metrics import TypeMetrics
from bot.capacity.measures import TypeMeasures, measure
from bot.capacity.replay import percentile
from bot.capacity.settings import CapacitySettings
from bot.domain.capacity import CHART_TYPES, TypeCapacity
from bot.fleet.chart import render_chart
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import JobSpan, open_store

#: Runner types shown in one report, busiest first (Slack's 50 blocks a message, and people).
MAX_TYPES = 10


@dataclass(frozen=True)
class Inputs:
    """Everything but the jobs: the window, the target, what counts, and what Prometheus and
    GitHub's runners list said (read by the bot before)."""

    since: float
    until: float
    target_seconds: float
    settings: CapacitySettings
    jobs: JobsConfig
    metrics: dict[str, TypeMetrics] = field(default_factory=dict)
    offline: dict[str, int] = field(default_factory=dict)
    #: The report is of some organizations (`jobs` counts theirs only, `offline` has their
    #: runner types): Prometheus's runner types are shown only where theirs are.
    of_orgs: bool = False

    def counts(self, runner_type: str) -> bool:
        return not self.jobs.leaves_out(runner_type) and self.settings.reports(runner_type)

    def theirs(self, runner_type: str, measured: Iterable[str]) -> bool:
        """Whether Prometheus's `runner_type` is shown: always, unless the report is of some
        organizations whose jobs and runners do not have it."""
        return not self.of_orgs or runner_type in measured or runner_type.casefold() in self.offline


@dataclass(frozen=True)
class Composed:
    types: tuple[TypeCapacity, ...]
    #: Runner types beyond MAX_TYPES.
    more_types: int
    #: PNG of the busiest types, or None (no jobs, or nothing to draw).
    chart: bytes | None


def composed(spans: Iterable[JobSpan], inputs: Inputs) -> Composed:
    """The report's runner types from `spans` (the window's jobs, all of them)."""
    since, until, target = inputs.since, inputs.until, inputs.target_seconds
    counted = [
        span
        for span in spans
        if inputs.jobs.counts(span.runner_type, span.repository) and inputs.counts(span.runner_type)
    ]
    measures = measure(counted, since, until)
    names = sorted(
        set(measures)
        | {n for n in inputs.metrics if inputs.counts(n) and inputs.theirs(n, measures)},
        key=lambda n: (-(measures[n].busy_seconds if n in measures else 0.0), n),
    )
    shown = names[:MAX_TYPES]
    types = capacity_types(shown, measures, inputs)
    busiest = [measures[n] for n in shown if n in measures][:CHART_TYPES]
    chart = render_chart(capacity_chart(busiest, since, until, target)) if busiest else None
    return Composed(types, len(names) - len(shown), chart)


def worker_process() -> ProcessPoolExecutor:
    """The one worker process reports are composed in: started at the first report, and
    spawned, not forked (a fork would carry the bot's loop and open connections along)."""
    return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))


def composed_from(database: str, inputs: Inputs) -> Composed:
    """`composed` over the jobs read from the store at `database` (QUEUEBOT_DATABASE), in the
    worker process that calls it."""

    async def read() -> list[JobSpan]:
        store = await open_store(database)
        try:
            return await store.job_spans(inputs.since, inputs.until)
        finally:
            await store.close()

    return composed(asyncio.run(read()), inputs)


def capacity_types(
    names: list[str], measures: dict[str, TypeMeasures], inputs: Inputs
) -> tuple[TypeCapacity, ...]:
    since, until, target = inputs.since, inputs.until, inputs.target_seconds
    types = []
    for name in names:
        m, fleet = measures.get(name), inputs.metrics.get(name, TypeMetrics())
        recommended = current = None
        if m is not None and m.jobs:
            recommended, current = advise(m, since, until, target, fleet.max_runners)
        hours = m.hours() if m is not None else []
        waits = m.waits if m is not None else []
        types.append(
            TypeCapacity(
                runner_type=name,
                measured=m is not None,
                jobs=len(waits),
                p50_seconds=percentile(waits, 0.5),
                p95_seconds=percentile(waits, 0.95),
                p99_seconds=percentile(waits, 0.99),
                worst_hours=m.worst_hours() if m is not None else (),
                hours_over_target=sum(1 for h in hours if h.p95_seconds > target),
                busy_hours=m.busy_hours if m is not None else 0.0,
                peak_busy=m.peak_busy if m is not None else 0,
                failed_jobs=m.failed_jobs if m is not None else 0,
                max_runners=fleet.max_runners,
                hours_at_max=fleet.hours_at_max,
                utilisation=fleet.utilisation,
                offline_runners=inputs.offline.get(name.casefold()) if inputs.offline else None,
                failed_runners=fleet.failed_runners,
                workflows=m.workflows() if m is not None else (),
                recommended=recommended,
                current=current,
            )
        )
    return tuple(types)
