"""GET /openapi.json: the served document is valid OpenAPI 3.1, and the bot answers as it says.

schemathesis loads the document from the running bot and generates webhook requests from it,
valid and invalid, with and without the right credentials; every answer must be documented
(status, Content-Type, headers, body schema) and none may be a server error. The stack runs
on an event loop the test drives (`tests.test_fuzz.live_stack`); schemathesis' synchronous
HTTP client runs in a thread meanwhile, so the servers on that loop can answer it.
"""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from bot.domain.notifications import parse_webhook
from bot.web import paths
from bot.web.openapi import document
from testkit.live import Live, live_stack
from testkit.payloads import WEBHOOK_FIXTURES, encoded, load

TOKEN = "openapi-webhook-token"

#: What the document promises about answers. The checks that judge whether a request should
#: have been accepted (positive_data_acceptance, negative_data_rejection) are left out on
#: purpose: the parser is more lenient than the schema says (pydantic takes "5" for an
#: integer and a number for a time) and stricter too (a group's status must agree with its
#: alerts, which the schema does not express), so they would report the design, not a bug.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

EXPECTED_OPERATIONS = {
    f"POST {paths.GRAFANA_WEBHOOK_PATH}",
    f"POST {paths.GITHUB_WEBHOOK_PATH}",
    f"GET {paths.HEALTHZ_PATH}",
    f"GET {paths.METRICS_PATH}",
    f"GET {paths.OPENAPI_PATH}",
}


def _load(live: Live) -> Any:
    url = f"{live.stack.url}{paths.OPENAPI_PATH}"
    return live.run(asyncio.to_thread(schemathesis.openapi.from_url, url))


async def _served(live: Live) -> tuple[int, str, Any]:
    async with live.stack.http.get(f"{live.stack.url}{paths.OPENAPI_PATH}") as response:
        return response.status, response.content_type, await response.json()


def test_document_is_served_and_valid(tmp_path: Path) -> None:
    """The bot serves the document; it is valid OpenAPI 3.1 and lists the five routes."""
    with live_stack(tmp_path) as live:
        status, content_type, body = live.run(_served(live))
        assert (status, content_type) == (200, "application/json")
        assert body == document()
        schema = _load(live)
    schema.validate()
    documented = {f"{verb.upper()} {path}" for path, item in body["paths"].items() for verb in item}
    assert documented == EXPECTED_OPERATIONS
    # schemathesis leaves out the route it loaded the document from.
    labels = {result.ok().label for result in schema.get_all_operations()}
    assert labels == EXPECTED_OPERATIONS - {f"GET {paths.OPENAPI_PATH}"}


def test_every_accepted_fixture_matches_the_documented_body() -> None:
    """Every recorded Grafana and Alertmanager body (all of which the parser takes) is valid
    for the documented schema."""
    spec = document()
    validator = jsonschema_rs.validator_for(
        {"$ref": "#/components/schemas/WebhookBody", "components": spec["components"]}
    )
    for name in WEBHOOK_FIXTURES:
        body = load(name)
        parse_webhook(encoded(body))
        validator.validate(body)


def _basic(password: str) -> str:
    return "Basic " + base64.b64encode(f"grafana:{password}".encode()).decode()


credentials = st.sampled_from(
    [
        {"Authorization": f"Bearer {TOKEN}"},
        {"Authorization": _basic(TOKEN)},
        {"Authorization": "Bearer not-the-token"},
        {},
    ]
)


@pytest.mark.slow
def test_webhook_answers_as_documented(tmp_path: Path) -> None:
    """Requests generated from the document get documented answers and never a 5xx."""
    with live_stack(tmp_path, QUEUEBOT_WEBHOOK_TOKEN=TOKEN) as live:
        base_url = live.stack.url
        # Loaded from what the bot serves, but not from its URL, so that schemathesis keeps
        # GET /openapi.json among the operations to check.
        schema = schemathesis.openapi.from_dict(live.run(_served(live))[2])
        operation = schema[paths.GRAFANA_WEBHOOK_PATH]["POST"]
        cases = operation.as_strategy(GenerationMode.POSITIVE) | operation.as_strategy(
            GenerationMode.NEGATIVE
        )

        @settings(
            max_examples=80,
            deadline=None,
            suppress_health_check=[
                HealthCheck.too_slow,
                HealthCheck.filter_too_much,
                HealthCheck.data_too_large,
            ],
        )
        @given(case=cases, headers=credentials)
        def documented(case: Case[Any], headers: dict[str, str]) -> None:
            response = live.run(asyncio.to_thread(case.call, base_url=base_url, headers=headers))
            case.validate_response(response, checks=CHECKS, headers=headers)

        documented()

        for path in (paths.HEALTHZ_PATH, paths.METRICS_PATH, paths.OPENAPI_PATH):
            case = schema[path]["GET"].Case()
            response = live.run(asyncio.to_thread(case.call, base_url=base_url))
            case.validate_response(response, checks=CHECKS)
