"""A run as Prometheus holds actions-runner-controller's metrics, as remote-write requests.

Written from ARC's source (cmd/ghalistener/metrics/metrics.go, cmd/ghalistener/scaler,
controllers/actions.github.com/metrics) and its chart's values:

- the listener's gauges (`gha_assigned_jobs`, `gha_running_jobs`, `gha_registered_runners`,
  `gha_busy_runners`, `gha_idle_runners`, `gha_min_runners`, `gha_max_runners`,
  `gha_desired_runners`) carry `name` (the scale set), `namespace`, `organization`; the maximum
  of a scale set without one is 2147483647; desired is `min(min + assigned, max)`;
- the job counters and histograms carry no scale set: `organization`, `repository` (the
  repository's name alone), `job_name`, `event_name`, `job_result` (`succeeded`, `failed`,
  `canceled`) on completions; the chart's suggested labels add `job_workflow_ref`,
  `job_workflow_name`, `job_workflow_target`; the startup duration is the runner's assignment
  minus the scale set's, in whole seconds; buckets stop at 3600 s;
- releases up to 0.14 also count a job cancelled before any runner took it as completed, with an
  execution time from year 1 (about 6.4e10 s) — `arc_version="latest"` leaves them out;
- the scrape: a PodMonitor on the listener pods in `arc-systems`, whose label
  `actions.github.com/scale-set-name` is relabelled into `actions_github_com_scale_set_name` on
  every series; the target's `namespace` wins and the gauges' own becomes `exported_namespace`;
  the controller's ephemeral-runner gauges; cAdvisor for the runner pods (`<set>-runner-<x>`).

`full`: every series the chart's suggested `listenerMetrics` give, with buckets, the controller's
gauges and cAdvisor. `lean`: ARC's default labels, only the assigned and running gauges, the
job counters and the histograms' `_sum`/`_count`, with the cluster's external label.

Samples are written for the stretches diagnostics read: the 75 minutes before each day's end,
the last 20 of them for the histograms and cAdvisor.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from itertools import accumulate
from operator import itemgetter

from fleetmodel import pods
from fleetmodel.engine import FleetRun, Job, Runner
from fleetmodel.series import Out, Requests, first_of

BUCKETS = (
    0.01, 0.05, 0.1, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 20, 25, 30, 40, 50, 60, 70,
    80, 90, 100, 110, 120, 150, 180, 210, 240, 300, 360, 420, 480, 540, 600, 900, 1200, 1800,
    2400, 3000, 3600,
)  # fmt: skip
NO_MAXIMUM = 2147483647
#: Seconds from Go's zero time (year 1) to the Unix epoch.
GO_ZERO = 62135596800
WINDOW_SECONDS = 75 * 60
#: Job times and the pods' counters are read over the rate window only: the last 20 minutes.
SHORT_SECONDS = 20 * 60
RESULTS = {"success": "succeeded", "failure": "failed", "cancelled": "canceled"}


class Shape(StrEnum):
    FULL = "full"
    LEAN = "lean"


@dataclass(frozen=True)
class Written:
    series: int
    samples: int


def sample_times(fleet: FleetRun, step: int, span: int = WINDOW_SECONDS) -> list[float]:
    times: list[float] = []
    for end in fleet.episode_ends:
        first = math.ceil((end - span) / step) * step
        times.extend(float(t) for t in range(int(first), int(end) + 1, step))
    return times


class _Level:
    """How many intervals [start, end) hold at a time."""

    def __init__(self, spans: Iterable[tuple[float, float | None]]) -> None:
        pairs = list(spans)
        self.starts = sorted([s for s, _ in pairs])
        self.ends = sorted([e for _, e in pairs if e is not None])

    def over(self, times: list[float]) -> list[int]:
        """How many hold at each of `times`."""
        starts, ends, right = self.starts, self.ends, bisect.bisect_right
        return [right(starts, t) - right(ends, t) for t in times]


def _listener_target(name: str, cluster_index: int) -> dict[str, str]:
    return {
        "namespace": "arc-systems",
        "pod": f"{name}-{cluster_index}c9f7-listener",
        "container": "listener",
        "instance": f"10.{cluster_index}.{len(name) % 250}.{sum(map(ord, name)) % 250}:8080",
        "job": "arc-systems/gha-rs-listeners",
        "actions_github_com_scale_set_name": name,
        "actions_github_com_scale_set_namespace": "arc-runners",
    }


def _scale_set(name: str, org: str) -> dict[str, str]:
    """A scale-set gauge's own labels; the target's `namespace` took the place of its own."""
    return {"name": name, "exported_namespace": "arc-runners", "organization": org}


def _job_labels(job: Job, org: str, full: bool) -> tuple[tuple[str, str], ...]:
    labels = [
        ("organization", org),
        ("repository", job.workflow.repository),
        ("job_name", job.name),
        ("event_name", job.workflow.event),
    ]
    if full:
        ref = f"{org}/{job.workflow.repository}/{job.workflow.path}@refs/heads/main"
        labels += [
            ("job_workflow_ref", ref),
            ("job_workflow_name", job.workflow.name),
            ("job_workflow_target", "heads/main"),
        ]
    return tuple(labels)


def _gauges(w: Out, fleet: FleetRun, shape: Shape) -> None:
    plan = fleet.plan
    jobs_by: dict[str, list[Job]] = defaultdict(list)
    runners_by: dict[str, list[Runner]] = defaultdict(list)
    for job in fleet.jobs:
        jobs_by[job.runner_type].append(job)
    for runner in fleet.runners:
        runners_by[runner.runner_type].append(runner)
    levels: dict[str, dict[str, list[int]]] = {}
    for kind in plan.types:
        jobs, runners = jobs_by[kind.name], runners_by[kind.name]
        assigned = _Level((j.assigned, j.completed) for j in jobs)
        running = _Level((j.started, j.completed) for j in jobs if j.started and j.runner)
        a = assigned.over(w.times)
        values = {"gha_assigned_jobs": a, "gha_running_jobs": running.over(w.times)}
        levels[kind.name] = values
        if shape is Shape.LEAN:
            continue  # lean: the assigned and running jobs only
        registered = _Level(
            (r.online, first_of(r.lost, r.gone)) for r in runners if r.online is not None
        )
        busy = _Level(
            (r.busy_from, first_of(r.busy_until, r.lost))
            for r in runners
            if r.busy_from is not None
        )
        b, reg = busy.over(w.times), registered.over(w.times)
        ceilings = [fleet.max_runners(kind, t) for t in w.times]
        least = kind.min_runners
        values["gha_registered_runners"] = reg
        values["gha_busy_runners"] = b
        values["gha_idle_runners"] = [max(r - n, 0) for r, n in zip(reg, b, strict=True)]
        values["gha_min_runners"] = [least] * len(w.times)
        values["gha_max_runners"] = [NO_MAXIMUM if c is None else c for c in ceilings]
        values["gha_desired_runners"] = [
            least + n if c is None else min(least + n, c) for n, c in zip(a, ceilings, strict=True)
        ]
        # The controller's: runners pending (created, not yet running), running (the pods
        # registered) and failed (until deleted).
        pending = _Level((r.created, first_of(r.online, r.failed, r.gone)) for r in runners)
        failed = _Level((r.failed, r.gone) for r in runners if r.failed is not None)
        values["gha_controller_pending_ephemeral_runners"] = pending.over(w.times)
        values["gha_controller_running_ephemeral_runners"] = reg
        values["gha_controller_failed_ephemeral_runners"] = failed.over(w.times)
    listener = (
        ("gha_assigned_jobs", "Number of jobs assigned to this scale set."),
        ("gha_running_jobs", "Number of jobs running (or about to be run)."),
        ("gha_registered_runners", "Number of runners registered by the scale set."),
        ("gha_busy_runners", "Number of registered runners running a job."),
        ("gha_min_runners", "Minimum number of runners."),
        ("gha_max_runners", "Maximum number of runners."),
        ("gha_desired_runners", "Number of runners desired by the scale set."),
        ("gha_idle_runners", "Number of registered runners not running a job."),
    )
    kept = listener[:2] if shape is Shape.LEAN else listener
    for metric, text in kept:
        w.family(metric, "gauge", text)
        for kind in plan.types:
            labels = {**_listener_target(kind.name, 1), **_scale_set(kind.name, plan.org)}
            w.write(metric, labels, levels[kind.name][metric])
    if shape is Shape.LEAN:
        return
    controller = {
        "namespace": "arc-systems",
        "pod": "arc-gha-rs-controller-6d9c7b5f4-x2x7q",
        "container": "manager",
        "instance": "10.1.0.12:8080",
        "job": "arc-systems/gha-rs-controller",
    }
    for metric, text in (
        (
            "gha_controller_pending_ephemeral_runners",
            "Number of ephemeral runners in a pending state.",
        ),
        (
            "gha_controller_running_ephemeral_runners",
            "Number of ephemeral runners in a running state.",
        ),
        (
            "gha_controller_failed_ephemeral_runners",
            "Number of ephemeral runners in a failed state.",
        ),
    ):
        w.family(metric, "gauge", text)
        for kind in plan.types:
            labels = {**controller, **_scale_set(kind.name, plan.org)}
            w.write(metric, labels, levels[kind.name][metric])


#: A job series: its scale set and its labels.
Key = tuple[str, tuple[tuple[str, str], ...]]
#: What a job series' labels are made of: its scale set, its job's repository, name and event,
#: and its workflow's name.
Named = tuple[str, str, str, str, str]


def _observations(
    fleet: FleetRun, full: bool, arc_version: str
) -> tuple[
    dict[Key, list[float]],
    dict[Key, list[tuple[float, float]]],
    dict[Key, list[tuple[float, float]]],
]:
    """Per (scale set, labels): start times; startup observations; completions (time, seconds)."""
    # Gathered by what a series' labels are made of, then by the labels: many jobs share one.
    keys: dict[Named, Key] = {}
    started_by: dict[Named, list[float]] = defaultdict(list)
    startup_by: dict[Named, list[tuple[float, float]]] = defaultdict(list)
    completed_by: dict[tuple[Named, str], list[tuple[float, float]]] = defaultdict(list)
    org = fleet.plan.org
    for job in fleet.jobs:
        flow = job.workflow
        named = (job.runner_type, flow.repository, job.name, flow.event, flow.name)
        if named not in keys:
            keys[named] = (job.runner_type, _job_labels(job, org, full))
        began = job.started if job.runner is not None else None
        if began is not None:
            started_by[named].append(began)
            startup_by[named].append((began, float(int(began) - int(job.assigned))))
        if job.completed is None or job.conclusion is None:
            continue
        done = (named, RESULTS[job.conclusion])
        if began is not None:
            completed_by[done].append((job.completed, float(job.completed - began)))
        elif arc_version != "latest":
            completed_by[done].append((job.completed, float(job.completed + GO_ZERO)))
    started: dict[Key, list[float]] = defaultdict(list)
    startup: dict[Key, list[tuple[float, float]]] = defaultdict(list)
    completed: dict[Key, list[tuple[float, float]]] = defaultdict(list)
    for named, times in started_by.items():
        started[keys[named]] += times
    for named, observed in startup_by.items():
        startup[keys[named]] += observed
    for (named, result), observed in completed_by.items():
        name, labels = keys[named]
        completed[name, (*labels, ("job_result", result))] += observed
    return started, startup, completed


def _counter(w: Out, metric: str, events: dict[Key, list[float]]) -> None:
    for (name, labels), times in sorted(events.items()):
        times.sort()
        first = bisect.bisect_left(w.times, times[0])
        if first >= len(w.times):
            continue
        values = [float(bisect.bisect_right(times, t)) for t in w.times[first:]]
        w.write(metric, {**dict(labels), **_listener_target(name, 1)}, values, first)


#: Each bucket's bound, and its `le` label.
_BOUNDS = tuple(float(bound) for bound in (*BUCKETS, math.inf))
_LE = tuple("+Inf" if bound == math.inf else f"{bound:g}" for bound in (*BUCKETS, math.inf))


def _within(values: list[float], upto: list[int]) -> dict[int, list[int]]:
    """For each n of `upto` (ascending), how many of the first n `values` are within each
    bound: the observations a histogram holds once n have been made."""
    within: dict[int, list[int]] = {}
    counts, done = [0] * len(_BOUNDS), 0
    for n in upto:
        if n in within:
            continue
        made = sorted(values[done:n])
        counts = [
            c + bisect.bisect_right(made, bound) for c, bound in zip(counts, _BOUNDS, strict=True)
        ]
        within[n], done = counts, n
    return within


def _histogram(
    w: Out, metric: str, events: dict[Key, list[tuple[float, float]]], buckets: bool
) -> None:
    for (name, labels), observed in sorted(events.items()):
        # By time, then by value (as the pairs sort): by value first, then stably by time.
        observed.sort(key=itemgetter(1))
        observed.sort(key=itemgetter(0))
        first = bisect.bisect_left(w.times, observed[0][0])
        if first >= len(w.times):
            continue
        target = {**dict(labels), **_listener_target(name, 1)}
        at = [o[0] for o in observed]
        upto = [bisect.bisect_right(at, t) for t in w.times[first:]]
        values = [o[1] for o in observed]
        cumulative = list(accumulate(values, initial=0.0))
        sums = [cumulative[n] for n in upto]
        if buckets:
            within = _within(values, upto)
            # Each bucket's counts: a column of the counts at each time.
            columns = zip(*(within[n] for n in upto), strict=True)
            for le, column in zip(_LE, columns, strict=True):
                w.write(f"{metric}_bucket", {**target, "le": le}, list(map(float, column)), first)
        w.write(f"{metric}_sum", target, sums, first)
        w.write(f"{metric}_count", target, [float(n) for n in upto], first)


def requests(
    fleet: FleetRun, shape: Shape, *, step: int = 60, arc_version: str = "0.14"
) -> tuple[Requests, Written]:
    """`fleet`'s metrics in `shape` as remote-write requests to a Prometheus, scraped every
    `step` seconds; and what they hold."""
    sink = Requests()
    return sink, _write(sink, fleet, shape, step, arc_version)


def _write(sink: Requests, fleet: FleetRun, shape: Shape, step: int, arc_version: str) -> Written:
    times = sample_times(fleet, step)
    extra = {"cluster": "ci-east-1"} if shape is Shape.LEAN else {}
    full = shape is Shape.FULL
    w = Out(sink, times, extra)
    short = Out(sink, sample_times(fleet, step, SHORT_SECONDS), extra)
    _gauges(w, fleet, shape)
    started, startup, completed = _observations(fleet, full, arc_version)
    w.family("gha_started_jobs", "counter", "Total number of jobs started.")
    _counter(w, "gha_started_jobs_total", started)
    w.family("gha_completed_jobs", "counter", "Total number of jobs completed.")
    _counter(w, "gha_completed_jobs_total", {k: [t for t, _ in v] for k, v in completed.items()})
    w.family(
        "gha_job_startup_duration_seconds",
        "histogram",
        "Time spent waiting for workflow job to get started on the runner owned by the scale"
        " set (in seconds).",
    )
    _histogram(short, "gha_job_startup_duration_seconds", startup, full)
    w.family(
        "gha_job_execution_duration_seconds",
        "histogram",
        "Time spent executing workflow jobs by the scale set (in seconds).",
    )
    _histogram(short, "gha_job_execution_duration_seconds", completed, full)
    if full:
        pods.write_pods(short, fleet)
    return Written(w.series + short.series, w.samples + short.samples)
