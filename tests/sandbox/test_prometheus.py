"""`FleetPrometheus`, the demo's simulated Prometheus: for every query of the default pack it
answers what a real Prometheus holding the same simulation answers (the integration tests
backfill the same spec into one and compare, through the bot's own client); it refuses other
queries and bad parameters as Prometheus does, with an error that says why; it keeps answering
after its history ends; and the real diagnostics name the cause it staged.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from bot.diagnostics.checks import diagnose
from bot.diagnostics.measures import Signal
from bot.diagnostics.signals import collect
from bot.diagnostics.sources.prometheus import (
    PrometheusClient,
    PrometheusRejected,
    RangeSeries,
    Sample,
)
from bot.diagnostics.sources.querypack import DEFAULT_QUERIES, QueryPack
from bot.sandbox.prometheus import FleetPrometheus, bucket_quantile
from bot.simulator import Scenario, SimulationSpec, Truth, runner_type_names
from tests.support.prometheus import Prometheus

PACK = QueryPack()
BY_WORKFLOW = (Signal.STARTED_BY_WORKFLOW, Signal.DURATION_P90_BY_WORKFLOW)
REL_TOLERANCE = 1e-6
ABS_TOLERANCE = 1e-9

PrometheusFactory = Callable[[SimulationSpec], Awaitable[tuple[Prometheus, Truth]]]


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _spec(
    scenario: Scenario, *, hours: float = 27, types: int = 6, seed: int = 7
) -> SimulationSpec:
    return SimulationSpec(scenario, hours, types, seed, _now(), step_seconds=120)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
async def small() -> AsyncIterator[FleetPrometheus]:
    """Four hours of three runner types: enough for every query, quick to simulate."""
    async with FleetPrometheus(_spec(Scenario.SURGE, hours=4, types=3)) as fleet:
        yield fleet


def _close(expected: float, got: float) -> bool:
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)
    return math.isclose(expected, got, rel_tol=REL_TOLERANCE, abs_tol=ABS_TOLERANCE)


def _by_labels(samples: list[Sample]) -> dict[frozenset[tuple[str, str]], float]:
    found = {frozenset(s.labels.items()): s.value for s in samples}
    assert len(found) == len(samples), "two series with the same labels"
    return found


def _assert_same_vector(expected: list[Sample], got: list[Sample], what: str) -> None:
    want, have = _by_labels(expected), _by_labels(got)
    assert set(have) == set(want), what
    wrong = {labels: (want[labels], have[labels]) for labels in want}
    wrong = {k: v for k, v in wrong.items() if not _close(*v)}
    assert not wrong, (what, wrong)


def _assert_same_matrix(expected: list[RangeSeries], got: list[RangeSeries], what: str) -> None:
    want = {frozenset(s.labels.items()): s.points for s in expected}
    have = {frozenset(s.labels.items()): s.points for s in got}
    assert len(want) == len(expected) and len(have) == len(got), what
    assert set(have) == set(want), what
    for labels, points in want.items():
        assert [t for t, _ in have[labels]] == [t for t, _ in points], (what, labels)
        wrong = [
            (t, v, w)
            for (t, v), (_, w) in zip(points, have[labels], strict=True)
            if not _close(v, w)
        ]
        assert not wrong, (what, labels, wrong)


# -- the same answers as a real Prometheus ---------------------------------------------------------


@pytest.mark.integration
async def test_every_default_query_answers_as_a_real_prometheus_holding_the_same_fleet(
    prometheus_for: PrometheusFactory, http: aiohttp.ClientSession
) -> None:
    """Instant queries now, an hour and a day ago, near the start and off the sample grid, and
    range queries across the start and over the chart's six hours: the same series, labels and
    values, through the bot's own client."""
    # This seed stages a capacity cap and resource starvation: OOM counters rise from zero
    # within the window, where `increase` stops extrapolating at the counter's zero point.
    spec = _spec(Scenario.MIX, seed=2)
    real, truth = await prometheus_for(spec)
    assert set(truth.affected.values()) == {"autoscaling_limits", "resource_constraints"}
    async with FleetPrometheus(spec) as fleet:
        assert fleet.truth == truth
        expected, got = PrometheusClient(http, real.url), PrometheusClient(http, fleet.url)
        end = spec.end
        first = end - timedelta(hours=spec.hours)
        times = [
            end,
            end - timedelta(hours=1),
            end - timedelta(days=1),
            end - timedelta(hours=25),
            # Off the two-minute grid: the window's first sample is not at its start.
            end - timedelta(seconds=41.5),
            end - timedelta(hours=1, seconds=53.217),
        ]
        ranges = {
            # Across the first sample: nothing, then gauges, then rates once two samples are in.
            "from the start": (first - timedelta(minutes=20), first + timedelta(hours=3), 420),
            "the chart's 6 h": (end - timedelta(hours=6), end, 120),
            "off the grid": (end - timedelta(hours=3, seconds=-17.3), end, 173),
        }
        for signal in DEFAULT_QUERIES:
            query = PACK.query(signal)
            for at in times:
                want = await expected.instant(query, at)
                assert want, (signal, at)  # there is something to compare
                _assert_same_vector(want, await got.instant(query, at), f"{signal} at {at}")
            for what, (start, stop, step) in ranges.items():
                args = (start, stop, timedelta(seconds=step))
                want_range = await expected.range(query, *args)
                assert want_range, (signal, what)
                assert min(t for s in want_range for t, _ in s.points) >= first
                _assert_same_matrix(want_range, await got.range(query, *args), f"{signal} {what}")


@pytest.mark.integration
async def test_the_series_carry_the_labels_a_real_prometheus_gives_them(
    prometheus_for: PrometheusFactory, http: aiohttp.ClientSession
) -> None:
    """`name` per runner type; by workflow also `job_workflow_ref` and `workflow` (which
    label_replace copies from it); nothing else."""
    spec = _spec(Scenario.HEALTHY, hours=2, types=3)
    real, _ = await prometheus_for(spec)
    async with FleetPrometheus(spec) as fleet:
        for url in (real.url, fleet.url):
            client = PrometheusClient(http, url)
            for signal in DEFAULT_QUERIES:
                answer = await client.instant(PACK.query(signal), spec.end)
                keys = {tuple(sorted(s.labels)) for s in answer}
                if signal in BY_WORKFLOW:
                    assert keys == {("job_workflow_ref", "name", "workflow")}, (url, signal)
                    assert all(s.labels["workflow"] == s.labels["job_workflow_ref"] for s in answer)
                else:
                    assert keys == {("name",)}, (url, signal)
                    names = sorted(s.labels["name"] for s in answer)
                    assert names == sorted(runner_type_names(3)), (url, signal)


# -- without a real Prometheus -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "counts", "quantile"),
    [
        (0.2, (10, 20, 30, 40), 0.8),  # within the first bucket, from zero
        (0.5, (10, 20, 30, 40), 2.0),
        (0.6, (10, 20, 30, 40), 2.8),  # linear within (2, 4]: 2 + 2 * (24 - 20) / 10
        (0.99, (10, 20, 30, 40), 4.0),  # in +Inf: the highest finite bound
        (0.5, (10, 5, 30, 40), 3.0),  # a dip is lifted to the envelope first
        (0.5, (0, 0, 0, 0), math.nan),  # no observations
        (1.5, (10, 20, 30, 40), math.inf),
        (-0.5, (10, 20, 30, 40), -math.inf),
    ],
)
def test_bucket_quantile_interpolates_as_prometheus_does(
    q: float, counts: tuple[float, ...], quantile: float
) -> None:
    got = bucket_quantile(q, (1.0, 2.0, 4.0, math.inf), counts)
    assert _close(quantile, got), got


async def test_gauges_and_rates_are_read_from_the_simulated_samples(
    small: FleetPrometheus, http: aiohttp.ClientSession
) -> None:
    """At the last sample: gauges are its values, and a ten-minute rate on the two-minute grid
    is the difference of the samples ten minutes apart (no extrapolation needed)."""
    client, history = PrometheusClient(http, small.url), small.history
    end = small.spec.end
    registered = await client.instant(PACK.query(Signal.REGISTERED), end)
    assert {s.labels["name"]: s.value for s in registered} == {
        t.name: t.gauges["gha_registered_runners"][-1] for t in history.runner_types
    }
    queued = await client.instant(PACK.query(Signal.QUEUED), end)
    assert {s.labels["name"]: s.value for s in queued} == {
        t.name: max(0, t.gauges["gha_assigned_jobs"][-1] - t.gauges["gha_running_jobs"][-1])
        for t in history.runner_types
    }
    back = 600 // (history.step_ms // 1000)
    started = await client.instant(PACK.query(Signal.STARTED_PER_MINUTE), end)
    want = {
        t.name: 60 * sum(column[-1] - column[-1 - back] for column in t.started) / 600
        for t in history.runner_types
    }
    got = {s.labels["name"]: s.value for s in started}
    assert got.keys() == want.keys() and all(_close(want[k], got[k]) for k in want), (want, got)
    assert any(v > 0 for v in got.values())


async def test_after_the_end_the_fleet_stays_as_it_ended_and_before_the_start_is_empty(
    small: FleetPrometheus, http: aiohttp.ClientSession
) -> None:
    client = PrometheusClient(http, small.url)
    end = small.spec.end
    before = end - timedelta(hours=small.spec.hours, minutes=1)
    for signal in DEFAULT_QUERIES:
        query = PACK.query(signal)
        at_end = await client.instant(query, end)
        assert at_end, signal
        _assert_same_vector(at_end, await client.instant(query, end + timedelta(hours=5)), signal)
        assert await client.instant(query, before) == [], signal
    series = await client.range(
        PACK.query(Signal.QUEUED),
        end - timedelta(minutes=4),
        end + timedelta(minutes=4),
        timedelta(minutes=2),
    )
    assert series
    for one in series:
        times = [t for t, _ in one.points]
        assert times == [end + timedelta(minutes=m) for m in (-4, -2, 0, 2, 4)]
        assert one.points[2][1] == one.points[3][1] == one.points[4][1]


async def test_another_query_is_refused_saying_only_the_default_pack_is_answered(
    small: FleetPrometheus, http: aiohttp.ClientSession
) -> None:
    client = PrometheusClient(http, small.url)
    for query in ("up", "sum by (name) (gha_idle_runners) > 0", ""):
        with pytest.raises(PrometheusRejected) as refused:
            await client.instant(query, small.spec.end)
        assert refused.value.status == 400
        assert "default query pack" in refused.value.detail, refused.value.detail
    with pytest.raises(PrometheusRejected) as refused:
        await client.range(
            "up", small.spec.end - timedelta(hours=1), small.spec.end, timedelta(minutes=1)
        )
    assert refused.value.status == 400 and "default query pack" in refused.value.detail
    # Layout does not matter: the pack's query with other white space is still the pack's.
    spaced = "  " + PACK.query(Signal.BUSY).replace(" ", "\n  ") + "\n"
    assert await client.instant(spaced, small.spec.end)


async def _raw(
    http: aiohttp.ClientSession, method: str, url: str, **params: str
) -> tuple[int, dict[str, Any]]:
    request = http.get(url, params=params) if method == "GET" else http.post(url, data=params)
    async with request as response:
        return response.status, await response.json()


@pytest.mark.parametrize(
    ("path", "params", "error"),
    [
        ("query", {"time": "yesterday"}, 'invalid parameter "time": cannot parse "yesterday"'),
        ("query", {"time": "2025-06-04 19:00:00"}, 'invalid parameter "time"'),
        ("query", {"time": "2025-13-04T19:00:00Z"}, 'invalid parameter "time"'),
        ("query", {"time": " 1"}, 'invalid parameter "time"'),
        ("query_range", {"end": "1", "step": "60"}, 'invalid parameter "start"'),
        ("query_range", {"start": "1", "step": "60"}, 'invalid parameter "end"'),
        ("query_range", {"start": "1", "end": "2"}, 'invalid parameter "step"'),
        ("query_range", {"start": "1", "end": "2", "step": "soon"}, 'invalid parameter "step"'),
        ("query_range", {"start": "2", "end": "1", "step": "60"}, "end timestamp must not be"),
        ("query_range", {"start": "1", "end": "2", "step": "0"}, "zero or negative"),
        ("query_range", {"start": "1", "end": "2", "step": "-1m"}, 'invalid parameter "step"'),
        ("query_range", {"start": "0", "end": "86400", "step": "1"}, "11,000 points"),
    ],
)
@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_bad_parameters_are_refused_as_prometheus_refuses_them(
    small: FleetPrometheus,
    http: aiohttp.ClientSession,
    path: str,
    params: dict[str, str],
    error: str,
    method: str,
) -> None:
    query = {"query": PACK.query(Signal.BUSY), **params}
    status, body = await _raw(http, method, f"{small.url}/api/v1/{path}", **query)
    assert status == 400
    assert body["status"] == "error" and body["errorType"] == "bad_data"
    assert error in body["error"], body


async def test_times_parse_as_prometheus_parses_them_by_get_and_post(
    small: FleetPrometheus, http: aiohttp.ClientSession
) -> None:
    """Unix seconds or RFC 3339; the body's parameters over the URL's; a missing time is now."""
    end = small.spec.end
    query = PACK.query(Signal.STARTED_PER_MINUTE)
    url = f"{small.url}/api/v1/query"
    status, unix = await _raw(http, "GET", url, query=query, time=str(int(end.timestamp())))
    assert status == 200 and unix["data"]["resultType"] == "vector"
    assert unix["data"]["result"] and all(
        s["value"][0] == int(end.timestamp()) for s in unix["data"]["result"]
    )
    iso = end.isoformat().replace("+00:00", "Z")
    assert await _raw(http, "POST", url, query=query, time=iso) == (200, unix)
    async with http.post(f"{url}?query=up&time=1", data={"query": query, "time": iso}) as r:
        assert (r.status, await r.json()) == (200, unix)
    status, now = await _raw(http, "GET", url, query=query)
    assert status == 200 and now["data"]["result"][0]["value"][0] >= end.timestamp()
    status, range_body = await _raw(
        http, "GET", f"{url}_range", query=query, start=iso, end=iso, step="2m"
    )
    assert status == 200 and range_body["data"]["resultType"] == "matrix"
    assert [s["values"][0] for s in range_body["data"]["result"]] == [
        s["value"] for s in unix["data"]["result"]
    ]
    async with http.get(f"{small.url}/-/ready") as ready:
        assert ready.status == 200


async def test_a_pack_with_another_window_is_answered_with_that_window(
    http: aiohttp.ClientSession,
) -> None:
    """The window is the pack's; a query the pack overrides is not the simulation's to answer."""
    pack = QueryPack(window="15m", queued="sum by (name) (my_queue_depth)")
    spec = _spec(Scenario.HEALTHY, hours=2, types=2)
    async with FleetPrometheus(spec, pack) as fleet:
        client = PrometheusClient(http, fleet.url)
        fifteen = await client.instant(pack.query(Signal.STARTED_PER_MINUTE), spec.end)
        # Samples 14 minutes apart, the increase extrapolated to the window's 15.
        history, back = fleet.history, 900 // 120
        assert {s.labels["name"]: s.value for s in fifteen} == pytest.approx(
            {
                t.name: 60 * sum(c[-1] - c[-1 - back] for c in t.started) / (back * 120)
                for t in history.runner_types
            }
        )
        for refused in (PACK.query(Signal.STARTED_PER_MINUTE), pack.query(Signal.QUEUED)):
            with pytest.raises(PrometheusRejected, match="default query pack"):
                await client.instant(refused, spec.end)
        assert DEFAULT_QUERIES[Signal.QUEUED] != pack.query(Signal.QUEUED)


async def test_not_started_says_so() -> None:
    fleet = FleetPrometheus(_spec(Scenario.HEALTHY, hours=1, types=1))
    with pytest.raises(RuntimeError, match="start"):
        _ = fleet.url
    with pytest.raises(RuntimeError, match="start"):
        _ = fleet.truth


# -- diagnostics against the simulated fleet -----------------------------------------------------


async def test_diagnostics_name_the_staged_capacity_cap(http: aiohttp.ClientSession) -> None:
    """The real diagnostics, reading the simulated fleet as they read Prometheus."""
    async with FleetPrometheus(_spec(Scenario.CAPACITY_CAP)) as fleet:
        client = PrometheusClient(http, fleet.url)
        signals = await collect(client, PACK, fleet.spec.end)
        assert signals.missing == {}
        report = diagnose(signals)
    assert fleet.truth.primary_cause == "autoscaling_limits"
    assert report.primary_cause is not None
    assert report.primary_cause.value == fleet.truth.primary_cause
    affected = {t.name for t in report.affected}
    assert set(fleet.truth.affected) <= affected
