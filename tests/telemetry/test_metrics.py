"""GET /metrics: what dashboards read (names, types, help texts, label names, buckets) parsed as
Prometheus parses it, counts after real traffic, gauges read from the store when scraped, one
registry per app; and every metric the bot's code names is declared with the labels it passes."""

from __future__ import annotations

import ast
import asyncio
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from bot.telemetry.metrics import Metrics
from testkit.harness import Stack, running_stack
from testkit.payloads import reference

BOT = Path(__file__).resolve().parents[2] / "bot"
#: The fleet's own families in `CONTRACT`: written from the store by each scrape.
FLEET_FAMILIES = {
    "queuebot_queued_jobs",
    "queuebot_queue_longest_wait_seconds",
    "queuebot_job_queue_seconds",
    "queuebot_jobs_queued_total",
    "queuebot_jobs_started_total",
    "queuebot_jobs_completed_total",
    "queuebot_job_run_seconds_total",
}

#: What a dashboard reads: name → (type, help, label names).
CONTRACT: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "queuebot_webhook_requests_total": (
        "counter",
        "Webhook requests answered, by HTTP status.",
        ("code",),
    ),
    "queuebot_notifications_total": (
        "counter",
        "Stored notifications, by what they did.",
        ("action",),
    ),
    "queuebot_slack_deliveries_total": (
        "counter",
        "Slack deliveries from the outbox, by kind and result (done, retry, failed).",
        ("kind", "result"),
    ),
    "queuebot_silences_total": (
        "counter",
        "Grafana silences queuebot made, lifted, or saw end, by action (created, expired, ended).",
        ("action",),
    ),
    "queuebot_silence_checks_total": (
        "counter",
        "Passes of the silence watcher over the silenced incidents, done.",
        (),
    ),
    "queuebot_incidents_resolved_while_silenced_total": (
        "counter",
        "Incidents resolved because Grafana no longer listed their silenced alert.",
        (),
    ),
    "queuebot_incidents_awaiting_delivery": (
        "gauge",
        "Incidents with Slack deliveries still owed.",
        (),
    ),
    "queuebot_notifications_rejected_total": (
        "counter",
        "Webhook requests refused, by reason (unauthorized, malformed, too_large, too_slow,"
        " not_json, store_unavailable).",
        ("reason",),
    ),
    "queuebot_outbox_pending": (
        "gauge",
        "Slack deliveries owed (outbox entries pending).",
        (),
    ),
    "queuebot_outbox_oldest_age_seconds": (
        "gauge",
        "Age of the oldest pending outbox entry, 0 when none.",
        (),
    ),
    "queuebot_slack_calls_total": (
        "counter",
        "Slack Web API calls by method and outcome (ok, or Slack's error).",
        ("method", "outcome"),
    ),
    "queuebot_slack_rate_limited_total": (
        "counter",
        "Slack answers 429, by method.",
        ("method",),
    ),
    "queuebot_delivery_worker_errors_total": (
        "counter",
        "Outbox worker passes that failed (the store unreadable, or a bug); it keeps trying.",
        (),
    ),
    "queuebot_delivery_latency_seconds": (
        "histogram",
        "From a notification's acceptance to its Slack delivery.",
        ("kind",),
    ),
    "queuebot_diagnostics_runs_total": ("counter", "Diagnostics runs.", ()),
    "queuebot_github_deliveries_total": (
        "counter",
        "GitHub webhook deliveries, by event (workflow_job, ping, other) and outcome (recorded,"
        " duplicate, ignored, ping, unauthorized, malformed, ...).",
        ("event", "outcome"),
    ),
    "queuebot_retention_passes_total": ("counter", "Passes of retention over the store.", ()),
    "queuebot_jobs_corrected_total": (
        "counter",
        "Jobs whose state reconciliation with GitHub's REST API corrected, by correction (found,"
        " started, completed, gone, expired).",
        ("correction",),
    ),
    "queuebot_background_passes_total": (
        "counter",
        "Background passes done, by task (early warning, silence watcher, capacity report"
        " schedule, ...).",
        ("task",),
    ),
    "queuebot_background_failures_total": (
        "counter",
        "Background passes that failed, by task (early warning, silence watcher, retention,"
        " ...); a task failing three in a row makes /healthz unhealthy.",
        ("task",),
    ),
    "queuebot_retention_pruned_total": (
        "counter",
        "Rows retention removed, by what they held (incidents, notifications, bodies, outbox,"
        " digests).",
        ("what",),
    ),
    "queuebot_diagnostics_duration_seconds": (
        "histogram",
        "How long diagnostics runs took.",
        (),
    ),
    # The fleet's own numbers (the runners' three gauges only with GitHub's runners list).
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
    "queuebot_jobs_queued_total": (
        "counter",
        "Jobs that waited for a runner, since the store began.",
        ("runner_type",),
    ),
    "queuebot_jobs_started_total": ("counter", "Jobs a runner took.", ("runner_type",)),
    "queuebot_jobs_completed_total": (
        "counter",
        "Jobs completed, by GitHub's conclusion.",
        ("runner_type", "conclusion"),
    ),
    "queuebot_job_run_seconds_total": (
        "counter",
        "Run time of the jobs completed (taken to completed), seconds.",
        ("runner_type",),
    ),
}
#: Every histogram's bucket bounds, seconds.
BOUNDS = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, math.inf]


@dataclass
class Scrape:
    """One answer of GET /metrics, parsed; families keyed by the name written after # TYPE."""

    content_type: str
    families: dict[str, Metric]

    def value(self, sample: str, **labels: str) -> float:
        for family in self.families.values():
            for found in family.samples:
                if found.name == sample and found.labels == labels:
                    return float(found.value)
        raise AssertionError(f"no sample {sample} {labels}")

    def has(self, sample: str, **labels: str) -> bool:
        return any(
            found.name == sample and found.labels == labels
            for family in self.families.values()
            for found in family.samples
        )

    def buckets(self, name: str, **labels: str) -> list[tuple[float, float]]:
        """(bound, cumulative count) of one histogram series, in the order written."""
        return [
            (float(s.labels["le"]), float(s.value))
            for s in self.families[name].samples
            if s.name == f"{name}_bucket" and {**s.labels, "le": ""} == {**labels, "le": ""}
        ]


def _parse(text: str, content_type: str) -> Scrape:
    families = {}
    for family in text_string_to_metric_families(text):
        # The parser names a counter's family without the `_total` its samples carry.
        name = f"{family.name}_total" if family.type == "counter" else family.name
        families[name] = family
    return Scrape(content_type, families)


async def scrape(stack: Stack) -> Scrape:
    async with stack.http.get(f"{stack.url}/metrics") as response:
        assert response.status == 200
        return _parse(await response.text(), response.headers["Content-Type"])


async def scrape_until(stack: Stack, sample: str, value: float, **labels: str) -> Scrape:
    """Scrape until `sample` reaches `value` (the bot works in the background)."""
    async with asyncio.timeout(10):
        while True:
            found = await scrape(stack)
            if found.has(sample, **labels) and found.value(sample, **labels) >= value:
                return found
            await asyncio.sleep(0.05)


def _label_names(scraped: Scrape) -> Iterator[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """(name, label names declared, label names written) for every sample of the scrape."""
    for name, family in scraped.families.items():
        for found in family.samples:
            written = tuple(sorted(set(found.labels) - {"le"}))
            yield name, tuple(sorted(CONTRACT[name][2])), written


class TestExposition:
    async def test_every_family_has_its_declared_type_and_help(self, tmp_path: Path) -> None:
        """A scrape of a fresh bot parses, holds exactly the declared families with their types
        and help texts, and is served as Prometheus' text format."""
        async with running_stack(tmp_path) as stack:
            scraped = await scrape(stack)
        assert scraped.content_type.startswith("text/plain; version=")
        assert "charset=utf-8" in scraped.content_type
        assert set(scraped.families) == set(CONTRACT)
        for name, (kind, text, _) in CONTRACT.items():
            assert (scraped.families[name].type, scraped.families[name].documentation) == (
                kind,
                text,
            ), name

    async def test_only_the_declared_series_are_written(self, tmp_path: Path) -> None:
        """No `_created` series or any other name beside the declared ones and their
        histogram suffixes."""
        async with running_stack(tmp_path) as stack:
            await stack.webhook(reference())
            await stack.parents(1)
            await stack.settled()
            scraped = await scrape(stack)
        written = {s.name for family in scraped.families.values() for s in family.samples}
        allowed = set(CONTRACT) | {
            f"{name}{suffix}"
            for name, (kind, _, _) in CONTRACT.items()
            if kind == "histogram"
            for suffix in ("_bucket", "_sum", "_count")
        }
        assert "queuebot_webhook_requests_total" in written
        assert written <= allowed, sorted(written - allowed)

    async def test_traffic_shows_as_counts_and_a_latency_histogram(self, tmp_path: Path) -> None:
        """Two alerts and a malformed body: webhook answers, notifications, rejections, Slack
        calls and deliveries are counted, the delivery's latency is one observation in the
        declared buckets, and every series carries its declared label names."""
        async with running_stack(tmp_path) as stack:
            await stack.webhook(reference())
            await stack.webhook(reference())
            await stack.webhook(b"{}")
            await stack.parents(1)
            await stack.settled()
            scraped = await scrape(stack)

        assert scraped.value("queuebot_webhook_requests_total", code="202") == 2
        assert scraped.value("queuebot_webhook_requests_total", code="400") == 1
        assert scraped.value("queuebot_notifications_total", action="open") == 1
        assert scraped.value("queuebot_notifications_total", action="ignore") == 1
        assert scraped.value("queuebot_notifications_rejected_total", reason="malformed") == 1
        assert (
            scraped.value("queuebot_slack_calls_total", method="chat.postMessage", outcome="ok")
            == 1
        )
        assert (
            scraped.value("queuebot_slack_deliveries_total", kind="post_parent", result="done") == 1
        )
        assert not scraped.has(
            "queuebot_slack_deliveries_total", kind="post_parent", result="retry"
        )

        latency = "queuebot_delivery_latency_seconds"
        buckets = scraped.buckets(latency, kind="post_parent")
        assert [bound for bound, _ in buckets] == BOUNDS
        counts = [count for _, count in buckets]
        assert counts == sorted(counts)  # cumulative
        assert counts[-1] == scraped.value(f"{latency}_count", kind="post_parent") == 1
        assert scraped.value(f"{latency}_sum", kind="post_parent") >= 0
        assert [bound for bound, _ in scraped.buckets("queuebot_diagnostics_duration_seconds")] == (
            BOUNDS
        )

        for name, declared, written in _label_names(scraped):
            assert written == declared, name

        assert scraped.value("queuebot_incidents_awaiting_delivery") == 0
        assert scraped.value("queuebot_outbox_pending") == 0
        assert scraped.value("queuebot_outbox_oldest_age_seconds") == 0

    async def test_gauges_are_read_from_the_store_when_scraped(self, tmp_path: Path) -> None:
        """While Slack answers 429 and the delivery waits, a scrape shows the incident owed,
        the pending outbox entry and its age; before the alert, none."""
        async with running_stack(tmp_path) as stack:
            before = await scrape(stack)
            stack.sandbox.faults.add("chat.postMessage", status=429, retry_after=60)
            assert (await stack.webhook(reference())).status == 202
            waiting = await scrape_until(
                stack, "queuebot_slack_deliveries_total", 1, kind="post_parent", result="retry"
            )
        assert before.value("queuebot_outbox_pending") == 0
        assert before.value("queuebot_incidents_awaiting_delivery") == 0
        assert before.value("queuebot_outbox_oldest_age_seconds") == 0
        assert waiting.value("queuebot_outbox_pending") == 1
        assert waiting.value("queuebot_incidents_awaiting_delivery") == 1
        assert waiting.value("queuebot_outbox_oldest_age_seconds") > 0
        assert waiting.value("queuebot_slack_rate_limited_total", method="chat.postMessage") == 1
        assert (
            waiting.value(
                "queuebot_slack_calls_total", method="chat.postMessage", outcome="ratelimited"
            )
            == 1
        )

    async def test_two_apps_in_one_process_count_apart(self, tmp_path: Path) -> None:
        """Each app has its own registry: what one counts never shows in the other's scrape."""
        async with (
            running_stack(tmp_path / "a") as first,
            running_stack(tmp_path / "b") as second,
        ):
            await first.webhook(reference())
            await first.webhook(reference())
            await second.webhook(b"{}")
            await first.parents(1)
            await first.settled()
            one, other = await scrape(first), await scrape(second)
        assert one.value("queuebot_webhook_requests_total", code="202") == 2
        assert not one.has("queuebot_webhook_requests_total", code="400")
        assert other.value("queuebot_webhook_requests_total", code="400") == 1
        assert not other.has("queuebot_webhook_requests_total", code="202")
        assert not other.has("queuebot_notifications_total", action="open")


def _scraped(metrics: Metrics) -> Scrape:
    return _parse(generate_latest(metrics).decode(), "text/plain")


class TestDeclarations:
    def test_an_undeclared_name_is_refused(self) -> None:
        metrics = Metrics()
        with pytest.raises(KeyError, match="queuebot_made_up_total"):
            metrics.inc("queuebot_made_up_total")
        with pytest.raises(KeyError, match="not a declared counter"):
            metrics.inc("queuebot_delivery_latency_seconds", kind="post_parent")
        with pytest.raises(KeyError, match="not a declared histogram"):
            metrics.observe("queuebot_diagnostics_runs_total", 1.0)
        with pytest.raises(KeyError, match="not a declared gauge"):
            metrics.set_gauge("queuebot_webhook_requests_total", 1.0)
        with pytest.raises(KeyError):
            metrics.value("queuebot_made_up_total")

    @pytest.mark.parametrize(
        "labels",
        [{}, {"status": "202"}, {"code": "202", "method": "x"}],
        ids=["missing", "misnamed", "extra"],
    )
    def test_labels_other_than_the_declared_ones_are_refused(self, labels: dict[str, str]) -> None:
        metrics = Metrics()
        with pytest.raises(ValueError, match=r"takes labels \['code'\]"):
            metrics.inc("queuebot_webhook_requests_total", **labels)
        with pytest.raises(ValueError, match=r"takes labels \['code'\]"):
            metrics.value("queuebot_webhook_requests_total", **labels)
        assert not _scraped(metrics).families["queuebot_webhook_requests_total"].samples

    def test_an_unlabelled_metric_takes_no_labels(self) -> None:
        metrics = Metrics()
        with pytest.raises(ValueError, match=r"takes labels \[\]"):
            metrics.observe("queuebot_diagnostics_duration_seconds", 1.0, kind="run")

    def test_value_reads_a_counter_without_making_a_series(self) -> None:
        metrics = Metrics()
        assert metrics.value("queuebot_silences_total", action="created") == 0
        metrics.inc("queuebot_silences_total", action="created")
        metrics.inc("queuebot_silences_total", action="created")
        assert metrics.value("queuebot_silences_total", action="created") == 2
        assert metrics.value("queuebot_silences_total", action="ended") == 0
        scraped = _scraped(metrics)
        assert not scraped.has("queuebot_silences_total", action="ended")
        assert scraped.value("queuebot_silences_total", action="created") == 2


@dataclass(frozen=True)
class _Call:
    where: str
    method: str
    name: str
    labels: tuple[str, ...]
    values: int


_RECORDING = {"inc": 0, "add": 1, "observe": 1, "set_gauge": 1}


def _is_metrics(node: ast.expr) -> bool:
    """`metrics`, `self.metrics` or `self._metrics`: how the bot's code holds its Metrics."""
    if isinstance(node, ast.Name):
        return node.id == "metrics"
    return isinstance(node, ast.Attribute) and node.attr in {"metrics", "_metrics"}


def _calls() -> list[_Call]:
    """Every call that records a metric in the bot's code."""
    found = []
    for path in sorted(BOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _RECORDING
                and _is_metrics(node.func.value)
            ):
                continue
            where = f"{path.relative_to(BOT.parent)}:{node.lineno}"
            first = node.args[0] if node.args else None
            # A name or label that is not written out could not be checked here.
            assert isinstance(first, ast.Constant) and isinstance(first.value, str), where
            assert all(keyword.arg is not None for keyword in node.keywords), where
            labels = tuple(sorted(str(keyword.arg) for keyword in node.keywords))
            found.append(_Call(where, node.func.attr, first.value, labels, len(node.args) - 1))
    return found


def test_every_metric_the_code_names_is_declared_with_its_labels() -> None:
    """Every `inc`, `add`, `observe` and `set_gauge` in the bot names a declared metric with
    exactly its declared labels (a real Metrics takes the call), and every declared metric is
    recorded."""
    calls = _calls()
    for call in calls:
        assert call.name in CONTRACT, call.where
        kind, _, labels = CONTRACT[call.name]
        assert call.labels == tuple(sorted(labels)), call.where
        assert (call.method, kind) in {
            ("inc", "counter"),
            ("add", "counter"),
            ("observe", "histogram"),
            ("set_gauge", "gauge"),
        }, call.where
        assert call.values == _RECORDING[call.method], call.where
        record = getattr(Metrics(), call.method)
        record(call.name, *[1.0] * call.values, **dict.fromkeys(call.labels, "x"))
    # The fleet's numbers are read from the store at each scrape, not recorded.
    assert {call.name for call in calls} == set(CONTRACT) - FLEET_FAMILIES
