"""Synthetic history of an actions-runner-controller fleet, as OpenMetrics text for promtool.

It owns the fleet simulator behind `queuebot simulate`: a seeded, discrete-event queue model per
runner type (scale set), sampled every `step_seconds` and written as the metrics ARC's listener
and controller and cAdvisor export, so that `promtool tsdb create-blocks-from openmetrics` loads
it into a real Prometheus and the query pack (`bot.fleet.sources.querypack`) reads it as
it reads a real fleet.

The model, per runner type (`queuebot_lab.simulator.queue_model`):

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

import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO, TypeVar

from queuebot_lab.simulator.deliveries import SimulatedJob, SimulatedRunner, jobs_of
from queuebot_lab.simulator.history import TypeSamples
from queuebot_lab.simulator.job_log import JobLog
from queuebot_lab.simulator.openmetrics import SeriesWriter, write_openmetrics, write_series
from queuebot_lab.simulator.profiles import Profile, profile, runner_type_names, stage
from queuebot_lab.simulator.queue_model import simulate_type
from queuebot_lab.simulator.spec import (
    CAUSES,
    MAX_HOURS,
    MetricsShape,
    Scenario,
    SimulationSpec,
    Truth,
)


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
    profiles: list[Profile]
    histories: list[TypeSamples]
    truth: Truth
    end_ms: int
    samples: int
    logs: list[JobLog] | None = None


def _simulated(spec: SimulationSpec, *, keep_jobs: bool = False) -> _Simulated:
    _validate(spec)
    scenario = Scenario(spec.scenario)
    end_ms = round(spec.end.timestamp() * 1000)
    samples = int(spec.hours * 3600 // spec.step_seconds) + 1
    end = end_ms / 1000.0
    first = end - (samples - 1) * spec.step_seconds
    names = runner_type_names(spec.runner_types)
    profiles = [profile(name, i) for i, name in enumerate(names)]
    problems = stage(spec, profiles, end)
    logs = [JobLog(first, end) for _ in profiles] if keep_jobs else None
    histories = [
        simulate_type(
            p,
            problems.get(p.name),
            spec.seed,
            first,
            samples,
            spec.step_seconds,
            None if logs is None else logs[i],
            series=not keep_jobs,
        )
        for i, p in enumerate(profiles)
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
    return _Simulated(profiles, histories, truth, end_ms, samples, logs)


#: The writer a caller of `simulate_series` makes.
W = TypeVar("W", bound=SeriesWriter)


def _times_ms(spec: SimulationSpec, run: _Simulated) -> list[int]:
    step_ms = spec.step_seconds * 1000
    return [run.end_ms - (run.samples - 1 - i) * step_ms for i in range(run.samples)]


def _run(spec: SimulationSpec, out: TextIO, shape: MetricsShape) -> _Result:
    run = _simulated(spec)
    writer = write_openmetrics(out, run.profiles, run.histories, _times_ms(spec, run), shape)
    return _Result(run.truth, writer.series, writer.samples)


def simulate_series(
    spec: SimulationSpec, writer: Callable[[list[int]], W], shape: MetricsShape = MetricsShape.ARC
) -> tuple[Truth, W]:
    """Run the simulation `simulate` runs for `spec` and hand its series, as `simulate` writes
    them, to the writer `writer` makes for the sample times (Unix milliseconds); the truth
    and that writer."""
    run = _simulated(spec)
    w = writer(_times_ms(spec, run))
    write_series(w, run.profiles, run.histories, shape)
    return run.truth, w


@dataclass(frozen=True)
class FleetJobs:
    """A simulation as GitHub tells of it: every job created from the first sample to `end`
    (in the state it had reached at `end`), and the runners list at `end`."""

    truth: Truth
    end: float  # Unix seconds
    jobs: tuple[SimulatedJob, ...]
    runners: tuple[SimulatedRunner, ...]


def simulate_jobs(spec: SimulationSpec) -> FleetJobs:
    """Run the simulation `simulate` runs for `spec`, keeping its jobs and runners."""
    run = _simulated(spec, keep_jobs=True)
    assert run.logs is not None
    jobs: list[SimulatedJob] = []
    runners: list[SimulatedRunner] = []
    first_id = 30_000_000_000 + spec.seed % 1000 * 100_000_000
    for p, log in zip(run.profiles, run.logs, strict=True):
        workflows = tuple(ref for ref, _, _ in p.workflows)
        found, listed = jobs_of(p.name, workflows, log, spec.seed, first_id + len(jobs))
        jobs += found
        runners += listed
    jobs.sort(key=lambda job: (job.created, job.id))
    return FleetJobs(run.truth, run.end_ms / 1000.0, tuple(jobs), tuple(runners))


def simulate(spec: SimulationSpec, out: TextIO, shape: MetricsShape = MetricsShape.ARC) -> Truth:
    """Stream the fleet's history to `out` as OpenMetrics in `shape` (ending with `# EOF`);
    the truth."""
    return _run(spec, out, shape).truth


def write_file(spec: SimulationSpec, path: Path, shape: MetricsShape = MetricsShape.ARC) -> Truth:
    with path.open("w", encoding="utf-8") as out:
        return simulate(spec, out, shape)


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
    shape: str = MetricsShape.ARC.value,
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
            result = _run(spec, stream, MetricsShape(shape))
    except (ValueError, OSError) as exc:
        print(f"queuebot: {exc}", file=sys.stderr)
        return 2
    size = out.stat().st_size
    print(
        f"wrote {out}: {result.series} series, {result.samples} samples ({size / 1e6:.1f} MB),"
        f" {runner_types} runner types ({shape}), {hours:g} h every {step_seconds} s until"
        f" {when.astimezone(UTC):%Y-%m-%d %H:%M:%SZ}; {_describe(result.truth)}"
    )
    return 0
