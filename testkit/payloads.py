"""Webhook bodies for tests: the fixtures in tests/fixtures/ and variations of them."""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path
from typing import Any

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
