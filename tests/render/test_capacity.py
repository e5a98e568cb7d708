"""The capacity report's message: runner type and workflow names anyone may write stay inert,
and the report fits Slack's limits with its chart, however many and however long its parts."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.domain.capacity import (
    CapacityReport,
    HourOfWeek,
    RecommendedSize,
    TypeCapacity,
    WorkflowUse,
)
from bot.render.capacity import duration
from bot.render.renderer import Renderer
from bot.slack import blockkit
from bot.slack.limits import MAX_BLOCKS_PER_MESSAGE, MAX_TOTAL_BLOCK_CHARS
from bot.slack.message import ChartFile
from testkit.blocks import mrkdwn_texts
from tests.render.hostile import markup_left, texts

CHART = ChartFile("F0CHART1", "Capacity of the busiest runner types", "alt")


def _type(name: str, workflow: str) -> TypeCapacity:
    return TypeCapacity(
        runner_type=name,
        jobs=123_456,
        p50_seconds=12,
        p95_seconds=900,
        p99_seconds=5400,
        worst_hours=(HourOfWeek(weekday=1, hour=18, jobs=900, p50_seconds=60, p95_seconds=2500),)
        * 3,
        hours_over_target=9,
        busy_hours=32_100,
        peak_busy=187,
        failed_jobs=240,
        max_runners=200,
        hours_at_max=14,
        utilisation=0.71,
        offline_runners=3,
        failed_runners=5,
        workflows=(WorkflowUse(workflow=workflow, runner_hours=100, share=0.61),) * 3,
        recommended=RecommendedSize(
            max_runners=220, warm_pool=6, p95_seconds=570, runner_hours=3400
        ),
        current=RecommendedSize(max_runners=200, warm_pool=2, p95_seconds=900, runner_hours=3210),
    )


@settings(max_examples=15, deadline=None)
@given(
    names=st.lists(texts(0, 1, 8, 120, 900), min_size=1, max_size=10),
    workflow=texts(0, 1, 8, 120, 900),
    note=texts(),
    more=st.integers(0, 500),
)
def test_any_report_fits_slack_with_its_chart_and_stays_inert(
    names: list[str], workflow: str, note: str, more: int
) -> None:
    report = CapacityReport(
        since=1_700_000_000,
        until=1_700_000_000 + 7 * 86400,
        target_p95_seconds=600,
        types=tuple(_type(name or "x", workflow or "pull") for name in names),
        more_types=more,
        notes=(note,) if note else (),
    )
    for shared in (None, "U0ONCALL"):
        message = Renderer().capacity_report(
            report, chart=CHART, share_value=None if shared else "report", shared_by=shared
        )
        assert blockkit.validate_message(message.text, message.blocks) == []
        assert len(message.blocks) <= MAX_BLOCKS_PER_MESSAGE
        assert len(json.dumps(message.blocks)) < 2 * MAX_TOTAL_BLOCK_CHARS
        (image,) = [b for b in message.blocks if b["type"] == "image"]
        assert image["slack_file"]["id"] == CHART.id
        for text in mrkdwn_texts(message.blocks):
            assert markup_left(text.replace(f"<@{shared}>", ""), set()) == [], text


def test_a_report_of_the_ten_busiest_reads_in_full() -> None:
    types = tuple(_type(f"linux.{n}xlarge", "pull") for n in range(10))
    report = CapacityReport(
        since=1_700_000_000, until=1_700_604_800, target_p95_seconds=600, types=types, more_types=50
    )
    message = Renderer().capacity_report(report, chart=CHART, share_value="report")
    shown = json.dumps(message.blocks, ensure_ascii=False)
    assert shown.count("Would have kept p95 under 10 min: max *220*, warm pool *6*") == 10
    assert "+190 against max 200 now" in shown and "Tue 18:00 42 min" in shown
    assert "50 less busy runner types not shown" in shown
    assert "10 of 10 runner types missed it" in shown


def test_durations_read_as_people_say_them() -> None:
    assert [duration(s) for s in (0, 45, 94, 570, 599, 600, 3599, 3600, 7500)] == [
        "0 s",
        "45 s",
        "1.6 min",
        "9.5 min",
        "10 min",
        "10 min",
        "60 min",
        "1 h 00 min",
        "2 h 05 min",
    ]
