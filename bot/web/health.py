"""GET /healthz and GET /metrics: whether the bot is alive, and its own Prometheus metrics.

A scrape of /metrics also reads gauges from the store (the outbox's depth and the age of its
oldest entry), so a stuck outbox shows on a dashboard.
"""

from __future__ import annotations

import time

from aiohttp import web

from bot.store import Store
from bot.telemetry.metrics import Metrics


class Health:
    def __init__(self, store: Store, metrics: Metrics) -> None:
        self._store = store
        self._metrics = metrics

    async def healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def metrics(self, request: web.Request) -> web.Response:
        waiting = len(await self._store.due_incidents())
        pending, oldest = await self._store.outbox_stats()
        gauges = {
            "queuebot_incidents_awaiting_delivery": float(waiting),
            "queuebot_outbox_pending": float(pending),
            "queuebot_outbox_oldest_age_seconds": max(time.time() - oldest, 0.0) if oldest else 0.0,
        }
        text = self._metrics.render(gauges)
        return web.Response(text=text, content_type="text/plain", charset="utf-8")
