"""The query pack: every fleet signal diagnostics read, as one PromQL query each.

The defaults speak actions-runner-controller's scale-set metrics (gha-runner-scale-set listener
and controller, https://github.com/actions/actions-runner-controller), with the runner type in the
label `name`, plus cAdvisor's CPU-throttling and OOM counters of the runner pods. Every query
returns an instant vector with one series per runner type (label `name`), or per runner type and
workflow (labels `name` and `workflow`) for the `*_by_workflow` signals. `{window}` in a query is
replaced by the rate window (e.g. `10m`).

A fleet with other exporters maps its own metrics in the YAML file:

    queries:
      queued: sum by (name) (my_queue_depth{pool!=""})
      window: 15m
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bot.diagnostics.measures import Signal

#: Runner pods are named `<scale set>-<5 chars>-runner-<5 chars>`; the scale set is the type.
_POD_TO_TYPE = 'label_replace({expr}, "name", "$1", "pod", "(.+)-[a-z0-9]+-runner-[a-z0-9]+")'


def _by_pod(expr: str) -> str:
    return "sum by (name) (" + _POD_TO_TYPE.format(expr=expr) + ")"


DEFAULT_QUERIES: dict[Signal, str] = {
    Signal.QUEUED: "sum by (name) (clamp_min(gha_assigned_jobs - gha_running_jobs, 0))",
    Signal.RUNNING: "sum by (name) (gha_running_jobs)",
    Signal.MAX_WAIT: (
        "histogram_quantile(0.99, sum by (name, le)"
        " (rate(gha_job_startup_duration_seconds_bucket[{window}])))"
    ),
    Signal.REGISTERED: "sum by (name) (gha_registered_runners)",
    Signal.BUSY: "sum by (name) (gha_busy_runners)",
    Signal.IDLE: "sum by (name) (gha_idle_runners)",
    Signal.DESIRED: "sum by (name) (gha_desired_runners)",
    Signal.MIN_RUNNERS: "sum by (name) (gha_min_runners)",
    Signal.MAX_RUNNERS: "sum by (name) (gha_max_runners)",
    Signal.STARTED_PER_MINUTE: "60 * sum by (name) (rate(gha_started_jobs_total[{window}]))",
    Signal.STARTED_BY_WORKFLOW: (
        "label_replace(60 * sum by (name, job_workflow_ref)"
        " (rate(gha_started_jobs_total[{window}])),"
        ' "workflow", "$1", "job_workflow_ref", "(.*)")'
    ),
    Signal.DURATION_P50: (
        "histogram_quantile(0.5, sum by (name, le)"
        " (rate(gha_job_execution_duration_seconds_bucket[{window}])))"
    ),
    Signal.DURATION_P90: (
        "histogram_quantile(0.9, sum by (name, le)"
        " (rate(gha_job_execution_duration_seconds_bucket[{window}])))"
    ),
    Signal.DURATION_P90_BY_WORKFLOW: (
        "label_replace(histogram_quantile(0.9, sum by (name, job_workflow_ref, le)"
        " (rate(gha_job_execution_duration_seconds_bucket[{window}]))),"
        ' "workflow", "$1", "job_workflow_ref", "(.*)")'
    ),
    Signal.PENDING_RUNNERS: "sum by (name) (gha_controller_pending_ephemeral_runners)",
    Signal.FAILED_RUNNERS: "sum by (name) (gha_controller_failed_ephemeral_runners)",
    Signal.CPU_THROTTLED: (
        _by_pod('rate(container_cpu_cfs_throttled_periods_total{container="runner"}[{window}])')
        + " / "
        + _by_pod('rate(container_cpu_cfs_periods_total{container="runner"}[{window}])')
    ),
    Signal.OOM_KILLS: _by_pod('increase(container_oom_events_total{container="runner"}[{window}])'),
}


class QueryPack(BaseModel):
    """The queries in use: the defaults, with what the YAML file's `queries:` overrides."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    window: str = Field("10m", pattern=r"^[0-9]+[smh]$")
    queued: str = DEFAULT_QUERIES[Signal.QUEUED]
    running: str = DEFAULT_QUERIES[Signal.RUNNING]
    max_wait: str = DEFAULT_QUERIES[Signal.MAX_WAIT]
    registered: str = DEFAULT_QUERIES[Signal.REGISTERED]
    busy: str = DEFAULT_QUERIES[Signal.BUSY]
    idle: str = DEFAULT_QUERIES[Signal.IDLE]
    desired: str = DEFAULT_QUERIES[Signal.DESIRED]
    min_runners: str = DEFAULT_QUERIES[Signal.MIN_RUNNERS]
    max_runners: str = DEFAULT_QUERIES[Signal.MAX_RUNNERS]
    started_per_minute: str = DEFAULT_QUERIES[Signal.STARTED_PER_MINUTE]
    started_by_workflow: str = DEFAULT_QUERIES[Signal.STARTED_BY_WORKFLOW]
    duration_p50: str = DEFAULT_QUERIES[Signal.DURATION_P50]
    duration_p90: str = DEFAULT_QUERIES[Signal.DURATION_P90]
    duration_p90_by_workflow: str = DEFAULT_QUERIES[Signal.DURATION_P90_BY_WORKFLOW]
    pending_runners: str = DEFAULT_QUERIES[Signal.PENDING_RUNNERS]
    failed_runners: str = DEFAULT_QUERIES[Signal.FAILED_RUNNERS]
    cpu_throttled: str = DEFAULT_QUERIES[Signal.CPU_THROTTLED]
    oom_kills: str = DEFAULT_QUERIES[Signal.OOM_KILLS]
    # Not in actions-runner-controller's metrics: measured from GitHub's job events and runners
    # list instead, unless a fleet's own exporters answer them.
    arrivals_per_minute: str = DEFAULT_QUERIES.get(Signal.ARRIVALS_PER_MINUTE, "")
    arrivals_by_workflow: str = DEFAULT_QUERIES.get(Signal.ARRIVALS_BY_WORKFLOW, "")
    completed_per_minute: str = DEFAULT_QUERIES.get(Signal.COMPLETED_PER_MINUTE, "")
    queue_time_p50: str = DEFAULT_QUERIES.get(Signal.QUEUE_TIME_P50, "")
    queue_time_p90: str = DEFAULT_QUERIES.get(Signal.QUEUE_TIME_P90, "")
    duration_mean: str = DEFAULT_QUERIES.get(Signal.DURATION_MEAN, "")
    failed_share: str = DEFAULT_QUERIES.get(Signal.FAILED_SHARE, "")
    duration_mean_by_workflow: str = DEFAULT_QUERIES.get(Signal.DURATION_MEAN_BY_WORKFLOW, "")
    offline: str = DEFAULT_QUERIES.get(Signal.OFFLINE, "")

    def measures(self, signal: Signal) -> bool:
        """Whether the pack has a query for `signal` (an empty one: Prometheus is not asked)."""
        return bool(getattr(self, signal.value).strip())

    def query(self, signal: Signal) -> str:
        """The PromQL for `signal`, with the rate window filled in."""
        text: str = getattr(self, signal.value)
        return text.replace("{window}", self.window)
