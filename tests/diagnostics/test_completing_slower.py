"""What tells slower jobs at a ceiling (bot.diagnostics.job_time.completing_slower): the jobs
completing in the window, on hand-made fleet signals."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.diagnostics.job_time import completing_slower
from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals

NAME = "linux-x64-highmem-32cpu"


def _fleet(now: dict[Signal, float], usual: dict[Signal, float]) -> FleetSignals:
    fleet = FleetSignals(at=datetime(2026, 11, 27, 11, 31, tzinfo=UTC), window="10m")
    for signal, value in now.items():
        fleet.now[signal] = {NAME: value}
    for signal, value in usual.items():
        fleet.baseline[signal] = {NAME: value}
    return fleet


@pytest.mark.parametrize(
    ("p90", "completed", "expected"),
    [
        # Five jobs completed in ten minutes, their p90 1.5 times usual: slower.
        (1500.0, 0.5, True),
        # Twice as long, but two jobs timed: a p90 of two jobs moves by chance.
        (2000.0, 0.2, False),
        # Enough jobs, 1.1 times usual: not clearly slower.
        (1100.0, 3.0, False),
    ],
)
def test_the_jobs_completing_tell_a_slowdown_over_enough_of_them(
    p90: float, completed: float, expected: bool
) -> None:
    fleet = _fleet(
        {Signal.DURATION_P90: p90, Signal.COMPLETED_PER_MINUTE: completed},
        {Signal.DURATION_P90: 1000.0},
    )
    assert completing_slower(fleet, NAME) is expected


def test_the_mean_tells_where_no_percentile_is_measured() -> None:
    # A lean scrape: `_sum` and `_count` only.
    fleet = _fleet(
        {Signal.DURATION_MEAN: 1600.0, Signal.STARTED_PER_MINUTE: 0.6},
        {Signal.DURATION_MEAN: 1000.0},
    )
    assert completing_slower(fleet, NAME)
    fleet.now[Signal.DURATION_MEAN] = {NAME: 1200.0}
    assert not completing_slower(fleet, NAME)


def test_nothing_timed_tells_nothing() -> None:
    assert not completing_slower(_fleet({Signal.COMPLETED_PER_MINUTE: 2.0}, {}), NAME)
