"""The bot's own metrics, served at GET /metrics in Prometheus' text exposition format.

Counters and histograms only grow while the process lives; a scrape also reads gauges from the
store (the outbox's depth and the age of its oldest entry), so a stuck outbox shows on a
dashboard.
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
    "queuebot_notifications_rejected_total": (
        "counter",
        "Webhook requests refused, by reason (unauthorized, malformed, too_large,"
        " store_unavailable).",
    ),
    "queuebot_outbox_pending": ("gauge", "Slack deliveries owed (outbox entries pending)."),
    "queuebot_outbox_oldest_age_seconds": (
        "gauge",
        "Age of the oldest pending outbox entry, 0 when none.",
    ),
    "queuebot_slack_calls_total": (
        "counter",
        "Slack Web API calls by method and outcome (ok, or Slack's error).",
    ),
    "queuebot_slack_rate_limited_total": ("counter", "Slack answers 429, by method."),
    "queuebot_delivery_latency_seconds": (
        "histogram",
        "From a notification's acceptance to its Slack delivery.",
    ),
    "queuebot_diagnostics_runs_total": ("counter", "Diagnostics runs."),
    "queuebot_diagnostics_duration_seconds": ("histogram", "How long diagnostics runs took."),
}
#: Histogram buckets, seconds: from a fast delivery to a long outage.
BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)

Labels = tuple[tuple[str, str], ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """Counters keyed by name and labels; `render` writes them out for a scrape."""

    def __init__(self) -> None:
        self._values: dict[str, dict[Labels, float]] = defaultdict(dict)
        #: name → labels → (bucket counts, sum, count)
        self._histograms: dict[str, dict[Labels, tuple[list[int], float, int]]] = defaultdict(dict)

    def observe(self, name: str, value: float, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        counts, total, count = self._histograms[name].get(key, ([0] * len(BUCKETS), 0.0, 0))
        counts = [n + (value <= bound) for n, bound in zip(counts, BUCKETS, strict=True)]
        self._histograms[name][key] = (counts, total + value, count + 1)

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
            for labels, (counts, total, count) in sorted(self._histograms.get(name, {}).items()):
                base = [f'{k}="{_escape(v)}"' for k, v in labels]
                for bound, n in [*zip(BUCKETS, counts, strict=True), (None, count)]:
                    le = "+Inf" if bound is None else f"{bound:g}"
                    shown = ",".join([*base, f'le="{le}"'])
                    lines.append(f"{name}_bucket{{{shown}}} {n}")
                suffix = "{" + ",".join(base) + "}" if base else ""
                lines.append(f"{name}_sum{suffix} {total:g}")
                lines.append(f"{name}_count{suffix} {count}")
        return "\n".join(lines) + "\n"
