"""A fleet drawn from a seed, and the case staged on it.

A fleet has 3 to 200 runner types. Their demand is heavy-tailed (a few busy types, many quiet
ones), follows the team's working day in its own time zone and drops at weekends, with nightly
scheduled runs. Each type runs a few workflows, each with its own job times; its autoscaler has a
warm pool (`minRunners`) and a maximum sized for its busiest hour, or none. Its runners start
after a delay with a heavy tail: a pod on a warm node in seconds, a new node in minutes, now and
then far longer when the cloud is short of the instance type.

A case stages trouble on some types from some time before the end (`Trouble`); what an on-call
would find at the end is decided by `fleetmodel.truth` from what happened, not from the staging.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum

from fleetmodel.demand import day_factor

#: The causes of the runbook, as diagnostics name them.
WORKLOAD = "increased_workload"
LIMITS = "autoscaling_limits"
LONG_JOBS = "long_running_jobs"
INFRASTRUCTURE = "infrastructure"
RESOURCES = "resource_constraints"


class Case(StrEnum):
    """What happens to the fleet, and (for a problem) the cause an on-call would name."""

    HEALTHY = "healthy"
    #: A burst of work the autoscaler is absorbing: desired above registered, nothing long.
    SCALE_UP = "scale_up"
    #: Much more work on a type than usual (a new workflow, a flood of pushes).
    SURGE = "surge"
    #: A workflow's `runs-on` changed: its jobs now go to another type.
    MOVED_WORKFLOW = "moved_workflow"
    #: A type's maximum lowered hours ago, below what its demand needs.
    LOWERED_MAX = "lowered_max"
    #: Some workflows' jobs take far longer than usual.
    SLOW_JOBS = "slow_jobs"
    #: New runners of a type do not start or do not register.
    FAILING_STARTS = "failing_starts"
    #: New runners fail on every type (the cloud or GitHub's registration is down).
    OUTAGE = "outage"
    #: Runners are lost mid-job (nodes preempted) or come online and never take a job.
    BROKEN_RUNNERS = "broken_runners"
    #: Runners too small: jobs OOM-killed, CPU throttled.
    TOO_SMALL = "too_small"
    #: Two types in trouble for different reasons.
    MIX = "mix"


@dataclass(frozen=True)
class Workflow:
    name: str
    repository: str
    jobs: tuple[str, ...]
    event: str
    #: Jobs a minute at the type's busiest weekday hour.
    peak: float
    #: Median run time, seconds, and the spread of the log-normal run times.
    seconds: float
    spread: float
    #: Scheduled workflows run at one hour of the night instead of following the working day.
    nightly_hour: int | None = None

    @property
    def path(self) -> str:
        return f".github/workflows/{self.name}.yml"


@dataclass(frozen=True)
class RunnerType:
    name: str
    os: str
    workflows: tuple[Workflow, ...]
    min_runners: int
    max_runners: int | None
    #: Provisioning: seconds to a running runner on a warm node (median), the share of runners
    #: that need a new node, and the median of a node's start.
    warm_start: float
    cold_share: float
    cold_start: float
    #: The usual share of jobs failing (tests fail), of new runners that never start.
    failing: float
    never_start: float


@dataclass(frozen=True)
class Trouble:
    """What changed on a runner type `since` seconds before the end; defaults: nothing."""

    since: float
    cause: str
    demand: float = 1.0
    moved_in: tuple[Workflow, ...] = ()
    moved_out: tuple[str, ...] = ()
    #: The new maximum (None: unchanged).
    max_runners: int | None = None
    slower: dict[str, float] = field(default_factory=dict)
    never_start: float = 0.0
    start_delay: float = 1.0
    #: Busy runners lost per hour each (a node preempted), and the share of new runners that
    #: come online and never take a job.
    lost_per_hour: float = 0.0
    idle_forever: float = 0.0
    oom: float = 0.0
    throttled: float = 0.0


@dataclass(frozen=True)
class FleetPlan:
    case: Case
    seed: int
    end: float
    types: tuple[RunnerType, ...]
    troubles: dict[str, Trouble]
    #: "arc": ephemeral runners registered with GitHub when created (listed offline while
    #: starting); "vm": runners registered when their machine has booted.
    kind: str
    #: The team's time zone, hours east of UTC, and its organisation.
    utc_offset: int
    org: str
    #: Days of history before the end (each a stretch of `episode_hours` ending at the same time).
    days: int = 7
    #: Hours simulated before each day's end, the last as the previous ones: a type held at its
    #: maximum queues the longer it has been held, so a shorter history would make the usual
    #: queue smaller than today's by construction.
    episode_hours: float = 7.0


_FAMILIES = (
    ("linux-x64", "Linux", (2, 4, 8, 16, 32, 64)),
    ("linux-arm64", "Linux", (4, 8, 16)),
    ("gpu-a10g", "Linux", (1, 4)),
    ("gpu-h100", "Linux", (1, 8)),
    ("win-2022", "Windows", (8, 16)),
    ("linux-x64-highmem", "Linux", (16, 32)),
)
_WORKFLOWS = (
    ("ci", "pull_request", ("build", "unit-tests (1/4)", "unit-tests (2/4)", "lint")),
    ("merge-queue", "merge_group", ("build", "integration (1/2)", "integration (2/2)")),
    ("release", "push", ("package", "smoke-test")),
    ("nightly", "schedule", ("benchmarks", "slow-tests (1/3)", "slow-tests (2/3)")),
    ("docs", "pull_request", ("docs-build",)),
    ("e2e", "pull_request", ("e2e (chromium)", "e2e (firefox)")),
)
_REPOSITORIES = ("monorepo", "service-api", "web-console", "ml-platform", "infra-tools")


def _type_names(rng: random.Random, n: int) -> list[str]:
    names: list[str] = []
    for family, _, sizes in _FAMILIES:
        for size in sizes:
            names.append(f"{family}-{size}{'gpu' if family.startswith('gpu') else 'cpu'}")
    rng.shuffle(names)
    out = names[:n]
    pool = 2
    while len(out) < n:
        out.extend(f"{name}-pool{pool}" for name in names[: n - len(out)])
        pool += 1
    return out


def _workflows(rng: random.Random, peak: float, os: str, gpu: bool) -> tuple[Workflow, ...]:
    count = rng.choice((1, 2, 2, 3, 3, 4))
    chosen = rng.sample(_WORKFLOWS, count)
    weights = [rng.uniform(0.3, 1.0) for _ in chosen]
    total = sum(weights)
    repository = rng.choice(_REPOSITORIES)
    flows = []
    for (name, event, jobs), weight in zip(chosen, weights, strict=True):
        minutes = rng.lognormvariate(math.log(14.0 if not gpu else 35.0), 0.6)
        if os == "Windows":
            minutes *= 1.4
        flows.append(
            Workflow(
                name=name,
                repository=f"{repository if rng.random() < 0.7 else rng.choice(_REPOSITORIES)}",
                jobs=jobs,
                event=event,
                peak=peak * weight / total,
                seconds=min(max(minutes, 1.5), 150.0) * 60.0,
                spread=rng.uniform(0.35, 0.8),
                nightly_hour=rng.choice((1, 2, 3)) if event == "schedule" else None,
            )
        )
    return tuple(flows)


def concurrency_needed(kind: RunnerType, at_factor: float = 1.0) -> float:
    """Runners busy on average at the given share of the peak (Little's law)."""
    return sum(w.peak * at_factor * w.seconds / 60.0 for w in kind.workflows)


def _runner_type(rng: random.Random, name: str, peak: float) -> RunnerType:
    gpu = name.startswith("gpu")
    os = "Windows" if name.startswith("win") else "Linux"
    flows = _workflows(rng, peak, os, gpu)
    need = sum(w.peak * w.seconds / 60.0 for w in flows)
    bounded = rng.random() < 0.75
    minimum = rng.choice((0, 0, 1, 2, 3, 5)) if not gpu else rng.choice((0, 0, 1))
    maximum = (
        minimum + max(4, math.ceil(need * rng.uniform(1.6, 2.6) + 3 * math.sqrt(need)))
        if bounded
        else None
    )
    return RunnerType(
        name=name,
        os=os,
        workflows=flows,
        min_runners=minimum,
        max_runners=maximum,
        warm_start=rng.uniform(20.0, 60.0),
        cold_share=rng.uniform(0.3, 0.9) if not gpu else rng.uniform(0.7, 1.0),
        cold_start=rng.uniform(90.0, 240.0) if not gpu else rng.uniform(180.0, 420.0),
        failing=rng.uniform(0.01, 0.06),
        never_start=rng.uniform(0.0, 0.02),
    )


def fleet_types(rng: random.Random, n: int) -> tuple[RunnerType, ...]:
    """`n` runner types, busiest first: peaks fall off as a power law (Zipf-like)."""
    names = _type_names(rng, n)
    busiest = rng.uniform(6.0, 14.0)
    exponent = rng.uniform(0.8, 1.2)
    return tuple(
        _runner_type(rng, name, max(busiest / (rank + 1) ** exponent, 0.05))
        for rank, name in enumerate(names)
    )


def _busy_now(plan_types: tuple[RunnerType, ...], end: float, offset: int) -> list[RunnerType]:
    """Types ordered by the runners they need at `end`, busiest first."""
    factor = day_factor(end, offset)
    return sorted(plan_types, key=lambda t: concurrency_needed(t, factor), reverse=True)


def _pick(rng: random.Random, ranked: list[RunnerType], avoid: set[str]) -> RunnerType:
    candidates = [t for t in ranked[:4] if t.name not in avoid] or [ranked[0]]
    return rng.choice(candidates)


def _tight(kind: RunnerType, rng: random.Random, end: float, offset: int) -> RunnerType:
    """The type with a maximum its demand at this hour does not reach, but trouble would: as
    busy types run, close to what they need."""
    need = concurrency_needed(kind, day_factor(end, offset))
    tight = kind.min_runners + math.ceil(need * rng.uniform(1.2, 1.45) + 2 * math.sqrt(need)) + 2
    if kind.max_runners is not None and kind.max_runners <= tight:
        return kind
    return replace(kind, max_runners=tight)


def _trouble(case: Case, rng: random.Random, kind: RunnerType, end: float, offset: int) -> Trouble:
    since = rng.uniform(1.0, 4.0) * 3600
    if case is Case.SURGE:
        surge_since = rng.uniform(0.75, 3.0) * 3600
        return Trouble(since=surge_since, cause=WORKLOAD, demand=_surge(rng, kind, end, offset))
    if case is Case.LOWERED_MAX:
        now_need = concurrency_needed(kind, day_factor(end, offset))
        ceiling = max(2, math.floor(max(now_need, 3.0) * rng.uniform(0.3, 0.6)))
        return Trouble(since=since, cause=LIMITS, max_runners=kind.min_runners + ceiling)
    if case is Case.SLOW_JOBS:
        by_time = sorted(kind.workflows, key=lambda w: w.peak * w.seconds, reverse=True)
        flows = by_time[: max(1, rng.randint(1, len(by_time)))]
        factor = rng.uniform(2.5, 4.0)
        return Trouble(
            since=rng.uniform(1.0, 3.0) * 3600,
            cause=LONG_JOBS,
            slower={w.name: factor for w in flows},
        )
    if case in (Case.FAILING_STARTS, Case.OUTAGE):
        if rng.random() < 0.7:
            return Trouble(
                since=rng.uniform(0.75, 3.0) * 3600,
                cause=INFRASTRUCTURE,
                never_start=rng.uniform(0.7, 1.0),
            )
        return Trouble(
            since=rng.uniform(0.75, 3.0) * 3600,
            cause=INFRASTRUCTURE,
            start_delay=rng.uniform(12, 30),
        )
    if case is Case.BROKEN_RUNNERS:
        if rng.random() < 0.5:
            return Trouble(since=since, cause=INFRASTRUCTURE, lost_per_hour=rng.uniform(1.0, 3.0))
        return Trouble(since=since, cause=INFRASTRUCTURE, idle_forever=rng.uniform(0.5, 0.9))
    if case is Case.TOO_SMALL:
        return Trouble(
            since=since,
            cause=RESOURCES,
            oom=rng.uniform(0.25, 0.6),
            throttled=rng.uniform(0.5, 1.0),
        )
    raise ValueError(f"no trouble for {case}")


def _surge(rng: random.Random, kind: RunnerType, end: float, offset: int) -> float:
    """A surge's factor on demand: enough extra arrivals to outrun the maximum within the
    hour."""
    now_rate = sum(w.peak for w in kind.workflows) * day_factor(end, offset)
    capacity = (kind.max_runners or 50) / (
        sum(w.seconds * w.peak for w in kind.workflows)
        / max(sum(w.peak for w in kind.workflows), 1e-9)
        / 60.0
    )
    wanted = max(now_rate * rng.uniform(2.5, 4.5), capacity * rng.uniform(1.3, 1.8), 1.0)
    return wanted / max(now_rate, 1e-9)


def plan(case: Case, *, seed: int, types: int, end: datetime, days: int = 7) -> FleetPlan:
    """A fleet of `types` runner types with `case` staged on it, ending at `end`."""
    rng = random.Random(f"fleetmodel:{case.value}:{seed}:{types}:{end.isoformat()}")
    offset = rng.choice((-8, -7, -5, -4, 0, 1, 2, 5, 8, 9))
    kinds = list(fleet_types(rng, types))
    stamp = end.timestamp()
    troubles: dict[str, Trouble] = {}
    ranked = _busy_now(tuple(kinds), stamp, offset)

    def replace_type(new: RunnerType) -> None:
        kinds[[k.name for k in kinds].index(new.name)] = new

    staged: list[Case] = []
    if case is Case.MIX:
        staged = rng.sample(
            [Case.SURGE, Case.LOWERED_MAX, Case.SLOW_JOBS, Case.FAILING_STARTS, Case.TOO_SMALL], 2
        )
    elif case not in (Case.HEALTHY, Case.SCALE_UP, Case.MOVED_WORKFLOW, Case.OUTAGE):
        staged = [case]
    for one in staged:
        kind = _pick(rng, ranked, set(troubles))
        if one in (Case.SURGE, Case.SLOW_JOBS, Case.TOO_SMALL, Case.LOWERED_MAX):
            kind = _tight(kind, rng, stamp, offset)
            replace_type(kind)
        troubles[kind.name] = _trouble(one, rng, kind, stamp, offset)
    if case is Case.OUTAGE:
        since = rng.uniform(0.75, 2.5) * 3600
        share = rng.uniform(0.8, 1.0)
        for kind in kinds:
            troubles[kind.name] = Trouble(since=since, cause=INFRASTRUCTURE, never_start=share)
    if case is Case.MOVED_WORKFLOW and len(kinds) >= 2:
        source = ranked[0]
        flow = max(source.workflows, key=lambda w: w.peak)
        target = (
            next(t for t in ranked[1:] if t.os == source.os)
            if any(t.os == source.os for t in ranked[1:])
            else ranked[1]
        )
        target = _tight(target, rng, stamp, offset)
        replace_type(target)
        since = rng.uniform(1.0, 5.0) * 3600
        troubles[source.name] = Trouble(since=since, cause="", moved_out=(flow.name,))
        troubles[target.name] = Trouble(since=since, cause=WORKLOAD, moved_in=(flow,))
    if case is Case.SCALE_UP:
        kind = ranked[0]
        replace_type(replace(kind, max_runners=None))
        troubles[kind.name] = Trouble(
            since=rng.uniform(8.0, 15.0) * 60, cause="", demand=rng.uniform(2.0, 3.0)
        )
    return FleetPlan(
        case=case,
        seed=seed,
        end=stamp,
        types=tuple(kinds),
        troubles=troubles,
        kind="arc" if rng.random() < 0.7 else "vm",
        utc_offset=offset,
        org=rng.choice(("acme-corp", "northwind", "initech", "globex-eng")),
        days=days,
    )
