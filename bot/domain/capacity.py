"""A capacity report as it reads: per runner type, the window's queue times, how busy and how
full the fleet was, who used it, and the sizes that would have kept the p95 queue time under the
target. Composed by `bot.capacity`, kept as JSON until a scheduled report is posted."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

#: The title of the report's chart.
CAPACITY_CHART_TITLE = "Capacity of the busiest runner types"
#: Runner types drawn in the chart, busiest first.
CHART_TYPES = 4


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HourOfWeek(_Frozen):
    """Queue times of the jobs queued in one hour of the week (Monday 0, hours UTC), pooled
    over the window's weeks."""

    weekday: int = Field(ge=0, le=6)
    hour: int = Field(ge=0, le=23)
    jobs: int
    p50_seconds: float
    p95_seconds: float


class WorkflowUse(_Frozen):
    workflow: str
    runner_hours: float
    share: float


class RecommendedSize(_Frozen):
    """A maximum and a warm pool (idle runners kept beyond demand), and what the window's jobs,
    replayed through them, would have waited and cost."""

    max_runners: int
    warm_pool: int
    p95_seconds: float
    runner_hours: float
    #: False when no size within reach meets the target: the largest one tried.
    reachable: bool = True


class TypeCapacity(_Frozen):
    runner_type: str
    #: Whether GitHub's job events told of its jobs (without, no queue times or sizes).
    measured: bool = True
    jobs: int
    #: Queue time over the window (jobs still waiting count with their wait so far).
    p50_seconds: float
    p95_seconds: float
    p99_seconds: float
    #: The hours of the week with the longest p95 queue time, worst first.
    worst_hours: tuple[HourOfWeek, ...] = ()
    #: Hours of the week whose p95 queue time was over the target.
    hours_over_target: int = 0
    #: Runner-hours spent on jobs, and the most runners busy at once.
    busy_hours: float
    peak_busy: int
    #: Jobs that failed (conclusion failure).
    failed_jobs: int = 0
    #: The autoscaler's maximum and the hours spent at it; utilisation (busy ÷ registered
    #: runners): from Prometheus, when it is configured.
    max_runners: int | None = None
    hours_at_max: float | None = None
    utilisation: float | None = None
    #: Runners listed offline, and ephemeral runners that failed (now, or at most at once).
    offline_runners: int | None = None
    failed_runners: int | None = None
    workflows: tuple[WorkflowUse, ...] = ()
    recommended: RecommendedSize | None = None
    #: The current maximum replayed with the same jobs, for comparison (when it is known).
    current: RecommendedSize | None = None


class CapacityReport(_Frozen):
    since: float
    until: float
    target_p95_seconds: float
    #: The busiest runner types (runner-hours) first; `more_types` were left out for room.
    types: tuple[TypeCapacity, ...]
    more_types: int = 0
    #: What the report could not know, and why (a source not configured, too few jobs).
    notes: tuple[str, ...] = ()

    def chart_alt(self) -> str:
        names = ", ".join(t.runner_type for t in self.types[:CHART_TYPES] if t.jobs)
        return f"Runners busy and p95 queue time hour by hour for {names}"

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str) -> CapacityReport:
        return cls.model_validate_json(text)
