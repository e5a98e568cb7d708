"""The query pack: every fleet signal diagnostics read, as one PromQL query each.

The defaults speak actions-runner-controller's gha-runner-scale-set metrics as a real scrape holds
them (https://github.com/actions/actions-runner-controller, cmd/ghalistener/metrics):
- the scale-set gauges (`gha_assigned_jobs`, `gha_running_jobs`, registered, busy, idle, min,
  max, desired) carry `name`: the scale set's name, or, before ARC's in-place upgrades, its
  name and a generated 5-character suffix, which the pack drops;
- the job series (`gha_started_jobs_total`, `gha_completed_jobs_total`, and the startup and
  execution histograms) carry no `name` at all. The runner type reaches them only through the
  scrape: relabel the listener pod's label `actions.github.com/scale-set-name` into a target
  label, as ARC's sample dashboard does, and every series of that listener carries it:

      relabel_configs:
        - action: labelmap
          regex: __meta_kubernetes_pod_label_(actions_github_com_scale_set_.+)

  Where that label is present it names the runner type on every series (`runner_type_label`
  names another); without it, job counts and times are "not measured";
- `gha_max_runners` is 2147483647 when the scale set has no maximum: read as none;
- the histograms' buckets stop at 3600 s, and many scrapes keep only `_sum`/`_count`: job and
  queue times are means from `_sum`/`_count`, and percentiles only where buckets exist. A
  percentile in the last bucket only says "an hour or more": a wait's is read as an hour (the
  usual wait of a type that queues an hour every night is an hour, not the median of the
  quieter nights alone), a job time's is not read;
- a `cluster` label (one scale set name in several clusters) is summed over;
- by workflow: `job_workflow_name` (0.13), else the file in `job_workflow_ref` (0.12), else
  (ARC's default labels carry neither) the job's repository;
- registered, busy, idle, desired and the controller's runner gauges may be absent.
ARC has no signal for jobs arriving or for the longest current wait: those come from GitHub's
job events, or a fleet's own exporters. Over the last hour, the jobs started plus the queue's
growth stand for the jobs that arrived (`arrivals_hour`); the jobs not yet running 5 and 10
minutes ago less those started since, for the jobs still waiting of them (`waiting_5m`,
`waiting_10m`). cAdvisor's CPU-throttling and OOM
counters of the runner pods (`<scale set>-runner-<suffix>`) are read where scraped.

Every query returns an instant vector with one series per runner type (label `name`), or per
runner type and workflow (labels `name` and `workflow`) for the `*_by_workflow` signals.
`{window}` is replaced by the rate window (e.g. `10m`). A fleet with other exporters maps its
own metrics in the YAML file:

    queries:
      runner_type_label: my_pool_label
      queued: sum by (name) (my_queue_depth{pool!=""})
      window: 15m
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.fleet.measures import PERCENTILE_TOP_SECONDS, Signal

#: The target label a scrape relabels the listener pod's `actions.github.com/scale-set-name` to.
SCALE_SET_LABEL = "actions_github_com_scale_set_name"
#: Kubernetes' generateName suffix (5 of these characters), on listeners of older ARC releases.
_SUFFIX = "-[bcdfghjklmnpqrstvwxz2456789]{5}"
#: Jobs failing are judged over this window, whatever the rate window.
OUTCOME_WINDOW = "1h"
#: Demand is also read over this window, whatever the rate window.
ARRIVALS_WINDOW = "1h"


def default_queries(type_label: str = SCALE_SET_LABEL) -> dict[Signal, str]:
    """The default pack, the runner type read from `type_label` where series carry it."""

    def typed(expr: str) -> str:
        # `name` without a generated suffix, then the scrape's label where it is set.
        plain = f'label_replace({expr}, "name", "$1", "name", "(.+){_SUFFIX}")'
        return f'label_replace({plain}, "name", "$1", "{type_label}", "(.+)")'

    def by_type(expr: str) -> str:
        return f"sum by (name) ({typed(expr)})"

    def with_workflow(expr: str) -> str:
        # 0.13's job_workflow_name, else the file name in 0.12's job_workflow_ref, else (ARC's
        # default labels carry no workflow) the repository.
        by_repository = f'label_replace({typed(expr)}, "workflow", "$1", "repository", "(.+)")'
        from_ref = (
            f'label_replace({by_repository}, "workflow", "$1", "job_workflow_ref",'
            r' ".*/([^/@]+)\\.ya?ml@.*")'
        )
        return f'label_replace({from_ref}, "workflow", "$1", "job_workflow_name", "(.+)")'

    def by_workflow(expr: str) -> str:
        return f"sum by (name, workflow) ({with_workflow(expr)})"

    def rate(metric: str, by: str = "name", window: str = "{window}") -> str:
        expr = f"rate({metric}[{window}])"
        return by_type(expr) if by == "name" else by_workflow(expr)

    def series(histogram: str, suffix: str) -> str:
        # `name{selector}` → `name_suffix{selector}`
        metric, brace, selector = histogram.partition("{")
        return f"{metric}_{suffix}{brace}{selector}"

    def mean(histogram: str, by: str = "name") -> str:
        return f"{rate(series(histogram, 'sum'), by)} / {rate(series(histogram, 'count'), by)}"

    def quantile(q: float, histogram: str, by: str = "name", *, at_top: bool = False) -> str:
        """The `q` quantile of `histogram`; one in the last bucket only says "an hour or more":
        kept as an hour with `at_top` (a wait of an hour is what the alert counts), else
        dropped (a job time of "an hour or more" tells no change)."""
        expr = f"rate({series(histogram, 'bucket')}[{{window}}])"
        inner = (
            f"sum by (name, le) ({typed(expr)})"
            if by == "name"
            else f"sum by (name, workflow, le) ({with_workflow(expr)})"
        )
        found = f"histogram_quantile({q}, {inner})"
        if at_top:
            return f"clamp_max({found}, {PERCENTILE_TOP_SECONDS:g})"
        return f"{found} < {PERCENTILE_TOP_SECONDS:g}"

    started, completed = "gha_started_jobs_total", "gha_completed_jobs_total"
    startup = "gha_job_startup_duration_seconds"
    # Releases up to 0.14 count a job cancelled before a runner took it with a run time from
    # year 1 (about 6.4e10 s): a cancelled job's time is no job time.
    execution = 'gha_job_execution_duration_seconds{job_result!="canceled"}'
    failed = 'gha_completed_jobs_total{job_result="failed"}'
    hourly, hourly_failed = (
        rate(completed, window=OUTCOME_WINDOW),
        rate(failed, window=OUTCOME_WINDOW),
    )

    def runner_pods(expr: str) -> str:
        named = (
            f'label_replace({expr}, "name", "$1", "pod",'
            f' "(.+?)(?:{_SUFFIX})?-runner-[bcdfghjklmnpqrstvwxz2456789]{{5}}")'
        )
        return f"sum by (name) ({named})"

    def waiting(offset: str = "") -> str:
        return by_type(f"clamp_min(gha_assigned_jobs{offset} - gha_running_jobs{offset}, 0)")

    def still_waiting(ago: str) -> str:
        # A job waiting `ago` before that still waits has not started since: the jobs waiting
        # then, less every job started since, are at least those (cancellations aside), and
        # exactly those where jobs start in the order they came.
        since = by_type(f"increase({started}[{ago}])")
        return f"clamp_min({waiting(f' offset {ago}')} - {since}, 0)"

    # ARC counts no job arriving; over an hour the jobs started plus what the queue grew by
    # are the jobs that arrived (a cancelled job aside), even where a ceiling holds starts.
    arrived_hour = (
        f"clamp_min({by_type(f'increase({started}[{ARRIVALS_WINDOW}])')}"
        f" + ({waiting()} - {waiting(f' offset {ARRIVALS_WINDOW}')}), 0) / 60"
    )

    return {
        Signal.QUEUED: waiting(),
        Signal.ARRIVALS_HOUR: arrived_hour,
        Signal.WAITING_5M: still_waiting("5m"),
        Signal.WAITING_10M: still_waiting("10m"),
        Signal.RUNNING: by_type("gha_running_jobs"),
        Signal.RUNNING_PEAK: by_type("max_over_time(gha_running_jobs[{window}])"),
        Signal.REGISTERED: by_type("gha_registered_runners"),
        Signal.BUSY: by_type("gha_busy_runners"),
        Signal.IDLE: by_type("gha_idle_runners"),
        Signal.DESIRED: by_type("gha_desired_runners"),
        Signal.MIN_RUNNERS: by_type("gha_min_runners"),
        Signal.MAX_RUNNERS: by_type("gha_max_runners < 2147483647"),
        Signal.STARTED_PER_MINUTE: f"60 * {rate(started)}",
        Signal.STARTED_HOUR: f"60 * {rate(started, window=ARRIVALS_WINDOW)}",
        Signal.STARTED_BY_WORKFLOW: f"60 * {rate(started, 'workflow')}",
        Signal.COMPLETED_PER_MINUTE: f"60 * {rate(completed)}",
        # Over the last hour (failures are rare: a short window holds too few to tell a rise
        # from chance); no failure is a share of 0, not an unknown one.
        Signal.FAILED_SHARE: f"({hourly_failed} or 0 * {hourly}) / {hourly}",
        Signal.JOBS_JUDGED: by_type(f"increase({completed}[{OUTCOME_WINDOW}])"),
        Signal.QUEUE_TIME_MEAN: mean(startup),
        Signal.QUEUE_TIME_P50: quantile(0.5, startup, at_top=True),
        Signal.QUEUE_TIME_P90: quantile(0.9, startup, at_top=True),
        Signal.DURATION_MEAN: mean(execution),
        Signal.DURATION_P50: quantile(0.5, execution),
        Signal.DURATION_P90: quantile(0.9, execution),
        Signal.DURATION_MEAN_BY_WORKFLOW: mean(execution, "workflow"),
        Signal.DURATION_P90_BY_WORKFLOW: quantile(0.9, execution, "workflow"),
        Signal.PENDING_RUNNERS: by_type("gha_controller_pending_ephemeral_runners"),
        Signal.FAILED_RUNNERS: by_type("gha_controller_failed_ephemeral_runners"),
        Signal.CPU_THROTTLED: (
            runner_pods(
                'rate(container_cpu_cfs_throttled_periods_total{container="runner"}[{window}])'
            )
            + " / "
            + runner_pods('rate(container_cpu_cfs_periods_total{container="runner"}[{window}])')
        ),
        Signal.OOM_KILLS: runner_pods(
            'increase(container_oom_events_total{container="runner"}[{window}])'
        ),
    }


DEFAULT_QUERIES = default_queries()


class QueryPack(BaseModel):
    """The queries in use: the defaults (for `runner_type_label`), with what the YAML file's
    `queries:` overrides. An empty query: that signal is not asked of Prometheus."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    window: str = Field("10m", pattern=r"^[0-9]+[smh]$")
    #: The label that names a series' runner type, where the scrape adds one.
    runner_type_label: str = Field(SCALE_SET_LABEL, pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")
    queued: str = ""
    running: str = ""
    running_peak: str = ""
    max_wait: str = ""
    waiting_5m: str = ""
    waiting_10m: str = ""
    registered: str = ""
    busy: str = ""
    idle: str = ""
    desired: str = ""
    min_runners: str = ""
    max_runners: str = ""
    started_per_minute: str = ""
    started_hour: str = ""
    started_by_workflow: str = ""
    duration_p50: str = ""
    duration_p90: str = ""
    duration_p90_by_workflow: str = ""
    pending_runners: str = ""
    failed_runners: str = ""
    cpu_throttled: str = ""
    oom_kills: str = ""
    completed_per_minute: str = ""
    failed_share: str = ""
    jobs_judged: str = ""
    queue_time_mean: str = ""
    queue_time_p50: str = ""
    queue_time_p90: str = ""
    queue_time_max: str = ""
    duration_mean: str = ""
    duration_mean_by_workflow: str = ""
    # Not in actions-runner-controller's metrics: measured from GitHub's job events and runners
    # list instead, unless a fleet's own exporters answer them.
    arrivals_per_minute: str = ""
    arrivals_by_workflow: str = ""
    arrivals_hour: str = ""
    offline: str = ""

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        """Fill every query not given from the defaults for the pack's runner-type label."""
        given = dict(data) if isinstance(data, dict) else {}
        label = given.get("runner_type_label", SCALE_SET_LABEL)
        if not isinstance(label, str):
            return data
        for signal, query in default_queries(label).items():
            given.setdefault(signal.value, query)
        return given

    def measures(self, signal: Signal) -> bool:
        """Whether the pack has a query for `signal` (an empty one: Prometheus is not asked)."""
        return bool(str(getattr(self, signal.value, "")).strip())

    def query(self, signal: Signal) -> str:
        """The PromQL for `signal`, with the rate window filled in."""
        text: str = getattr(self, signal.value)
        return text.replace("{window}", self.window)
