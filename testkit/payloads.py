"""Webhook bodies for tests: the fixtures in tests/fixtures/ and variations of them."""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.domain.alerts import AlertGroup
from bot.domain.incidents import Incident, IncidentStatus
from bot.domain.notifications import parse_webhook

FIXTURES = Path(__file__).parents[1] / "tests" / "fixtures"

WEBHOOK_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.json"))


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


def reference(status: str = "firing") -> dict[str, Any]:
    return load(f"seed_queueing_alert_{status}.json")


def iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def with_values(body: dict[str, Any], **values: float) -> dict[str, Any]:
    """A copy of `body` whose first alert has these values changed."""
    changed = copy.deepcopy(body)
    changed["alerts"][0]["values"].update(values)
    return changed


def refired(body: dict[str, Any], starts_at: datetime) -> dict[str, Any]:
    """A copy of a firing body whose alerts started (again) at `starts_at`."""
    changed = copy.deepcopy(body)
    for alert in changed["alerts"]:
        alert["startsAt"] = iso(starts_at)
    return changed


def encoded(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


def incident_of(body: dict[str, Any] | AlertGroup, **extra: Any) -> Incident:
    """An incident firing in channel C1 with `body`'s alerts (a webhook body, or its group),
    as the renderer takes it; `extra` sets any other of its fields."""
    group = body if isinstance(body, AlertGroup) else parse_webhook(encoded(body))
    fields: dict[str, Any] = {
        "id": 7,
        "group_key": group.group_key,
        "channel": "C1",
        "status": IncidentStatus.FIRING,
        "group": group,
        "started_at": group.started_at,
    }
    return Incident.model_validate(fields | extra)
