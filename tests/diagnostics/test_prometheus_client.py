"""The Prometheus client (bot.fleet.sources.prometheus): what each kind of answer means,
against small local servers answering as Prometheus, Grafana's datasource proxy or a broken proxy
do."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.fleet.sources.prometheus import (
    PrometheusClient,
    PrometheusRejected,
    PrometheusUnavailable,
)

AT = datetime(2026, 11, 21, 15, 0, tzinfo=UTC)
Handler = Callable[[web.Request], Awaitable[web.Response]]


@asynccontextmanager
async def _serving(handler: Handler) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


def _vector(*series: tuple[dict[str, str], str]) -> dict[str, object]:
    return {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": m, "value": [AT.timestamp(), v]} for m, v in series],
        },
    }


async def test_instant_query_returns_samples_and_sends_the_time() -> None:
    seen: list[dict[str, str]] = []

    async def prometheus(request: web.Request) -> web.Response:
        seen.append(dict(request.query))
        return web.json_response(_vector(({"name": "linux-2xlarge"}, "12"), ({"name": "x"}, "NaN")))

    async with _serving(prometheus) as url, aiohttp.ClientSession() as session:
        samples = await PrometheusClient(session, url).instant("up", AT)
    assert samples[0].labels == {"name": "linux-2xlarge"} and samples[0].value == 12
    assert seen[0]["query"] == "up" and float(seen[0]["time"]) == AT.timestamp()


async def test_through_grafana_uses_the_proxy_path_and_the_token() -> None:
    seen: list[tuple[str, str]] = []

    async def grafana(request: web.Request) -> web.Response:
        seen.append((request.path, request.headers.get("Authorization", "")))
        return web.json_response(_vector())

    async with _serving(grafana) as url, aiohttp.ClientSession() as session:
        client = PrometheusClient.through_grafana(session, url, "prom-uid", "glsa_t")
        await client.instant("up", AT)
    assert seen == [("/api/datasources/proxy/uid/prom-uid/api/v1/query", "Bearer glsa_t")]


async def test_range_query_returns_points() -> None:
    async def prometheus(request: web.Request) -> web.Response:
        start = float(request.query["start"])
        values = [[start, "1"], [start + 60, "2"]]
        body = {
            "status": "success",
            "data": {
                "resultType": "matrix",
                "result": [{"metric": {"name": "a"}, "values": values}],
            },
        }
        return web.json_response(body)

    async with _serving(prometheus) as url, aiohttp.ClientSession() as session:
        (series,) = await PrometheusClient(session, url).range(
            "q", AT - timedelta(hours=1), AT, timedelta(minutes=1)
        )
    assert [v for _, v in series.points] == [1.0, 2.0]
    assert series.points[0][0] == AT - timedelta(hours=1)


async def test_a_bad_query_is_rejected_with_prometheus_words() -> None:
    async def prometheus(request: web.Request) -> web.Response:
        body = {"status": "error", "errorType": "bad_data", "error": 'parse error: unexpected "}"'}
        return web.json_response(body, status=400)

    async with _serving(prometheus) as url, aiohttp.ClientSession() as session:
        with pytest.raises(PrometheusRejected) as raised:
            await PrometheusClient(session, url).instant("up{", AT)
    assert "parse error" in raised.value.detail and raised.value.status == 400


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (503, "Service Unavailable", PrometheusUnavailable),
        (200, "<html>login</html>", PrometheusRejected),
    ],
)
async def test_answers_that_are_not_prometheus(
    status: int, body: str, kind: type[Exception]
) -> None:
    async def broken(request: web.Request) -> web.Response:
        return web.Response(text=body, status=status)

    async with _serving(broken) as url, aiohttp.ClientSession() as session:
        with pytest.raises(kind):
            await PrometheusClient(session, url).instant("up", AT)


async def test_slow_and_absent_prometheus_are_unavailable() -> None:
    release = asyncio.Event()

    async def stuck(request: web.Request) -> web.Response:
        await release.wait()
        return web.json_response(_vector())

    async with _serving(stuck) as url, aiohttp.ClientSession() as session:
        with pytest.raises(PrometheusUnavailable) as slow:
            await PrometheusClient(session, url, timeout=0.2).instant("up", AT)
        release.set()
        with pytest.raises(PrometheusUnavailable) as absent:
            await PrometheusClient(session, "http://127.0.0.1:9").instant("up", AT)
    assert "within 0.2s" in slow.value.detail
    assert "cannot reach Prometheus at 127.0.0.1:9" in absent.value.detail
