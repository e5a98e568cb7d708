"""A simulated fleet read from GitHub, for tests and benchmarks: its jobs in a store, its
runners list served over HTTP by the GitHub REST stand-in (and its metrics in a Prometheus,
where given), and what the alert's rule computes from the same jobs."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bot.diagnostics.checks import diagnose
from bot.domain.diagnosis import Report, Verdict
from bot.fleet.reading import FleetSources, read_fleet
from bot.fleet.sources.github_access import RunnerScope, ScopeKind
from bot.fleet.sources.github_runners import GitHubRunnersClient
from bot.fleet.sources.jobs_config import JobsConfig
from bot.fleet.sources.prometheus import PrometheusClient
from bot.store import open_store
from queuebot_lab.sandbox.github import GitHubSandbox, SandboxRunner
from queuebot_lab.simulator import FleetJobs, SimulatedRunner, SimulationSpec, simulate_jobs
from queuebot_lab.simulator.deliveries import history_bodies
from queuebot_lab.simulator.recording import recorded_jobs
from testkit.kept import kept_folder, kept_history

TOKEN = "ghs_" + "fleet" * 8
WEEK = 7 * 86400.0
#: The machine types the reference alert's query leaves out.
ALERT_LEAVES_OUT = ("rocm", "xpu", "s390x", "b200", "h100", "macos")


def simulated(spec: SimulationSpec) -> FleetJobs:
    """`simulate_jobs(spec)`, recorded once for the simulator's code when the suite runs (a
    day of six types is seconds of simulation, reading it back a fraction of that)."""
    folder = kept_folder(f"jobs {spec!r}")
    return simulate_jobs(spec) if folder is None else recorded_jobs(spec, folder)


def alert_numbers(fleet: FleetJobs, at: float) -> dict[str, tuple[int, float]]:
    """Per runner type, what the reference alert's rule computes from the fleet's jobs: jobs
    queued at `at`, created more than 5 minutes and less than a week before, and the longest
    wait among them; types containing rocm, xpu, s390x, b200, h100 or macos left out."""
    waits: dict[str, list[float]] = defaultdict(list)
    for job in fleet.jobs:
        if job.created > at or any(word in job.runner_type.lower() for word in ALERT_LEAVES_OUT):
            continue
        taken = job.started is not None and job.started <= at
        if not taken and 300 < at - job.created < WEEK:
            waits[job.runner_type].append(at - job.created)
    return {name: (len(found), max(found)) for name, found in waits.items()}


def sandbox_runners(
    runners: tuple[SimulatedRunner, ...],
) -> list[SandboxRunner | dict[str, object]]:
    return [
        SandboxRunner(
            r.id, r.name, (r.runner_type,), "online" if r.online else "offline", r.busy, r.os
        )
        for r in runners
    ]


def named_with_their_cause(report: Report, affected: dict[str, str]) -> bool:
    """Whether every runner type in `affected` is named by the likely finding of its cause."""
    likely = {
        f.cause.value: set(f.runner_types) for f in report.findings if f.verdict is Verdict.LIKELY
    }
    return all(name in likely.get(cause, set()) for name, cause in affected.items())


@dataclass(frozen=True)
class GitHubRun:
    staged: str
    named: str
    located: bool  # every staged runner type named with its cause
    queued_exact: bool  # jobs queued equal the alert rule's count for every runner type
    wait_error: float  # the largest error of the longest wait, seconds


async def diagnose_from_github(
    spec: SimulationSpec,
    workdir: Path,
    *,
    with_runners: bool = True,
    prometheus_url: str | None = None,
) -> GitHubRun:
    """Simulate `spec`, load its jobs into a store in `workdir`, serve its runners (unless
    not `with_runners`), and run the diagnostics the Slack button runs at the simulation's
    end; with `prometheus_url`, reading the fleet's metrics there too."""
    fleet = await asyncio.to_thread(simulated, spec)
    database = workdir / "jobs" / "queuebot.db"
    await kept_history(
        database,
        f"github {spec!r}",
        lambda: history_bodies(list(fleet.jobs), fleet.end),
        JobsConfig(),
        remember_until=0.0,
    )
    store = await open_store(str(database))
    try:
        async with GitHubSandbox(TOKEN) as github, aiohttp.ClientSession() as http:
            github.runners = sandbox_runners(fleet.runners)
            client = (
                GitHubRunnersClient(http, github.url, TOKEN, RunnerScope(ScopeKind.ORG, github.org))
                if with_runners
                else None
            )
            prometheus = (
                PrometheusClient(http, prometheus_url) if prometheus_url is not None else None
            )
            sources = FleetSources(store=store, runners=client, prometheus=prometheus)
            try:
                report = diagnose(await read_fleet(sources, spec.end))
            finally:
                if client is not None:
                    await client.close()
    finally:
        await store.close()
    truth = fleet.truth
    named = report.primary_cause.value if report.primary_cause else "none"
    located = named_with_their_cause(report, truth.affected)
    expected = alert_numbers(fleet, spec.end.timestamp())
    shown = {state.name: state for state in report.runner_types}
    exact, error = True, 0.0
    for name, state in shown.items():
        queued, longest = expected.get(name, (0, 0.0))
        exact = exact and (state.queued or 0) == queued
        if queued:
            error = max(error, abs((state.max_wait_seconds or 0.0) - longest))
    exact = exact and set(expected) <= set(shown)
    return GitHubRun(truth.primary_cause, named, located, exact, error)
