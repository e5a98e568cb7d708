"""The demo's alerts: the reference alert (as Grafana sends it), its resolution, and a surge on
one runner type made from it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib import resources
from typing import Any

REFERENCE_ALERT = "seed_queueing_alert_firing.json"
REFERENCE_RESOLVED = "seed_queueing_alert_resolved.json"


def reference_alert(name: str = REFERENCE_ALERT) -> bytes:
    return resources.files("queuebot_lab.demo").joinpath(name).read_bytes()


def surge_alert(runner_type: str, queued: float, wait_minutes: float, now: datetime) -> bytes:
    """The reference rule's notification, narrowed to one runner type with its own values."""
    body: dict[str, Any] = json.loads(reference_alert())
    alert = body["alerts"][0]
    labels = {**alert["labels"], "runner_type": runner_type}
    alert["labels"] = labels
    alert["fingerprint"] = f"demo-surge-{runner_type}"
    alert["startsAt"] = now.astimezone(UTC).replace(microsecond=0).isoformat()
    alert["values"] = {
        **alert.get("values", {}),
        "max_queue_time_mins": round(wait_minutes),
        "max_queue_size": round(queued),
    }
    alert["annotations"] = {
        **alert["annotations"],
        "summary": f"Jobs are queueing on {runner_type}",
    }
    body["groupKey"] = f'{{}}:{{runner_type="{runner_type}"}}'
    body["groupLabels"] = {**body.get("groupLabels", {}), "runner_type": runner_type}
    body["commonLabels"] = labels
    body["commonAnnotations"] = alert["annotations"]
    body["title"] = f"[FIRING:1] Jobs are queueing on {runner_type}"
    return json.dumps(body).encode()
