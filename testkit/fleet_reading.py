"""A run of the second fleet model (`fleetmodel`) read as the bot reads a real fleet, through any
combination of its sources, and the diagnosis held against what an on-call would find.

The sources are real: the run's `workflow_job` deliveries loaded into a store with the webhook's
own parsing (each job's newest, which leave the store as all of them do); its runners list
served over HTTP by the GitHub REST stand-in; its ARC metrics, full or lean, written into a real
Prometheus each through its remote-write receiver.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

from bot.diagnostics.checks import diagnose
from bot.domain.diagnosis import Finding, Report
from bot.fleet.reading import FleetSources, read_fleet
from bot.fleet.signals import FleetSignals
from bot.fleet.sources.github_access import RunnerScope, ScopeKind
from bot.fleet.sources.github_runners import GitHubRunnersClient
from bot.fleet.sources.jobs_config import JobsConfig
from bot.fleet.sources.prometheus import PrometheusClient
from bot.store import open_store
from fleetmodel import FleetRun, Truth, truth_of
from fleetmodel.arc import Shape, requests
from fleetmodel.github import newest_deliveries, runners_list
from queuebot_lab.sandbox.github import GitHubSandbox
from testkit.github_fleet import named_with_their_cause
from testkit.kept import kept_history, kept_prometheus
from testkit.prometheus import Prometheus

TOKEN = "ghs_" + "second" * 7
#: A fleet of its own: every runner type counts (not the reference alert's exclusions).
JOBS = JobsConfig(exclude=())
#: The source combinations diagnostics are judged on.
COMBINATIONS = ("jobs", "jobs+runners", "arc", "arc-lean", "all")
#: Seconds a reading, and each Prometheus query, may take: generous, so a machine busy with
#: other runs judges the checks, not how fast its Prometheus answers.
READ_SECONDS = 180.0


def finding(report: Report, cause: str) -> Finding:
    """`report`'s finding on `cause` (its value, e.g. "infrastructure")."""
    return next(f for f in report.findings if f.cause.value == cause)


@dataclass(frozen=True)
class Judged:
    combination: str
    staged: str
    named: str
    confidence: str
    #: Every type queueing beyond the usual named under its cause.
    located: bool
    #: The alert's numbers (jobs waiting, the longest wait) exact for every type (job events).
    exact: bool | None
    report: Report
    #: What the reading could not read (a source that did not answer).
    problems: tuple[str, ...] = ()

    @property
    def right(self) -> bool:
        return self.staged == self.named


def judge(
    combination: str,
    report: Report,
    truth: Truth,
    with_jobs: bool,
    problems: tuple[str, ...] = (),
) -> Judged:
    named = report.primary_cause.value if report.primary_cause else "none"
    located = named_with_their_cause(report, truth.affected)
    exact: bool | None = None
    if with_jobs:
        shown = {s.name: s for s in report.runner_types}
        exact = True
        for name, queue in truth.queues.items():
            state = shown.get(name)
            if (
                state is None
                or int(state.queued or 0) != queue.queued
                or abs((state.max_wait_seconds or 0.0) - queue.longest) > 1.0
            ):
                exact = False
        for name, state in shown.items():
            if name not in truth.queues and (state.queued or 0) > 0:
                exact = False
    return Judged(
        combination=combination,
        staged=truth.primary_cause,
        named=named,
        confidence=report.confidence.value if report.confidence else "",
        located=located,
        exact=exact,
        report=report,
        problems=problems,
    )


def unread(reading: FleetSignals) -> tuple[str, ...]:
    """What `reading` could not read: its problems, and why signals are missing."""
    return (*reading.problems, *sorted(set(reading.missing.values())))


@contextlib.asynccontextmanager
async def arc_prometheus(
    fleet: FleetRun, shape: Shape, workdir: Path, binary: str, arc_version: str
) -> AsyncIterator[Prometheus]:
    """A running Prometheus holding `fleet`'s ARC metrics in `shape` (written through its
    remote-write receiver, or copied from an earlier fill of the same plan: `testkit.kept`)."""
    server = Prometheus(binary, workdir / f"prometheus-{shape.value}")

    def series() -> tuple[bytes, Iterable[bytes]]:
        sink, _ = requests(fleet, shape, arc_version=arc_version)
        return b"", sink.bodies()

    try:
        await kept_prometheus(server, f"arc {fleet.plan!r} {shape.value} {arc_version}", series)
        await server.start()
        yield server
    finally:
        await server.stop()


async def diagnose_run(
    fleet: FleetRun,
    workdir: Path,
    combinations: Iterable[str] = COMBINATIONS,
    *,
    prometheus: str | None = None,
    arc_version: str = "0.14",
) -> list[Judged]:
    """Diagnose `fleet` at its end through each of `combinations`."""
    wanted = tuple(combinations)
    truth = truth_of(fleet)
    end = fleet.plan.end
    at = datetime.fromtimestamp(end, UTC)
    needs_jobs = any(c in ("jobs", "jobs+runners", "all") for c in wanted)
    needs_full = any(c in ("arc", "all") for c in wanted)
    needs_lean = "arc-lean" in wanted
    if (needs_full or needs_lean) and prometheus is None:
        raise ValueError("ARC's metrics need a prometheus binary")
    async with contextlib.AsyncExitStack() as stack:
        store = None
        if needs_jobs:
            database = workdir / "jobs" / "queuebot.db"
            await kept_history(
                database,
                f"second model {fleet.plan!r}",
                lambda: newest_deliveries(fleet),
                JOBS,
                remember_until=0.0,
            )
            store = await open_store(str(database))
            stack.push_async_callback(store.close)
        http = await stack.enter_async_context(aiohttp.ClientSession())
        github = None
        if any(c in ("jobs+runners", "all") for c in wanted):
            github = await stack.enter_async_context(GitHubSandbox(TOKEN))
            github.runners = runners_list(fleet)  # type: ignore[assignment]
        full = lean = None
        if needs_full:
            assert prometheus is not None
            full = await stack.enter_async_context(
                arc_prometheus(fleet, Shape.FULL, workdir, prometheus, arc_version)
            )
        if needs_lean:
            assert prometheus is not None
            lean = await stack.enter_async_context(
                arc_prometheus(fleet, Shape.LEAN, workdir, prometheus, arc_version)
            )
        judged = []
        for combination in wanted:
            runners = None
            if github is not None and combination in ("jobs+runners", "all"):
                runners = GitHubRunnersClient(
                    http, github.url, TOKEN, RunnerScope(ScopeKind.ORG, github.org)
                )
                stack.push_async_callback(runners.close)
            server = {"arc": full, "all": full, "arc-lean": lean}.get(combination)
            with_jobs = combination in ("jobs", "jobs+runners", "all")
            sources = FleetSources(
                store=store if with_jobs else None,
                jobs=JOBS,
                runners=runners,
                prometheus=(
                    PrometheusClient(http, server.url, timeout=READ_SECONDS)
                    if server is not None
                    else None
                ),
            )
            reading = await read_fleet(sources, at, within_seconds=READ_SECONDS)
            judged.append(judge(combination, diagnose(reading), truth, with_jobs, unread(reading)))
        return judged
