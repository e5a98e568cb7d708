"""Running diagnostics for an incident: read the fleet, judge it, and tell the thread.

"Run diagnostics" (or an incident opening, with `auto_diagnose`) posts "Running diagnostics…"
in the incident's thread, edits that reply into the report, and uploads a chart of the queueing
runner types. One run per incident at a time, on any replica: a store claim guards it, and a
second click is told a run is under way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import uuid
from datetime import datetime, timedelta
from enum import StrEnum

from bot.diagnostics.chart import ChartData, Series, render_chart
from bot.diagnostics.checks import diagnose
from bot.diagnostics.signals import FleetSignals, collect
from bot.diagnostics.sources.prometheus import PrometheusClient, PrometheusError, RangeSeries
from bot.diagnostics.sources.querypack import QueryPack, Signal
from bot.domain.clock import Clock, utcnow
from bot.domain.diagnosis import Report
from bot.domain.incidents import Incident, IncidentStatus
from bot.render.mrkdwn import escape_mrkdwn, oneline
from bot.render.renderer import Renderer
from bot.slack.errors import SlackError
from bot.slack.gateway import SlackGateway
from bot.slack.message import Message
from bot.store import Store
from bot.telemetry.metrics import Metrics

log = logging.getLogger(__name__)

DIAGNOSING = "diagnosis"
#: Longer than a run can take; a crashed run's claim lapses after it.
DIAGNOSIS_CLAIM_SECONDS = 120.0
#: A whole run's reading of Prometheus, all queries together.
DIAGNOSIS_READ_TIMEOUT_SECONDS = 30.0
CHART_SPAN = timedelta(hours=6)
CHART_STEP = timedelta(minutes=2)
MAX_CHARTED = 8
CHART_TITLE = "Jobs queueing by runner type, last 6 h"

DIAGNOSTICS_OFF = (
    ":information_source: Diagnostics need a metrics source: set `PROMETHEUS_URL` (the"
    " Prometheus HTTP API), or `GRAFANA_PROMETHEUS_DATASOURCE_UID` with `GRAFANA_URL` and"
    " `GRAFANA_TOKEN` to query Prometheus through Grafana. The README's “Diagnostics” section"
    " lists the metrics queuebot reads."
)


def no_fleet(fleet: FleetSignals, where: str) -> str:
    """Why no runner type was found: a failing query, or metrics that are not there."""
    if Signal.QUEUED in fleet.missing:
        return fleet.missing[Signal.QUEUED]
    return (
        f"Prometheus at {where} has no runner types: none of the query pack's queued, running,"
        " registered or desired queries returned a series (are actions-runner-controller's"
        " gha_* metrics scraped, or does the YAML file's `queries:` map yours?)"
    )


class Outcome(StrEnum):
    DONE = "done"
    ALREADY_RUNNING = "already_running"
    NO_THREAD = "no_thread"
    NOT_CONFIGURED = "not_configured"


class Diagnoser:
    def __init__(
        self,
        store: Store,
        prometheus: PrometheusClient | None,
        pack: QueryPack,
        slack: SlackGateway,
        renderer: Renderer,
        metrics: Metrics,
        *,
        clock: Clock = utcnow,
    ) -> None:
        self._store = store
        self._prometheus = prometheus
        self._pack = pack
        self._slack = slack
        self._renderer = renderer
        self._metrics = metrics
        self._clock = clock
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def configured(self) -> bool:
        return self._prometheus is not None

    async def report(self, at: datetime | None = None) -> Report:
        """Diagnostics at `at` (default now); raises PrometheusError when nothing can be read."""
        if self._prometheus is None:
            raise PrometheusError("no metrics source is configured")
        when = at or self._clock()
        try:
            async with asyncio.timeout(DIAGNOSIS_READ_TIMEOUT_SECONDS):
                fleet = await collect(self._prometheus, self._pack, when)
        except TimeoutError:
            raise PrometheusError(
                f"Prometheus at {self._prometheus.where} did not answer within"
                f" {DIAGNOSIS_READ_TIMEOUT_SECONDS:g}s"
            ) from None
        if not fleet.runner_types():
            raise PrometheusError(no_fleet(fleet, self._prometheus.where))
        return diagnose(fleet)

    async def chart(self, report: Report, fired_at: datetime | None = None) -> bytes | None:
        """A PNG of queued jobs and longest wait for the queueing runner types, or None."""
        if self._prometheus is None or not report.affected:
            return None
        names = [t.name for t in report.affected[:MAX_CHARTED]]
        return await queue_chart(self._prometheus, self._pack, names, report.at, marker=fired_at)

    async def run(self, incident_id: int) -> Outcome:
        """Diagnose for the incident's thread: running note, report, chart."""
        if self._prometheus is None:
            return Outcome.NOT_CONFIGURED
        incident = await self._store.get_incident(incident_id)
        if incident is None or not (incident.channel_id and incident.parent_ts):
            return Outcome.NO_THREAD
        owner = uuid.uuid4().hex
        if not await self._store.claim(
            incident_id, DIAGNOSING, owner, time.time() + DIAGNOSIS_CLAIM_SECONDS
        ):
            return Outcome.ALREADY_RUNNING
        started = time.monotonic()
        try:
            await self._run(incident)
        finally:
            await self._store.release(incident_id, DIAGNOSING, owner)
            took = time.monotonic() - started
            self._metrics.inc("queuebot_diagnostics_runs_total")
            self._metrics.observe("queuebot_diagnostics_duration_seconds", took)
            log.info("diagnostics ran in %.2fs (incident=%s)", took, incident_id)
        return Outcome.DONE

    async def _run(self, incident: Incident) -> None:
        assert incident.channel_id and incident.parent_ts
        channel, thread = incident.channel_id, incident.parent_ts
        try:
            running = await self._slack.post_message(
                channel,
                self._renderer.notice(":hourglass_flowing_sand: Running diagnostics…"),
                thread_ts=thread,
            )
        except SlackError as exc:
            log.warning("cannot post in incident %s's thread: %s", incident.id, exc)
            return
        try:
            report = await self.report()
            message = self._renderer.diagnostics(report)
        except PrometheusError as exc:
            log.warning("diagnostics failed: %s (incident=%s)", exc, incident.id)
            text = (
                ":warning: *Diagnostics could not read the fleet's metrics:* "
                f"{escape_mrkdwn(oneline(exc.detail))[:300]}. Try again in a minute."
            )
            await self._edit(incident, running.ts, self._renderer.notice(text))
            return
        await self._edit(incident, running.ts, message)
        try:
            png = await self.chart(report, incident.group.started_at)
        except PrometheusError as exc:
            log.warning("no chart: %s (incident=%s)", exc, incident.id)
            return
        if png is None:
            return
        names = ", ".join(t.name for t in report.affected[:MAX_CHARTED])
        try:
            await self._slack.upload_file(
                channel,
                png,
                filename="queue.png",
                title=CHART_TITLE,
                alt_text=f"Queued jobs and longest wait over the last 6 hours for {names}",
                thread_ts=thread,
            )
        except SlackError as exc:
            log.warning("chart not uploaded: %s (incident=%s)", exc, incident.id)

    async def _edit(self, incident: Incident, ts: str, message: Message) -> None:
        assert incident.channel_id
        try:
            await self._slack.update_message(incident.channel_id, ts, message)
        except SlackError as exc:
            log.warning("cannot edit the diagnostics reply: %s (incident=%s)", exc, incident.id)

    def schedule(self, incident: Incident) -> None:
        """Diagnose a newly opened incident in the background (auto_diagnose)."""
        if self._prometheus is None or incident.status is not IncidentStatus.FIRING:
            return
        task = asyncio.create_task(self._auto(incident.id), name=f"diagnose-{incident.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _auto(self, incident_id: int) -> None:
        try:
            await self.run(incident_id)
        except Exception:
            # A background task's one catch-all: nobody awaits it, so it must log.
            log.exception("automatic diagnostics failed (incident=%s)", incident_id)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task


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
