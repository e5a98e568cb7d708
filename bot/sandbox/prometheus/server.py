"""`FleetPrometheus`: a simulated fleet served over Prometheus' HTTP query API."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from bot.diagnostics.measures import Signal
from bot.diagnostics.sources.querypack import DEFAULT_QUERIES, QueryPack
from bot.sandbox.prometheus.evaluator import Evaluator
from bot.sandbox.prometheus.promql import (
    EPOCH,
    MAX_POINTS,
    BadData,
    api_time,
    format_value,
    label_order,
    parse_duration,
    parse_timestamp,
    window_ms,
)
from bot.sandbox.serving import serve
from bot.simulator import FleetHistory, SimulationSpec, Truth, simulate_history


class FleetPrometheus:
    """A simulated fleet behind Prometheus' query API, served on a real port."""

    def __init__(
        self,
        spec: SimulationSpec,
        pack: QueryPack | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.spec = spec
        self.pack = pack or QueryPack()
        self.clock = clock or (lambda: datetime.now(UTC))
        self._window_ms = window_ms(self.pack.window)
        # Only the pack's queries that are the defaults read the simulated metrics; a query the
        # YAML file overrides is refused like any other.
        self._signals = {
            _normal(self.pack.query(signal)): signal
            for signal in Signal
            if signal in DEFAULT_QUERIES
            and getattr(self.pack, signal.value) == DEFAULT_QUERIES[signal]
        }
        self._history: FleetHistory | None = None
        self._evaluator: Evaluator | None = None
        self._runner: web.AppRunner | None = None
        self._url: str | None = None

    @property
    def history(self) -> FleetHistory:
        if self._history is None:
            raise RuntimeError("the simulated fleet has not run yet: call start() first")
        return self._history

    @property
    def _engine(self) -> Evaluator:
        if self._evaluator is None:
            raise RuntimeError("the simulated fleet has not run yet: call start() first")
        return self._evaluator

    @property
    def truth(self) -> Truth:
        """What the simulation staged (known once `start` has run it)."""
        return self.history.truth

    @property
    def url(self) -> str:
        """Base URL to use as PROMETHEUS_URL, e.g. http://127.0.0.1:PORT."""
        if self._url is None:
            raise RuntimeError("the simulated Prometheus is not serving: call start() first")
        return self._url

    # -- queries -----------------------------------------------------------------------------

    def _signal(self, query: str) -> Signal:
        signal = self._signals.get(_normal(query))
        if signal is None:
            shown = query if len(query) <= 120 else query[:117] + "..."
            raise BadData(
                "the demo's simulated fleet answers only the queries of queuebot's default"
                f" query pack (window {self.pack.window}), not {shown!r}"
            )
        return signal

    def instant(self, query: str, at_ms: int) -> list[dict[str, Any]]:
        """The query's instant vector at `at_ms`, in the API's `result` shape."""
        samples = self._engine.evaluate(self._signal(query), at_ms)
        value_at = api_time(at_ms)
        return [
            {"metric": labels, "value": [value_at, format_value(value)]}
            for labels, value in sorted(samples, key=lambda s: label_order(s[0]))
        ]

    def range(self, query: str, start_ms: int, end_ms: int, step_ms: int) -> list[dict[str, Any]]:
        """The query's range vector, in the API's `result` shape: every step from `start_ms`
        to `end_ms`, series sorted by their labels."""
        evaluator, signal = self._engine, self._signal(query)
        series: dict[tuple[tuple[str, str], ...], list[list[Any]]] = {}
        steps = (end_ms - start_ms) // step_ms + 1 if step_ms else 1
        for k in range(steps):
            t = start_ms + k * step_ms
            for labels, value in evaluator.evaluate(signal, t):
                key = tuple(label_order(labels))
                series.setdefault(key, []).append([api_time(t), format_value(value)])
        return [{"metric": dict(key), "values": series[key]} for key in sorted(series)]

    # -- HTTP --------------------------------------------------------------------------------

    def create_app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/-/ready", self._ready)
        for path, handler in (
            ("/api/v1/query", self._query),
            ("/api/v1/query_range", self._query_range),
        ):
            app.router.add_get(path, handler)
            app.router.add_post(path, handler)
        return app

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            response: web.StreamResponse = await handler(request)
        except BadData as error:
            body = {"status": "error", "errorType": "bad_data", "error": str(error)}
            return web.json_response(body, status=400)
        return response

    async def _ready(self, request: web.Request) -> web.Response:
        return web.Response(text="Prometheus Server is Ready.\n")

    async def _params(self, request: web.Request) -> Callable[[str], str]:
        """Form values as Go's FormValue reads them: the body's before the URL's."""
        form = await request.post() if request.method == "POST" else None

        def get(name: str) -> str:
            if form is not None and name in form:
                return str(form[name])
            return request.query.get(name, "")

        return get

    async def _query(self, request: web.Request) -> web.Response:
        get = await self._params(request)
        raw = get("time")
        now_ms = (self.clock() - EPOCH) // timedelta(milliseconds=1)
        at_ms = parse_timestamp(raw, "time") if raw else now_ms
        result = self.instant(get("query"), at_ms)
        return _success("vector", result)

    async def _query_range(self, request: web.Request) -> web.Response:
        get = await self._params(request)
        start_ms = parse_timestamp(get("start"), "start")
        end_ms = parse_timestamp(get("end"), "end")
        if end_ms < start_ms:
            raise BadData("end timestamp must not be before start time")
        step_ns = parse_duration(get("step"), "step")
        if step_ns <= 0:
            raise BadData(
                "zero or negative query resolution step widths are not accepted."
                " Try a positive integer"
            )
        if (end_ms - start_ms) * 10**6 // step_ns > MAX_POINTS:
            raise BadData(
                "exceeded maximum resolution of 11,000 points per timeseries."
                " Try decreasing the query resolution (?step=XX)"
            )
        query = get("query")
        self._signal(query)
        # Thousands of steps take a while in Python; the loop keeps serving meanwhile.
        result = await asyncio.to_thread(self.range, query, start_ms, end_ms, step_ns // 10**6)
        return _success("matrix", result)

    # -- serving -------------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Run the simulation (once), then serve on `host:port` (0 picks a free port)."""
        if self._history is None:
            history = await asyncio.to_thread(simulate_history, self.spec)
            self._evaluator = Evaluator(history, self._window_ms)
            self._history = history
        self._runner, self._url = await serve(self.create_app(), host, port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._url = None

    async def __aenter__(self) -> FleetPrometheus:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


def _normal(query: str) -> str:
    """A query with its runs of white space made one space, so layout does not matter."""
    return " ".join(query.split())


def _success(kind: str, result: list[dict[str, Any]]) -> web.Response:
    return web.json_response({"status": "success", "data": {"resultType": kind, "result": result}})
