"""The Grafana / Alertmanager webhook receiver: authenticate, parse, hand over, answer fast.

Answers: 202 once the notification is stored; 401 for missing or wrong credentials; 415 for a
body that is not declared JSON (a cross-site form post is text/plain, and Grafana and
Alertmanager always send application/json); 400 with a JSON reason for a body that is not a
Grafana (version "1") or Alertmanager (version "4") webhook; 413 above 1 MiB; 503 when the store
cannot take it (Grafana sends it again at the next flush).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import logging
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from pydantic import SecretStr, ValidationError

from bot.domain.alerts import NAMED_VALUE_KEYS
from bot.domain.clock import SYSTEM, Clock
from bot.domain.notifications import TimeOutOfRange, parse_webhook
from bot.incidents.service import IncidentService
from bot.store import StoreError
from bot.telemetry.metrics import Metrics
from bot.web.bodies import SlowBody, read_body, slow_body_answer

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024
SIGNATURE_HEADER = "X-Grafana-Alerting-Signature"
#: Grafana signs `<unix seconds>:<body>` when a timestamp header is configured; older ones are
#: refused so a captured request cannot be replayed later.
TIMESTAMP_WINDOW_SECONDS = 300


class Unauthorized(Exception):
    """The request did not prove it comes from the configured Grafana."""


@dataclass(frozen=True)
class WebhookAuth:
    """What a webhook request must carry (QUEUEBOT_WEBHOOK_TOKEN, QUEUEBOT_WEBHOOK_HMAC_*)."""

    token: SecretStr | None = None
    hmac_secret: SecretStr | None = None
    timestamp_header: str | None = None

    @property
    def enabled(self) -> bool:
        return self.token is not None or self.hmac_secret is not None

    def check(self, headers: Any, body: bytes, now: float) -> None:
        """Raises Unauthorized with a reason that names what is wrong, never a secret; `now`
        is this machine's Unix seconds, for the age of a signed timestamp."""
        if self.token is not None:
            self._check_token(headers.get("Authorization", ""))
        if self.hmac_secret is not None:
            self._check_signature(headers, body, now)

    def _check_token(self, header: str) -> None:
        assert self.token is not None
        scheme, _, credentials = header.strip().partition(" ")
        if not credentials:
            raise Unauthorized(
                "missing credentials: send Authorization: Bearer <token> or Basic auth"
            )
        if scheme.lower() == "bearer":
            given = credentials.strip()
        elif scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                raise Unauthorized("malformed Basic credentials") from None
            given = decoded.partition(":")[2]
        else:
            # The scheme is not echoed: a token pasted into Grafana's scheme field would leak.
            raise Unauthorized("unsupported Authorization scheme: use Bearer or Basic")
        expected = self.token.get_secret_value()
        if not hmac.compare_digest(given.encode(), expected.encode()):
            raise Unauthorized("wrong credentials")

    def _check_signature(self, headers: Any, body: bytes, now: float) -> None:
        assert self.hmac_secret is not None
        signature = headers.get(SIGNATURE_HEADER, "").strip().lower()
        if not signature:
            raise Unauthorized(f"missing {SIGNATURE_HEADER} header")
        signed = body
        if self.timestamp_header:
            stamp = headers.get(self.timestamp_header, "").strip()
            if not stamp:
                raise Unauthorized(f"missing {self.timestamp_header} header")
            # Unix seconds have at most a dozen digits; longer is garbage (and would overflow).
            if not stamp.isdigit() or len(stamp) > 12:
                raise Unauthorized(f"{self.timestamp_header} is not unix seconds")
            seconds = int(stamp)
            if abs(now - seconds) > TIMESTAMP_WINDOW_SECONDS:
                raise Unauthorized(f"{self.timestamp_header} is outside the 5-minute window")
            signed = stamp.encode() + b":" + body
        key = self.hmac_secret.get_secret_value().encode()
        expected = hmac.new(key, signed, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            raise Unauthorized("signature does not match the body")


_REJECTIONS = {
    408: "too_slow",
    401: "unauthorized",
    400: "malformed",
    413: "too_large",
    415: "not_json",
    503: "store_unavailable",
}


def is_json(content_type: str) -> bool:
    """application/json, or a JSON-based type such as application/vnd.x+json (RFC 6839), with
    or without parameters."""
    media_type = content_type.partition(";")[0]
    kind, _, subtype = media_type.strip().lower().partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


def _error(status: int, error: str, **extra: Any) -> web.Response:
    return web.json_response({"error": error, **extra}, status=status)


class WebhookHandler:
    """aiohttp handler for POST /webhooks/grafana."""

    def __init__(
        self,
        service: IncidentService,
        auth: WebhookAuth,
        metrics: Metrics,
        clock: Clock = SYSTEM,
        value_keys: frozenset[str] = NAMED_VALUE_KEYS,
    ) -> None:
        """`value_keys`: the names under which an annotation's number is a value (queuebot's
        own and the YAML file's `alert_values:`), so that a change of one is seen."""
        self._service = service
        self._auth = auth
        self._metrics = metrics
        self._clock = clock
        self._value_keys = value_keys

    async def __call__(self, request: web.Request) -> web.Response:
        response = await self._answer(request)
        self._metrics.inc("queuebot_webhook_requests_total", code=str(response.status))
        if response.status >= 400:
            reason = _REJECTIONS.get(response.status, "other")
            self._metrics.inc("queuebot_notifications_rejected_total", reason=reason)
        return response

    async def _answer(self, request: web.Request) -> web.Response:
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            return _error(413, f"body larger than {MAX_BODY_BYTES} bytes")
        try:
            body = await read_body(request)
        except web.HTTPRequestEntityTooLarge:
            return _error(413, f"body larger than {MAX_BODY_BYTES} bytes")
        except SlowBody as exc:
            return slow_body_answer(exc)
        if not is_json(request.content_type):
            return _error(415, "the body must be sent as Content-Type: application/json")
        try:
            self._auth.check(request.headers, body, self._clock.time())
        except Unauthorized as exc:
            log.warning("webhook refused from %s: %s", request.remote, exc)
            return web.json_response(
                {"error": f"unauthorized: {exc}"},
                status=401,
                headers={"WWW-Authenticate": 'Bearer realm="queuebot"'},
            )
        try:
            # A group of thousands of alerts takes a while to parse: not on the event loop.
            group = await asyncio.to_thread(parse_webhook, body, self._value_keys)
        except ValidationError as exc:
            details = [
                {"field": ".".join(str(p) for p in err["loc"]), "problem": err["msg"]}
                for err in exc.errors(include_url=False, include_input=False)[:10]
            ]
            return _error(
                400,
                "not a Grafana (version 1) or Alertmanager (version 4) webhook body",
                details=details,
            )
        except TimeOutOfRange as exc:
            return _error(
                400,
                "a time in the body is out of range",
                details=[{"field": exc.field, "problem": exc.problem}],
            )
        try:
            decision, incident_id = await self._service.accept(group, body.decode("utf-8"))
        except StoreError as exc:
            log.error("webhook not stored: %s (group_key=%r)", exc, group.group_key)
            return _error(
                503, "the incident store is unavailable; send again later", reason=exc.public
            )
        return web.json_response(
            {"status": "accepted", "incident": incident_id, "outcome": decision.reason},
            status=202,
        )
