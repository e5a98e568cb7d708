"""GET /healthz and GET /metrics: whether the bot can do its job, and its own Prometheus metrics.

/healthz answers 200 `{"status": "ok"}` only when what the bot promises can happen: every
background task runs (the outbox worker above all, its passes over the outbox succeeding), the
store takes a write (a full disk, an I/O error or a database file deleted or replaced under the
bot all show here), and the oldest Slack delivery owed is younger than the limit. Otherwise
503 `{"status": "unhealthy", "reasons": [...]}`, each reason one sentence an operator can act
on. A change of state is logged once, not at every probe.

A scrape of /metrics also reads gauges from the store (incidents still owed a delivery, the
outbox's depth and the age of its oldest entry), so a stuck outbox shows on a dashboard, and
the fleet's own numbers (`bot.fleet.exported`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric

from bot.domain.clock import SYSTEM, Clock
from bot.store import Store, StoreError
from bot.telemetry.metrics import Metrics

log = logging.getLogger(__name__)


class Health:
    def __init__(
        self,
        store: Store,
        metrics: Metrics,
        *,
        background: Callable[[], Mapping[str, bool]] = dict,
        troubles: Callable[[], list[str]] = list,
        max_outbox_age: float = 900.0,
        fleet: Callable[[], Awaitable[list[Metric]]] | None = None,
        clock: Clock = SYSTEM,
    ) -> None:
        """`background` tells, by name, whether each background task still runs; `troubles`,
        what those that run cannot do now; `fleet` reads the fleet's own families for
        /metrics."""
        self._store = store
        self._troubles = troubles
        self._metrics = metrics
        self._background = background
        self._max_outbox_age = max_outbox_age
        self._clock = clock
        self._fleet = fleet
        self._last: list[str] = []
        self._details: list[str] = []

    async def problems(self) -> list[str]:
        """Why the bot cannot do its job now; empty when it can."""
        reasons = [
            f"the {name} is not running"
            for name, running in self._background().items()
            if not running
        ]
        reasons += self._troubles()
        details: list[str] = []
        try:
            await self._store.probe()
        except StoreError as exc:
            reasons.append(f"the store cannot be written: {exc.public}")
            details.append(f"the store cannot be written: {exc}")
        try:
            _, oldest = await self._store.outbox_stats()
        except StoreError as exc:
            reasons.append(f"the outbox cannot be read: {exc.public}")
            details.append(f"the outbox cannot be read: {exc}")
        else:
            age = self._clock.time() - oldest if oldest else 0.0
            if age > self._max_outbox_age:
                reasons.append(
                    f"the oldest Slack delivery owed has waited {age:.0f} s"
                    f" (more than {self._max_outbox_age:.0f} s): Slack refuses or is unreachable"
                )
        if details != self._details:
            # Where the store is (a server's address) is for the log, not for whoever asks.
            for detail in details:
                log.error("%s", detail)
            self._details = details
        return reasons

    async def healthz(self, request: web.Request) -> web.Response:
        reasons = await self.problems()
        if reasons != self._last:
            if reasons:
                log.error("unhealthy: %s", "; ".join(reasons))
            else:
                log.info("healthy again")
            self._last = reasons
        if reasons:
            return web.json_response({"status": "unhealthy", "reasons": reasons}, status=503)
        return web.json_response({"status": "ok"})

    async def metrics(self, request: web.Request) -> web.Response:
        try:
            waiting = len(await self._store.due_incidents())
            pending, oldest = await self._store.outbox_stats()
        except StoreError as exc:
            # The counters still tell what happened; the gauges keep their last reading.
            log.warning("/metrics without the store's gauges: %s", exc)
        else:
            # The store is read with await and prometheus_client's collectors are synchronous,
            # so the gauges are set here and written out at once: nothing awaits in between,
            # and a scrape always shows what it read itself.
            self._metrics.set_gauge("queuebot_incidents_awaiting_delivery", waiting)
            self._metrics.set_gauge("queuebot_outbox_pending", pending)
            age = max(self._clock.time() - oldest, 0.0) if oldest else 0.0
            self._metrics.set_gauge("queuebot_outbox_oldest_age_seconds", age)
        body = generate_latest(self._metrics)
        if self._fleet is not None:
            try:
                families = await self._fleet()
            except StoreError as exc:
                # No fleet numbers rather than stale ones: a rule sees them absent.
                log.warning("/metrics without the fleet's numbers: %s", exc)
            else:
                body += generate_latest(_Families(families))
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


class _Families:
    """Families read already, as prometheus_client's text generator takes a registry."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> list[Metric]:
        return self._families
