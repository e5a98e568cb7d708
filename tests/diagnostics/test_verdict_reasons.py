"""Numbers that seem to contradict a verdict come with the reason they do not: every runner busy
on a surging type is no autoscaler's limit while the runners keep coming, and hundreds of
runners offline are no failure while they are runners still starting (job events and GitHub's
runners list, as the demo's fleet and most GitHub fleets give them: no maximum measured)."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.diagnostics.checks import diagnose
from bot.domain.diagnosis import Cause, Finding, Report, Verdict
from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals
from bot.render.diagnosis_text import text_report

AT = datetime(2026, 11, 26, 14, 11, tzinfo=UTC)
SURGING = "linux-12xlarge"


def _surge(*, busy_before: tuple[float, float], offline: float) -> FleetSignals:
    """A surging type read from job events and the runners list: all its runners busy."""
    fleet = FleetSignals(at=AT, window="10m")
    now = {
        Signal.QUEUED: 500.0,
        Signal.MAX_WAIT: 1320.0,
        Signal.RUNNING: 261.0,
        Signal.BUSY: 261.0,
        Signal.REGISTERED: 261.0,
        Signal.IDLE: 0.0,
        Signal.OFFLINE: offline,
        Signal.ARRIVALS_PER_MINUTE: 22.0,
        Signal.COMPLETED_PER_MINUTE: 3.0,
        Signal.DURATION_P90: 1500.0,
        Signal.DURATION_P50: 900.0,
    }
    fleet.now = {signal: {SURGING: value} for signal, value in now.items()}
    fleet.baseline = {
        Signal.RUNNING: {SURGING: 86.0},
        Signal.ARRIVALS_PER_MINUTE: {SURGING: 3.7},
        Signal.DURATION_P90: {SURGING: 1500.0},
        Signal.DURATION_P50: {SURGING: 900.0},
    }
    fleet.earlier = {
        Signal.RUNNING: [{SURGING: busy_before[0]}, {SURGING: busy_before[1]}],
        Signal.QUEUED: [{SURGING: 300.0}, {SURGING: 120.0}],
    }
    return fleet


def _finding(report: Report, cause: Cause) -> Finding:
    return next(f for f in report.findings if f.cause is cause)


def test_busy_runners_still_rising_are_no_ceiling_and_say_so() -> None:
    report = diagnose(_surge(busy_before=(220.0, 180.0), offline=634.0))
    assert report.primary_cause is Cause.INCREASED_WORKLOAD
    limits = _finding(report, Cause.AUTOSCALING_LIMITS)
    assert limits.verdict is Verdict.RULED_OUT
    why = limits.evidence[0].why
    assert "still rising (180 half an hour before)" in why
    assert "demand is 5.9x usual" in why
    assert "maximum is not measured" in why
    shown = f"{SURGING}: busy runners (jobs running) 261 (usual 86): {why}"
    assert shown in text_report(report)


def test_busy_runners_wavering_below_half_an_hour_ago_are_not_called_rising() -> None:
    # 261 now, 300 half an hour before: neither held at a ceiling nor clearly falling.
    report = diagnose(_surge(busy_before=(280.0, 300.0), offline=0.0))
    limits = _finding(report, Cause.AUTOSCALING_LIMITS)
    assert limits.verdict is Verdict.RULED_OUT
    why = limits.evidence[0].why
    assert "rising" not in why
    assert why.startswith("not held at a ceiling, wavering (300 half an hour before)")


def test_offline_runners_while_busy_ones_climb_are_runners_starting() -> None:
    report = diagnose(_surge(busy_before=(220.0, 180.0), offline=634.0))
    infrastructure = _finding(report, Cause.INFRASTRUCTURE)
    assert infrastructure.verdict is Verdict.RULED_OUT
    first = infrastructure.evidence[0]
    assert first.measure == "runners offline" and first.now == 634.0
    assert first.why == (
        "runners still starting (71% of 895 listed): busy runners rose from 180 to 261 in half"
        " an hour"
    )
    assert f"{SURGING}: runners offline 634: {first.why}" in text_report(report)


def test_a_few_offline_runners_get_no_explanation() -> None:
    """Two runners offline contradict nothing: no reason is given where none is needed."""
    report = diagnose(_surge(busy_before=(220.0, 180.0), offline=2.0))
    infrastructure = _finding(report, Cause.INFRASTRUCTURE)
    assert all(e.why == "" for e in infrastructure.evidence)


def test_offline_runners_that_are_not_starting_are_put_against_the_share_that_counts() -> None:
    """Busy runners level (no scale-up under way): the offline share is set against the 30 %
    that points to failing runners."""
    report = diagnose(_surge(busy_before=(258.0, 259.0), offline=40.0))
    infrastructure = _finding(report, Cause.INFRASTRUCTURE)
    assert infrastructure.verdict is Verdict.RULED_OUT
    assert infrastructure.evidence[0].why == (
        "13% of the 301 runners listed, under the 30% that points to runners failing"
    )


def test_a_flat_ceiling_needs_no_excuse() -> None:
    """Busy runners held level while jobs wait is the autoscaler's limit, with no reason given
    against it."""
    fleet = _surge(busy_before=(258.0, 259.0), offline=0.0)
    fleet.now[Signal.ARRIVALS_PER_MINUTE][SURGING] = 3.7
    report = diagnose(fleet)
    limits = _finding(report, Cause.AUTOSCALING_LIMITS)
    assert limits.verdict is Verdict.LIKELY
    assert all(e.why == "" for e in limits.evidence)
