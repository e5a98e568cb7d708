"""What `/queue-status` shows: the fleet's queue now, the open incidents and their silences.

The fleet is read from every configured source (GitHub's job events give each type's queue as
the alert counts it, with since when; Prometheus is asked a handful of its signals, not the
whole diagnostics set) within STATUS_READ_TIMEOUT_SECONDS; open incidents and silences come
from the store, with the links to their threads stored when those were posted. A part that
cannot be read is reported in one line and the others are still shown: the on-call asking "is
CI slow right now?" gets what queuebot has, never nothing. So does an organization whose runners
list cannot be had: the others' runners are shown, and that organization's are said missing.

Asked about one organization, the fleet is that organization's (`FleetSources.for_org`); the
incidents and silences are the channel's, as ever.
"""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import datetime

from bot.diagnostics.evidence import runner_state
from bot.domain.clock import SYSTEM, Clock
from bot.domain.diagnosis import RunnerTypeState
from bot.domain.incidents import Incident
from bot.domain.queue_status import (
    Compared,
    FleetView,
    OpenIncident,
    QueueStatus,
    TypeDetail,
)
from bot.fleet.charting import MAX_CHARTED, ChartUnavailable, queue_chart
from bot.fleet.measures import Signal
from bot.fleet.reading import PARTIAL_RUNNERS, FleetSources, FleetUnreadable, read_fleet
from bot.fleet.signals import FleetSignals
from bot.store import Store

log = logging.getLogger(__name__)

#: Sources slower than this are reported as slow, and the answer goes out without them.
STATUS_READ_TIMEOUT_SECONDS = 5.0
#: Open incidents listed; the rest are counted.
MAX_INCIDENTS = 10
#: The detail tells the jobs reconciliation corrected within this.
CORRECTIONS_SECONDS = 3600.0
#: Runner types shown in detail (and charted) for one `/queue-status <prefix>`.
MAX_DETAILED = MAX_CHARTED

SUMMARY_SIGNALS = (
    Signal.QUEUED,
    Signal.MAX_WAIT,
    Signal.BUSY,
    Signal.REGISTERED,
    Signal.IDLE,
    Signal.DESIRED,
    Signal.MAX_RUNNERS,
)
DETAIL_SIGNALS = (
    *SUMMARY_SIGNALS,
    Signal.RUNNING,
    Signal.STARTED_PER_MINUTE,
    Signal.DURATION_MEAN,
    Signal.DURATION_P50,
    Signal.DURATION_P90,
)
DETAIL_BASELINE = (
    Signal.MAX_WAIT,
    Signal.STARTED_PER_MINUTE,
    Signal.DURATION_MEAN,
    Signal.DURATION_P50,
    Signal.DURATION_P90,
)

#: What a runner type (or the start of one) may look like: `linux.g5.4xlarge.nvidia.gpu`.
RUNNER_TYPE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$")
_SEPARATORS = re.compile(r"[._-]")


def _key(name: str) -> str:
    return _SEPARATORS.sub("-", name.casefold())


def matching(names: list[str], query: str) -> list[str]:
    """Runner types named `query` or starting with it, the exact one first; if none does,
    those containing it (by name). Case does not matter, nor which of `.`, `-` and `_`
    separates the parts: `linux.g5` finds the scale set `linux-g5-4xlarge-nvidia-gpu`."""
    wanted = _key(query)
    exact = [n for n in names if _key(n) == wanted]
    starting = [n for n in names if _key(n).startswith(wanted) and n not in exact]
    if exact or starting:
        return exact + sorted(starting)
    return sorted(n for n in names if wanted in _key(n))


class StatusReader:
    def __init__(
        self,
        store: Store,
        sources: FleetSources,
        *,
        clock: Clock = SYSTEM,
        read_timeout: float = STATUS_READ_TIMEOUT_SECONDS,
    ) -> None:
        self._store = store
        self._sources = sources
        self._clock = clock
        self._read_timeout = read_timeout

    async def read(
        self, query: str | None = None, *, channel: str | None, org: str | None = None
    ) -> QueueStatus:
        """The summary (`query` None), or the runner types matching `query` in detail, of the
        whole fleet or of organization `org`; the open incidents and silences of `channel` (a
        Slack channel id), or of every channel when it is None (the fleet-wide view, for those
        allowed it)."""
        at = self._clock.now()
        signals = SUMMARY_SIGNALS if query is None else DETAIL_SIGNALS
        baseline = () if query is None else DETAIL_BASELINE
        sources = self._sources.for_org(org) if org else self._sources
        (fleet, signals_read), (incidents, total, silenced) = await asyncio.gather(
            self._fleet(sources, at, signals, baseline), self._incidents(at, channel)
        )
        if query is None:
            return QueueStatus(at, fleet, incidents, total, silenced, every_channel=channel is None)
        names = matching([t.name for t in fleet.types], query)
        exact = names[:1] if names and _key(names[0]) == _key(query) else []
        # The asked-for type first, then where jobs wait longest, like the summary.
        order = {t.name: i for i, t in enumerate(fleet.waiting)}
        names = exact + sorted(names[len(exact) :], key=lambda n: (order.get(n, len(order)), n))
        details = tuple(
            _detail(signals_read, runner_state(signals_read, name))
            for name in names[:MAX_DETAILED]
            if signals_read is not None
        )
        corrected = await self._store.corrections_since(at.timestamp() - CORRECTIONS_SECONDS)
        return QueueStatus(
            at,
            fleet,
            incidents,
            total,
            silenced,
            query=query,
            details=details,
            matched=len(names),
            every_channel=channel is None,
            corrected=sum(corrected.values()),
        )

    async def chart(self, status: QueueStatus, *, org: str | None = None) -> bytes | None:
        """The last 6 hours of the detailed runner types (of organization `org`'s jobs) as a
        PNG; None if there is nothing to draw. Raises ChartUnavailable when no source can give
        the history."""
        if not status.details:
            return None
        names = [d.state.name for d in status.details]
        sources = self._sources.for_org(org) if org else self._sources
        try:
            async with asyncio.timeout(self._read_timeout):
                return await queue_chart(sources, names, status.at)
        except TimeoutError:
            raise ChartUnavailable(self._too_slow()) from None

    def _too_slow(self) -> str:
        return f"the fleet's sources did not answer within {self._read_timeout:g}s"

    async def _fleet(
        self,
        sources: FleetSources,
        at: datetime,
        signals: tuple[Signal, ...],
        baseline: tuple[Signal, ...],
    ) -> tuple[FleetView, FleetSignals | None]:
        window = sources.pack.window
        if not sources.configured:
            return FleetView(configured=False, window=window), None
        try:
            async with asyncio.timeout(self._read_timeout):
                read = await read_fleet(
                    sources, at, signals=signals, with_baseline=baseline, with_earlier=()
                )
        except TimeoutError:
            log.warning("queue status: %s", self._too_slow())
            return FleetView(error=self._too_slow(), window=window), None
        except FleetUnreadable as exc:
            log.warning("queue status: %s", exc)
            return FleetView(error=str(exc), window=window), None
        types = tuple(runner_state(read, name) for name in read.runner_types())
        missing = tuple(signal.value for signal in read.missing) + _partial(read)
        return FleetView(types=types, window=window, missing=missing), read

    async def _incidents(
        self, at: datetime, channel: str | None
    ) -> tuple[tuple[OpenIncident, ...], int, tuple[OpenIncident, ...]]:
        latest, total = await self._store.firing_incidents(MAX_INCIDENTS, channel)
        silenced = sorted(
            (i for i in await self._store.silenced_incidents(channel) if i.silence),
            key=lambda i: i.silence.ends_at if i.silence else at,
        )
        silenced = [i for i in silenced if i.silence and i.silence.ends_at > at]
        wanted = {i.id: i for i in [*latest, *silenced]}
        links = await self._links(list(wanted.values()))
        return (
            tuple(OpenIncident(i, links.get(i.id)) for i in latest),
            total,
            tuple(OpenIncident(i, links.get(i.id)) for i in silenced),
        )

    async def _links(self, incidents: list[Incident]) -> dict[int, str]:
        """Links to the incidents' threads (or to the storm digest listing them), as stored
        when those messages were posted."""
        links: dict[int, str] = {}
        digests: dict[int, str | None] = {}
        for incident in incidents:
            link = incident.permalink
            if link is None and incident.digest_id is not None:
                if incident.digest_id not in digests:
                    digest = await self._store.get_digest(incident.digest_id)
                    digests[incident.digest_id] = digest.permalink if digest else None
                link = digests[incident.digest_id]
            if link is not None:
                links[incident.id] = link
        return links


def _partial(read: FleetSignals) -> tuple[str, ...]:
    """The organizations whose runners are not in the reading, as `missing` names them (why
    is logged)."""
    missing = []
    for problem in read.problems:
        if problem.startswith(PARTIAL_RUNNERS):
            log.warning("queue status: %s", problem)
            whose = problem.removeprefix(PARTIAL_RUNNERS).split(":", 1)[0]
            missing.append(f"the runners of {whose}")
    return tuple(missing)


def _detail(fleet: FleetSignals, state: RunnerTypeState) -> TypeDetail:
    name = state.name

    def compared(signal: Signal) -> Compared:
        return Compared(fleet.value(signal, name), fleet.base(signal, name))

    return TypeDetail(
        state=state,
        running=fleet.value(Signal.RUNNING, name),
        wait=compared(Signal.MAX_WAIT),
        arrivals=compared(
            Signal.ARRIVALS_PER_MINUTE
            if fleet.value(Signal.ARRIVALS_PER_MINUTE, name) is not None
            else Signal.STARTED_PER_MINUTE
        ),
        duration_p50=compared(Signal.DURATION_P50),
        duration_p90=compared(Signal.DURATION_P90),
    )
