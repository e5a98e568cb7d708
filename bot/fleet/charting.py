"""The queue over the last hours, as a chart: the runner types' history, from GitHub's job
events when they are recorded (the jobs queued at each moment, as the alert counts them), else
from Prometheus, drawn by `bot.fleet.chart`. Diagnostics share it in the incident's
thread; /queue-status shows it for the runner types asked about.
"""

from __future__ import annotations

import asyncio
import math
from datetime import datetime, timedelta

from bot.fleet.chart import ChartData, Series, render_chart
from bot.fleet.measures import Signal
from bot.fleet.reading import FleetSources
from bot.fleet.sources.job_events import queued_now
from bot.fleet.sources.prometheus import PrometheusError, RangeSeries
from bot.store import StoreError

CHART_SPAN = timedelta(hours=6)
CHART_STEP = timedelta(minutes=2)
#: Job events are counted at each step: every 5 minutes over the 6 hours.
JOB_CHART_STEP = timedelta(minutes=5)
MAX_CHARTED = 8
CHART_TITLE = "Jobs queueing by runner type, last 6 h"


class ChartUnavailable(Exception):
    """The history could not be read (the message says from where and why)."""


async def queue_chart(
    sources: FleetSources,
    names: list[str],
    end: datetime,
    *,
    marker: datetime | None = None,
) -> bytes | None:
    """A PNG of queued jobs and longest wait over the 6 hours before `end` for the runner
    types `names` (in that order), or None when no source has history for any of them.
    `marker`, when within the span, is drawn as the alert's firing time."""
    start = end - CHART_SPAN
    queued: tuple[Series, ...] = ()
    waits: tuple[Series, ...] = ()
    heading = "Longest wait (minutes)"
    if sources.store is not None:
        try:
            queued, waits = await _from_jobs(sources, names, start, end)
        except StoreError as exc:
            raise ChartUnavailable(f"GitHub job events could not be read: {exc}") from None
    if not queued and sources.prometheus is not None:
        try:
            queued, waits, heading = await _from_prometheus(sources, names, start, end)
        except PrometheusError as exc:
            raise ChartUnavailable(exc.detail) from None
    data = ChartData(
        title=CHART_TITLE,
        queued=queued,
        wait_minutes=waits,
        start=start,
        end=end,
        marker=marker if marker and start <= marker <= end else None,
        marker_label="alert",
        wait_heading=heading,
    )
    if not data.queued and not data.wait_minutes:
        return None
    return await asyncio.to_thread(render_chart, data)


async def _from_jobs(
    sources: FleetSources, names: list[str], start: datetime, end: datetime
) -> tuple[tuple[Series, ...], tuple[Series, ...]]:
    assert sources.store is not None
    steps = int(CHART_SPAN / JOB_CHART_STEP) + 1
    times = [start + k * JOB_CHART_STEP for k in range(steps)]
    readings = await asyncio.gather(
        *(queued_now(sources.store, sources.jobs, t.timestamp()) for t in times)
    )
    if not any(name in reading for reading in readings for name in names):
        return (), ()
    queued, waits = [], []
    for name in names:
        counts, longest = [], []
        for when, reading in zip(times, readings, strict=True):
            jobs = reading.get(name, [])
            counts.append((when, float(len(jobs))))
            longest.append((when, (when.timestamp() - jobs[0].created_at) / 60 if jobs else 0.0))
        queued.append(Series(runner_type=name, points=tuple(counts)))
        waits.append(Series(runner_type=name, points=tuple(longest)))
    return tuple(queued), tuple(waits)


async def _from_prometheus(
    sources: FleetSources, names: list[str], start: datetime, end: datetime
) -> tuple[tuple[Series, ...], tuple[Series, ...], str]:
    prometheus, pack = sources.prometheus, sources.pack
    assert prometheus is not None
    # actions-runner-controller does not measure the longest current wait: the waits of the
    # jobs that started lately stand in, and the panel says so.
    wait, heading = next(
        (
            (signal, heading)
            for signal, heading in (
                (Signal.MAX_WAIT, "Longest wait (minutes)"),
                (Signal.QUEUE_TIME_P90, "Wait of jobs started, p90 (minutes)"),
                (Signal.QUEUE_TIME_MEAN, "Wait of jobs started, mean (minutes)"),
            )
            if pack.measures(signal)
        ),
        (None, ""),
    )
    queued, waits = await asyncio.gather(
        prometheus.range(pack.query(Signal.QUEUED), start, end, CHART_STEP),
        prometheus.range(pack.query(wait), start, end, CHART_STEP) if wait else _nothing(),
    )

    def series(found: list[RangeSeries], scale: float) -> tuple[Series, ...]:
        by_name = {s.labels.get("name"): s for s in found if s.labels.get("name") in names}
        return tuple(
            Series(
                runner_type=name,
                points=tuple(
                    (when, value / scale if math.isfinite(value) else math.nan)
                    for when, value in by_name[name].points
                ),
            )
            for name in names
            if name in by_name
        )

    return series(queued, 1.0), series(waits, 60.0), heading


async def _nothing() -> list[RangeSeries]:
    return []
