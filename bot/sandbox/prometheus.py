"""`FleetPrometheus`: the demo's stand-in for Prometheus, so `queuebot demo` diagnoses a
simulated fleet with nothing but Python. It runs the fleet simulator (`bot.metrics.simulate`) in
memory and answers the query pack's queries over Prometheus' HTTP API, computing them from the
samples as Prometheus 2.42 does: the same series, labels and values as a real Prometheus holding
the same simulation (tests/test_fleet_prometheus.py holds it to that).

It is no PromQL engine: it knows the pack's queries, one hand-written evaluation each, and
refuses any other query with a 400 that says so. What it reproduces of Prometheus:

- an instant vector selector takes a series' latest sample at most 5 minutes old;
- a range selector `[w]` takes the samples in [t - w, t] (both ends included, as before 3.0);
  `rate`/`increase` extrapolate as `extrapolatedRate` does (counter resets, the zero point);
- `histogram_quantile` interpolates linearly within the bucket, answers the highest finite
  bound when the rank falls in +Inf, and NaN when there were no observations;
- aggregations add in the order of the series' label sets, so sums round alike.

The history ends at the spec's `end` while the demo keeps running: later times are answered as
at the end, so the fleet stays as the simulation left it; earlier than the history, nothing.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from aiohttp import web

from bot.diagnostics.sources.querypack import DEFAULT_QUERIES, QueryPack, Signal
from bot.sandbox.serving import serve
from bot.simulator.simulate import (
    BUCKETS,
    FleetHistory,
    RunnerTypeHistory,
    SimulationSpec,
    Truth,
    simulate_history,
)

#: Prometheus' default lookback delta: how old a gauge's latest sample may be.
LOOKBACK_MS = 5 * 60 * 1000
#: Prometheus' limit on a range query's points per series.
MAX_POINTS = 11_000
#: The default pack's label_replace from a runner pod's name to its runner type.
_POD_TO_TYPE = re.compile(r"(.+)-[a-z0-9]+-runner-[a-z0-9]+")
_BOUNDS = (*map(float, BUCKETS), math.inf)
_GAUGE_SIGNALS = {
    Signal.RUNNING: "gha_running_jobs",
    Signal.REGISTERED: "gha_registered_runners",
    Signal.BUSY: "gha_busy_runners",
    Signal.IDLE: "gha_idle_runners",
    Signal.DESIRED: "gha_desired_runners",
    Signal.MIN_RUNNERS: "gha_min_runners",
    Signal.MAX_RUNNERS: "gha_max_runners",
    Signal.PENDING_RUNNERS: "gha_controller_pending_ephemeral_runners",
    Signal.FAILED_RUNNERS: "gha_controller_failed_ephemeral_runners",
}
_DURATION_RE = re.compile(
    r"(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?"
    r"(?:([0-9]+)ms)?"
)
_DURATION_UNITS_MS = (365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1)
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

SeriesLabels = dict[str, str]
Samples = list[tuple[SeriesLabels, float]]


class BadData(Exception):
    """A request Prometheus would answer with 400 and errorType bad_data."""


# -- parameters, as Prometheus' web API parses them ----------------------------------------------


def _go_float(text: str) -> float | None:
    """`text` as a number if Go's ParseFloat reads it as one (no spaces, no underscores)."""
    if text != text.strip() or "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _round_half_away(x: float) -> float:
    return math.copysign(math.floor(abs(x) + 0.5), x)


def parse_timestamp(text: str, name: str) -> int:
    """Unix seconds or RFC 3339, to milliseconds (web/api/v1 parseTime, then FromTime)."""
    seconds = _go_float(text)
    if seconds is not None and math.isfinite(seconds):
        fraction, whole = math.modf(seconds)
        nanos = int(_round_half_away(fraction * 1000) / 1000 * 1e9)
        return (int(whole) * 10**9 + nanos) // 10**6
    if _RFC3339.fullmatch(text):
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:  # a day or hour out of range
            pass
        else:
            return (moment - _EPOCH) // timedelta(milliseconds=1)
    raise BadData(f'invalid parameter "{name}": cannot parse "{text}" to a valid timestamp')


def parse_duration(text: str, name: str) -> int:
    """Seconds or a Prometheus duration (`2m`, `1h30m`), to nanoseconds (parseDuration)."""
    seconds = _go_float(text)
    if seconds is not None:
        nanos = seconds * 1e9
        if not math.isfinite(nanos) or abs(nanos) > 2**63 - 1:
            raise BadData(
                f'invalid parameter "{name}": cannot parse "{text}" to a valid duration.'
                " It overflows int64"
            )
        return int(nanos)
    found = _DURATION_RE.fullmatch(text)
    if found is not None and any(found.groups()):
        millis = sum(
            int(part) * unit
            for part, unit in zip(found.groups(), _DURATION_UNITS_MS, strict=True)
            if part
        )
        return millis * 10**6
    raise BadData(f'invalid parameter "{name}": cannot parse "{text}" to a valid duration')


def _window_ms(window: str) -> int:
    return parse_duration(window, "window") // 10**6


def format_value(value: float) -> str:
    """A sample value as Prometheus writes it (Go's FormatFloat(v, 'f', -1, 64))."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(value)
    if "e" in text or "E" in text:
        text = format(Decimal(text), "f")
    return text[:-2] if text.endswith(".0") else text


def _stamp(ms: int) -> float | int:
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


# -- evaluation ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Span:
    """The samples a range selector picks at one time, and what `rate` derives from their
    times (the same for every series: all were sampled at the same times)."""

    lo: int
    hi: int
    to_start: float
    to_end: float
    sampled: float
    average: float
    range_seconds: float

    def extrapolated(self, column: Sequence[int], is_rate: bool) -> float:
        """`rate` (or `increase`) of a counter, as promql's extrapolatedRate computes it."""
        first = float(column[self.lo])
        result = float(column[self.hi]) - first
        previous = first
        for i in range(self.lo + 1, self.hi + 1):
            current = float(column[i])
            if current < previous:  # a counter reset
                result += previous
            previous = current
        to_start = self.to_start
        if result > 0 and first >= 0:
            # A counter cannot go below zero: extrapolate no further back than its zero point.
            to_zero = self.sampled * (first / result)
            to_start = min(to_start, to_zero)
        threshold = self.average * 1.1
        interval = self.sampled
        interval += to_start if to_start < threshold else self.average / 2
        interval += self.to_end if self.to_end < threshold else self.average / 2
        factor = interval / self.sampled
        if is_rate:
            factor /= self.range_seconds
        return result * factor


def _sum(values: Sequence[float]) -> float:
    """Added one after the other, as Prometheus' `sum` adds (no compensated summation)."""
    total = values[0]
    for value in values[1:]:
        total += value
    return total


def bucket_quantile(q: float, bounds: Sequence[float], counts: Sequence[float]) -> float:
    """promql's bucketQuantile: the q-quantile of cumulative bucket `counts` with upper
    `bounds` (ascending, +Inf last), interpolated linearly within its bucket."""
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    monotonic, highest = [], -math.inf
    for count in counts:
        # Rates of different buckets extrapolate differently: take the envelope.
        highest = max(highest, count)
        monotonic.append(highest)
    observations = monotonic[-1]
    if observations == 0:
        return math.nan
    rank = q * observations
    b = next((i for i in range(len(monotonic) - 1) if monotonic[i] >= rank), len(monotonic) - 1)
    if b == len(monotonic) - 1:
        return bounds[-2]  # the rank falls in +Inf: the highest finite bound
    if b == 0 and bounds[0] <= 0:
        return bounds[0]
    start, end, count = 0.0, bounds[b], monotonic[b]
    if b > 0:
        start = bounds[b - 1]
        count -= monotonic[b - 1]
        rank -= monotonic[b - 1]
    return start + (end - start) * (rank / count)


@dataclass(frozen=True)
class _Workflow:
    ref: str
    started: Sequence[int]
    execution: tuple[Sequence[int], ...]  # one column per bound of _BOUNDS


@dataclass(frozen=True)
class _RunnerType:
    """One runner type's columns, per-workflow ones in the order Prometheus lists the series
    (by job_workflow_ref), so that sums add in the same order."""

    name: str
    history: RunnerTypeHistory
    workflows: tuple[_Workflow, ...]


class _Evaluator:
    """The pack's queries over one simulated history, at one time (Unix ms) each."""

    def __init__(self, history: FleetHistory, window_ms: int) -> None:
        self.history = history
        self.window_ms = window_ms
        self.types = [
            _RunnerType(
                t.name,
                t,
                tuple(
                    sorted(
                        (
                            _Workflow(ref, t.started[i], t.execution[i][: len(_BOUNDS)])
                            for i, ref in enumerate(t.workflows)
                        ),
                        key=lambda w: w.ref,
                    )
                ),
            )
            for t in history.runner_types
        ]
        # cAdvisor's series by runner type as the pack's label_replace derives it from the pod
        # name, in pod order; a pod it cannot map lands in the group without a name.
        pods: dict[str | None, list[tuple[str, RunnerTypeHistory, int]]] = {}
        for t in history.runner_types:
            for i, pod in enumerate(t.pods):
                found = _POD_TO_TYPE.fullmatch(pod)
                pods.setdefault(found.group(1) if found else None, []).append((pod, t, i))
        self.pods = {name: sorted(found, key=lambda p: p[0]) for name, found in pods.items()}

    # -- selectors -------------------------------------------------------------------------------

    def _at(self, t: int) -> int | None:
        """The index of the latest sample within the lookback delta of `t`."""
        h = self.history
        if t < h.first_ms:
            return None
        index = min(h.samples - 1, (t - h.first_ms) // h.step_ms)
        return index if t - (h.first_ms + index * h.step_ms) <= LOOKBACK_MS else None

    def _span(self, t: int) -> _Span | None:
        """The samples of `[window]` at `t`; None with fewer than two (no rate then)."""
        h = self.history
        range_start = t - self.window_ms
        lo = max(0, -((h.first_ms - range_start) // h.step_ms))
        hi = min(h.samples - 1, (t - h.first_ms) // h.step_ms) if t >= h.first_ms else -1
        if hi - lo < 1:
            return None
        first, last = h.first_ms + lo * h.step_ms, h.first_ms + hi * h.step_ms
        sampled = (last - first) / 1000
        return _Span(
            lo=lo,
            hi=hi,
            to_start=(first - range_start) / 1000,
            to_end=(t - last) / 1000,
            sampled=sampled,
            average=sampled / (hi - lo),
            range_seconds=self.window_ms / 1000,
        )

    # -- the queries -------------------------------------------------------------------------

    def evaluate(self, signal: Signal, t: int) -> Samples:
        """The signal's query at `t` (ms), answered as at the end of the history after it."""
        t = min(t, self.history.end_ms)
        if signal in _GAUGE_SIGNALS:
            return self._gauge(_GAUGE_SIGNALS[signal], t)
        if signal is Signal.QUEUED:
            return self._queued(t)
        span = self._span(t)
        if span is None:
            return []
        match signal:
            case Signal.STARTED_PER_MINUTE:
                return self._started(span, by_workflow=False)
            case Signal.STARTED_BY_WORKFLOW:
                return self._started(span, by_workflow=True)
            case Signal.MAX_WAIT:
                return self._startup_quantile(0.99, span)
            case Signal.DURATION_P50:
                return self._execution_quantile(0.5, span, by_workflow=False)
            case Signal.DURATION_P90:
                return self._execution_quantile(0.9, span, by_workflow=False)
            case Signal.DURATION_P90_BY_WORKFLOW:
                return self._execution_quantile(0.9, span, by_workflow=True)
            case Signal.CPU_THROTTLED:
                return self._throttled(span)
            case Signal.OOM_KILLS:
                return self._ooms(span)
        raise AssertionError(f"no evaluation for {signal}")

    def _gauge(self, metric: str, t: int) -> Samples:
        """sum by (name) (<gauge>)"""
        index = self._at(t)
        if index is None:
            return []
        return [({"name": r.name}, float(r.history.gauges[metric][index])) for r in self.types]

    def _queued(self, t: int) -> Samples:
        """sum by (name) (clamp_min(gha_assigned_jobs - gha_running_jobs, 0))"""
        index = self._at(t)
        if index is None:
            return []
        samples = []
        for r in self.types:
            assigned = float(r.history.gauges["gha_assigned_jobs"][index])
            running = float(r.history.gauges["gha_running_jobs"][index])
            samples.append(({"name": r.name}, max(assigned - running, 0.0)))
        return samples

    def _started(self, span: _Span, *, by_workflow: bool) -> Samples:
        """60 * sum by (name) (rate(gha_started_jobs_total[w])), or by workflow too, with the
        workflow copied into the label `workflow` by label_replace."""
        samples: Samples = []
        for r in self.types:
            rates = [span.extrapolated(w.started, True) for w in r.workflows]
            if by_workflow:
                for w, rate in zip(r.workflows, rates, strict=True):
                    labels = {"name": r.name, "job_workflow_ref": w.ref, "workflow": w.ref}
                    samples.append((labels, 60 * rate))
            else:
                samples.append(({"name": r.name}, 60 * _sum(rates)))
        return samples

    def _startup_quantile(self, q: float, span: _Span) -> Samples:
        """histogram_quantile(q, sum by (name, le) (rate(…startup…_bucket[w])))"""
        samples: Samples = []
        for r in self.types:
            columns = r.history.startup[: len(_BOUNDS)]
            counts = [span.extrapolated(column, True) for column in columns]
            samples.append(({"name": r.name}, bucket_quantile(q, _BOUNDS, counts)))
        return samples

    def _execution_quantile(self, q: float, span: _Span, *, by_workflow: bool) -> Samples:
        """histogram_quantile(q, sum by (name, le) (rate(…execution…_bucket[w]))), or by
        (name, job_workflow_ref, le) with the label `workflow` added by label_replace."""
        samples: Samples = []
        for r in self.types:
            rates = [[span.extrapolated(c, True) for c in w.execution] for w in r.workflows]
            if by_workflow:
                for w, counts in zip(r.workflows, rates, strict=True):
                    labels = {"name": r.name, "job_workflow_ref": w.ref, "workflow": w.ref}
                    samples.append((labels, bucket_quantile(q, _BOUNDS, counts)))
            else:
                counts = [_sum([per[b] for per in rates]) for b in range(len(_BOUNDS))]
                samples.append(({"name": r.name}, bucket_quantile(q, _BOUNDS, counts)))
        return samples

    def _by_pod(
        self, span: _Span, pick: Callable[[RunnerTypeHistory, int], Sequence[int]], *, is_rate: bool
    ) -> dict[str | None, float]:
        """sum by (name) (label_replace(rate-or-increase(<cAdvisor counter>[w]), "name", …))"""
        return {
            name: _sum([span.extrapolated(pick(t, i), is_rate) for _, t, i in pods])
            for name, pods in self.pods.items()
        }

    def _throttled(self, span: _Span) -> Samples:
        """Throttled CPU periods over all CPU periods of the runner pods, by runner type."""
        throttled = self._by_pod(span, lambda t, i: t.cfs_throttled[i], is_rate=True)
        periods = self._by_pod(span, lambda t, i: t.cfs_periods[i], is_rate=True)
        return [
            (_name_labels(name), _divide(value, periods[name])) for name, value in throttled.items()
        ]

    def _ooms(self, span: _Span) -> Samples:
        """OOM events of the runner containers within the window, by runner type."""
        ooms = self._by_pod(span, lambda t, i: t.ooms[i], is_rate=False)
        return [(_name_labels(name), value) for name, value in ooms.items()]


def _name_labels(name: str | None) -> SeriesLabels:
    return {} if name is None else {"name": name}


def _divide(a: float, b: float) -> float:
    """Go's float division: x/0 is ±Inf, 0/0 NaN."""
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a)
    return a / b


def _order(labels: SeriesLabels) -> list[tuple[str, str]]:
    return sorted(labels.items())


# -- the server ----------------------------------------------------------------------------------


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
        self._window_ms = _window_ms(self.pack.window)
        # Only the pack's queries that are the defaults read the simulated metrics; a query the
        # YAML file overrides is refused like any other.
        self._signals = {
            _normal(self.pack.query(signal)): signal
            for signal in Signal
            if getattr(self.pack, signal.value) == DEFAULT_QUERIES[signal]
        }
        self._history: FleetHistory | None = None
        self._evaluator: _Evaluator | None = None
        self._runner: web.AppRunner | None = None
        self._url: str | None = None

    @property
    def history(self) -> FleetHistory:
        if self._history is None:
            raise RuntimeError("the simulated fleet has not run yet: call start() first")
        return self._history

    @property
    def _engine(self) -> _Evaluator:
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
        value_at = _stamp(at_ms)
        return [
            {"metric": labels, "value": [value_at, format_value(value)]}
            for labels, value in sorted(samples, key=lambda s: _order(s[0]))
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
                key = tuple(_order(labels))
                series.setdefault(key, []).append([_stamp(t), format_value(value)])
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
        now_ms = (self.clock() - _EPOCH) // timedelta(milliseconds=1)
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
            self._evaluator = _Evaluator(history, self._window_ms)
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
