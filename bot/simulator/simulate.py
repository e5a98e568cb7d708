"""Synthetic history of an actions-runner-controller fleet, as OpenMetrics text for promtool.

It owns the fleet simulator behind `queuebot simulate`: a seeded, discrete-event queue model per
runner type (scale set), sampled every `step_seconds` and written as the metrics ARC's listener
and controller and cAdvisor export, so that `promtool tsdb create-blocks-from openmetrics` loads
it into a real Prometheus and the query pack (`bot.metrics.querypack`) reads it as it reads a
real fleet.

The model, per runner type:

- jobs come from a few workflows: a Poisson stream of workflow runs, each asking for one or a
  few jobs, busiest in US working hours, with slow random drift; they wait in one FIFO queue;
- an idle runner picks up the next job within seconds; execution times are lognormal around the
  workflow's mean; runners are ephemeral, and a finished one is replaced on its warm node at once
  while the autoscaler still wants it;
- the autoscaler wants `clamp(min, max, busy + queued + buffer)` runners. A new runner starts in
  about a minute on a spare node slot; past the spare slots it waits for a new node, which takes
  minutes to boot and pull the runner image, and the node group adds only so many a minute;
- cAdvisor's CPU-throttling and OOM counters are kept for three long-lived pods per type.

Problems are staged on the busiest types, from 1-3 hours before `end` until `end`; everything
else stays healthy. `Truth` says what was staged, for tests and benchmarks.
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
import sys
from array import array
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TextIO


class Scenario(StrEnum):
    """What goes wrong, and where the runbook's cause for it is staged (see `_problem`)."""

    HEALTHY = "healthy"
    SURGE = "surge"
    CAPACITY_CAP = "capacity_cap"
    SLOW_JOBS = "slow_jobs"
    SCALE_UP_FAILURE = "scale_up_failure"
    RESOURCE_STARVATION = "resource_starvation"
    MIX = "mix"


#: The runbook's cause each problem scenario stages.
CAUSES: dict[Scenario, str] = {
    Scenario.HEALTHY: "none",
    Scenario.SURGE: "increased_workload",
    Scenario.CAPACITY_CAP: "autoscaling_limits",
    Scenario.SLOW_JOBS: "long_running_jobs",
    Scenario.SCALE_UP_FAILURE: "infrastructure",
    Scenario.RESOURCE_STARVATION: "resource_constraints",
}

#: The pairs a mixed incident is made of, on two runner types; the commonest pair twice.
MIX_PAIRS: tuple[tuple[Scenario, Scenario], ...] = (
    (Scenario.SURGE, Scenario.SCALE_UP_FAILURE),
    (Scenario.SURGE, Scenario.SCALE_UP_FAILURE),
    (Scenario.CAPACITY_CAP, Scenario.RESOURCE_STARVATION),
    (Scenario.SLOW_JOBS, Scenario.SCALE_UP_FAILURE),
    (Scenario.SURGE, Scenario.CAPACITY_CAP),
)

#: Promtool keeps what a default Prometheus (15 days' retention) keeps.
MAX_HOURS = 15 * 24
NAMESPACE = "arc-runners"
#: Upper bounds of both histograms: few buckets keep the data small.
BUCKETS = (30, 60, 120, 300, 600, 900, 1800, 2700, 3600, 5400, 7200, 10800, 14400)
PODS_PER_TYPE = 3


@dataclass(frozen=True)
class SimulationSpec:
    scenario: Scenario
    hours: float
    runner_types: int
    seed: int
    end: datetime  # aware; the last sample is at `end`
    step_seconds: int = 60


@dataclass(frozen=True)
class Truth:
    """What the simulation staged: the cause diagnostics should name, and where."""

    scenario: Scenario
    primary_cause: str
    affected: dict[str, str]  # runner type -> its cause
    problem_start: datetime | None = None  # the earliest start among the affected types


# -- the fleet ---------------------------------------------------------------------------------

_REF = "pytorch/pytorch/.github/workflows/{}.yml@refs/heads/main"
#: Workflow -> mean execution time in minutes on a reference runner.
_WORKFLOW_MINUTES = {"pull": 25.0, "trunk": 30.0, "inductor": 40.0, "periodic": 60.0}

#: Scale sets, busiest first: (name, jobs a minute at the daily peak, {workflow: share},
#: execution-time factor, whether the cloud is short of its instances).
_BASE_TYPES: tuple[tuple[str, float, dict[str, float], float, bool], ...] = (
    ("linux-2xlarge", 20.0, {"pull": 0.6, "trunk": 0.35, "periodic": 0.05}, 1.0, False),
    ("linux-4xlarge", 12.0, {"pull": 0.5, "trunk": 0.45, "periodic": 0.05}, 0.9, False),
    ("linux-12xlarge", 8.0, {"pull": 0.55, "trunk": 0.45}, 0.8, False),
    (
        "linux-g5-4xlarge-nvidia-gpu",
        3.0,
        {"trunk": 0.4, "inductor": 0.35, "periodic": 0.25},
        1.0,
        True,
    ),
    ("linux-arm64-2xlarge", 3.0, {"pull": 0.6, "trunk": 0.4}, 1.2, True),
    ("windows-4xlarge", 3.5, {"pull": 0.55, "trunk": 0.45}, 1.3, True),
    ("linux-8xlarge-amx", 1.2, {"inductor": 0.7, "periodic": 0.3}, 1.0, True),
    ("linux-g4dn-12xlarge-nvidia-gpu", 1.2, {"inductor": 0.5, "periodic": 0.5}, 0.9, True),
    ("linux-24xlarge", 1.0, {"pull": 0.5, "periodic": 0.5}, 0.7, False),
    ("windows-g5-4xlarge-nvidia-gpu", 0.6, {"trunk": 0.6, "periodic": 0.4}, 1.2, True),
    ("linux-arm64-m7g-4xlarge", 0.8, {"trunk": 0.7, "periodic": 0.3}, 1.0, True),
    ("linux-rocm-mi300-gpu", 0.8, {"trunk": 0.5, "inductor": 0.5}, 1.1, True),
)
#: Problems are staged on the busiest types: enough of their jobs start and finish in ten
#: minutes, at any hour, for one type's signals to be read on their own.
_CANDIDATES = 3


def runner_type_names(n: int) -> list[str]:
    """`n` scale-set names, the busy main types first, then numbered variants of them."""
    if n < 1:
        raise ValueError(f"at least one runner type is needed, not {n}")
    names = [base[0] for base in _BASE_TYPES[:n]]
    for index in range(len(names), n):
        base, copy = divmod(index, len(_BASE_TYPES))
        names.append(f"{_BASE_TYPES[copy][0]}-{base + 1}")
    return names


@dataclass(frozen=True)
class _Profile:
    """One scale set's configuration and traffic."""

    name: str
    peak_per_minute: float
    workflows: tuple[tuple[str, float, float], ...]  # (job_workflow_ref, share, mean seconds)
    min_runners: int
    max_runners: int
    buffer: int  # idle runners the autoscaler keeps beyond busy + queued
    headroom_share: float  # spare node slots kept warm, as a share of the usual busy runners
    warm_seconds: float  # pod start on a warm node, runner registration included
    node_seconds: float  # a new node: boot, join, pull the runner image
    # Nodes the node group adds a minute, as a share of the hour's usual busy runners: where the
    # cloud is short of the instance type, new nodes come slower.
    node_growth: float
    throttle_share: float  # CPU periods throttled on a healthy day
    pods: tuple[str, ...]

    @property
    def mean_seconds(self) -> float:
        return sum(share * seconds for _, share, seconds in self.workflows)

    @property
    def peak_busy(self) -> float:
        """Busy runners at the daily peak on a usual day."""
        return self.peak_per_minute * self.mean_seconds / 60.0


_POD_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' generateName suffix characters


def _profile(name: str, index: int) -> _Profile:
    rng = random.Random(f"profile/{name}")  # noqa: S311 - a reproducible simulation, not secrets
    _, peak, shares, factor, scarce = _BASE_TYPES[index % len(_BASE_TYPES)]
    if index >= len(_BASE_TYPES):
        peak *= rng.uniform(0.15, 0.4)
    workflows = tuple(
        (_REF.format(workflow), share, _WORKFLOW_MINUTES[workflow] * 60.0 * factor)
        for workflow, share in shares.items()
    )
    mean_seconds = sum(share * seconds for _, share, seconds in workflows)
    peak_busy = peak * mean_seconds / 60.0
    step = 10 if peak_busy < 100 else 50
    max_runners = int(math.ceil(10 * peak_busy / step) * step)
    pods = tuple(
        f"{name}-{''.join(rng.choices(_POD_ALPHABET, k=5))}"
        f"-runner-{''.join(rng.choices(_POD_ALPHABET, k=5))}"
        for _ in range(PODS_PER_TYPE)
    )
    return _Profile(
        name=name,
        peak_per_minute=peak,
        workflows=workflows,
        min_runners=max(1, round(0.02 * peak_busy)),
        max_runners=max(max_runners, 20),
        buffer=2 + round(0.03 * peak_busy),
        headroom_share=0.2 if scarce else 0.08,
        warm_seconds=rng.uniform(40.0, 80.0),
        node_seconds=rng.uniform(480.0, 720.0) if scarce else rng.uniform(360.0, 540.0),
        node_growth=0.01 if scarce else 0.036,
        throttle_share=rng.uniform(0.01, 0.06),
        pods=pods,
    )


# -- problems ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Problem:
    """One scenario staged on one runner type from `start` (Unix seconds) on."""

    kind: Scenario
    start: float
    factor: float  # of arrivals (surge), of execution times (slow jobs, resource starvation)
    workflow: int = 0  # the workflow a surge comes from
    register_share: float = 1.0  # new runners that register (scale-up failure)
    throttled: float = 0.0  # CPU throttled share (resource starvation)
    ooms_per_minute: float = 0.0  # per pod (resource starvation)
    max_runners: int = 0  # the lowered maximum (capacity cap)


#: Hours before `end` a problem starts, by scenario (default: 1-3).
_WINDOWS: dict[Scenario, tuple[float, float]] = {
    # A surge outgrows the autoscaler within the hour; later, the fleet would have caught up.
    Scenario.SURGE: (1.0, 1.25),
    # A slowdown shows in finished jobs' durations only once it has lasted longer than the jobs.
    Scenario.SLOW_JOBS: (2.0, 3.0),
}


def _problem(kind: Scenario, end: float, profile: _Profile, rng: random.Random) -> _Problem:
    """One problem's parameters, drawn from the ranges that keep its signature clear:

    - surge: arrivals of one short workflow grow until all arrivals are x4-5, within 10 minutes;
      new nodes come too slowly to keep up, so the queue grows while desired stays below max;
    - capacity cap: max is lowered to 60-75 % of what the last hour needs on a usual day, so
      desired, max and registered meet, no runner is idle and jobs queue;
    - slow jobs: everything jobs do runs x3-4 slower (a slow external dependency, which new
      runners also download and register through, so they take 13-20 minutes to start);
    - scale-up failure: 5-15 % of new runners register; the rest stay pending for 4-10 minutes,
      then fail, and are listed as failed for 15 minutes; finished runners are not replaced;
    - resource starvation: 60-80 % of CPU periods throttled, 0.2-0.4 OOM kills a minute per
      pod, jobs x1.15 slower (15 % of them OOM-killed), new runners 13-20 minutes to start.
    """
    earliest, latest = _WINDOWS.get(kind, (1.0, 3.0))
    start = end - round(rng.uniform(earliest, latest) * 3600)
    if kind is Scenario.SURGE:
        # Pushes and merges, not the long scheduled runs, come in waves.
        short = [i for i, w in enumerate(profile.workflows) if w[2] <= profile.mean_seconds]
        return _Problem(kind, start, rng.uniform(4.0, 5.0), workflow=rng.choice(short))
    if kind is Scenario.CAPACITY_CAP:
        # Lowered below what the last hour needs on a usual day, so it binds until the end.
        usual = profile.peak_busy * _daily((end % 86400.0) / 3600.0)
        cap = max(profile.min_runners + 2, round(rng.uniform(0.6, 0.75) * usual))
        return _Problem(kind, start, 1.0, max_runners=cap)
    if kind is Scenario.SLOW_JOBS:
        return _Problem(kind, start, rng.uniform(3.0, 4.0))
    if kind is Scenario.SCALE_UP_FAILURE:
        return _Problem(kind, start, 1.0, register_share=rng.uniform(0.05, 0.15))
    if kind is Scenario.RESOURCE_STARVATION:
        throttled, ooms = rng.uniform(0.6, 0.8), rng.uniform(0.2, 0.4)
        return _Problem(kind, start, 1.15, throttled=throttled, ooms_per_minute=ooms)
    raise ValueError(f"{kind} is not a single-type problem")


def _stage(spec: SimulationSpec, profiles: list[_Profile], end: float) -> dict[str, _Problem]:
    rng = random.Random(f"{spec.seed}/{spec.scenario}/problem")  # noqa: S311 - see _profile
    if spec.scenario is Scenario.HEALTHY:
        return {}
    if spec.scenario is Scenario.MIX:
        first_kind, second_kind = rng.choice(MIX_PAIRS)
        first, second = rng.sample(profiles[:_CANDIDATES], 2)
        return {
            first.name: _problem(first_kind, end, first, rng),
            second.name: _problem(second_kind, end, second, rng),
        }
    candidates = profiles[:_CANDIDATES]
    count = rng.randint(1, len(candidates))
    return {p.name: _problem(spec.scenario, end, p, rng) for p in rng.sample(candidates, count)}


# -- the queue model ---------------------------------------------------------------------------

_WARMUP_SECONDS = 6 * 3600.0
_FAILED_JOBS = 0.04
_BATCH_MORE = 0.3  # a workflow run asks for another job on this type with this probability
_DURATION_SIGMA = 0.4
_STUCK_SECONDS = (240.0, 600.0)  # a runner pod that never registers is marked failed after this
#: A runner's start (download, register) on starved nodes or through a slow dependency.
_SLOW_START_SECONDS = (780.0, 1200.0)
_OOM_FAILED_JOBS = 0.15
_SURGE_RAMP_SECONDS = 600.0
_FAILED_KEPT_SECONDS = 900.0  # failed ephemeral runners are listed until cleaned up
_NODE_IDLE_SECONDS = 600.0  # a spare node is removed after this long unneeded

_COMPLETE, _READY, _FAILED, _CLEANED, _NODE = range(5)
#: Problems under which runners do not start within a minute: the runner is downloaded and
#: registered through the slow dependency, on starved nodes, or not at all.
_SLOW_STARTS = (Scenario.SLOW_JOBS, Scenario.RESOURCE_STARVATION, Scenario.SCALE_UP_FAILURE)


def _daily(hour: float) -> float:
    """Job arrivals by UTC hour, 1.0 at the peak: busiest in US working hours."""
    distance = min(abs(hour - 18.5), 24.0 - abs(hour - 18.5))
    return 0.25 + 0.75 * math.exp(-((distance / 4.5) ** 2))


def _poisson(rng: random.Random, mean: float) -> int:
    if mean <= 0.0:
        return 0
    if mean > 30.0:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, count, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        count += 1
        product *= rng.random()
    return count


@dataclass
class _History:
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


_GAUGES = (
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


def _histogram_arrays() -> list[array[int]]:
    return [array("q") for _ in range(len(BUCKETS) + 3)]  # buckets, +Inf, sum, count


class _Fleet:
    """One runner type's queue, runners and nodes, advanced event by event."""

    def __init__(self, profile: _Profile, problem: _Problem | None, rng: random.Random) -> None:
        self.p = profile
        self.problem = problem
        self.rng = rng
        self.events: list[tuple[float, int, int, tuple[int, ...]]] = []
        self.seq = 0
        self.queue: deque[tuple[float, int]] = deque()
        self.idle = self.busy = self.pending = self.failed = 0
        self.placed = 0  # pending runners on a node slot, starting
        self.unplaced: deque[bool] = deque()  # pending runners waiting for a node
        self.usual = 0.0  # busy runners this hour on a usual day
        self.slots = profile.min_runners
        self.nodes_coming = 0
        self.node_tokens = 0.0
        self.max_runners = profile.max_runners
        self.capped = False
        self.drift = 0.0
        n = len(profile.workflows)
        self.started = [0] * n
        self.completed = [[0, 0] for _ in range(n)]
        self.startup = [0] * (len(BUCKETS) + 1)
        self.startup_sum = 0
        self.execution = [[0] * (len(BUCKETS) + 1) for _ in range(n)]
        self.execution_sum = [0] * n
        self.ooms = [0] * PODS_PER_TYPE
        self.periods = [rng.randrange(10**6, 10**7) for _ in range(PODS_PER_TYPE)]
        self.throttled = [int(x * profile.throttle_share) for x in self.periods]

    # -- the problem ---------------------------------------------------------------------------

    def _active(self, kind: Scenario, t: float) -> bool:
        return self.problem is not None and self.problem.kind is kind and t >= self.problem.start

    def _starts_quickly(self, t: float) -> bool:
        """Whether a new runner starts in about a minute (otherwise: many minutes, or never)."""
        problem = self.problem
        return problem is None or t < problem.start or problem.kind not in _SLOW_STARTS

    def _weights(self, t: float) -> tuple[float, list[float]]:
        """Jobs a minute at `t` and each workflow's share of them."""
        hour = (t % 86400.0) / 3600.0
        rate = self.p.peak_per_minute * _daily(hour) * math.exp(self.drift)
        shares = [share for _, share, _ in self.p.workflows]
        problem = self.problem
        if problem is not None and problem.kind is Scenario.SURGE and t >= problem.start:
            # The extra jobs come from one workflow (a merge wave, a re-run storm), within minutes.
            extra = (problem.factor - 1.0) * min(1.0, (t - problem.start) / _SURGE_RAMP_SECONDS)
            shares = [share / (1.0 + extra) for share in shares]
            shares[problem.workflow] += extra / (1.0 + extra)
            rate *= 1.0 + extra
        return rate, shares

    def _execution_seconds(self, workflow: int, start: float) -> tuple[float, bool]:
        """How long a job runs, and whether it fails."""
        sigma = _DURATION_SIGMA
        seconds = self.p.workflows[workflow][2] * math.exp(
            self.rng.gauss(-sigma * sigma / 2, sigma)
        )
        seconds = min(max(seconds, 60.0), 6 * 3600.0)
        failed = self.rng.random() < _FAILED_JOBS
        problem = self.problem
        slowed = (Scenario.SLOW_JOBS, Scenario.RESOURCE_STARVATION)
        if problem is None or problem.kind not in slowed or start + seconds <= problem.start:
            return seconds, failed
        # All a job does after the slowdown began runs `factor` times slower.
        before = max(0.0, problem.start - start)
        seconds = before + problem.factor * (seconds - before)
        if problem.kind is Scenario.RESOURCE_STARVATION and self.rng.random() < _OOM_FAILED_JOBS:
            seconds *= self.rng.uniform(0.2, 0.9)  # a build step was OOM-killed
            failed = True
        return seconds, failed

    # -- events --------------------------------------------------------------------------------

    def _push(self, t: float, kind: int, data: tuple[int, ...] = ()) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, data))

    def desired(self) -> int:
        want = self.busy + len(self.queue) + self.p.buffer
        return min(self.max_runners, max(self.p.min_runners, want))

    def _runners(self) -> int:
        """Ephemeral runners the set holds; failed ones count until they are deleted."""
        return self.idle + self.busy + self.pending + self.failed

    def _arrive(self, t: float, workflow: int) -> None:
        self.queue.append((t, workflow))
        self._dispatch(t)
        self._scale(t)

    def _dispatch(self, t: float) -> None:
        while self.queue and self.idle:
            arrived, workflow = self.queue.popleft()
            self.idle -= 1
            self.busy += 1
            pickup = t + 2.0 + self.rng.expovariate(1 / 6.0)
            wait = round(pickup - arrived)
            self.startup[bisect.bisect_left(BUCKETS, wait)] += 1
            self.startup_sum += wait
            self.started[workflow] += 1
            seconds, failed = self._execution_seconds(workflow, pickup)
            self._push(pickup + seconds, _COMPLETE, (workflow, int(failed), round(seconds)))

    def _complete(self, t: float, data: tuple[int, ...]) -> None:
        workflow, failed, seconds = data
        self.busy -= 1
        self.completed[workflow][failed] += 1
        self.execution[workflow][bisect.bisect_left(BUCKETS, seconds)] += 1
        self.execution_sum[workflow] += seconds
        # A finished ephemeral runner is replaced on its warm node within seconds, unless new
        # runners cannot register or start quickly there.
        if self._starts_quickly(t) and self._runners() < self.desired():
            self.idle += 1
        else:
            self._fill(t)
        self._dispatch(t)
        self._scale(t)

    def _scale(self, t: float) -> None:
        desired, total = self.desired(), self._runners()
        if desired > total:
            for _ in range(desired - total):
                self._create(t)
        elif desired < total and self.idle:
            self.idle -= min(self.idle, total - desired)
            self._fill(t)

    def _create(self, t: float) -> None:
        self.pending += 1
        registers = True
        if self._active(Scenario.SCALE_UP_FAILURE, t):
            assert self.problem is not None
            registers = self.rng.random() < self.problem.register_share
        self.unplaced.append(registers)
        self._fill(t)
        self._order_nodes(t)

    def _fill(self, t: float) -> None:
        """Runners waiting for a node take the free slots, first come first served."""
        while self.unplaced and self.idle + self.busy + self.placed < self.slots:
            registers = self.unplaced.popleft()
            self.placed += 1
            seconds = self.p.warm_seconds * self.rng.uniform(0.7, 1.4)
            if not self._starts_quickly(t):
                seconds = self.rng.uniform(*_SLOW_START_SECONDS)
            if registers:
                self._push(t + seconds, _READY)
            else:
                # The pod is retried with back-off until the runner is marked failed.
                self._push(t + seconds + self.rng.uniform(*_STUCK_SECONDS), _FAILED)

    def _headroom(self) -> int:
        """Spare slots that absorb the ordinary ups and downs while a new node boots."""
        return round(6 + self.p.headroom_share * self.usual + 2 * math.sqrt(self.usual))

    def _order_nodes(self, t: float) -> None:
        used = self.idle + self.busy + self.placed + len(self.unplaced)
        short = used + self._headroom() - self.slots - self.nodes_coming
        while short > 0 and self.node_tokens >= 1.0:
            self.node_tokens -= 1.0
            self.nodes_coming += 1
            short -= 1
            self._push(t + self.p.node_seconds * self.rng.uniform(0.85, 1.2), _NODE)

    def _handle(self, t: float, kind: int, data: tuple[int, ...]) -> None:
        if kind == _COMPLETE:
            self._complete(t, data)
        elif kind == _READY:
            self.pending -= 1
            self.placed -= 1
            self.idle += 1
            self._dispatch(t)
            self._scale(t)
        elif kind == _FAILED:
            self.pending -= 1
            self.placed -= 1
            self.failed += 1
            self._push(t + _FAILED_KEPT_SECONDS, _CLEANED)
            self._fill(t)
        elif kind == _CLEANED:
            self.failed -= 1
            self._scale(t)
        else:
            self.nodes_coming -= 1
            self.slots += 1
            self._fill(t)

    # -- time ----------------------------------------------------------------------------------

    def advance(self, begin: float, end: float) -> None:
        """Run every arrival and event in (begin, end]."""
        rng, tick = self.rng, end - begin
        rho = math.exp(-tick / 1800.0)
        self.drift = rho * self.drift + math.sqrt(1 - rho * rho) * 0.05 * rng.gauss(0.0, 1.0)
        problem = self.problem
        if not self.capped and self._active(Scenario.CAPACITY_CAP, end):
            assert problem is not None
            # The maximum was lowered below what the hour needs (a configuration change).
            self.capped = True
            self.max_runners = problem.max_runners
        middle = begin + tick / 2
        rate, shares = self._weights(middle)
        usual_rate = self.p.peak_per_minute * _daily((middle % 86400.0) / 3600.0)
        self.usual = usual_rate * self.p.mean_seconds / 60.0
        runs = _poisson(rng, rate * tick / 60.0 * (1.0 - _BATCH_MORE))
        arrivals: list[tuple[float, int]] = []
        cumulative = [sum(shares[: i + 1]) for i in range(len(shares))]
        for _ in range(runs):
            at = begin + rng.random() * tick
            workflow = min(bisect.bisect_left(cumulative, rng.random()), len(shares) - 1)
            arrivals.append((at, workflow))
            while rng.random() < _BATCH_MORE:
                arrivals.append((at, workflow))
        arrivals.sort()
        per_minute = max(0.5, self.p.node_growth * self.usual)
        self.node_tokens = min(self.node_tokens + per_minute * tick / 60.0, 2 * per_minute)
        index, events = 0, self.events
        while True:
            next_event = events[0][0] if events else math.inf
            next_arrival = arrivals[index][0] if index < len(arrivals) else math.inf
            if min(next_event, next_arrival) > end:
                break
            if next_arrival <= next_event:
                self._arrive(*arrivals[index])
                index += 1
            else:
                t, _, kind, data = heapq.heappop(events)
                self._handle(t, kind, data)
        self._order_nodes(end)
        # Spare nodes go after being unneeded for a while.
        used = self.idle + self.busy + self.placed + len(self.unplaced)
        spare = self.slots - used - self._headroom()
        if spare > 0:
            self.slots -= math.ceil(spare * min(1.0, tick / _NODE_IDLE_SECONDS))

    def record(self, history: _History, step: float, t: float) -> None:
        queued = len(self.queue)
        for metric, value in (
            ("gha_assigned_jobs", self.busy + queued),
            ("gha_running_jobs", self.busy),
            ("gha_registered_runners", self.idle + self.busy),
            ("gha_busy_runners", self.busy),
            ("gha_idle_runners", self.idle),
            ("gha_min_runners", self.p.min_runners),
            ("gha_max_runners", self.max_runners),
            ("gha_desired_runners", self.desired()),
            ("gha_controller_pending_ephemeral_runners", self.pending),
            ("gha_controller_failed_ephemeral_runners", self.failed),
        ):
            history.gauges[metric].append(value)
        for i, count in enumerate(self.started):
            history.started[i].append(count)
            history.completed[i][0].append(self.completed[i][0])
            history.completed[i][1].append(self.completed[i][1])
        _append_histogram(history.startup, self.startup, self.startup_sum)
        for i, buckets in enumerate(self.execution):
            _append_histogram(history.execution[i], buckets, self.execution_sum[i])
        self._record_pods(history, step, t)
        history.final_queued = queued

    def _record_pods(self, history: _History, step: float, t: float) -> None:
        rng, registered = self.rng, self.idle + self.busy
        use = self.busy / registered if registered else 0.0
        starving = self._active(Scenario.RESOURCE_STARVATION, t)
        for i in range(PODS_PER_TYPE):
            active = min(1.0, max(0.05, 0.45 + 0.5 * use + 0.05 * rng.gauss(0.0, 1.0)))
            periods = round(10.0 * step * active)  # CFS enforces quotas in 100 ms periods
            if starving:
                assert self.problem is not None
                share = self.problem.throttled + 0.03 * rng.gauss(0.0, 1.0)
                # The OOM killer hits a process in the runner container; the container lives on.
                self.ooms[i] += _poisson(rng, self.problem.ooms_per_minute * step / 60.0)
            else:
                share = self.p.throttle_share * math.exp(0.3 * rng.gauss(0.0, 1.0))
            self.periods[i] += periods
            self.throttled[i] += round(periods * min(0.98, max(0.0, share)))
            history.cfs_periods[i].append(self.periods[i])
            history.cfs_throttled[i].append(self.throttled[i])
            history.ooms[i].append(self.ooms[i])


def _append_histogram(columns: list[array[int]], buckets: list[int], total: int) -> None:
    running = 0
    for column, count in zip(columns, buckets, strict=False):
        running += count
        column.append(running)
    columns[-2].append(total)
    columns[-1].append(running)


def _simulate_type(
    profile: _Profile, problem: _Problem | None, seed: int, first: float, samples: int, step: int
) -> _History:
    rng = random.Random(f"{seed}/{profile.name}")  # noqa: S311 - see _profile
    n = len(profile.workflows)
    history = _History(
        gauges={metric: array("q") for metric in _GAUGES},
        started=[array("q") for _ in range(n)],
        completed=[(array("q"), array("q")) for _ in range(n)],
        startup=_histogram_arrays(),
        execution=[_histogram_arrays() for _ in range(n)],
        cfs_periods=[array("q") for _ in range(PODS_PER_TYPE)],
        cfs_throttled=[array("q") for _ in range(PODS_PER_TYPE)],
        ooms=[array("q") for _ in range(PODS_PER_TYPE)],
    )
    fleet = _Fleet(profile, problem, rng)
    ticks_per_step = max(1, math.ceil(step / 60))
    tick = step / ticks_per_step
    warmup_ticks = math.ceil(_WARMUP_SECONDS / tick)
    begin = first - warmup_ticks * tick
    total_ticks = warmup_ticks + (samples - 1) * ticks_per_step
    for k in range(total_ticks + 1):
        if k:
            fleet.advance(begin + (k - 1) * tick, begin + k * tick)
        since = k - warmup_ticks
        if since >= 0 and since % ticks_per_step == 0:
            fleet.record(history, step, begin + k * tick)
    return history


# -- output ------------------------------------------------------------------------------------


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


def _write(
    out: TextIO, profiles: list[_Profile], histories: list[_History], stamps: list[str]
) -> _Writer:
    w = _Writer(out, [f" {stamp}\n" for stamp in stamps])
    pairs = list(zip(profiles, histories, strict=True))

    def base(p: _Profile) -> str:
        return f'name="{p.name}",namespace="{NAMESPACE}"'

    for metric in _GAUGES:
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


# -- entry points ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Result:
    truth: Truth
    series: int
    samples: int


def _validate(spec: SimulationSpec) -> None:
    if spec.end.tzinfo is None:
        raise ValueError("the end of the simulation needs a time zone")
    if not 0 < spec.hours <= MAX_HOURS:
        raise ValueError(f"hours must be in (0, {MAX_HOURS}] (Prometheus' default retention)")
    if spec.step_seconds < 1:
        raise ValueError("step_seconds must be at least 1")
    if spec.runner_types < (2 if spec.scenario is Scenario.MIX else 1):
        raise ValueError(f"too few runner types for {spec.scenario}: {spec.runner_types}")


@dataclass(frozen=True)
class _Simulated:
    profiles: list[_Profile]
    histories: list[_History]
    truth: Truth
    end_ms: int
    samples: int


def _simulated(spec: SimulationSpec) -> _Simulated:
    _validate(spec)
    scenario = Scenario(spec.scenario)
    end_ms = round(spec.end.timestamp() * 1000)
    samples = int(spec.hours * 3600 // spec.step_seconds) + 1
    end = end_ms / 1000.0
    first = end - (samples - 1) * spec.step_seconds
    names = runner_type_names(spec.runner_types)
    profiles = [_profile(name, i) for i, name in enumerate(names)]
    problems = _stage(spec, profiles, end)
    histories = [
        _simulate_type(p, problems.get(p.name), spec.seed, first, samples, spec.step_seconds)
        for p in profiles
    ]
    affected = {name: CAUSES[problem.kind] for name, problem in problems.items()}
    primary = CAUSES[scenario] if scenario is not Scenario.MIX else "none"
    if scenario is Scenario.MIX:
        queued = {p.name: h.final_queued for p, h in zip(profiles, histories, strict=True)}
        worst = max(problems, key=lambda name: (queued[name], name))
        primary = affected[worst]
    start = min((problem.start for problem in problems.values()), default=None)
    truth = Truth(
        scenario=scenario,
        primary_cause=primary,
        affected=affected,
        problem_start=None if start is None else datetime.fromtimestamp(start, UTC),
    )
    return _Simulated(profiles, histories, truth, end_ms, samples)


def _run(spec: SimulationSpec, out: TextIO) -> _Result:
    run = _simulated(spec)
    step_ms = spec.step_seconds * 1000
    stamps = [_stamp(run.end_ms - (run.samples - 1 - i) * step_ms) for i in range(run.samples)]
    writer = _write(out, run.profiles, run.histories, stamps)
    return _Result(run.truth, writer.series, writer.samples)


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


def simulate_history(spec: SimulationSpec) -> FleetHistory:
    """Run the simulation `simulate` runs for `spec`, keeping its samples instead of writing."""
    run = _simulated(spec)
    step_ms = spec.step_seconds * 1000
    types = tuple(
        RunnerTypeHistory(
            name=p.name,
            workflows=tuple(ref for ref, _, _ in p.workflows),
            pods=p.pods,
            gauges=dict(h.gauges),
            started=tuple(h.started),
            succeeded=tuple(succeeded for succeeded, _ in h.completed),
            failed=tuple(failed for _, failed in h.completed),
            startup=tuple(h.startup),
            execution=tuple(tuple(columns) for columns in h.execution),
            cfs_periods=tuple(h.cfs_periods),
            cfs_throttled=tuple(h.cfs_throttled),
            ooms=tuple(h.ooms),
        )
        for p, h in zip(run.profiles, run.histories, strict=True)
    )
    first_ms = run.end_ms - (run.samples - 1) * step_ms
    return FleetHistory(run.truth, first_ms, step_ms, run.samples, types)


def simulate(spec: SimulationSpec, out: TextIO) -> Truth:
    """Stream the fleet's history to `out` as OpenMetrics (ending with `# EOF`); the truth."""
    return _run(spec, out).truth


def write_file(spec: SimulationSpec, path: Path) -> Truth:
    with path.open("w", encoding="utf-8") as out:
        return simulate(spec, out)


def _describe(truth: Truth) -> str:
    if not truth.affected:
        return f"truth: {truth.scenario}, no runner type affected"
    where = ", ".join(f"{name} ({cause})" for name, cause in sorted(truth.affected.items()))
    assert truth.problem_start is not None
    since = truth.problem_start.strftime("%Y-%m-%d %H:%M:%SZ")
    return f"truth: {truth.scenario}, primary cause {truth.primary_cause}: {where} since {since}"


def run_cli(
    scenario: str,
    hours: float,
    runner_types: int,
    seed: int,
    out: Path,
    end: datetime | None,
    step_seconds: int,
) -> int:
    """Write a simulation to `out` and print one line saying what was written; the exit code."""
    try:
        kind = Scenario(scenario)
    except ValueError:
        choices = ", ".join(s.value for s in Scenario)
        print(f"queuebot: unknown scenario {scenario!r} (one of {choices})", file=sys.stderr)
        return 2
    when = end if end is not None else datetime.now(UTC).replace(microsecond=0)
    spec = SimulationSpec(kind, hours, runner_types, seed, when.astimezone(UTC), step_seconds)
    try:
        with out.open("w", encoding="utf-8") as stream:
            result = _run(spec, stream)
    except (ValueError, OSError) as exc:
        print(f"queuebot: {exc}", file=sys.stderr)
        return 2
    size = out.stat().st_size
    print(
        f"wrote {out}: {result.series} series, {result.samples} samples ({size / 1e6:.1f} MB),"
        f" {runner_types} runner types, {hours:g} h every {step_seconds} s until"
        f" {when.astimezone(UTC):%Y-%m-%d %H:%M:%SZ}; {_describe(result.truth)}"
    )
    return 0
