"""The bot's own metrics: every counter, histogram and gauge it exports, declared once here with
its help text and label names, and held in a registry of its own.

Each `Metrics` (one per app, built by the composition root) owns a `CollectorRegistry`, so two
apps in one process count apart and never clash over a name. Callers name a metric and its
labels; a name or label set that is not declared below raises at once instead of going missing
from the scrape. GET /metrics writes `Metrics` out with prometheus_client's text generator;
counters and histograms only grow while the process lives, and the gauges are set from the store
by the scrape itself, so a stuck outbox shows on a dashboard.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import Metric

#: Counters: name → (help, label names).
_COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "queuebot_webhook_requests_total": ("Webhook requests answered, by HTTP status.", ("code",)),
    "queuebot_notifications_total": ("Stored notifications, by what they did.", ("action",)),
    "queuebot_slack_deliveries_total": (
        "Slack deliveries from the outbox, by kind and result (done, retry, failed).",
        ("kind", "result"),
    ),
    "queuebot_silences_total": (
        "Grafana silences queuebot made, lifted, or saw end, by action (created, expired, ended).",
        ("action",),
    ),
    "queuebot_silence_checks_total": (
        "Passes of the silence watcher over the silenced incidents, done.",
        (),
    ),
    "queuebot_incidents_resolved_while_silenced_total": (
        "Incidents resolved because Grafana no longer listed their silenced alert.",
        (),
    ),
    "queuebot_notifications_rejected_total": (
        "Webhook requests refused, by reason (unauthorized, malformed, too_large, too_slow,"
        " not_json, store_unavailable).",
        ("reason",),
    ),
    "queuebot_slack_calls_total": (
        "Slack Web API calls by method and outcome (ok, or Slack's error).",
        ("method", "outcome"),
    ),
    "queuebot_slack_rate_limited_total": ("Slack answers 429, by method.", ("method",)),
    "queuebot_delivery_worker_errors_total": (
        "Outbox worker passes that failed (the store unreadable, or a bug); it keeps trying.",
        (),
    ),
    "queuebot_diagnostics_runs_total": ("Diagnostics runs.", ()),
    "queuebot_github_deliveries_total": (
        "GitHub webhook deliveries, by event (workflow_job, ping, other) and outcome (recorded,"
        " duplicate, ignored, ping, unauthorized, malformed, ...).",
        ("event", "outcome"),
    ),
    "queuebot_retention_passes_total": ("Passes of retention over the store.", ()),
    "queuebot_jobs_corrected_total": (
        "Jobs whose state reconciliation with GitHub's REST API corrected, by correction (found,"
        " started, completed, gone, expired).",
        ("correction",),
    ),
    "queuebot_background_passes_total": (
        "Background passes done, by task (early warning, silence watcher, capacity report"
        " schedule, ...).",
        ("task",),
    ),
    "queuebot_background_failures_total": (
        "Background passes that failed, by task (early warning, silence watcher, retention,"
        " ...); a task failing three in a row makes /healthz unhealthy.",
        ("task",),
    ),
    "queuebot_retention_pruned_total": (
        "Rows retention removed, by what they held (incidents, notifications, bodies, outbox,"
        " digests).",
        ("what",),
    ),
}
#: Histograms: name → (help, label names), all with `_BUCKETS`.
_HISTOGRAMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "queuebot_delivery_latency_seconds": (
        "From a notification's acceptance to its Slack delivery.",
        ("kind",),
    ),
    "queuebot_diagnostics_duration_seconds": ("How long diagnostics runs took.", ()),
}
#: Gauges, read from the store when /metrics is scraped: name → help.
_GAUGES: dict[str, str] = {
    "queuebot_incidents_awaiting_delivery": "Incidents with Slack deliveries still owed.",
    "queuebot_outbox_pending": "Slack deliveries owed (outbox entries pending).",
    "queuebot_outbox_oldest_age_seconds": "Age of the oldest pending outbox entry, 0 when none.",
}
#: The fleet's own numbers, per runner type, read from the store at each scrape and written by
#: `bot.fleet.exported` (not held in the registry): name → (type, help, label names). A
#: counter's name here is its family's, without the `_total` its samples carry.
FLEET: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "queuebot_queued_jobs": (
        "gauge",
        "Jobs waiting for a runner for longer than the alert's wait (jobs.queued_after_seconds).",
        ("runner_type",),
    ),
    "queuebot_queue_longest_wait_seconds": (
        "gauge",
        "How long the longest-waiting of those jobs has waited, seconds; 0 when none waits.",
        ("runner_type",),
    ),
    "queuebot_job_queue_seconds": (
        "histogram",
        "Queue time (created to taken by a runner) of the jobs as they started, seconds.",
        ("runner_type",),
    ),
    "queuebot_jobs_queued": (
        "counter",
        "Jobs that waited for a runner, since the store began.",
        ("runner_type",),
    ),
    "queuebot_jobs_started": ("counter", "Jobs a runner took.", ("runner_type",)),
    "queuebot_jobs_completed": (
        "counter",
        "Jobs completed, by GitHub's conclusion.",
        ("runner_type", "conclusion"),
    ),
    "queuebot_job_run_seconds": (
        "counter",
        "Run time of the jobs completed (taken to completed), seconds.",
        ("runner_type",),
    ),
    "queuebot_runners_online": (
        "gauge",
        "Self-hosted runners online in GitHub's list, per runner type label.",
        ("runner_type",),
    ),
    "queuebot_runners_offline": (
        "gauge",
        "Self-hosted runners offline in GitHub's list.",
        ("runner_type",),
    ),
    "queuebot_runners_busy": (
        "gauge",
        "Self-hosted runners running a job.",
        ("runner_type",),
    ),
}
#: Histogram buckets, seconds: from a fast delivery to a long outage.
_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)

#: The label names each metric takes (gauges take none).
_LABELS = {name: labels for name, (_, labels) in (_COUNTERS | _HISTOGRAMS).items()}

_M = TypeVar("_M", Counter, Histogram, Gauge)


class Metrics:
    """The declared metrics in a registry of their own; `collect` gives them to the generator."""

    def __init__(self) -> None:
        self._registry = CollectorRegistry()
        self._counters = {
            name: Counter(name, text, labels, registry=self._registry)
            for name, (text, labels) in _COUNTERS.items()
        }
        self._histograms = {
            name: Histogram(name, text, labels, registry=self._registry, buckets=_BUCKETS)
            for name, (text, labels) in _HISTOGRAMS.items()
        }
        self._gauges = {
            name: Gauge(name, text, registry=self._registry) for name, text in _GAUGES.items()
        }

    def inc(self, name: str, **labels: str) -> None:
        """Add one to the counter `name` for `labels`."""
        _series(self._counters, "counter", name, labels).inc()

    def add(self, name: str, amount: float, **labels: str) -> None:
        """Add `amount` (not negative) to the counter `name` for `labels`."""
        _series(self._counters, "counter", name, labels).inc(amount)

    def observe(self, name: str, value: float, **labels: str) -> None:
        """Record `value` in the histogram `name` for `labels`."""
        _series(self._histograms, "histogram", name, labels).observe(value)

    def set_gauge(self, name: str, value: float) -> None:
        """Set the gauge `name`: the scrape does, with what it read from the store."""
        _series(self._gauges, "gauge", name, {}).set(value)

    def value(self, name: str, **labels: str) -> float:
        """The counter `name` for `labels`: 0 until it is first counted."""
        _declared(self._counters, "counter", name, labels)
        found = self._registry.get_sample_value(name, labels)
        return 0.0 if found is None else found

    def collect(self) -> Iterator[Metric]:
        """The registry's families, as prometheus_client's generator reads them."""
        for family in self._registry.collect():
            # prometheus_client adds a `<name>_created` series (its start time) beside every
            # counter and histogram series. The scrape keeps to the names declared above, as it
            # always has, and the library's own switch for this is process-wide.
            created = family.name + "_created"
            family.samples = [s for s in family.samples if s.name != created]
            yield family


def _declared(metrics: Mapping[str, _M], kind: str, name: str, labels: Mapping[str, str]) -> _M:
    """The `kind` metric `name`, once `labels` are exactly the label names it was declared with."""
    metric = metrics.get(name)
    if metric is None:
        raise KeyError(f"{name} is not a declared {kind}")
    expected = _LABELS.get(name, ())
    if set(labels) != set(expected):
        raise ValueError(f"{name} takes labels {sorted(expected)}, not {sorted(labels)}")
    return metric


def _series(metrics: Mapping[str, _M], kind: str, name: str, labels: Mapping[str, str]) -> _M:
    metric = _declared(metrics, kind, name, labels)
    return metric.labels(**labels) if labels else metric
