"""What Prometheus adds to a capacity report, where it is configured: the autoscaler's maximum
and the hours spent at it, utilisation (busy ÷ registered runners) and the most ephemeral
runners failed at once, per runner type, over the report's window.

Read with the diagnostics' query pack (so a fleet's own metrics, mapped in the YAML file, serve
here too) as range queries every `STEP`. A type with no maximum (ARC reports 2147483647, which
the pack leaves out) has none here either. Hours at the maximum are steps at which the runners
the autoscaler wants (or, without that gauge, those registered) had reached it.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.fleet.measures import Signal
from bot.fleet.sources.prometheus import PrometheusClient, RangeSeries
from bot.fleet.sources.querypack import QueryPack

#: Prometheus answers at most 11,000 points a series; a week every 5 minutes is 2,016.
STEP = timedelta(minutes=5)
_READ = (Signal.MAX_RUNNERS, Signal.DESIRED, Signal.REGISTERED, Signal.BUSY, Signal.FAILED_RUNNERS)


@dataclass(frozen=True)
class TypeMetrics:
    max_runners: int | None = None
    hours_at_max: float | None = None
    utilisation: float | None = None
    failed_runners: int | None = None


def _by_type(found: list[RangeSeries]) -> dict[str, dict[float, float]]:
    """Each runner type's finite values by Unix second."""
    return {
        series.labels["name"]: {
            when.timestamp(): value for when, value in series.points if math.isfinite(value)
        }
        for series in found
        if series.labels.get("name")
    }


def _of_type(read: dict[Signal, dict[str, dict[float, float]]], name: str) -> TypeMetrics:
    def values(signal: Signal) -> dict[float, float]:
        return read.get(signal, {}).get(name, {})

    maxima, busy, registered = (
        values(Signal.MAX_RUNNERS),
        values(Signal.BUSY),
        values(Signal.REGISTERED),
    )
    wanted = values(Signal.DESIRED) or registered
    maximum = int(maxima[max(maxima)]) if maxima else None
    at_max = None
    if maxima and wanted:
        steps = sum(1 for t, value in wanted.items() if t in maxima and value >= maxima[t] > 0)
        at_max = steps * STEP.total_seconds() / 3600.0
    both = [t for t in busy if registered.get(t, 0.0) > 0]
    utilisation = (
        sum(min(busy[t], registered[t]) for t in both) / sum(registered[t] for t in both)
        if both
        else None
    )
    failed = values(Signal.FAILED_RUNNERS)
    return TypeMetrics(
        max_runners=maximum,
        hours_at_max=at_max,
        utilisation=utilisation,
        failed_runners=int(max(failed.values())) if failed else None,
    )


async def fleet_metrics(
    prometheus: PrometheusClient, pack: QueryPack, since: float, until: float
) -> dict[str, TypeMetrics]:
    """Every runner type Prometheus knows, with what it says of the window [since, until)."""
    signals = [signal for signal in _READ if pack.measures(signal)]
    start, end = datetime.fromtimestamp(since, UTC), datetime.fromtimestamp(until, UTC)
    answers = await asyncio.gather(
        *(prometheus.range(pack.query(signal), start, end, STEP) for signal in signals)
    )
    read = {signal: _by_type(found) for signal, found in zip(signals, answers, strict=True)}
    names = sorted({name for by_type in read.values() for name in by_type})
    return {name: _of_type(read, name) for name in names}
