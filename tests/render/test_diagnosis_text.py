"""The diagnostics report's words (bot.render.diagnosis_text): the usual with yesterday and a
week ago beside it, what is behind a change in few words, a runner type's queue on earlier
days, in the terminal and in Slack."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from bot.domain.diagnosis import (
    Cause,
    Evidence,
    Finding,
    PastQueue,
    Report,
    RunnerTypeState,
    Scope,
    Verdict,
)
from bot.render.diagnosis_text import evidence_text, text_report, type_text
from bot.render.renderer import Renderer

AT = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)
PULL = "pytorch/pytorch/.github/workflows/pull.yml@refs/heads/main"


def _evidence(**fields: object) -> Evidence:
    values: dict[str, object] = {
        "runner_type": "linux.2xlarge",
        "measure": "jobs arriving",
        "now": 4.4,
    }
    return Evidence.model_validate(values | fields)


@pytest.mark.parametrize(
    ("fields", "shown"),
    [
        ({}, "linux.2xlarge: jobs arriving 4.4"),
        ({"baseline": 1.2}, "linux.2xlarge: jobs arriving 4.4 (usual 1.2)"),
        (
            {"baseline": 1.2, "yesterday": 1.0, "week_ago": 1.4},
            "linux.2xlarge: jobs arriving 4.4 (usual 1.2; yesterday 1, a week ago 1.4)",
        ),
        (
            {"baseline": 1.2, "week_ago": 1.4},
            "linux.2xlarge: jobs arriving 4.4 (usual 1.2; a week ago 1.4)",
        ),
        (
            {"workflows": (PULL, "trunk"), "job": "lint", "repository": "pytorch/vision"},
            "linux.2xlarge: jobs arriving 4.4, from workflows pull, trunk;"
            " mostly job lint, repo pytorch/vision",
        ),
        ({"workflows": ("pull",), "repository": "pytorch/vision"},
         "linux.2xlarge: jobs arriving 4.4, from workflows pull; mostly repo pytorch/vision"),
    ],
)  # fmt: skip
def test_evidence_in_few_words(fields: dict[str, object], shown: str) -> None:
    assert evidence_text(_evidence(**fields), markup=False) == shown


def test_a_job_name_from_the_events_cannot_ping_or_link() -> None:
    text = evidence_text(_evidence(workflows=("pull",), job="<!channel>", repository="a&b"))
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text and "a&amp;b" in text


def test_a_runner_types_queue_yesterday_and_a_week_ago() -> None:
    state = RunnerTypeState(
        name="linux.2xlarge",
        queued=14,
        max_wait_seconds=3600,
        busy=50,
        registered=50,
        yesterday=PastQueue(queued=3, max_wait_seconds=720),
        week_ago=PastQueue(queued=0, max_wait_seconds=0),
    )
    assert type_text(state, markup=False) == (
        "linux.2xlarge: 14 queued, longest wait 1h, 50/50 runners busy;"
        " yesterday 3 queued (12m), a week ago 0 queued"
    )
    assert state.to_json()["yesterday"] == {"queued": 3, "max_wait_seconds": 720}
    assert state.to_json()["week_ago"] == {"queued": 0, "max_wait_seconds": 0}


def test_the_report_shows_the_days_in_the_terminal_and_in_slack() -> None:
    state = RunnerTypeState(
        name="linux.2xlarge",
        queued=14,
        max_wait_seconds=3600,
        busy=50,
        registered=50,
        affected=True,
        yesterday=PastQueue(queued=3, max_wait_seconds=720),
    )
    surge = _evidence(baseline=1.2, yesterday=1.0, week_ago=1.4, workflows=(PULL,), job="lint")
    report = Report(
        at=AT,
        window="10m",
        scope=Scope.ISOLATED,
        runner_types=(state,),
        findings=(
            Finding(
                cause=Cause.INCREASED_WORKLOAD,
                verdict=Verdict.LIKELY,
                runner_types=("linux.2xlarge",),
                evidence=(surge,),
            ),
        ),
        primary_cause=Cause.INCREASED_WORKLOAD,
    )
    terminal = text_report(report)
    slack = json.dumps(Renderer().diagnostics(report).blocks)
    for text in (terminal, slack):
        assert (
            "(usual 1.2; yesterday 1, a week ago 1.4), from workflows pull; mostly job lint" in text
        )
        assert "yesterday 3 queued (12m)" in text
