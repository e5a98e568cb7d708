"""A simulation's samples, per runner type while it runs (`TypeSamples`).

Every column holds one value per sample time; counters and histogram buckets are cumulative;
a histogram is one column per bound of BUCKETS, then +Inf, sum and count.
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass
from itertools import accumulate

from queuebot_lab.simulator.spec import BUCKETS, PODS_PER_TYPE


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


def empty_samples(workflows: int) -> TypeSamples:
    """A runner type's samples before the first, for its `workflows` workflows."""
    return TypeSamples(
        gauges={metric: array("q") for metric in GAUGES},
        started=[array("q") for _ in range(workflows)],
        completed=[(array("q"), array("q")) for _ in range(workflows)],
        startup=[histogram_arrays() for _ in range(workflows)],
        execution=[(histogram_arrays(), histogram_arrays()) for _ in range(workflows)],
        cfs_periods=[array("q") for _ in range(PODS_PER_TYPE)],
        cfs_throttled=[array("q") for _ in range(PODS_PER_TYPE)],
        ooms=[array("q") for _ in range(PODS_PER_TYPE)],
    )


def append_histogram(columns: list[array[int]], buckets: list[int], total: int) -> None:
    """One sample of a histogram: `buckets` holds each bucket's own count (+Inf last), the
    columns get them cumulated, then `total` (the sum) and the count."""
    cumulative = list(accumulate(buckets))
    # One append per bucket column; the sum's and the count's columns follow them.
    deque(map(array.append, columns, cumulative), maxlen=0)
    columns[-2].append(total)
    columns[-1].append(cumulative[-1] if cumulative else 0)
