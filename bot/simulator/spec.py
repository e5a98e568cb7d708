"""What a fleet simulation is asked for and what it staged: the scenario, the spec, the truth.

The names and constants here are shared by the model (`bot.simulator.queue_model`), the
OpenMetrics writer and the in-memory history that `bot.sandbox.prometheus` serves.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class Scenario(StrEnum):
    """What goes wrong, and where the runbook's cause for it is staged (see `_problem`)."""

    HEALTHY = "healthy"
    SURGE = "surge"
    CAPACITY_CAP = "capacity_cap"
    SLOW_JOBS = "slow_jobs"
    SCALE_UP_FAILURE = "scale_up_failure"
    RESOURCE_STARVATION = "resource_starvation"
    MIX = "mix"


#: The runbook's cause each problem scenario stages.
CAUSES: dict[Scenario, str] = {
    Scenario.HEALTHY: "none",
    Scenario.SURGE: "increased_workload",
    Scenario.CAPACITY_CAP: "autoscaling_limits",
    Scenario.SLOW_JOBS: "long_running_jobs",
    Scenario.SCALE_UP_FAILURE: "infrastructure",
    Scenario.RESOURCE_STARVATION: "resource_constraints",
}

#: The pairs a mixed incident is made of, on two runner types; the commonest pair twice.
MIX_PAIRS: tuple[tuple[Scenario, Scenario], ...] = (
    (Scenario.SURGE, Scenario.SCALE_UP_FAILURE),
    (Scenario.SURGE, Scenario.SCALE_UP_FAILURE),
    (Scenario.CAPACITY_CAP, Scenario.RESOURCE_STARVATION),
    (Scenario.SLOW_JOBS, Scenario.SCALE_UP_FAILURE),
    (Scenario.SURGE, Scenario.CAPACITY_CAP),
)

#: Promtool keeps what a default Prometheus (15 days' retention) keeps.
MAX_HOURS = 15 * 24
NAMESPACE = "arc-runners"
#: Upper bounds of both histograms: few buckets keep the data small.
BUCKETS = (30, 60, 120, 300, 600, 900, 1800, 2700, 3600, 5400, 7200, 10800, 14400)
PODS_PER_TYPE = 3


@dataclass(frozen=True)
class SimulationSpec:
    scenario: Scenario
    hours: float
    runner_types: int
    seed: int
    end: datetime  # aware; the last sample is at `end`
    step_seconds: int = 60


@dataclass(frozen=True)
class Truth:
    """What the simulation staged: the cause diagnostics should name, and where."""

    scenario: Scenario
    primary_cause: str
    affected: dict[str, str]  # runner type -> its cause
    problem_start: datetime | None = None  # the earliest start among the affected types
