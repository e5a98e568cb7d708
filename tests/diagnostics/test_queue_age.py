"""What the jobs still waiting of an earlier queue tell where no source measures the longest
wait (bot.diagnostics.queue_age), on hand-made fleet signals."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.diagnostics.evidence import QUEUED_AFFECTED
from bot.diagnostics.queue_age import queue_ruled_out
from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals

AT = datetime(2026, 11, 27, 4, 10, tzinfo=UTC)
NAME = "linux-arm64-4cpu"


def _fleet(values: dict[Signal, float]) -> FleetSignals:
    fleet = FleetSignals(at=AT, window="10m")
    for signal, value in values.items():
        fleet.now[signal] = {NAME: value}
    return fleet


@pytest.mark.parametrize(
    ("five", "ten", "expected"),
    [
        # Every job of the queue 10 minutes ago started, 2 of that 5 minutes ago still wait.
        (2.0, 0.0, True),
        # Prometheus's increase extrapolates: under one job left is none.
        (4.6, 0.7, True),
        # One job of the queue 10 minutes ago still waits: it has waited 10 minutes.
        (2.0, 1.0, False),
        # Five of the queue 5 minutes ago still wait: the alert's count.
        (5.0, 0.0, False),
    ],
)
def test_what_still_waits_of_earlier_queues_tells_whether_the_type_queues(
    five: float, ten: float, expected: bool
) -> None:
    fleet = _fleet({Signal.QUEUED: 9.0, Signal.WAITING_5M: five, Signal.WAITING_10M: ten})
    assert queue_ruled_out(fleet, NAME, QUEUED_AFFECTED) is expected


def test_a_measured_longest_wait_decides_instead() -> None:
    fleet = _fleet({Signal.MAX_WAIT: 900.0, Signal.WAITING_5M: 0.0, Signal.WAITING_10M: 0.0})
    assert not queue_ruled_out(fleet, NAME, QUEUED_AFFECTED)


@pytest.mark.parametrize("missing", [Signal.WAITING_5M, Signal.WAITING_10M])
def test_without_both_earlier_queues_nothing_is_told(missing: Signal) -> None:
    values = {Signal.QUEUED: 9.0, Signal.WAITING_5M: 0.0, Signal.WAITING_10M: 0.0}
    del values[missing]
    assert not queue_ruled_out(_fleet(values), NAME, QUEUED_AFFECTED)
