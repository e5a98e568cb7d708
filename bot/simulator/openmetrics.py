"""A simulation written as OpenMetrics text, the series actions-runner-controller's listener and
controller and cAdvisor export, for `promtool tsdb create-blocks-from openmetrics`."""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import TextIO

from bot.simulator.history import GAUGES, TypeSamples
from bot.simulator.profiles import Profile
from bot.simulator.spec import BUCKETS, NAMESPACE


@dataclass
class _Writer:
    out: TextIO
    suffixes: list[str]  # " <timestamp>\n" for every sample time
    series: int = 0
    samples: int = 0

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.out.write(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")

    def write(self, metric: str, labels: str, values: array[int]) -> None:
        prefix = f"{metric}{{{labels}}} "
        self.out.write(
            "".join([prefix + str(v) + s for v, s in zip(values, self.suffixes, strict=True)])
        )
        self.series += 1
        self.samples += len(values)


def _stamp(ms: int) -> str:
    seconds, rest = divmod(ms, 1000)
    return str(seconds) if rest == 0 else f"{seconds}.{rest:03d}"


def _le(bound: float) -> str:
    return f"{bound:.1f}"


_HELP = {
    "gha_assigned_jobs": "Number of jobs assigned to this scale set.",
    "gha_running_jobs": "Number of jobs running (or about to be run).",
    "gha_registered_runners": "Number of runners registered by the scale set.",
    "gha_busy_runners": "Number of registered runners running a job.",
    "gha_idle_runners": "Number of registered runners not running a job.",
    "gha_min_runners": "Minimum number of runners.",
    "gha_max_runners": "Maximum number of runners.",
    "gha_desired_runners": "Number of runners desired by the scale set.",
    "gha_controller_pending_ephemeral_runners": "Number of ephemeral runners in a pending state.",
    "gha_controller_failed_ephemeral_runners": "Number of ephemeral runners in a failed state.",
}


def write_openmetrics(
    out: TextIO, profiles: list[Profile], histories: list[TypeSamples], times_ms: list[int]
) -> _Writer:
    """Write every series of the fleet, sampled at `times_ms`, and the closing `# EOF`."""
    w = _Writer(out, [f" {_stamp(ms)}\n" for ms in times_ms])
    pairs = list(zip(profiles, histories, strict=True))

    def base(p: Profile) -> str:
        return f'name="{p.name}",namespace="{NAMESPACE}"'

    for metric in GAUGES:
        w.family(metric, "gauge", _HELP[metric])
        for p, h in pairs:
            w.write(metric, base(p), h.gauges[metric])

    w.family("gha_started_jobs", "counter", "Total number of jobs started.")
    for p, h in pairs:
        for (ref, _, _), values in zip(p.workflows, h.started, strict=True):
            w.write("gha_started_jobs_total", f'{base(p)},job_workflow_ref="{ref}"', values)

    w.family("gha_completed_jobs", "counter", "Total number of jobs completed.")
    for p, h in pairs:
        for (ref, _, _), (succeeded, failed) in zip(p.workflows, h.completed, strict=True):
            labels = f'{base(p)},job_workflow_ref="{ref}"'
            w.write("gha_completed_jobs_total", f'{labels},job_result="succeeded"', succeeded)
            w.write("gha_completed_jobs_total", f'{labels},job_result="failed"', failed)

    def histogram(metric: str, labels: str, columns: list[array[int]]) -> None:
        for bound, column in zip([*map(_le, BUCKETS), "+Inf"], columns, strict=False):
            w.write(f"{metric}_bucket", f'{labels},le="{bound}"', column)
        w.write(f"{metric}_sum", labels, columns[-2])
        w.write(f"{metric}_count", labels, columns[-1])

    metric = "gha_job_startup_duration_seconds"
    w.family(metric, "histogram", "Time from a job's assignment to the scale set to its start.")
    for p, h in pairs:
        histogram(metric, base(p), h.startup)
    metric = "gha_job_execution_duration_seconds"
    w.family(metric, "histogram", "Time from a job's start to its end.")
    for p, h in pairs:
        for (ref, _, _), columns in zip(p.workflows, h.execution, strict=True):
            histogram(metric, f'{base(p)},job_workflow_ref="{ref}"', columns)

    for family, help_text, pick in (
        ("container_cpu_cfs_periods", "Number of elapsed enforcement period intervals.", 0),
        ("container_cpu_cfs_throttled_periods", "Number of throttled period intervals.", 1),
        ("container_oom_events", "Count of out of memory events observed for the container.", 2),
    ):
        w.family(family, "counter", help_text)
        for p, h in pairs:
            columns = (h.cfs_periods, h.cfs_throttled, h.ooms)[pick]
            for pod, values in zip(p.pods, columns, strict=True):
                labels = f'container="runner",namespace="{NAMESPACE}",pod="{pod}"'
                w.write(f"{family}_total", labels, values)
    out.write("# EOF\n")
    return w
