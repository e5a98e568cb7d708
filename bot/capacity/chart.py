"""The capacity report's chart: for the busiest runner types, hour by hour over the window, the
runners busy (on average within the hour) above and the p95 queue time of the jobs queued in
that hour below, with the target marked in the panel's heading. Drawn by the diagnostics' chart
(`bot.fleet.chart`), so it reads like the alert's own."""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, datetime

from bot.capacity.measures import TypeMeasures
from bot.capacity.replay import percentile
from bot.domain.capacity import CHART_TYPES
from bot.fleet.chart import ChartData, Series

_HOUR = 3600.0


def _hourly_busy(measures: TypeMeasures, since: float, hours: int) -> list[float]:
    busy = [0.0] * hours
    for _, started, completed in measures.jobs:
        if started is None:
            continue
        end = completed if completed is not None else since + hours * _HOUR
        first = max(0, int((started - since) // _HOUR))
        for index in range(first, min(hours, int((end - since) // _HOUR) + 1)):
            low = max(started, since + index * _HOUR)
            high = min(end, since + (index + 1) * _HOUR)
            busy[index] += max(0.0, high - low) / _HOUR
    return busy


def _hourly_p95(measures: TypeMeasures, since: float, hours: int) -> list[float]:
    waits: dict[int, list[float]] = defaultdict(list)
    for (created, _, _), wait in zip(measures.jobs, measures.waits, strict=True):
        index = int((created - since) // _HOUR)
        if 0 <= index < hours:
            waits[index].append(wait)
    return [percentile(waits[i], 0.95) / 60.0 if waits[i] else math.nan for i in range(hours)]


def capacity_chart(
    busiest: list[TypeMeasures], since: float, until: float, target_seconds: float
) -> ChartData:
    """The chart of `busiest` (drawn in that order) over [since, until)."""
    hours = max(1, math.ceil((until - since) / _HOUR))

    def moment(index: int) -> datetime:
        return datetime.fromtimestamp(since + (index + 0.5) * _HOUR, UTC)

    drawn = busiest[:CHART_TYPES]
    busy = tuple(
        Series(
            m.runner_type,
            tuple((moment(i), v) for i, v in enumerate(_hourly_busy(m, since, hours))),
        )
        for m in drawn
    )
    waits = tuple(
        Series(
            m.runner_type, tuple((moment(i), v) for i, v in enumerate(_hourly_p95(m, since, hours)))
        )
        for m in drawn
    )
    days = round((until - since) / 86400.0)
    return ChartData(
        title=f"Capacity, last {'day' if days == 1 else f'{days} days'}: the busiest runner types",
        queued=busy,
        wait_minutes=waits,
        start=datetime.fromtimestamp(since, UTC),
        end=datetime.fromtimestamp(until, UTC),
        wait_heading=f"Queue time p95 by hour (minutes; target {target_seconds / 60:.0f})",
        queued_heading="Runners busy (hourly mean)",
        queued_peak="busy",
    )
