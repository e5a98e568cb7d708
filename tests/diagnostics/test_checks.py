"""The runbook's checks (bot.diagnostics.checks) on hand-made fleet signals: each cause's
signature leads to it, "no data" is said, and a healthy fleet blames nothing."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.diagnostics.checks import diagnose
from bot.domain.diagnosis import Cause, Scope, Verdict
from bot.fleet.measures import Breakdown, Signal
from bot.fleet.signals import FleetSignals
from bot.render.diagnosis_text import text_report
from bot.render.renderer import Renderer
from bot.store import QueuedJob

AT = datetime(2026, 11, 21, 15, 0, tzinfo=UTC)
TYPES = ("linux-2xlarge", "linux-4xlarge", "linux-12xlarge", "windows-4xlarge")
PULL = "pytorch/pytorch/.github/workflows/pull.yml@refs/heads/main"
TRUNK = "pytorch/pytorch/.github/workflows/trunk.yml@refs/heads/main"
RUN = "https://github.com/pytorch/pytorch/actions/runs/1/job/11"


def _healthy() -> FleetSignals:
    fleet = FleetSignals(at=AT, window="10m")
    normal: dict[Signal, float] = {
        Signal.QUEUED: 0,
        Signal.RUNNING: 40,
        Signal.MAX_WAIT: 45,
        Signal.REGISTERED: 50,
        Signal.BUSY: 40,
        Signal.IDLE: 10,
        Signal.DESIRED: 50,
        Signal.MIN_RUNNERS: 5,
        Signal.MAX_RUNNERS: 200,
        Signal.STARTED_PER_MINUTE: 4,
        Signal.DURATION_P50: 900,
        Signal.DURATION_P90: 2400,
        Signal.PENDING_RUNNERS: 1,
        Signal.FAILED_RUNNERS: 0,
        Signal.CPU_THROTTLED: 0.05,
        Signal.OOM_KILLS: 0,
    }
    for signal, value in normal.items():
        fleet.now[signal] = dict.fromkeys(TYPES, value)
    for signal in (
        Signal.STARTED_PER_MINUTE,
        Signal.DURATION_P50,
        Signal.DURATION_P90,
        Signal.CPU_THROTTLED,
        Signal.MAX_WAIT,
    ):
        fleet.baseline[signal] = dict(fleet.now[signal])
    fleet.earlier = {
        Signal.DESIRED: [dict(fleet.now[Signal.DESIRED])] * 2,
        Signal.REGISTERED: [dict(fleet.now[Signal.REGISTERED])] * 2,
    }
    fleet.workflows = {
        Signal.STARTED_BY_WORKFLOW: {t: {PULL: 3, TRUNK: 1} for t in TYPES},
        Signal.DURATION_P90_BY_WORKFLOW: {t: {PULL: 2400, TRUNK: 2400} for t in TYPES},
    }
    fleet.workflow_baseline = copy.deepcopy(fleet.workflows)
    return fleet


def _queueing(fleet: FleetSignals, name: str, queued: float = 40, wait: float = 3600) -> None:
    fleet.now[Signal.QUEUED][name] = queued
    fleet.now[Signal.MAX_WAIT][name] = wait
    fleet.now[Signal.IDLE][name] = 0
    fleet.now[Signal.BUSY][name] = fleet.now[Signal.REGISTERED][name]


def _set(fleet: FleetSignals, name: str, **values: float) -> None:
    for key, value in values.items():
        fleet.now[Signal(key)][name] = value


def _primary(fleet: FleetSignals) -> Cause | None:
    return diagnose(fleet).primary_cause


def test_healthy_fleet_blames_nothing() -> None:
    report = diagnose(_healthy())
    assert report.primary_cause is None and report.scope is Scope.NONE
    assert all(f.verdict is not Verdict.LIKELY for f in report.findings)
    assert report.to_json()["primary_cause"] == "none"


def test_surge_is_increased_workload_naming_the_workflow() -> None:
    fleet = _healthy()
    _queueing(fleet, "linux-2xlarge")
    _set(fleet, "linux-2xlarge", started_per_minute=14, desired=120)
    fleet.workflows[Signal.STARTED_BY_WORKFLOW]["linux-2xlarge"] = {PULL: 12, TRUNK: 1}
    report = diagnose(fleet)
    assert report.primary_cause is Cause.INCREASED_WORKLOAD
    workload = report.findings[0]
    assert workload.cause is Cause.INCREASED_WORKLOAD and workload.verdict is Verdict.LIKELY
    assert workload.runner_types == ("linux-2xlarge",)
    assert workload.evidence[0].workflows == (PULL,)
    assert report.scope is Scope.ISOLATED


def test_capacity_cap_is_autoscaling_limits() -> None:
    fleet = _healthy()
    _queueing(fleet, "linux-4xlarge")
    _set(fleet, "linux-4xlarge", desired=60, registered=60, busy=60, max_runners=60)
    assert _primary(fleet) is Cause.AUTOSCALING_LIMITS


def test_idle_runners_while_jobs_wait_is_not_capacity() -> None:
    """Idle runners beside a queue: a label problem, said as such; not the autoscaler."""
    fleet = _healthy()
    _queueing(fleet, "linux-4xlarge")
    _set(fleet, "linux-4xlarge", desired=60, registered=60, max_runners=60, idle=20, busy=40)
    report = diagnose(fleet)
    assert report.primary_cause is None
    assert any("idle runners while" in note for note in report.notes)


def test_slow_jobs_win_over_the_maximum_they_cause() -> None:
    """Jobs three times slower push the type to its maximum: the slow jobs are the cause."""
    fleet = _healthy()
    _queueing(fleet, "linux-12xlarge")
    _set(fleet, "linux-12xlarge", duration_p90=7200, desired=200, registered=200, max_runners=200)
    fleet.workflows[Signal.DURATION_P90_BY_WORKFLOW]["linux-12xlarge"] = {PULL: 7200, TRUNK: 2400}
    report = diagnose(fleet)
    assert report.primary_cause is Cause.LONG_RUNNING_JOBS
    slow = next(f for f in report.findings if f.cause is Cause.LONG_RUNNING_JOBS)
    assert slow.evidence[0].workflows == (PULL,)


def test_runners_failing_to_register_is_infrastructure() -> None:
    fleet = _healthy()
    _queueing(fleet, "linux-2xlarge")
    _set(fleet, "linux-2xlarge", desired=150, registered=50, pending_runners=90, failed_runners=7)
    for earlier in fleet.earlier[Signal.DESIRED]:
        earlier["linux-2xlarge"] = 140
    assert _primary(fleet) is Cause.INFRASTRUCTURE


def test_a_passing_gap_is_not_infrastructure() -> None:
    """desired above registered only now (scaling up as it should) proves nothing."""
    fleet = _healthy()
    _queueing(fleet, "linux-2xlarge")
    _set(fleet, "linux-2xlarge", desired=150, registered=50)
    infra = next(f for f in diagnose(fleet).findings if f.cause is Cause.INFRASTRUCTURE)
    assert infra.verdict is Verdict.RULED_OUT


def test_a_gap_while_registered_runners_climb_is_scaling_not_failing() -> None:
    """Desired far above registered for half an hour, but registered grows: a surge being
    caught up with, not runners failing to register."""
    fleet = _healthy()
    _queueing(fleet, "linux-4xlarge")
    _set(fleet, "linux-4xlarge", desired=1400, registered=870, started_per_minute=30)
    for desired, registered in zip(
        fleet.earlier[Signal.DESIRED], fleet.earlier[Signal.REGISTERED], strict=True
    ):
        desired["linux-4xlarge"], registered["linux-4xlarge"] = 1100, 500
    report = diagnose(fleet)
    infra = next(f for f in report.findings if f.cause is Cause.INFRASTRUCTURE)
    assert infra.verdict is Verdict.RULED_OUT
    assert report.primary_cause is Cause.INCREASED_WORKLOAD


def test_throttling_and_oom_kills_are_resource_constraints() -> None:
    fleet = _healthy()
    _queueing(fleet, "windows-4xlarge")
    _set(fleet, "windows-4xlarge", cpu_throttled=0.6, oom_kills=4, duration_p90=2900)
    assert _primary(fleet) is Cause.RESOURCE_CONSTRAINTS


def test_two_types_two_causes_the_worse_queue_decides() -> None:
    fleet = _healthy()
    _queueing(fleet, "linux-2xlarge", queued=80, wait=5400)
    _set(fleet, "linux-2xlarge", started_per_minute=16)
    _queueing(fleet, "linux-4xlarge", queued=12, wait=900)
    _set(fleet, "linux-4xlarge", desired=60, registered=60, max_runners=60)
    report = diagnose(fleet)
    assert report.primary_cause is Cause.INCREASED_WORKLOAD
    likely = {f.cause: f.runner_types for f in report.findings if f.verdict is Verdict.LIKELY}
    assert likely == {
        Cause.INCREASED_WORKLOAD: ("linux-2xlarge",),
        Cause.AUTOSCALING_LIMITS: ("linux-4xlarge",),
    }
    assert [f.cause for f in report.findings[:2]] == [
        Cause.INCREASED_WORKLOAD,
        Cause.AUTOSCALING_LIMITS,
    ]


def test_missing_signals_are_no_data_not_a_guess() -> None:
    fleet = _healthy()
    _queueing(fleet, "linux-2xlarge")
    for signal in (Signal.CPU_THROTTLED, Signal.OOM_KILLS):
        fleet.now[signal] = {}
    fleet.missing[Signal.CPU_THROTTLED] = "unknown metric"
    report = diagnose(fleet)
    resources = next(f for f in report.findings if f.cause is Cause.RESOURCE_CONSTRAINTS)
    assert resources.verdict is Verdict.NO_DATA
    assert report.primary_cause is None
    assert "cpu_throttled: unknown metric" in report.missing


def test_json_has_the_documented_shape() -> None:
    fleet = _healthy()
    _queueing(fleet, "linux-2xlarge")
    _set(fleet, "linux-2xlarge", started_per_minute=14)
    fleet.longest["linux-2xlarge"] = [
        QueuedJob("linux-2xlarge", "pytorch/pytorch", "pull", "build", AT.timestamp() - 3600, RUN)
    ]
    data: dict[str, Any] = diagnose(fleet).to_json()
    assert data["primary_cause"] == "increased_workload"
    assert set(data["findings"][0]) >= {"cause", "verdict", "runner_types", "evidence"}
    assert set(data["findings"][0]["evidence"][0]) >= {
        "now",
        "baseline",
        "yesterday",
        "week_ago",
        "workflows",
        "job",
        "repository",
    }
    assert set(data["runner_types"][0]) == {
        "name",
        "queued",
        "max_wait_seconds",
        "busy",
        "registered",
        "max",
        "yesterday",
        "week_ago",
    }
    assert data["waiting"] == [
        {
            "name": "linux-2xlarge",
            "jobs": [
                {
                    "workflow": "pull",
                    "job": "build",
                    "created_at": "2026-11-21T14:00:00+00:00",
                    "url": RUN,
                }
            ],
        }
    ]


def test_evidence_has_yesterday_and_a_week_ago_beside_the_usual() -> None:
    """The usual is what the checks compare with; the two single days are shown beside it."""
    fleet = _healthy()
    _queueing(fleet, "linux-2xlarge")
    _set(fleet, "linux-2xlarge", started_per_minute=14)
    fleet.yesterday[Signal.STARTED_PER_MINUTE] = {"linux-2xlarge": 3.5}
    fleet.week_ago[Signal.STARTED_PER_MINUTE] = {"linux-2xlarge": 4.5}
    report = diagnose(fleet)
    surge = report.findings[0].evidence[0]
    assert (surge.now, surge.baseline, surge.yesterday, surge.week_ago) == (14, 4, 3.5, 4.5)
    assert "(usual 4; yesterday 3.5, a week ago 4.5)" in text_report(report)
    assert "(usual 4; yesterday 3.5, a week ago 4.5)" in json.dumps(
        Renderer().diagnostics(report).blocks
    )


@pytest.mark.parametrize(
    ("jobs", "repositories", "named"),
    [
        # One job and one repository hold nearly all the rise: both named.
        ({"lint": 9.0, "build": 3.0}, {"pytorch/vision": 9.5, "pytorch/pytorch": 3.5},
         ("lint", "pytorch/vision")),
        # The rise spread over jobs; one repository only: neither says anything.
        ({"lint": 5.0, "build": 5.0, "test": 4.0}, {"pytorch/pytorch": 14.0}, ("", "")),
    ],
)  # fmt: skip
def test_a_surge_names_one_job_or_repository_only_where_it_dominates(
    jobs: dict[str, float], repositories: dict[str, float], named: tuple[str, str]
) -> None:
    fleet = _healthy()
    _queueing(fleet, "linux-2xlarge")
    _set(fleet, "linux-2xlarge", started_per_minute=14)
    fleet.workflows[Signal.STARTED_BY_WORKFLOW]["linux-2xlarge"] = {PULL: 13, TRUNK: 1}
    usual_jobs = {"lint": 1.0, "build": 3.0, "test": 1.0}
    usual_repositories = {"pytorch/vision": 0.5, "pytorch/pytorch": 3.5}
    if len(repositories) == 1:
        usual_repositories = {"pytorch/pytorch": 4.0}
    for by, now, usual in (
        (Breakdown.JOB, jobs, usual_jobs),
        (Breakdown.REPOSITORY, repositories, usual_repositories),
    ):
        fleet.breakdowns[by] = {Signal.STARTED_PER_MINUTE: {"linux-2xlarge": now}}
        fleet.breakdown_baseline[by] = {Signal.STARTED_PER_MINUTE: {"linux-2xlarge": usual}}
    report = diagnose(fleet)
    surge = report.findings[0].evidence[0]
    assert surge.workflows == (PULL,)
    assert (surge.job, surge.repository) == named
    text = text_report(report)
    assert ", from workflows pull" in text
    assert ("mostly job lint, repo pytorch/vision" in text) is any(named)


@pytest.mark.parametrize("hostile", ["<!channel>", "<https://evil.example|x>"])
def test_report_renders_within_slacks_rules_and_escapes_names(hostile: str) -> None:
    """Runner type and workflow names from the metrics cannot ping or link in Slack."""
    fleet = _healthy()
    for signal_values in fleet.now.values():
        signal_values[hostile] = signal_values["linux-2xlarge"]
    for values in fleet.baseline.values():
        values[hostile] = values["linux-2xlarge"]
    _queueing(fleet, hostile)
    _set(fleet, hostile, started_per_minute=20)
    fleet.workflows[Signal.STARTED_BY_WORKFLOW][hostile] = {hostile: 19}
    message = Renderer().diagnostics(diagnose(fleet))
    text = json.dumps(message.blocks)
    assert hostile not in text
    assert "Most likely: Increased workload" in text
    assert "Most likely: Increased workload" in text_report(diagnose(fleet))
