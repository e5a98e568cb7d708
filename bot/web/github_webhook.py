"""POST /webhooks/github: GitHub's `workflow_job` deliveries, the job events diagnostics read.

A GitHub webhook (organization or repository, event "Workflow jobs", secret GITHUB_WEBHOOK_SECRET)
posts here. Answers:
- 401 when `X-Hub-Signature-256` is missing or is not the HMAC-SHA256 of the body with the
  secret (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries);
  nothing is read or stored;
- 200 to `ping` (sent once, when the hook is created);
- 202 for a delivery recorded; 200 for one recorded before (a redelivery keeps its
  `X-GitHub-Delivery`), or for an event or action queuebot does not use;
- 400 with the reason for a body that is not a workflow_job delivery, 415 for a body neither JSON
  nor a form carrying `payload` (the hook's two content types), 413 above 1 MiB, 408 when the
  body is too slow, 404 while GITHUB_WEBHOOK_SECRET is not set, and 503 when the store cannot
  take it (GitHub does not send again by itself: the hook's Recent Deliveries can).
GitHub waits 10 seconds for an answer: this does nothing slow.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web
from pydantic import SecretStr, ValidationError

from bot.domain.clock import SYSTEM, Clock
from bot.domain.jobs import JobAction, WorkflowJobDelivery, job_event
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import Store, StoreError
from bot.telemetry.metrics import Metrics
from bot.web.bodies import SlowBody, read_body, slow_body_answer
from bot.web.grafana_webhook import MAX_BODY_BYTES, is_json

log = logging.getLogger(__name__)

HUB_SIGNATURE_HEADER = "X-Hub-Signature-256"
#: GitHub lets a delivery be sent again for 3 days; its id is remembered that long.
REDELIVERY_SECONDS = 3 * 86400.0
_FORM = "application/x-www-form-urlencoded"
#: How far ahead of queuebot's clock a job's time may be (clocks differ; a day is no skew).
FUTURE_SECONDS = 86400.0
_ACTIONS = {action.value for action in JobAction}


def _answer(code: int, **body: Any) -> web.Response:
    return web.json_response(body, status=code)


class GitHubWebhook:
    """aiohttp handler for POST /webhooks/github."""

    def __init__(
        self,
        store: Store,
        secret: SecretStr | None,
        jobs: JobsConfig,
        metrics: Metrics,
        clock: Clock = SYSTEM,
    ) -> None:
        self._store = store
        self._secret = secret
        self._jobs = jobs
        self._metrics = metrics
        self._clock = clock

    async def __call__(self, request: web.Request) -> web.Response:
        event = request.headers.get("X-GitHub-Event", "")
        response, outcome = await self._answer(request, event)
        shown = event if event in ("ping", "workflow_job") else "other"
        self._metrics.inc("queuebot_github_deliveries_total", event=shown, outcome=outcome)
        return response

    async def _answer(self, request: web.Request, event: str) -> tuple[web.Response, str]:
        if self._secret is None:
            return _answer(
                404,
                error="GitHub webhooks are off: set GITHUB_WEBHOOK_SECRET to the hook's secret",
            ), "off"
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            return _answer(413, error=f"body larger than {MAX_BODY_BYTES} bytes"), "too_large"
        try:
            body = await read_body(request)
        except web.HTTPRequestEntityTooLarge:
            return _answer(413, error=f"body larger than {MAX_BODY_BYTES} bytes"), "too_large"
        except SlowBody as exc:
            return slow_body_answer(exc), "too_slow"
        problem = self._unsigned(request.headers.get(HUB_SIGNATURE_HEADER, ""), body)
        if problem:
            log.warning("GitHub delivery refused from %s: %s", request.remote, problem)
            return _answer(401, error=f"unauthorized: {problem}"), "unauthorized"
        if event == "ping":
            return _answer(200, status="pong"), "ping"
        if event != "workflow_job":
            return _answer(200, status="ignored", reason=f"{event or 'no'} event"), "ignored"
        raw = self._payload(request.content_type, body)
        if raw is None:
            return _answer(
                415, error="the body must be JSON, or a form carrying it in `payload`"
            ), "not_json"
        return await self._workflow_job(raw, request.headers.get("X-GitHub-Delivery", ""))

    def _unsigned(self, header: str, body: bytes) -> str:
        """Why the delivery is not proved to come from the hook; empty when it is."""
        assert self._secret is not None
        scheme, _, given = header.strip().partition("=")
        if not header:
            return f"missing {HUB_SIGNATURE_HEADER} header"
        if scheme != "sha256" or not given:
            return f"{HUB_SIGNATURE_HEADER} is not sha256=<hex>"
        key = self._secret.get_secret_value().encode()
        expected = hmac.new(key, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(given.strip().lower().encode(), expected.encode()):
            return "signature does not match the body"
        return ""

    @staticmethod
    def _payload(content_type: str, body: bytes) -> bytes | None:
        if is_json(content_type):
            return body
        if content_type == _FORM:
            try:
                fields = parse_qs(body.decode("utf-8"), strict_parsing=True)
            except (UnicodeDecodeError, ValueError):
                return None
            values = fields.get("payload")
            return values[0].encode() if values and len(values) == 1 else None
        return None

    async def _workflow_job(self, raw: bytes, delivery: str) -> tuple[web.Response, str]:
        if not delivery or len(delivery) > 100:
            return _answer(400, error="missing or malformed X-GitHub-Delivery header"), "malformed"
        try:
            parsed = WorkflowJobDelivery.model_validate_json(raw)
        except ValidationError as exc:
            action = _action(exc)
            if action is not None and action not in _ACTIONS:
                # An action GitHub may add later; nothing queuebot reads.
                return _answer(200, status="ignored", reason=f"action {action}"), "ignored"
            details = [
                {"field": ".".join(str(p) for p in err["loc"]), "problem": err["msg"]}
                for err in exc.errors(include_url=False, include_input=False)[:10]
            ]
            return _answer(400, error="not a workflow_job delivery", details=details), "malformed"
        now = self._clock.now().timestamp()
        if ahead := _from_the_future(parsed, now):
            return _answer(400, error="not a workflow_job delivery", details=[ahead]), "malformed"
        event = job_event(parsed, self._jobs.runner_type)
        event = replace(event, counted=self._jobs.counts(event.runner_type, event.repository))
        try:
            recorded = await self._store.record_job(event, delivery, now + REDELIVERY_SECONDS)
        except StoreError as exc:
            log.error("GitHub delivery not stored: %s (delivery=%s)", exc, delivery)
            return (
                _answer(503, error="the store is unavailable; redeliver later", reason=exc.public),
                "unavailable",
            )
        if not recorded:
            return _answer(200, status="duplicate"), "duplicate"
        return _answer(202, status="recorded", job=event.job_id), "recorded"


def _from_the_future(parsed: WorkflowJobDelivery, now: float) -> dict[str, str] | None:
    """The first of a job's times more than FUTURE_SECONDS ahead of queuebot's clock: a job
    created in the year 9999 would never leave the store."""
    job = parsed.workflow_job
    for field in ("created_at", "started_at", "completed_at"):
        when = getattr(job, field)
        if when is not None and when.timestamp() > now + FUTURE_SECONDS:
            return {
                "field": f"workflow_job.{field}",
                "problem": f"{when:%Y-%m-%dT%H:%M:%SZ} is more than a day ahead of this clock",
            }
    return None


def _action(exc: ValidationError) -> str | None:
    """The `action` a refused body carries, when that is what was refused."""
    for err in exc.errors(include_url=False):
        if tuple(err["loc"]) == ("action",) and isinstance(err.get("input"), str):
            return str(err["input"])
    return None
