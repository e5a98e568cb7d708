"""The queue over the last hours, as a chart: the runner types' history read from Prometheus
and drawn by `bot.diagnostics.chart`. Diagnostics share it in the incident's thread;
/queue-status shows it for the runner types asked about.
"""

from __future__ import annotations

import asyncio
import math
from datetime import datetime, timedelta

from bot.diagnostics.chart import ChartData, Series, render_chart
from bot.diagnostics.sources.prometheus import PrometheusClient, RangeSeries
from bot.diagnostics.sources.querypack import QueryPack, Signal

CHART_SPAN = timedelta(hours=6)
CHART_STEP = timedelta(minutes=2)
MAX_CHARTED = 8
CHART_TITLE = "Jobs queueing by runner type, last 6 h"


async def queue_chart(
    prometheus: PrometheusClient,
    pack: QueryPack,
    names: list[str],
    end: datetime,
    *,
    marker: datetime | None = None,
) -> bytes | None:
    """A PNG of queued jobs and longest wait over the 6 hours before `end` for the runner
    types `names` (in that order), or None when Prometheus has no series for any of them.
    `marker`, when within the span, is drawn as the alert's firing time."""
    start = end - CHART_SPAN
    queued, waits = await asyncio.gather(
        prometheus.range(pack.query(Signal.QUEUED), start, end, CHART_STEP),
        prometheus.range(pack.query(Signal.MAX_WAIT), start, end, CHART_STEP),
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

    data = ChartData(
        title=CHART_TITLE,
        queued=series(queued, 1.0),
        wait_minutes=series(waits, 60.0),
        start=start,
        end=end,
        marker=marker if marker and start <= marker <= end else None,
        marker_label="alert",
    )
    if not data.queued and not data.wait_minutes:
        return None
    return await asyncio.to_thread(render_chart, data)
