"""POST /webhooks/github: GitHub's `workflow_job` deliveries, the job events diagnostics read.

A GitHub webhook (organization or repository, event "Workflow jobs") or a GitHub App's own
webhook posts here, signed with its secret (`bot.web.github_signatures` says which secret may
speak for which organization). Answers:
- 401 when `X-Hub-Signature-256` is missing or is not the HMAC-SHA256 of the body with a secret
  that may speak for the organization the body names
  (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries); nothing
  is stored;
- 403 with the reason for a delivery of an organization queuebot does not watch, when it
  watches some (GITHUB_ORG, or the YAML file's `github.orgs`);
- 200 to `ping` (sent once, when the hook is created);
- 202 for a delivery recorded; 200 for one recorded before (a redelivery keeps its
  `X-GitHub-Delivery`), or for an event or action queuebot does not use;
- 400 with the reason for a body that is not a workflow_job delivery, 415 for a body neither JSON
  nor a form carrying `payload` (the hook's two content types), 413 above 1 MiB, 408 when the
  body is too slow, 404 while no webhook secret is set, and 503 when the store cannot
  take it (GitHub does not send again by itself: the hook's Recent Deliveries can).
GitHub waits 10 seconds for an answer: this does nothing slow.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web
from pydantic import ValidationError

from bot.domain.clock import SYSTEM, Clock
from bot.domain.jobs import JobAction, WorkflowJobDelivery, job_event
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import Store, StoreError
from bot.telemetry.metrics import Metrics
from bot.web.bodies import SlowBody, read_body, slow_body_answer
from bot.web.github_signatures import HUB_SIGNATURE_HEADER, HookSecrets, origin_of
from bot.web.grafana_webhook import MAX_BODY_BYTES, is_json

log = logging.getLogger(__name__)

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
        secrets: HookSecrets,
        jobs: JobsConfig,
        metrics: Metrics,
        clock: Clock = SYSTEM,
    ) -> None:
        self._store = store
        self._secrets = secrets
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
        if not self._secrets.enabled:
            return _answer(
                404,
                error="GitHub webhooks are off: set GITHUB_WEBHOOK_SECRET to the hook's secret"
                " (or an organization's own, or GITHUB_APP_WEBHOOK_SECRET)",
            ), "off"
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            return _answer(413, error=f"body larger than {MAX_BODY_BYTES} bytes"), "too_large"
        try:
            body = await read_body(request)
        except web.HTTPRequestEntityTooLarge:
            return _answer(413, error=f"body larger than {MAX_BODY_BYTES} bytes"), "too_large"
        except SlowBody as exc:
            return slow_body_answer(exc), "too_slow"
        # The JSON names whose the delivery is, and so which secret must have signed `body`.
        raw = self._payload(request.content_type, body)
        refused = self._secrets.refusal(request.headers.get(HUB_SIGNATURE_HEADER, ""), body, raw)
        if refused is not None:
            log.warning("GitHub delivery refused from %s: %s", request.remote, refused.error)
            return _answer(refused.status, error=refused.error), refused.outcome
        if event == "ping":
            return _answer(200, status="pong"), "ping"
        if event != "workflow_job":
            return _answer(200, status="ignored", reason=f"{event or 'no'} event"), "ignored"
        if raw is None:
            return _answer(
                415, error="the body must be JSON, or a form carrying it in `payload`"
            ), "not_json"
        return await self._workflow_job(raw, request.headers.get("X-GitHub-Delivery", ""))

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
        if self._secrets.watched and not _one_owner(parsed, raw):
            # The account whose secret verified it must be the one whose jobs it feeds.
            problem = {"field": "repository.full_name", "problem": "names another owner"}
            return _answer(400, error="not a workflow_job delivery", details=[problem]), "malformed"
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


def _one_owner(parsed: WorkflowJobDelivery, raw: bytes) -> bool:
    """Whether the job's repository is the account the signature was checked for."""
    origin = origin_of(raw)
    owner = parsed.repository.full_name.split("/", 1)[0]
    return origin is not None and (origin.account or "").casefold() == owner.casefold()


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
