"""A simulation's samples, per runner type while it runs (`TypeSamples`).

Every column holds one value per sample time; counters and histogram buckets are cumulative;
a histogram is one column per bound of BUCKETS, then +Inf, sum and count.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

from queuebot_lab.simulator.spec import BUCKETS


@dataclass
class TypeSamples:
    """One runner type's samples: gauges, cumulative counters and histogram buckets."""

    gauges: dict[str, array[int]]
    started: list[array[int]]  # per workflow
    completed: list[tuple[array[int], array[int]]]  # (succeeded, failed) per workflow
    #: gha_job_startup_duration_seconds per workflow: one column per bound of BUCKETS, then
    #: +Inf, sum and count.
    startup: list[list[array[int]]]
    #: gha_job_execution_duration_seconds per workflow and result (succeeded, failed).
    execution: list[tuple[list[array[int]], list[array[int]]]]
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
