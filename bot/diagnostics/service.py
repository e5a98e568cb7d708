"""Running diagnostics for an incident: read the fleet, judge it, and tell the thread.

"Run diagnostics" (or an incident opening, with `auto_diagnose`) posts "Running diagnostics…"
in the incident's thread, edits that reply into the report, and shares a chart of the queueing
runner types, all through the outbox (`bot.delivery.owed`), so each reaches the thread once and
in order. A run is recorded with its notice, in one commit, and finished with the report, in
another: a run cut short (the bot died while reading the fleet) is found by `resume` and done
again, so a notice never stays "running". One run per incident at a time, on any replica: a
store claim, renewed while the run lasts, guards it, and a second click is told a run is under
way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from enum import StrEnum

from bot.delivery import owed
from bot.delivery.owed import OwedFile
from bot.diagnostics.checks import diagnose
from bot.domain.clock import SYSTEM, Clock
from bot.domain.diagnosis import Report
from bot.domain.incidents import Incident, IncidentStatus
from bot.domain.timings import Timings
from bot.fleet.charting import CHART_TITLE, MAX_CHARTED, ChartUnavailable, queue_chart
from bot.fleet.reading import FleetSources, FleetUnreadable, read_fleet
from bot.render.mrkdwn import clip, escape_mrkdwn, oneline
from bot.render.renderer import Renderer
from bot.slack.message import Message
from bot.store import Store
from bot.telemetry.metrics import Metrics

log = logging.getLogger(__name__)

DIAGNOSING = "diagnosis"
#: A whole run's reading of the fleet, every source together.
DIAGNOSIS_READ_TIMEOUT_SECONDS = 30.0
RUNNING = ":hourglass_flowing_sand: Running diagnostics…"

DIAGNOSTICS_OFF = (
    ":information_source: Diagnostics need a source of fleet data: GitHub's job events (set"
    " `GITHUB_WEBHOOK_SECRET` and point an organization webhook for *Workflow jobs* at"
    " `/webhooks/github`), GitHub's runners list (`GITHUB_TOKEN` with `GITHUB_ORG`), or"
    " Prometheus (`PROMETHEUS_URL`, or `GRAFANA_PROMETHEUS_DATASOURCE_UID` with `GRAFANA_URL`"
    " and `GRAFANA_TOKEN`). docs/diagnostics.md says what each gives."
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
        sources: FleetSources,
        renderer: Renderer,
        metrics: Metrics,
        *,
        on_enqueued: Callable[[], None] = lambda: None,
        clock: Clock = SYSTEM,
        claim_seconds: float = Timings().diagnosis_claim,
    ) -> None:
        self._store = store
        #: A run's claim on its incident, renewed every third of it while the run lasts: a run
        #: whose bot died is taken over this soon.
        self._claim = claim_seconds
        self._sources = sources
        self._on_enqueued = on_enqueued
        self._renderer = renderer
        self._metrics = metrics
        self._clock = clock
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def configured(self) -> bool:
        return self._sources.configured

    async def report(self, at: datetime | None = None) -> Report:
        """Diagnostics at `at` (default now); FleetUnreadable when nothing can be read."""
        if not self._sources.configured:
            raise FleetUnreadable("no source of fleet data is configured")
        when = at or self._clock.now()
        try:
            async with asyncio.timeout(DIAGNOSIS_READ_TIMEOUT_SECONDS):
                fleet = await read_fleet(self._sources, when)
        except TimeoutError:
            raise FleetUnreadable(
                f"the fleet's sources did not answer within {DIAGNOSIS_READ_TIMEOUT_SECONDS:g}s"
            ) from None
        return diagnose(fleet)

    async def chart(self, report: Report, fired_at: datetime | None = None) -> bytes | None:
        """A PNG of queued jobs and longest wait for the queueing runner types, or None."""
        if not report.affected:
            return None
        names = [t.name for t in report.affected[:MAX_CHARTED]]
        return await queue_chart(self._sources, names, report.at, marker=fired_at)

    async def run(self, incident_id: int) -> Outcome:
        """Diagnose for the incident's thread: running notice, report, chart."""
        if not self._sources.configured:
            return Outcome.NOT_CONFIGURED
        incident = await self._store.get_incident(incident_id)
        if incident is None or not (incident.channel_id and incident.parent_ts):
            return Outcome.NO_THREAD
        async with self._holding(incident_id) as held:
            if not held:
                return Outcome.ALREADY_RUNNING
            async with self._store.transaction() as tx:
                note = await owed.note(tx, incident.id, self._renderer.notice(RUNNING))
                diagnosis = await tx.add_diagnosis(incident.id, note)
            self._on_enqueued()
            await self._finish(incident, diagnosis, note)
        return Outcome.DONE

    async def resume(self) -> None:
        """Finish the runs whose bot died before their report was owed (their claim lapsed)."""
        if not self._sources.configured:
            return
        for unfinished in await self._store.unfinished_diagnoses():
            incident = await self._store.get_incident(unfinished.incident_id)
            if incident is None:
                continue
            async with self._holding(incident.id) as held:
                # Held now, and still unfinished: its own run has stopped for good.
                if held and await self._store.diagnosis_unfinished(unfinished.id):
                    log.info("finishing diagnostics cut short (incident=%s)", incident.id)
                    await self._finish(incident, unfinished.id, unfinished.note_id)

    async def watch(self, interval: float) -> None:
        """`resume` now and every `interval` seconds until cancelled; a failure never stops it."""
        while True:
            try:
                await self.resume()
            except Exception:
                log.exception("resuming diagnostics failed; trying again in %.0fs", interval)
            await asyncio.sleep(interval)

    async def _finish(self, incident: Incident, diagnosis: int, note: int) -> None:
        started = self._clock.monotonic()
        try:
            message, upload = await self._findings(incident)
            async with self._store.transaction() as tx:
                # The notice becomes the report and the chart follows, in one commit with the
                # run's end: a bot that dies after it delivers both, one that dies before it
                # leaves the run for `resume`.
                await owed.note_edit(tx, incident.id, note, message)
                if upload is not None:
                    await owed.file(tx, incident.id, upload)
                await tx.finish_diagnosis(diagnosis)
            self._on_enqueued()
        finally:
            took = self._clock.monotonic() - started
            self._metrics.inc("queuebot_diagnostics_runs_total")
            self._metrics.observe("queuebot_diagnostics_duration_seconds", took)
            log.info("diagnostics ran in %.2fs (incident=%s)", took, incident.id)

    async def _findings(self, incident: Incident) -> tuple[Message, OwedFile | None]:
        """The report (or why there is none) and the chart to share after it."""
        try:
            report = await self.report()
        except FleetUnreadable as exc:
            log.warning("diagnostics failed: %s (incident=%s)", exc, incident.id)
            text = (
                ":warning: *Diagnostics could not read the fleet:* "
                f"{clip(escape_mrkdwn(oneline(str(exc))), 600)}. Try again in a minute."
            )
            return self._renderer.notice(text), None
        message = self._renderer.diagnostics(report)
        try:
            png = await self.chart(report, incident.group.started_at)
        except ChartUnavailable as exc:
            log.warning("no chart: %s (incident=%s)", exc, incident.id)
            return message, None
        if png is None:
            return message, None
        names = ", ".join(t.name for t in report.affected[:MAX_CHARTED])
        upload = OwedFile.of(
            png,
            filename="queue.png",
            title=CHART_TITLE,
            alt_text=f"Queued jobs and longest wait over the last 6 hours for {names}",
        )
        return message, upload

    @contextlib.asynccontextmanager
    async def _holding(self, incident_id: int) -> AsyncIterator[bool]:
        """The incident's diagnostics claim, renewed while held; False when another holds it."""
        owner = uuid.uuid4().hex
        if not await self._store.claim(
            incident_id, DIAGNOSING, owner, self._clock.time() + self._claim
        ):
            yield False
            return
        renewing = asyncio.create_task(self._renew(incident_id, owner))
        try:
            yield True
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
            await self._store.release(incident_id, DIAGNOSING, owner)

    async def _renew(self, incident_id: int, owner: str) -> None:
        while True:
            await asyncio.sleep(self._claim / 3)
            until = self._clock.time() + self._claim
            if not await self._store.renew(incident_id, DIAGNOSING, owner, until):
                log.warning("diagnostics claim lost (incident=%s)", incident_id)
                return

    def schedule(self, incident: Incident) -> None:
        """Diagnose a newly opened incident in the background (auto_diagnose)."""
        if not self._sources.configured or incident.status is not IncidentStatus.FIRING:
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
