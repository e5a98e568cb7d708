"""A simulation's samples: per runner type while it runs (`TypeSamples`), and the whole fleet
kept in memory (`FleetHistory`) for serving queries without writing text and backfilling it.

Every column holds one value per sample time; counters and histogram buckets are cumulative;
a histogram is one column per bound of BUCKETS, then +Inf, sum and count.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

from bot.simulator.spec import BUCKETS, Truth


@dataclass
class TypeSamples:
    """One runner type's samples: gauges, cumulative counters and histogram buckets."""

    gauges: dict[str, array[int]]
    started: list[array[int]]
    completed: list[tuple[array[int], array[int]]]  # (succeeded, failed) per workflow
    startup: list[array[int]]  # cumulative per bucket, +Inf last, then sum
    execution: list[list[array[int]]]
    cfs_periods: list[array[int]]
    cfs_throttled: list[array[int]]
    ooms: list[array[int]]
    final_queued: int = 0


GAUGES = (
    "gha_assigned_jobs",
    "gha_running_jobs",
    "gha_registered_runners",
    "gha_busy_runners",
    "gha_idle_runners",
    "gha_min_runners",
    "gha_max_runners",
    "gha_desired_runners",
    "gha_controller_pending_ephemeral_runners",
    "gha_controller_failed_ephemeral_runners",
)


def histogram_arrays() -> list[array[int]]:
    return [array("q") for _ in range(len(BUCKETS) + 3)]  # buckets, +Inf, sum, count


def append_histogram(columns: list[array[int]], buckets: list[int], total: int) -> None:
    running = 0
    for column, count in zip(columns, buckets, strict=False):
        running += count
        column.append(running)
    columns[-2].append(total)
    columns[-1].append(running)


@dataclass(frozen=True)
class RunnerTypeHistory:
    """One runner type's samples, as the series `simulate` writes hold them: one value per
    sample time in every column, counters and histogram buckets cumulative."""

    name: str  # the label `name` (the scale set)
    workflows: tuple[str, ...]  # the label `job_workflow_ref` of each per-workflow column
    pods: tuple[str, ...]  # the label `pod` of each per-pod column
    gauges: dict[str, array[int]]  # metric name -> values
    started: tuple[array[int], ...]  # gha_started_jobs_total, per workflow
    succeeded: tuple[array[int], ...]  # gha_completed_jobs_total{job_result="succeeded"}
    failed: tuple[array[int], ...]  # gha_completed_jobs_total{job_result="failed"}
    #: gha_job_startup_duration_seconds: one column per bound of BUCKETS, then +Inf, sum, count.
    startup: tuple[array[int], ...]
    #: gha_job_execution_duration_seconds per workflow, its columns as `startup`'s.
    execution: tuple[tuple[array[int], ...], ...]
    cfs_periods: tuple[array[int], ...]  # container_cpu_cfs_periods_total, per pod
    cfs_throttled: tuple[array[int], ...]  # container_cpu_cfs_throttled_periods_total, per pod
    ooms: tuple[array[int], ...]  # container_oom_events_total, per pod


@dataclass(frozen=True)
class FleetHistory:
    """A simulation kept in memory, for serving queries without writing text and backfilling
    it: the very samples `simulate` writes for the same spec, at the same times."""

    truth: Truth
    first_ms: int  # the first sample's time, Unix milliseconds
    step_ms: int
    samples: int
    runner_types: tuple[RunnerTypeHistory, ...]

    @property
    def end_ms(self) -> int:
        """The last sample's time (the spec's `end`), Unix milliseconds."""
        return self.first_ms + (self.samples - 1) * self.step_ms
