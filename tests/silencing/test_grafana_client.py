"""Grafana's client (bot.grafana): what each answer of the silence API means to the bot.

Against a real Alertmanager at Grafana's path, the local Grafana silence API, and small local
servers that answer the way a misconfigured or stuck Grafana does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.domain.silences import Matcher
from bot.silencing.grafana import (
    API_PREFIX,
    GrafanaClient,
    GrafanaDenied,
    GrafanaRejected,
    GrafanaUnavailable,
    GrafanaUnreachable,
    SilenceNotFound,
)
from queuebot_lab.sandbox.grafana import GrafanaSandbox
from testkit.alertmanager import Alertmanager

MATCHERS = (Matcher(name="__alert_rule_uid__", value="dez2aomgvru2oe"),)
TOKEN = "glsa_t"
UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"


@asynccontextmanager
async def _client(url: str, token: str = TOKEN, limit: float = 5) -> AsyncIterator[GrafanaClient]:
    async with aiohttp.ClientSession() as session:
        yield GrafanaClient(session, url, token, timeout=limit)


@asynccontextmanager
async def _grafana_answering(handler: Callable[[web.Request], object]) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_route("*", API_PREFIX + "/{tail:.*}", handler)  # type: ignore[arg-type]
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


def _hours(n: float) -> datetime:
    return datetime.now(UTC) + timedelta(hours=n)


@pytest.mark.integration
class TestAgainstAlertmanager:
    async def test_create_read_and_expire(self, alertmanager: Alertmanager) -> None:
        """200 on create is success; the silence reads back active, then expired."""
        async with _client(alertmanager.url) as grafana:
            silence_id = await grafana.create_silence(
                MATCHERS, datetime.now(UTC), _hours(1), "alice (Slack U1)", "on it"
            )
            found = await grafana.get_silence(silence_id)
            assert found.active and found.created_by == "alice (Slack U1)"
            await grafana.expire_silence(silence_id)
            assert not (await grafana.get_silence(silence_id)).active

    async def test_unknown_silence_is_not_found_despite_the_500(
        self, alertmanager: Alertmanager
    ) -> None:
        """Alertmanager 0.25 answers a DELETE of an unknown silence with 500 "silence not found"."""
        async with _client(alertmanager.url) as grafana:
            with pytest.raises(SilenceNotFound):
                await grafana.expire_silence(UNKNOWN_ID)

    async def test_a_refusal_carries_alertmanagers_message(
        self, alertmanager: Alertmanager
    ) -> None:
        """An end before the start is refused with Alertmanager's own words."""
        async with _client(alertmanager.url) as grafana:
            with pytest.raises(GrafanaRejected) as raised:
                await grafana.create_silence(MATCHERS, _hours(2), _hours(1), "a", "b")
        assert raised.value.status == 400
        assert "start time must be before end time" in raised.value.detail

    async def test_alerts_filter_on_the_matchers(self, alertmanager: Alertmanager) -> None:
        """Only alerts the matchers select are listed, silenced ones included."""
        await alertmanager.push_alert({"__alert_rule_uid__": "dez2aomgvru2oe", "type": "x"})
        await alertmanager.push_alert({"__alert_rule_uid__": "other", "type": "x"})
        async with _client(alertmanager.url) as grafana:
            await grafana.create_silence(MATCHERS, datetime.now(UTC), _hours(1), "a", "b")
            (alert,) = await grafana.alerts(MATCHERS)
        assert alert.state == "suppressed" and len(alert.silenced_by) == 1


class TestAgainstGrafanasAnswers:
    async def test_created_202_is_success_and_unknown_delete_is_not_found(self) -> None:
        """Grafana answers 202 to a create and 404 to expiring an unknown silence."""
        async with (
            GrafanaSandbox(token="glsa_t") as grafana_api,
            _client(grafana_api.url) as grafana,
        ):
            assert await grafana.create_silence(MATCHERS, datetime.now(UTC), _hours(1), "a", "b")
            with pytest.raises(SilenceNotFound):
                await grafana.expire_silence(UNKNOWN_ID)

    async def test_a_wrong_token_is_denied_401(self) -> None:
        async with (
            GrafanaSandbox(token="glsa_right") as grafana_api,
            _client(grafana_api.url, token="glsa_wrong") as grafana,
        ):
            with pytest.raises(GrafanaDenied) as raised:
                await grafana.create_silence(MATCHERS, datetime.now(UTC), _hours(1), "a", "b")
        assert raised.value.status == 401 and "glsa_wrong" not in str(raised.value)

    async def test_a_missing_permission_is_denied_403_with_grafanas_message(self) -> None:
        async def forbidden(request: web.Request) -> web.Response:
            return web.json_response(
                {"message": "user is not authorized to create rule-specific silences"}, status=403
            )

        async with _grafana_answering(forbidden) as url, _client(url) as grafana:
            with pytest.raises(GrafanaDenied) as raised:
                await grafana.create_silence(MATCHERS, datetime.now(UTC), _hours(1), "a", "b")
        assert raised.value.status == 403
        assert "not authorized to create rule-specific silences" in raised.value.detail

    async def test_not_ready_409_means_try_again(self) -> None:
        async def not_ready(request: web.Request) -> web.Response:
            return web.json_response({"message": "Alertmanager is not initialized yet"}, status=409)

        async with _grafana_answering(not_ready) as url, _client(url) as grafana:
            with pytest.raises(GrafanaUnavailable):
                await grafana.create_silence(MATCHERS, datetime.now(UTC), _hours(1), "a", "b")

    async def test_a_stuck_grafana_times_out(self) -> None:
        """No answer within the client's timeout is unavailability, not a hang."""
        release = asyncio.Event()

        async def stuck(request: web.Request) -> web.Response:
            await release.wait()
            return web.json_response({})

        async with _grafana_answering(stuck) as url, _client(url, limit=0.3) as grafana:
            with pytest.raises(GrafanaUnavailable) as raised:
                await grafana.create_silence(MATCHERS, datetime.now(UTC), _hours(1), "a", "b")
            release.set()
        assert "within 0.3s" in raised.value.detail

    async def test_nothing_listening_is_unreachable_and_names_no_credentials(self) -> None:
        """No connection: certainly nothing done; the message names the host, not the URL."""
        async with _client("http://admin:hunter2@127.0.0.1:9/grafana") as grafana:
            with pytest.raises(GrafanaUnreachable) as raised:
                await grafana.expire_silence(UNKNOWN_ID)
        assert "cannot reach Grafana at 127.0.0.1:9" in raised.value.detail
        assert "hunter2" not in str(raised.value)

    async def test_an_answer_that_is_not_json_is_refused_clearly(self) -> None:
        """A login page answering 200 in Grafana's place is an error, not a crash."""

        async def login_page(request: web.Request) -> web.Response:
            return web.Response(text="<html>Sign in</html>", content_type="text/html")

        async with _grafana_answering(login_page) as url, _client(url) as grafana:
            with pytest.raises(GrafanaRejected) as raised:
                await grafana.alerts(MATCHERS)
        assert "not JSON" in raised.value.detail

    async def test_a_create_answer_without_an_id_is_refused(self) -> None:
        async def no_id(request: web.Request) -> web.Response:
            return web.json_response({"status": "ok"})

        async with _grafana_answering(no_id) as url, _client(url) as grafana:
            with pytest.raises(GrafanaRejected):
                await grafana.create_silence(MATCHERS, datetime.now(UTC), _hours(1), "a", "b")
