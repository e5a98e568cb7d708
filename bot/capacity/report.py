"""Composing a capacity report from whichever sources are configured.

GitHub's job events give the queue times, the runner-hours and who used them, and the sizes that
would have kept the p95 queue time under the target (`bot.capacity.advice`); Prometheus adds the
autoscaler's maximum, the hours at it, utilisation and failed runners; GitHub's runners list adds
the runners offline now. A source that is not configured, or does not answer, is named in the
report's notes and its columns are left out, never guessed.

A report of some organizations (`capacity_report.orgs`, a weekly post's `orgs`, `/queue-status
org NAME report`) counts their repositories' jobs and their runners lists only; Prometheus's
figures, which tell runner types apart but not organizations, are kept for the runner types
those have, and the notes say so.

The arithmetic (a week of a busy fleet is a few hundred thousand jobs, replayed many times over
for the sizes) runs in a worker process that reads the jobs itself (`bot.capacity.composing`),
so the bot keeps answering meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from dataclasses import dataclass

from bot.capacity.composing import Inputs, composed, composed_from
from bot.capacity.fleet_metrics import TypeMetrics, fleet_metrics
from bot.capacity.settings import CapacitySettings
from bot.domain.capacity import CapacityReport
from bot.domain.clock import SYSTEM, Clock
from bot.fleet.reading import FleetSources
from bot.fleet.sources.github_http import GitHubError
from bot.fleet.sources.orgs import org_jobs, runners_of
from bot.fleet.sources.prometheus import PrometheusError
from bot.fleet.sources.runner_supply import RunnersSource, merged, supply_by_type

log = logging.getLogger(__name__)

#: A report composed this recently is answered again (Share in channel, a second asker).
REUSE_SECONDS = 300.0


@dataclass(frozen=True)
class ComposedReport:
    report: CapacityReport
    #: PNG of the busiest types, or None (no job events, or nothing to draw).
    chart: bytes | None


class CapacityReporter:
    def __init__(
        self,
        sources: FleetSources,
        settings: CapacitySettings,
        *,
        clock: Clock = SYSTEM,
        apart: tuple[Executor, str] | None = None,
    ) -> None:
        """`apart`: a worker process (its executor) and the store's QUEUEBOT_DATABASE, to
        compose in (`bot.capacity.composing`); without it, reports are composed in a thread."""
        self._sources = sources
        self._apart = apart
        self._settings = settings
        self._clock = clock
        self._recent: dict[tuple[int, tuple[str, ...]], ComposedReport] = {}
        self._composing = asyncio.Lock()

    @property
    def settings(self) -> CapacitySettings:
        return self._settings

    async def compose(
        self, days: int | None = None, *, orgs: tuple[str, ...] | None = None
    ) -> ComposedReport:
        """The report of the last `days` (the settings' window by default), to now, of `orgs`
        (the settings' by default; none: every organization): one composed within
        `REUSE_SECONDS` is answered again, and one asker at a time composes (a week's replay
        is seconds of work; two at once would only take twice as long)."""
        days = days or self._settings.days
        orgs = self._settings.orgs if orgs is None else orgs
        async with self._composing:
            recent = self._recent.get((days, orgs))
            now = self._clock.now().timestamp()
            if recent is not None and 0 <= now - recent.report.until < REUSE_SECONDS:
                return recent
            composed = await self._compose(days, orgs)
            self._recent[(days, orgs)] = composed
            return composed

    async def _compose(self, days: int, orgs: tuple[str, ...]) -> ComposedReport:
        until = self._clock.now().timestamp()
        since = until - days * 86400.0
        notes: list[str] = []
        if orgs:
            notes.append(
                f"Organization{'s' if len(orgs) > 1 else ''} {', '.join(orgs)} only: their"
                " repositories' jobs and their runners. Prometheus's figures are per runner"
                " type, whichever organizations share it."
            )
        store = self._sources.store
        if store is None:
            notes.append(
                "No GitHub job events (GITHUB_WEBHOOK_SECRET is not set): no queue times,"
                " usage or recommended sizes."
            )
        else:
            first = await store.first_job_created()
            if first is not None and first > since + 3600.0:
                reach = (until - first) / 86400.0
                notes.append(
                    f"Job events reach back {reach:.1f} days only: the rest is not counted."
                )
        inputs = Inputs(
            since=since,
            until=until,
            target_seconds=self._settings.target_p95_minutes * 60.0,
            settings=self._settings,
            jobs=org_jobs(self._sources.jobs, orgs) if orgs else self._sources.jobs,
            metrics=await self._metrics(since, until, notes),
            offline=await self._offline(notes, orgs),
            of_orgs=bool(orgs),
        )
        if store is None:
            done = await asyncio.to_thread(composed, [], inputs)
        elif self._apart is not None and self._apart[1] != ":memory:":
            executor, database = self._apart
            loop = asyncio.get_running_loop()
            done = await loop.run_in_executor(executor, composed_from, database, inputs)
        else:
            spans = await store.job_spans(since, until)
            done = await asyncio.to_thread(composed, spans, inputs)
        report = CapacityReport(
            since=since,
            until=until,
            target_p95_seconds=inputs.target_seconds,
            types=done.types,
            more_types=done.more_types,
            notes=tuple(notes),
        )
        return ComposedReport(report, done.chart)

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

    async def _offline(self, notes: list[str], orgs: tuple[str, ...]) -> dict[str, int]:
        """Each runner type's runners offline now (every type the lists have, 0 or more)."""
        lists: list[RunnersSource | None] = [self._sources.runners]
        if orgs:
            lists = [runners_of(self._sources.runners, org) for org in orgs]
        answers, failed = [], []
        for runners in lists:
            if runners is None:
                continue
            try:
                answers.append(await runners.fleet())
            except GitHubError as exc:
                log.warning("capacity report without the runners list: %s", exc)
                failed.append(str(exc))
        if answers:
            fleet = merged(answers, "capacity")
            failed += fleet.failed
        if failed:
            notes.append(
                f"GitHub's runners list did not answer ({'; '.join(failed)}): offline runners"
                " left out" + (" of those." if answers else ".")
            )
        if not answers:
            return {}
        return {key: supply.offline for key, supply in supply_by_type(fleet.runners).items()}
