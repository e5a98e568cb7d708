"""What a fleet simulation is asked for and what it staged: the scenario, the spec, the truth.

The names and constants here are shared by the model (`queuebot_lab.simulator.queue_model`), the
OpenMetrics writer and GitHub's deliveries of the same jobs.
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
#: The upper bounds of both job histograms: the listener's defaults (actions-runner-controller,
#: cmd/ghalistener/metrics/metrics.go `defaultRuntimeBuckets`). The last is an hour: a job that
#: waits or runs longer is only counted in +Inf, and in `_sum`.
BUCKETS = (
    0.01, 0.05, 0.1, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 20, 25, 30, 40, 50, 60, 70,
    80, 90, 100, 110, 120, 150, 180, 210, 240, 300, 360, 420, 480, 540, 600, 900, 1200, 1800,
    2400, 3000, 3600,
)  # fmt: skip
PODS_PER_TYPE = 3
#: What ARC reports as the maximum of a scale set without one (math.MaxInt32).
NO_MAXIMUM = 2147483647
#: The runner type (by rank, busiest first) whose scale set has no maximum, as many have.
UNBOUNDED_TYPE = 3


class MetricsShape(StrEnum):
    """Which series a fleet's Prometheus holds, as real scrapes of actions-runner-controller's
    gha-runner-scale-set listener and controller hold them."""

    #: The listener's metrics with the labels ARC's chart suggests (`listenerMetrics` in the
    #: gha-runner-scale-set values, the job_workflow_* labels included) and every bucket; the
    #: controller's ephemeral-runner gauges; cAdvisor for the runner pods; scraped as ARC's
    #: sample dashboard expects, with the listener pod's label
    #: `actions.github.com/scale-set-name` as `actions_github_com_scale_set_name`.
    ARC = "arc"
    #: A lean scrape as PyTorch's own clusters keep it: only assigned and running jobs, the job
    #: counters and the two histograms' `_sum`/`_count` (no buckets), with `job_workflow_name`
    #: and a `cluster` label; one runner type served from two clusters; listeners named as
    #: before ARC's in-place upgrades (the scale set's name and a generated suffix).
    ARC_LEAN = "arc-lean"


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
