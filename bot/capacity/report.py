"""Composing a capacity report from whichever sources are configured.

GitHub's job events give the queue times, the runner-hours and who used them, and the sizes that
would have kept the p95 queue time under the target (`bot.capacity.advice`); Prometheus adds the
autoscaler's maximum, the hours at it, utilisation and failed runners; GitHub's runners list adds
the runners offline now. A source that is not configured, or does not answer, is named in the
report's notes and its columns are left out, never guessed.

The arithmetic (a week of a busy fleet is a few hundred thousand jobs, replayed many times over
for the sizes) runs in a worker thread, so the bot keeps answering meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from bot.capacity.advice import advise
from bot.capacity.chart import capacity_chart
from bot.capacity.fleet_metrics import TypeMetrics, fleet_metrics
from bot.capacity.measures import TypeMeasures, measure
from bot.capacity.replay import percentile
from bot.capacity.settings import CapacitySettings
from bot.diagnostics.chart import render_chart
from bot.diagnostics.fleet import FleetSources
from bot.diagnostics.sources.github_runners import GitHubError
from bot.diagnostics.sources.prometheus import PrometheusError
from bot.diagnostics.sources.runner_supply import supply_by_type
from bot.domain.capacity import CHART_TYPES, CapacityReport, TypeCapacity
from bot.domain.clock import Clock, utcnow

log = logging.getLogger(__name__)

#: Runner types shown in one report, busiest first (Slack's 50 blocks a message, and people).
MAX_TYPES = 10
#: A report composed this recently is answered again (Share in channel, a second asker).
REUSE_SECONDS = 300.0


@dataclass(frozen=True)
class ComposedReport:
    report: CapacityReport
    #: PNG of the busiest types, or None (no job events, or nothing to draw).
    chart: bytes | None


class CapacityReporter:
    def __init__(
        self, sources: FleetSources, settings: CapacitySettings, *, clock: Clock = utcnow
    ) -> None:
        self._sources = sources
        self._settings = settings
        self._clock = clock
        self._recent: dict[int, ComposedReport] = {}
        self._composing = asyncio.Lock()

    @property
    def settings(self) -> CapacitySettings:
        return self._settings

    async def compose(self, days: int | None = None) -> ComposedReport:
        """The report of the last `days` (the settings' window by default), to now: one
        composed within `REUSE_SECONDS` is answered again, and one asker at a time composes
        (a week's replay is seconds of work; two at once would only take twice as long)."""
        days = days or self._settings.days
        async with self._composing:
            recent = self._recent.get(days)
            now = self._clock().timestamp()
            if recent is not None and 0 <= now - recent.report.until < REUSE_SECONDS:
                return recent
            composed = await self._compose(days)
            self._recent[days] = composed
            return composed

    async def _compose(self, days: int) -> ComposedReport:
        until = self._clock().timestamp()
        since = until - days * 86400.0
        target = self._settings.target_p95_minutes * 60.0
        notes: list[str] = []
        measures = await self._measures(since, until, notes)
        metrics = await self._metrics(since, until, notes)
        offline = await self._offline(notes)
        names = sorted(
            set(measures) | {n for n in metrics if self._counts(n)},
            key=lambda n: (-(measures[n].busy_seconds if n in measures else 0.0), n),
        )
        shown = names[:MAX_TYPES]
        types = await asyncio.to_thread(
            self._types, shown, measures, metrics, offline, since, until, target
        )
        report = CapacityReport(
            since=since,
            until=until,
            target_p95_seconds=target,
            types=types,
            more_types=len(names) - len(shown),
            notes=tuple(notes),
        )
        busiest = [measures[n] for n in shown if n in measures][:CHART_TYPES]
        chart = None
        if busiest:
            # Both walk every job of the busiest types: off the event loop.
            data = await asyncio.to_thread(capacity_chart, busiest, since, until, target)
            chart = await asyncio.to_thread(render_chart, data)
        return ComposedReport(report, chart)

    def _counts(self, runner_type: str) -> bool:
        return not self._sources.jobs.leaves_out(runner_type) and self._settings.reports(
            runner_type
        )

    async def _measures(
        self, since: float, until: float, notes: list[str]
    ) -> dict[str, TypeMeasures]:
        store, jobs = self._sources.store, self._sources.jobs
        if store is None:
            notes.append(
                "No GitHub job events (GITHUB_WEBHOOK_SECRET is not set): no queue times,"
                " usage or recommended sizes."
            )
            return {}
        read = await store.job_spans(since, until)
        first = await store.first_job_created()
        if first is not None and first > since + 3600.0:
            days = (until - first) / 86400.0
            notes.append(f"Job events reach back {days:.1f} days only: the rest is not counted.")

        def counted() -> dict[str, TypeMeasures]:
            # Weeks of jobs are sorted out in a worker thread, not on the event loop.
            spans = [
                span
                for span in read
                if jobs.counts(span.runner_type, span.repository) and self._counts(span.runner_type)
            ]
            return measure(spans, since, until)

        return await asyncio.to_thread(counted)

    async def _metrics(
        self, since: float, until: float, notes: list[str]
    ) -> dict[str, TypeMetrics]:
        prometheus = self._sources.prometheus
        if prometheus is None:
            notes.append(
                "No Prometheus: the autoscaler's maximum, hours at it and utilisation are not"
                " known."
            )
            return {}
        try:
            return await fleet_metrics(prometheus, self._sources.pack, since, until)
        except PrometheusError as exc:
            log.warning("capacity report without Prometheus: %s", exc)
            notes.append(f"Prometheus did not answer ({exc}): maximum and utilisation left out.")
            return {}

    async def _offline(self, notes: list[str]) -> dict[str, int]:
        runners = self._sources.runners
        if runners is None:
            return {}
        try:
            fleet = await runners.fleet()
        except GitHubError as exc:
            log.warning("capacity report without the runners list: %s", exc)
            notes.append(f"GitHub's runners list did not answer ({exc}): offline runners left out.")
            return {}
        return {key: supply.offline for key, supply in supply_by_type(fleet.runners).items()}

    def _types(
        self,
        names: list[str],
        measures: dict[str, TypeMeasures],
        metrics: dict[str, TypeMetrics],
        offline: dict[str, int],
        since: float,
        until: float,
        target: float,
    ) -> tuple[TypeCapacity, ...]:
        types = []
        for name in names:
            m, fleet = measures.get(name), metrics.get(name, TypeMetrics())
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
                    offline_runners=offline.get(name.casefold()) if offline else None,
                    failed_runners=fleet.failed_runners,
                    workflows=m.workflows() if m is not None else (),
                    recommended=recommended,
                    current=current,
                )
            )
        return tuple(types)
