"""The bot's own metrics, served at GET /metrics in Prometheus' text exposition format.

Counters only grow while the process lives; a scrape also reads one gauge from the store (how
many incidents wait for a Slack delivery), so a stuck outbox shows on a dashboard.
"""

from __future__ import annotations

from collections import defaultdict

_HELP = {
    "queuebot_webhook_requests_total": ("counter", "Webhook requests answered, by HTTP status."),
    "queuebot_notifications_total": ("counter", "Stored notifications, by what they did."),
    "queuebot_slack_deliveries_total": (
        "counter",
        "Slack deliveries from the outbox, by kind and result (done, retry, failed).",
    ),
    "queuebot_silences_total": (
        "counter",
        "Grafana silences queuebot made, lifted, or saw end, by action (created, expired, ended).",
    ),
    "queuebot_incidents_resolved_while_silenced_total": (
        "counter",
        "Incidents resolved because Grafana no longer listed their silenced alert.",
    ),
    "queuebot_incidents_awaiting_delivery": (
        "gauge",
        "Incidents with Slack deliveries still owed.",
    ),
}

Labels = tuple[tuple[str, str], ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """Counters keyed by name and labels; `render` writes them out for a scrape."""

    def __init__(self) -> None:
        self._values: dict[str, dict[Labels, float]] = defaultdict(dict)

    def inc(self, name: str, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        series = self._values[name]
        series[key] = series.get(key, 0.0) + 1.0

    def value(self, name: str, **labels: str) -> float:
        return self._values.get(name, {}).get(tuple(sorted(labels.items())), 0.0)

    def render(self, gauges: dict[str, float]) -> str:
        lines: list[str] = []
        for name, (kind, text) in _HELP.items():
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
            if name in gauges:
                lines.append(f"{name} {gauges[name]:g}")
            for labels, number in sorted(self._values.get(name, {}).items()):
                shown = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
                lines.append(f"{name}{{{shown}}} {number:g}")
        return "\n".join(lines) + "\n"
