"""The simulated fleet's runner types (scale sets) and the problems staged on them.

Each runner type has a seeded profile: its traffic by workflow, its autoscaler's minimum, maximum
and buffer, how fast its runners and nodes start. A problem scenario picks the busiest types and
draws its parameters from ranges that keep the runbook cause's signature clear.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from queuebot_lab.simulator.spec import (
    MIX_PAIRS,
    PODS_PER_TYPE,
    UNBOUNDED_TYPE,
    Scenario,
    SimulationSpec,
)

_REF = "pytorch/pytorch/.github/workflows/{}.yml@refs/heads/main"
#: Workflow -> mean execution time in minutes on a reference runner.
_WORKFLOW_MINUTES = {"pull": 25.0, "trunk": 30.0, "inductor": 40.0, "periodic": 60.0}
#: Job names by workflow, as PyTorch's workflows name theirs.
JOB_NAMES = {
    "pull": ("linux-jammy-py3.10-gcc11 / build", "linux-jammy-py3.10-gcc11 / test (default, 1, 3)"),
    "trunk": ("linux-jammy-cuda12.8-py3.10 / build", "macos-py3-arm64 / test (default, 1, 3)"),
    "inductor": ("inductor-build / build", "inductor-test / test (inductor_huggingface, 1, 1)"),
    "periodic": ("linux-jammy-py3.10-debug / build", "linux-jammy-py3.10-debug / test (1, 5)"),
}
#: The event that starts each workflow's runs.
EVENT_NAMES = {
    "pull": "pull_request",
    "trunk": "push",
    "inductor": "push",
    "periodic": "schedule",
}
#: Kubernetes' generateName suffix characters (no vowels, no 0, 1 or 3).
POD_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def workflow_of(ref: str) -> str:
    """A job_workflow_ref's workflow: `owner/repo/.github/workflows/pull.yml@refs/…` → `pull`."""
    return ref.split("@", 1)[0].rsplit("/", 1)[-1].removesuffix(".yml")


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
class Profile:
    """One scale set's configuration and traffic."""

    name: str
    peak_per_minute: float
    workflows: tuple[tuple[str, float, float], ...]  # (job_workflow_ref, share, mean seconds)
    min_runners: int
    max_runners: int  # 0: none
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


def profile(name: str, index: int) -> Profile:
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
    # Runner pods are named for their ephemeral runner set, which bears the scale set's name.
    pods = tuple(
        f"{name}-runner-{''.join(rng.choices(POD_ALPHABET, k=5))}" for _ in range(PODS_PER_TYPE)
    )
    return Profile(
        name=name,
        peak_per_minute=peak,
        workflows=workflows,
        min_runners=max(1, round(0.02 * peak_busy)),
        # 0: no maximum (the autoscaler grows the set as far as the nodes allow).
        max_runners=0 if index == UNBOUNDED_TYPE else max(max_runners, 20),
        buffer=2 + round(0.03 * peak_busy),
        headroom_share=0.2 if scarce else 0.08,
        warm_seconds=rng.uniform(40.0, 80.0),
        node_seconds=rng.uniform(480.0, 720.0) if scarce else rng.uniform(360.0, 540.0),
        node_growth=0.01 if scarce else 0.036,
        throttle_share=rng.uniform(0.01, 0.06),
        pods=pods,
    )


@dataclass(frozen=True)
class StagedProblem:
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


def _problem(kind: Scenario, end: float, profile: Profile, rng: random.Random) -> StagedProblem:
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
        return StagedProblem(kind, start, rng.uniform(4.0, 5.0), workflow=rng.choice(short))
    if kind is Scenario.CAPACITY_CAP:
        # Lowered below what the last hour needs on a usual day, so it binds until the end.
        usual = profile.peak_busy * daily((end % 86400.0) / 3600.0)
        cap = max(profile.min_runners + 2, round(rng.uniform(0.6, 0.75) * usual))
        return StagedProblem(kind, start, 1.0, max_runners=cap)
    if kind is Scenario.SLOW_JOBS:
        return StagedProblem(kind, start, rng.uniform(3.0, 4.0))
    if kind is Scenario.SCALE_UP_FAILURE:
        return StagedProblem(kind, start, 1.0, register_share=rng.uniform(0.05, 0.15))
    if kind is Scenario.RESOURCE_STARVATION:
        throttled, ooms = rng.uniform(0.6, 0.8), rng.uniform(0.2, 0.4)
        return StagedProblem(kind, start, 1.15, throttled=throttled, ooms_per_minute=ooms)
    raise ValueError(f"{kind} is not a single-type problem")


def stage(spec: SimulationSpec, profiles: list[Profile], end: float) -> dict[str, StagedProblem]:
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


def daily(hour: float) -> float:
    """Job arrivals by UTC hour, 1.0 at the peak: busiest in US working hours."""
    distance = min(abs(hour - 18.5), 24.0 - abs(hour - 18.5))
    return 0.25 + 0.75 * math.exp(-((distance / 4.5) ** 2))
