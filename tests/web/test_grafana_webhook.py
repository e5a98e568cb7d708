"""POST /webhooks/grafana: authentication, malformed and oversized bodies."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from testkit.harness import running_stack, webhook_headers
from testkit.payloads import reference

TOKEN = "webhook-shared-token"
HMAC_SECRET = "webhook-hmac-secret"
TS_HEADER = "X-Grafana-Alerting-Signature-Timestamp"


def _body() -> bytes:
    return json.dumps(reference()).encode()


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _signature(body: bytes, timestamp: str | None = None, secret: str = HMAC_SECRET) -> str:
    signed = body if timestamp is None else timestamp.encode() + b":" + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


class TestToken:
    @pytest.mark.parametrize(
        "authorization",
        [f"Bearer {TOKEN}", _basic("grafana", TOKEN), _basic("", TOKEN)],
    )
    async def test_accepted(self, tmp_path: Path, authorization: str) -> None:
        """The token is accepted as a Bearer credential or as the Basic password."""
        async with running_stack(tmp_path, QUEUEBOT_WEBHOOK_TOKEN=TOKEN) as stack:
            answer = await stack.webhook(_body(), {"Authorization": authorization})
            assert answer.status == 202
            await stack.parents(1)

    @pytest.mark.parametrize(
        ("authorization", "reason"),
        [
            (None, "missing credentials"),
            ("Bearer wrong-token", "wrong credentials"),
            (_basic("grafana", "wrong"), "wrong credentials"),
            ("Basic !!!not-base64", "malformed Basic credentials"),
            (f"Token {TOKEN}", "unsupported Authorization scheme"),
        ],
    )
    async def test_refused(self, tmp_path: Path, authorization: str | None, reason: str) -> None:
        """Missing or wrong credentials get 401 with the reason, and nothing is posted."""
        headers = {"Authorization": authorization} if authorization else {}
        async with running_stack(tmp_path, QUEUEBOT_WEBHOOK_TOKEN=TOKEN) as stack:
            answer = await stack.webhook(_body(), headers)
            assert answer.status == 401
            assert reason in answer.body["error"]
            assert TOKEN not in json.dumps(answer.body)
            await stack.settled()
            assert stack.sandbox.messages() == []


class TestNoAuth:
    async def test_explicitly_open_webhook_takes_an_alert_without_credentials(
        self, tmp_path: Path
    ) -> None:
        """QUEUEBOT_WEBHOOK_AUTH=none is the operator's choice: no credential is asked for."""
        async with running_stack(tmp_path, QUEUEBOT_WEBHOOK_AUTH="none") as stack:
            assert stack.token is None
            assert (await stack.webhook(_body())).status == 202
            await stack.parents(1)

    @pytest.mark.parametrize(
        "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
    )
    async def test_a_cross_site_form_post_is_415(self, tmp_path: Path, content_type: str) -> None:
        """A body not declared JSON (what a browser form on another site can send) gets 415,
        even on an open webhook, and nothing is posted."""
        async with running_stack(tmp_path, QUEUEBOT_WEBHOOK_AUTH="none") as stack:
            answer = await stack.webhook(_body(), {"Content-Type": content_type})
            assert answer.status == 415
            assert "application/json" in answer.body["error"]
            await stack.settled()
            assert stack.sandbox.messages() == []

    @pytest.mark.parametrize(
        "content_type", ["application/json; charset=utf-8", "application/vnd.grafana+json"]
    )
    async def test_json_with_parameters_is_taken(self, tmp_path: Path, content_type: str) -> None:
        async with running_stack(tmp_path) as stack:
            answer = await stack.webhook(_body(), {"Content-Type": content_type})
            assert answer.status == 202


class TestSignature:
    async def test_signed_body_accepted(self, tmp_path: Path) -> None:
        """Grafana's HMAC-SHA256 signature of the body is verified."""
        body = _body()
        async with running_stack(tmp_path, QUEUEBOT_WEBHOOK_HMAC_SECRET=HMAC_SECRET) as stack:
            answer = await stack.webhook(body, {"X-Grafana-Alerting-Signature": _signature(body)})
            assert answer.status == 202

    async def test_signed_with_timestamp_accepted(self, tmp_path: Path) -> None:
        """With a timestamp header, "<ts>:<body>" is what is signed."""
        body, now = _body(), str(int(time.time()))
        env = {
            "QUEUEBOT_WEBHOOK_HMAC_SECRET": HMAC_SECRET,
            "QUEUEBOT_WEBHOOK_HMAC_TIMESTAMP_HEADER": TS_HEADER,
        }
        async with running_stack(tmp_path, **env) as stack:
            headers = {"X-Grafana-Alerting-Signature": _signature(body, now), TS_HEADER: now}
            assert (await stack.webhook(body, headers)).status == 202

    @pytest.mark.parametrize(
        ("case", "reason"),
        [
            ("missing", "missing X-Grafana-Alerting-Signature"),
            ("wrong-secret", "signature does not match"),
            ("tampered", "signature does not match"),
            ("stale", "outside the 5-minute window"),
            ("future", "outside the 5-minute window"),
            ("no-timestamp", f"missing {TS_HEADER}"),
            ("bad-timestamp", "not unix seconds"),
        ],
    )
    async def test_refused(self, tmp_path: Path, case: str, reason: str) -> None:
        """Each way a signature can be wrong is refused with 401 and its reason."""
        body = _body()
        stamp = {"stale": time.time() - 600, "future": time.time() + 600}.get(case, time.time())
        now = str(int(stamp))
        headers = {"X-Grafana-Alerting-Signature": _signature(body, now), TS_HEADER: now}
        if case == "missing":
            del headers["X-Grafana-Alerting-Signature"]
        elif case == "wrong-secret":
            headers["X-Grafana-Alerting-Signature"] = _signature(body, now, "other-secret")
        elif case == "tampered":
            body = body.replace(b"114", b"115")
        elif case == "no-timestamp":
            del headers[TS_HEADER]
        elif case == "bad-timestamp":
            headers[TS_HEADER] = "yesterday"
        env = {
            "QUEUEBOT_WEBHOOK_HMAC_SECRET": HMAC_SECRET,
            "QUEUEBOT_WEBHOOK_HMAC_TIMESTAMP_HEADER": TS_HEADER,
        }
        async with running_stack(tmp_path, **env) as stack:
            answer = await stack.webhook(body, headers)
            assert answer.status == 401
            assert reason in answer.body["error"]

    async def test_token_and_signature_both_required(self, tmp_path: Path) -> None:
        """With both configured, a right signature without the token is still refused."""
        body = _body()
        env = {"QUEUEBOT_WEBHOOK_TOKEN": TOKEN, "QUEUEBOT_WEBHOOK_HMAC_SECRET": HMAC_SECRET}
        async with running_stack(tmp_path, **env) as stack:
            signed = {"X-Grafana-Alerting-Signature": _signature(body)}
            assert (await stack.webhook(body, signed)).status == 401
            both = signed | {"Authorization": f"Bearer {TOKEN}"}
            assert (await stack.webhook(body, both)).status == 202


class TestBadBodies:
    @pytest.mark.parametrize(
        ("body", "field"),
        [
            (b"{not json", ""),
            (b"[]", ""),
            (json.dumps({"version": "2", "groupKey": "x"}).encode(), ""),
            (json.dumps(reference() | {"alerts": []}).encode(), "alerts"),
            (json.dumps(reference() | {"status": "maybe"}).encode(), "status"),
            (json.dumps(reference() | {"groupKey": ""}).encode(), "groupKey"),
            ('{"version": "1", "x": "\xff"}'.encode("latin-1"), ""),
        ],
    )
    async def test_malformed_is_400_with_reason(
        self, tmp_path: Path, body: bytes, field: str
    ) -> None:
        """A body that is not a webhook gets 400 and a JSON reason naming the field."""
        async with running_stack(tmp_path) as stack:
            answer = await stack.webhook(body)
            assert answer.status == 400
            assert "webhook body" in answer.body["error"]
            details = answer.body["details"]
            assert details and all(d["problem"] for d in details)
            if field:
                assert any(field in d["field"] for d in details)
            assert stack.sandbox.messages() == []

    async def test_status_must_match_the_alerts(self, tmp_path: Path) -> None:
        """A group said to be resolved while an alert in it fires is refused, saying why."""
        async with running_stack(tmp_path) as stack:
            answer = await stack.webhook(reference() | {"status": "resolved"})
            assert answer.status == 400
            (detail,) = answer.body["details"]
            assert "status is 'resolved' but some alerts are firing" in detail["problem"]

    async def test_non_finite_value_is_refused(self, tmp_path: Path) -> None:
        """NaN or Infinity in `values` (not JSON Grafana can send) is named and refused."""
        raw = json.dumps(reference()).replace('"max_queue_size": 14', '"max_queue_size": NaN')
        async with running_stack(tmp_path) as stack:
            answer = await stack.webhook(raw.encode())
            assert answer.status == 400
            assert any("values.max_queue_size" in d["field"] for d in answer.body["details"])

    async def test_bad_alert_field_is_named(self, tmp_path: Path) -> None:
        """A wrong type deep in an alert is reported with its path."""
        body = reference()
        body["alerts"][0]["startsAt"] = "last tuesday"
        async with running_stack(tmp_path) as stack:
            answer = await stack.webhook(body)
            assert answer.status == 400
            assert any("alerts.0.startsAt" in d["field"] for d in answer.body["details"])

    async def test_oversized_is_413(self, tmp_path: Path) -> None:
        """A body over 1 MiB is refused with 413 and the bot keeps serving."""
        body = reference()
        body["alerts"][0]["annotations"]["description"] = "x" * (1024 * 1024)
        async with running_stack(tmp_path) as stack:
            answer = await stack.webhook(body)
            assert answer.status == 413
            assert (await stack.webhook(reference())).status == 202
            await stack.parents(1)

    async def test_oversized_chunked_is_413(self, tmp_path: Path) -> None:
        """A body over 1 MiB sent without Content-Length is cut off with 413 too."""

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(20):
                yield b" " * 65536

        async with (
            running_stack(tmp_path) as stack,
            stack.http.post(
                f"{stack.url}/webhooks/grafana", data=chunks(), headers=webhook_headers()
            ) as response,
        ):
            assert response.status == 413
            assert "larger than" in (await response.json())["error"]

    async def test_health(self, tmp_path: Path) -> None:
        """GET /healthz answers while the bot runs."""
        async with running_stack(tmp_path) as stack, stack.http.get(f"{stack.url}/healthz") as r:
            assert r.status == 200
            assert (await r.json())["status"] == "ok"


class TestMetrics:
    async def test_metrics_count_what_happened(self, tmp_path: Path) -> None:
        """GET /metrics counts webhook answers, notifications and Slack deliveries."""
        async with running_stack(tmp_path) as stack:
            await stack.webhook(reference())
            await stack.webhook(reference())
            await stack.webhook(b"{}")
            await stack.parents(1)
            await stack.settled()
            async with stack.http.get(f"{stack.url}/metrics") as response:
                assert response.status == 200
                text = await response.text()
        assert 'queuebot_webhook_requests_total{code="202"} 2' in text
        assert 'queuebot_webhook_requests_total{code="400"} 1' in text
        assert 'queuebot_notifications_total{action="ignore"} 1' in text
        assert 'queuebot_slack_deliveries_total{kind="post_parent",result="done"} 1' in text
        assert "queuebot_incidents_awaiting_delivery 0" in text

    async def test_metrics_show_rejections_slack_calls_429s_and_latency(
        self, tmp_path: Path
    ) -> None:
        """Rejections by reason, Slack calls by outcome, 429s, the outbox and delivery time."""
        async with running_stack(tmp_path, QUEUEBOT_WEBHOOK_TOKEN="t0ken") as stack:
            await stack.webhook(reference(), {"Authorization": "Bearer wrong"})
            await stack.webhook(b"[]", {"Authorization": "Bearer t0ken"})
            stack.sandbox.faults.add("chat.postMessage", status=429, retry_after=1)
            await stack.webhook(reference(), {"Authorization": "Bearer t0ken"})
            await stack.parents(1, timeout=10)
            await stack.settled(timeout=10)
            async with stack.http.get(f"{stack.url}/metrics") as response:
                text = await response.text()
        assert 'queuebot_notifications_rejected_total{reason="unauthorized"} 1' in text
        assert 'queuebot_notifications_rejected_total{reason="malformed"} 1' in text
        assert 'queuebot_slack_calls_total{method="chat.postMessage",outcome="ok"} 1' in text
        assert 'queuebot_slack_rate_limited_total{method="chat.postMessage"} 1' in text
        assert "queuebot_outbox_pending 0" in text
        assert "queuebot_outbox_oldest_age_seconds 0" in text
        assert 'queuebot_delivery_latency_seconds_count{kind="post_parent"} 1' in text
        assert 'queuebot_delivery_latency_seconds_bucket{kind="post_parent",le="+Inf"} 1' in text
