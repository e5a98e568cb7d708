"""The OpenAPI 3.1 description of queuebot's HTTP interface for Grafana, GitHub and operators.

It covers `POST /webhooks/grafana`, `POST /webhooks/github`, `GET /healthz`, `GET /metrics` and
`GET /openapi.json` (this document). The webhooks' request body schemas are generated from the
pydantic models that parse them (`bot.domain.notifications.WEBHOOK_ADAPTER`,
`bot.domain.jobs.WorkflowJobDelivery`), so the document cannot drift from the parsers; the
answers listed are exactly those `bot.web.grafana_webhook.WebhookHandler` gives. `/slack/events`
is Slack's to call and is described by Slack's own documentation, not here."""

from __future__ import annotations

import functools
import json
from typing import Any

from aiohttp import web

import bot
from bot.domain.jobs import WorkflowJobDelivery
from bot.domain.notifications import WEBHOOK_ADAPTER
from bot.web import paths
from bot.web.grafana_webhook import MAX_BODY_BYTES, SIGNATURE_HEADER, TIMESTAMP_WINDOW_SECONDS

_SCHEMAS = "#/components/schemas/"
#: pydantic names components after the classes; the private base class deserves a public name.
_RENAMED = {"_WebhookAlert": "AlertmanagerAlert"}

_WEBHOOK_DESCRIPTION = f"""\
Grafana's webhook contact point (body `version: "1"`) or Prometheus Alertmanager's
`webhook_configs` receiver (body `version: "4"`). One notification is one alert group;
queuebot keeps one incident per `groupKey`.

Checked in this order:

1. Size: a `Content-Length` above {MAX_BODY_BYTES} bytes, or a body that grows past it
   while being read, is refused with 413 before anything else.
2. Media type: the body must be declared JSON (`application/json`, with or without
   parameters, or a `+json` type); anything else gets 415. A browser form on another site
   can only send `text/plain`, form or multipart bodies.
3. Credentials, when configured: with `QUEUEBOT_WEBHOOK_TOKEN` the request must carry it as
   `Authorization: Bearer <token>` or as the password of Basic auth (any user name); with
   `QUEUEBOT_WEBHOOK_HMAC_SECRET` the `{SIGNATURE_HEADER}` header must hold the hex
   HMAC-SHA256 of the body (of `<unix seconds>:<body>` when
   `QUEUEBOT_WEBHOOK_HMAC_TIMESTAMP_HEADER` names a timestamp header, which must then be
   within {TIMESTAMP_WINDOW_SECONDS // 60} minutes of the server's clock). With both set,
   both are required. The server does not start with neither, unless the operator opts out
   with `QUEUEBOT_WEBHOOK_AUTH=none` (then anyone who reaches the route may post).
4. Body: parsed as JSON. Besides the schema, a group's `status` must be `firing` exactly
   when one of its alerts is firing.
5. Storage: 202 once the notification is stored; Slack is updated afterwards.
"""


def _renamed(node: Any) -> Any:
    """`node` with every component reference following `_RENAMED`."""
    if isinstance(node, dict):
        return {key: _renamed(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_renamed(value) for value in node]
    if isinstance(node, str) and node.startswith(_SCHEMAS):
        name = node.removeprefix(_SCHEMAS)
        return _SCHEMAS + _RENAMED.get(name, name)
    return node


def _webhook_schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    """The body's schema (a reference) and the component schemas it uses."""
    generated = WEBHOOK_ADAPTER.json_schema(mode="validation", ref_template=_SCHEMAS + "{model}")
    defs = generated.pop("$defs", {})
    components = {_RENAMED.get(name, name): _renamed(schema) for name, schema in defs.items()}
    components["WebhookBody"] = {
        "title": "WebhookBody",
        "description": 'A Grafana (`version: "1"`) or Alertmanager (`version: "4"`) webhook body.',
        **_renamed(generated),
    }
    return {"$ref": _SCHEMAS + "WebhookBody"}, components


def _json(schema: dict[str, Any], description: str, **extra: Any) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": schema}},
        **extra,
    }


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _SCHEMAS + name}


_ERROR = {
    "type": "object",
    "properties": {
        "error": {"type": "string", "description": "What is wrong, in words."},
        "reason": {
            "type": "string",
            "description": "With 503: why the store could not take it (busy, unreachable).",
        },
    },
    "required": ["error"],
}

_ACCEPTED = {
    "type": "object",
    "properties": {
        "status": {"const": "accepted"},
        "incident": {
            "type": ["integer", "null"],
            "description": "The incident the notification belongs to (null: it opened none).",
        },
        "outcome": {
            "type": "string",
            "description": "What the notification did, e.g. `first firing` or `resolved`.",
        },
    },
    "required": ["status", "incident", "outcome"],
}

_DETAILS: dict[str, Any] = {
    "type": "array",
    "maxItems": 10,
    "description": "The first problems found (at most 10).",
    "items": {
        "type": "object",
        "properties": {
            "field": {
                "type": "string",
                "description": "Dotted path of the field, e.g. `alerts.0.startsAt`; "
                "empty when the body as a whole is at fault.",
            },
            "problem": {"type": "string"},
        },
        "required": ["field", "problem"],
    },
}

_REFUSED_BODY = {
    "type": "object",
    "properties": {"error": {"type": "string"}, "details": _DETAILS},
    "required": ["error", "details"],
}

_HEALTH = {
    "type": "object",
    "properties": {"status": {"const": "ok"}},
    "required": ["status"],
}


_GITHUB_ANSWER = {
    "type": "object",
    "properties": {
        "status": {"enum": ["recorded", "duplicate", "ignored", "pong"]},
        "job": {"type": "integer", "description": "The job the delivery was about."},
        "reason": {"type": "string"},
    },
    "required": ["status"],
}

_GITHUB_REFUSED = {
    "type": "object",
    "properties": {"error": {"type": "string"}, "details": _DETAILS},
    "required": ["error"],
}


def _github_schemas() -> dict[str, Any]:
    """The component schemas the workflow_job delivery's schema refers to."""
    generated = WorkflowJobDelivery.model_json_schema(
        mode="validation", ref_template=_SCHEMAS + "{model}"
    )
    return dict(generated.get("$defs", {}))


def _github_operation() -> dict[str, Any]:
    body = WorkflowJobDelivery.model_json_schema(
        mode="validation", ref_template=_SCHEMAS + "{model}"
    )
    return {
        "operationId": "receiveGitHubDelivery",
        "summary": "Receive one GitHub webhook delivery (workflow_job events)",
        "description": (
            "An organization or repository webhook with the event *Workflow jobs* and the"
            " secret in GITHUB_WEBHOOK_SECRET. `X-Hub-Signature-256` must be `sha256=` and the"
            " hex HMAC-SHA256 of the body with the secret; `X-GitHub-Delivery` identifies the"
            " delivery (recorded once); `X-GitHub-Event` is `workflow_job` (or `ping`, once;"
            " any other is acknowledged and ignored). The body is JSON, or a form carrying it"
            " in `payload`. The secret is that of the organization whose jobs the body would"
            " feed (`GITHUB_WEBHOOK_SECRET_<ORG>`, else GITHUB_WEBHOOK_SECRET), or the GitHub"
            " App's (GITHUB_APP_WEBHOOK_SECRET) for a body carrying `installation`. Answers 404"
            " while no webhook secret is set."
        ),
        "tags": ["jobs"],
        "parameters": [
            {"name": name, "in": "header", "required": False, "schema": {"type": "string"}}
            for name in ("X-Hub-Signature-256", "X-GitHub-Event", "X-GitHub-Delivery")
        ],
        "requestBody": {
            "required": True,
            "description": f"At most {MAX_BODY_BYTES} bytes.",
            "content": {
                "application/json": {"schema": {k: v for k, v in body.items() if k != "$defs"}}
            },
        },
        "responses": {
            "200": _json(_GITHUB_ANSWER, "A ping, a delivery recorded before, or ignored."),
            "202": _json(_GITHUB_ANSWER, "Recorded."),
            "400": _json(_GITHUB_REFUSED, "Not a workflow_job delivery, with the reason."),
            "401": _json(_ref("Error"), "Unsigned, or the signature does not match the body."),
            "403": _json(_ref("Error"), "A delivery of an organization queuebot does not watch."),
            "404": _json(_ref("Error"), "No GitHub webhook secret is set."),
            "408": _json(_ref("Error"), "The body did not arrive in time."),
            "413": _json(_ref("Error"), f"The body is over {MAX_BODY_BYTES} bytes."),
            "415": _json(_ref("Error"), "Neither JSON nor a form carrying it in `payload`."),
            "503": _json(_ref("Error"), "The store cannot take it; redeliver later."),
        },
    }


def _build() -> dict[str, Any]:
    body, webhook_schemas = _webhook_schemas()
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
        "info": {
            "title": "queuebot",
            "version": bot.__version__,
            "summary": "Grafana and Alertmanager alert webhooks in, Slack incidents out.",
            "description": (
                "The routes Grafana (or Alertmanager) and the bot's operators call. Slack's"
                " requests go to `/slack/events`, which Slack's own documentation describes."
            ),
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "paths": {
            paths.GRAFANA_WEBHOOK_PATH: {
                "post": {
                    "operationId": "receiveWebhook",
                    "summary": "Receive one Grafana or Alertmanager notification",
                    "description": _WEBHOOK_DESCRIPTION,
                    "tags": ["alerts"],
                    # The empty requirement: credentials are only required when configured.
                    "security": [{"bearer": []}, {"basic": []}, {}],
                    "parameters": [
                        {
                            "name": SIGNATURE_HEADER,
                            "in": "header",
                            "required": False,
                            "description": (
                                "Hex HMAC-SHA256 of the body with QUEUEBOT_WEBHOOK_HMAC_SECRET;"
                                " required only when that secret is set."
                            ),
                            "schema": {"type": "string"},
                        }
                    ],
                    "requestBody": {
                        "required": True,
                        "description": f"At most {MAX_BODY_BYTES} bytes.",
                        "content": {"application/json": {"schema": body}},
                    },
                    "responses": {
                        "202": _json(_ref("WebhookAccepted"), "Stored; Slack follows."),
                        "400": _json(
                            _ref("WebhookRefused"),
                            "Not a Grafana (version 1) or Alertmanager (version 4) webhook body:"
                            " not JSON, not UTF-8, or not what the schema and the status rule"
                            " allow.",
                        ),
                        "401": _json(
                            _ref("Error"),
                            "Missing or wrong credentials or signature; the reason names what"
                            " is wrong, never a secret.",
                            headers={
                                "WWW-Authenticate": {
                                    "description": 'Always `Bearer realm="queuebot"`.',
                                    "schema": {"type": "string"},
                                }
                            },
                        ),
                        "413": _json(_ref("Error"), f"The body is over {MAX_BODY_BYTES} bytes."),
                        "415": _json(_ref("Error"), "The body is not declared JSON."),
                        "503": _json(
                            _ref("Error"),
                            "The incident store cannot take the notification now; Grafana and"
                            " Alertmanager send it again at their next flush.",
                        ),
                    },
                }
            },
            paths.GITHUB_WEBHOOK_PATH: {"post": _github_operation()},
            paths.HEALTHZ_PATH: {
                "get": {
                    "operationId": "health",
                    "summary": "Liveness",
                    "tags": ["operations"],
                    "responses": {"200": _json(_ref("Health"), "The process serves requests.")},
                }
            },
            paths.METRICS_PATH: {
                "get": {
                    "operationId": "metrics",
                    "summary": "The bot's own metrics in Prometheus' text exposition format",
                    "tags": ["operations"],
                    "responses": {
                        "200": {
                            "description": (
                                "Counters since the process started, and"
                                " `queuebot_incidents_awaiting_delivery` read from the store."
                            ),
                            "content": {"text/plain": {"schema": {"type": "string"}}},
                        }
                    },
                }
            },
            paths.OPENAPI_PATH: {
                "get": {
                    "operationId": "openapi",
                    "summary": "This document",
                    "tags": ["operations"],
                    "responses": {"200": _json({"type": "object"}, "The OpenAPI 3.1 description.")},
                }
            },
        },
        "components": {
            "schemas": {
                **webhook_schemas,
                **_github_schemas(),
                "WebhookAccepted": _ACCEPTED,
                "WebhookRefused": _REFUSED_BODY,
                "Error": _ERROR,
                "Health": _HEALTH,
            },
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "QUEUEBOT_WEBHOOK_TOKEN as the bearer token.",
                },
                "basic": {
                    "type": "http",
                    "scheme": "basic",
                    "description": "Any user name, QUEUEBOT_WEBHOOK_TOKEN as the password.",
                },
            },
        },
        "tags": [
            {"name": "alerts", "description": "What Grafana or Alertmanager sends."},
            {"name": "jobs", "description": "What GitHub sends about workflow jobs."},
            {"name": "operations", "description": "What operators and scrapers read."},
        ],
    }


@functools.cache
def document() -> dict[str, Any]:
    """The OpenAPI document (built once; callers must not change it)."""
    return _build()


@functools.cache
def _encoded() -> bytes:
    return json.dumps(document(), ensure_ascii=False).encode()


async def serve_openapi(request: web.Request) -> web.Response:
    """GET /openapi.json."""
    return web.Response(body=_encoded(), content_type="application/json", charset="utf-8")
