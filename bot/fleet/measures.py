"""What diagnostics measure about a runner type, and where a measurement came from.

Every source (GitHub's job events in the store, GitHub's runners list, Prometheus through the
query pack) answers some of these signals, per runner type at one moment; a check reads the
signals it needs from whichever source has them, and says where each came from. A signal no
configured source has is "not measured".
"""

from __future__ import annotations

from enum import StrEnum

#: The last finite bucket of actions-runner-controller's histograms: a percentile there says
#: "this long or more". The query pack keeps a wait's at this value (so that a type's usual
#: wait counts the days it waited an hour or more) and drops a job time's.
PERCENTILE_TOP_SECONDS = 3600.0


class Signal(StrEnum):
    """What is measured, per runner type at one moment (`*_by_workflow`: per workflow too)."""

    QUEUED = "queued"  # jobs waiting for a runner
    MAX_WAIT = "max_wait"  # seconds the longest-waiting job has waited
    #: Of the jobs waiting 5 (10) minutes ago, those not started since (ARC: the jobs not yet
    #: running then, less the jobs started since): how many still wait, where the longest
    #: wait is not measured.
    WAITING_5M = "waiting_5m"
    WAITING_10M = "waiting_10m"
    RUNNING = "running"  # jobs a runner is working on
    #: The most jobs running at once within the window: where an autoscaler's maximum holds,
    #: the ceiling itself, however ephemeral runners come and go beneath it.
    RUNNING_PEAK = "running_peak"
    ARRIVALS_PER_MINUTE = "arrivals_per_minute"  # jobs created (demand)
    ARRIVALS_BY_WORKFLOW = "arrivals_by_workflow"
    #: Jobs created per minute over the last hour: a doubling of a few jobs a minute is chance
    #: in ten minutes and plain in an hour.
    ARRIVALS_HOUR = "arrivals_hour"
    STARTED_PER_MINUTE = "started_per_minute"  # jobs a runner took
    #: Jobs a runner took per minute over the last hour: runners busy over it is how long a
    #: job holds a runner (Little's law), whatever the demand and whatever ceiling holds.
    STARTED_HOUR = "started_hour"
    STARTED_BY_WORKFLOW = "started_by_workflow"
    COMPLETED_PER_MINUTE = "completed_per_minute"
    QUEUE_TIME_MEAN = "queue_time_mean"  # seconds jobs started in the window waited
    QUEUE_TIME_P50 = "queue_time_p50"
    QUEUE_TIME_P90 = "queue_time_p90"
    QUEUE_TIME_MAX = "queue_time_max"  # the longest wait among them
    DURATION_MEAN = "duration_mean"  # job execution time, seconds
    DURATION_P50 = "duration_p50"
    DURATION_P90 = "duration_p90"
    FAILED_SHARE = "failed_share"  # share of the jobs completed in the window that failed
    JOBS_JUDGED = "jobs_judged"  # how many jobs the failed share is of, where a source says
    DURATION_MEAN_BY_WORKFLOW = "duration_mean_by_workflow"
    DURATION_P90_BY_WORKFLOW = "duration_p90_by_workflow"
    REGISTERED = "registered"  # runners registered with GitHub (online)
    OFFLINE = "offline"  # runners registered but offline
    BUSY = "busy"
    IDLE = "idle"
    DESIRED = "desired"  # runners the autoscaler wants
    MIN_RUNNERS = "min_runners"
    MAX_RUNNERS = "max_runners"  # the autoscaler's configured maximum
    PENDING_RUNNERS = "pending_runners"  # ephemeral runners created but not yet running
    FAILED_RUNNERS = "failed_runners"  # ephemeral runners that failed to start
    CPU_THROTTLED = "cpu_throttled"  # share of CPU periods throttled on runner pods, 0..1
    OOM_KILLS = "oom_kills"  # runner containers OOM-killed within the window


BY_WORKFLOW = frozenset(
    {
        Signal.ARRIVALS_BY_WORKFLOW,
        Signal.STARTED_BY_WORKFLOW,
        Signal.DURATION_MEAN_BY_WORKFLOW,
        Signal.DURATION_P90_BY_WORKFLOW,
    }
)


class Breakdown(StrEnum):
    """Besides by workflow, what a runner type's arrivals, starts and job times (mean, p90) are
    counted by (job events only): the job's name, its repository, and its workflow within its
    repository (workflows of the same name in two repositories are two)."""

    JOB = "job"
    REPOSITORY = "repository"
    REPOSITORY_WORKFLOW = "repository_workflow"


class Origin(StrEnum):
    """Where a measurement came from, as the report names it."""

    JOB_EVENTS = "GitHub job events"
    RUNNERS = "GitHub runners"
    PROMETHEUS = "Prometheus"


def told_how_long(signal: Signal, value: float | None) -> bool:
    """Whether `value` of `signal` is measured and says how long: a percentile at the top only
    says "that long or more"."""
    percentile = signal in (Signal.QUEUE_TIME_P50, Signal.QUEUE_TIME_P90)
    return value is not None and not (percentile and value == PERCENTILE_TOP_SECONDS)
