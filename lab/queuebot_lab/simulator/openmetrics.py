"""A simulation written as OpenMetrics text, for `promtool tsdb create-blocks-from openmetrics`:
the series a real Prometheus holds after scraping actions-runner-controller's listener and
controller (and cAdvisor), in one of the shapes real fleets have (`MetricsShape`).

What is kept of the real systems (actions-runner-controller, cmd/ghalistener/metrics and
controllers/actions.github.com/metrics):
- the scale-set gauges carry `name` (the listener's EphemeralRunnerSet: the scale set's own
  name since ARC's in-place upgrades, its name and a generated suffix before), `namespace` and
  `organization`; the job counters and histograms carry no `name`, only `organization`,
  `repository` (the repository's name alone), `job_name`, `event_name`, `job_result` on what
  completed, and a workflow label where configured (`job_workflow_ref` since 0.12,
  `job_workflow_name` since 0.13);
- labels ARC leaves empty (`enterprise` of an organization's scale set) are absent, as
  Prometheus stores them;
- histograms have the listener's default buckets, ending at an hour, and whole-second
  observations; `gha_max_runners` is 2147483647 where no maximum is set;
- the scrape adds `job` and `instance`, and, as ARC's sample dashboard has it, the listener
  pod's labels `actions.github.com/scale-set-name` and `-namespace` in Prometheus' spelling.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, TextIO

from queuebot_lab.simulator.history import GAUGES, TypeSamples
from queuebot_lab.simulator.profiles import (
    EVENT_NAMES,
    JOB_NAMES,
    POD_ALPHABET,
    Profile,
    workflow_of,
)
from queuebot_lab.simulator.spec import BUCKETS, NAMESPACE, MetricsShape

ORGANIZATION = "pytorch"
REPOSITORY = "pytorch"
#: The scrape's labels for the listener pods' target: the scale set, as the pod is labelled.
_SCALE_SET_TARGET = "actions_github_com_scale_set_name"
_SCALE_SET_NAMESPACE_TARGET = "actions_github_com_scale_set_namespace"
#: The lean scrape's two clusters; the first runner type is served from both.
CLUSTERS = ("arc-cluster-a", "arc-cluster-b")

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
_LEAN_GAUGES = ("gha_assigned_jobs", "gha_running_jobs")
_CONTROLLER = (
    "gha_controller_pending_ephemeral_runners",
    "gha_controller_failed_ephemeral_runners",
)


class SeriesWriter(Protocol):
    """Where a fleet's series go, one after another, each sampled at every time of the run."""

    series: int
    samples: int

    def family(self, name: str, kind: str, help_text: str) -> None: ...

    def write(self, metric: str, labels: dict[str, str], values: Sequence[int]) -> None: ...


@dataclass
class _Writer:
    out: TextIO
    suffixes: list[str]  # " <timestamp>\n" for every sample time
    series: int = 0
    samples: int = 0

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.out.write(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")

    def write(self, metric: str, labels: dict[str, str], values: Sequence[int]) -> None:
        text = ",".join(f'{k}="{v}"' for k, v in labels.items() if v)
        prefix = f"{metric}{{{text}}} "
        self.out.write(
            "".join([prefix + str(v) + s for v, s in zip(values, self.suffixes, strict=True)])
        )
        self.series += 1
        self.samples += len(values)


def _stamp(ms: int) -> str:
    seconds, rest = divmod(ms, 1000)
    return str(seconds) if rest == 0 else f"{seconds}.{rest:03d}"


def _le(bound: float) -> str:
    """A bucket's bound as client_golang writes it (Go's shortest form: 0.01, 1, 3600)."""
    return f"{bound:g}"


def _halves(values: array[int]) -> tuple[array[int], array[int]]:
    """A count split between two clusters; each half of a cumulative count stays cumulative."""
    low = array("q", (v // 2 for v in values))
    return low, array("q", (v - h for v, h in zip(values, low, strict=True)))


@dataclass(frozen=True)
class _Type:
    """One runner type as one cluster's listener reports it."""

    profile: Profile
    samples: TypeSamples
    listener: str  # the gauges' `name`
    index: int  # the runner type's rank
    cluster: str = ""
    half: int = -1  # which half of a type split between clusters; -1: all of it

    def part(self, values: array[int]) -> array[int]:
        return values if self.half < 0 else _halves(values)[self.half]


def _types(
    shape: MetricsShape, profiles: list[Profile], histories: list[TypeSamples]
) -> Iterator[_Type]:
    for index, (p, h) in enumerate(zip(profiles, histories, strict=True)):
        if shape is MetricsShape.ARC:
            yield _Type(p, h, p.name, index)
            continue
        rng = random.Random(f"listener/{p.name}")  # noqa: S311 - reproducible names
        generated = f"{p.name}-{''.join(rng.choices(POD_ALPHABET, k=5))}"
        if index == 0:
            yield _Type(p, h, generated, index, CLUSTERS[0], 0)
            again = f"{p.name}-{''.join(rng.choices(POD_ALPHABET, k=5))}"
            yield _Type(p, h, again, index, CLUSTERS[1], 1)
        else:
            yield _Type(p, h, generated, index, CLUSTERS[index % 2])


def write_openmetrics(
    out: TextIO,
    profiles: list[Profile],
    histories: list[TypeSamples],
    times_ms: list[int],
    shape: MetricsShape = MetricsShape.ARC,
) -> _Writer:
    """Write every series of the fleet in `shape`, sampled at `times_ms`, and `# EOF`."""
    w = _Writer(out, [f" {_stamp(ms)}\n" for ms in times_ms])
    write_series(w, profiles, histories, shape)
    out.write("# EOF\n")
    return w


def write_series(
    w: SeriesWriter,
    profiles: list[Profile],
    histories: list[TypeSamples],
    shape: MetricsShape = MetricsShape.ARC,
) -> None:
    """Every series of the fleet in `shape`, as Prometheus holds them, to `w`."""
    lean = shape is MetricsShape.ARC_LEAN
    types = list(_types(shape, profiles, histories))

    def target(t: _Type, job: str) -> dict[str, str]:
        # Kubernetes service discovery: the pod's address.
        address = f"10.{12 + CLUSTERS.index(t.cluster) if t.cluster else 11}.{t.index}.17:8080"
        scraped = {"job": job, "instance": address, "cluster": t.cluster}
        if job == "arc-listeners":
            scraped |= {_SCALE_SET_TARGET: t.profile.name, _SCALE_SET_NAMESPACE_TARGET: NAMESPACE}
        return scraped

    def scale_set(t: _Type, job: str = "arc-listeners") -> dict[str, str]:
        own = {"name": t.listener, "namespace": NAMESPACE, "organization": ORGANIZATION}
        return target(t, job) | own

    def job_labels(t: _Type, ref: str) -> dict[str, str]:
        workflow = workflow_of(ref)
        labels = target(t, "arc-listeners") | {
            "organization": ORGANIZATION,
            "repository": REPOSITORY,
            "job_name": JOB_NAMES.get(workflow, (f"{workflow} / build",))[0],
            "event_name": EVENT_NAMES.get(workflow, "push"),
            "job_workflow_name": workflow,
        }
        if not lean:
            # The workflow label of ARC 0.12 (job_workflow_name came with 0.13).
            labels["job_workflow_ref"] = ref
            del labels["job_workflow_name"]
        return labels

    for metric in _LEAN_GAUGES if lean else GAUGES:
        if metric in _CONTROLLER:
            continue
        w.family(metric, "gauge", _HELP[metric])
        for t in types:
            w.write(metric, scale_set(t), t.part(t.samples.gauges[metric]))

    w.family("gha_started_jobs", "counter", "Total number of jobs started.")
    for t in types:
        for (ref, _, _), values in zip(t.profile.workflows, t.samples.started, strict=True):
            w.write("gha_started_jobs_total", job_labels(t, ref), t.part(values))
    w.family("gha_completed_jobs", "counter", "Total number of jobs completed.")
    for t in types:
        for (ref, _, _), done in zip(t.profile.workflows, t.samples.completed, strict=True):
            for result, values in zip(("succeeded", "failed"), done, strict=True):
                labels = job_labels(t, ref) | {"job_result": result}
                w.write("gha_completed_jobs_total", labels, t.part(values))

    def histogram(metric: str, t: _Type, labels: dict[str, str], columns: list[array[int]]) -> None:
        if not lean:
            for bound, column in zip([*map(_le, BUCKETS), "+Inf"], columns, strict=False):
                w.write(f"{metric}_bucket", labels | {"le": bound}, t.part(column))
        w.write(f"{metric}_sum", labels, t.part(columns[-2]))
        w.write(f"{metric}_count", labels, t.part(columns[-1]))

    metric = "gha_job_startup_duration_seconds"
    w.family(
        metric,
        "histogram",
        "Time spent waiting for workflow job to get started on the runner owned by the scale set"
        " (in seconds).",
    )
    for t in types:
        for (ref, _, _), columns in zip(t.profile.workflows, t.samples.startup, strict=True):
            histogram(metric, t, job_labels(t, ref), columns)
    metric = "gha_job_execution_duration_seconds"
    w.family(
        metric, "histogram", "Time spent executing workflow jobs by the scale set (in seconds)."
    )
    for t in types:
        for (ref, _, _), by_result in zip(t.profile.workflows, t.samples.execution, strict=True):
            for result, columns in zip(("succeeded", "failed"), by_result, strict=True):
                histogram(metric, t, job_labels(t, ref) | {"job_result": result}, columns)
    if not lean:
        _controller_and_pods(w, types)


def _controller_and_pods(w: SeriesWriter, types: list[_Type]) -> None:
    """The controller's ephemeral-runner gauges (`name`: the scale set) and cAdvisor's series
    of the runner pods (named `<ephemeral runner set>-runner-<suffix>`)."""
    for metric in _CONTROLLER:
        w.family(metric, "gauge", _HELP[metric])
        for t in types:
            labels = {
                "job": "arc-controller",
                "instance": "10.11.0.9:8080",
                "name": t.profile.name,
                "namespace": NAMESPACE,
                "organization": ORGANIZATION,
            }
            w.write(metric, labels, t.samples.gauges[metric])
    for family, help_text, pick in (
        ("container_cpu_cfs_periods", "Number of elapsed enforcement period intervals.", 0),
        ("container_cpu_cfs_throttled_periods", "Number of throttled period intervals.", 1),
        ("container_oom_events", "Count of out of memory events observed for the container.", 2),
    ):
        w.family(family, "counter", help_text)
        for t in types:
            columns = (t.samples.cfs_periods, t.samples.cfs_throttled, t.samples.ooms)[pick]
            for pod, values in zip(t.profile.pods, columns, strict=True):
                labels = {
                    "job": "kubelet",
                    "container": "runner",
                    "namespace": NAMESPACE,
                    "pod": pod,
                }
                w.write(f"{family}_total", labels, values)
