"""The simulated fleets the Prometheus-backed tests share: each scenario, in each of the metric
shapes real fleets have, 27 hours of 6 runner types every 2 minutes (a day of baseline and the
hours before), ending at the latest 18:00 UTC, in the fleet's busy hours (what diagnostics make
of each hour of the day is bench/diagnosis_accuracy.py's)."""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from typing import Protocol

import pytest

from queuebot_lab.simulator import MetricsShape, Scenario, SimulationSpec, Truth
from testkit.prometheus import Prometheus


def _busy_hour() -> datetime:
    now = datetime.now(UTC).replace(microsecond=0)
    today = now.replace(hour=18, minute=0, second=0)
    return today if today <= now else today - timedelta(days=1)


#: When the shared fleets end: the time diagnostics read them at.
FLEET_END = _busy_hour()
FLEET_TYPES = 6
#: Tests using the shared fleets run in the session's event loop, where their servers live.
in_session_loop = pytest.mark.asyncio(loop_scope="session")


def fleet_spec(scenario: Scenario, *, seed: int = 7, end: datetime = FLEET_END) -> SimulationSpec:
    return SimulationSpec(
        scenario=scenario, hours=27, runner_types=FLEET_TYPES, seed=seed, end=end, step_seconds=120
    )


class Fleets(Protocol):
    """`await fleets(scenario, shape)`: a running Prometheus holding that fleet, and its truth."""

    def __call__(
        self, scenario: Scenario, shape: MetricsShape = MetricsShape.ARC
    ) -> Awaitable[tuple[Prometheus, Truth]]: ...
