"""Reconciliation while serving: what GitHub's deliveries left wrong in the store, asked of its
REST API and corrected, within a share of the token's hourly budget.

GitHub does not retry a delivery that failed; a restart, a network blip or a load balancer's
timeout loses some. A lost `in_progress` leaves a job waiting for ever in the numbers (the alert
and the early warning fire on ghosts); a lost `completed` keeps a runner busy for ever; a lost
`queued` leaves a waiting job out. Every pass (`QUEUEBOT_RECONCILE_SECONDS`), in this order, so
that the alert's numbers are put right first:

1. Jobs still queued past GitHub's own 24-hour limit are ended where GitHub ended them.
2. Jobs that look queued `QUEUED_DOUBT_SECONDS` after they were created, the oldest first, are
   asked of GitHub: one job of a run by its id (`GET /repos/{owner}/{repo}/actions/jobs/{id}`),
   several of one run by the run's jobs (one request instead of many).
3. Each active repository's runs that are queued or in progress are listed (the repositories
   listed longest ago first, each at most every `LIST_EVERY_SECONDS`); the jobs of runs no row
   knows are read (jobs whose every delivery was lost), and those of runs GitHub shows queued
   while no row of theirs waits.
4. The other runs in progress are read again, those read longest ago first, each once an hour
   at most (a job whose `queued` was lost beside siblings that were told), with half of what
   the budget has left;
5. then jobs still running past twice their runner type's mean run time (at least
   `RUNNING_DOUBT_SECONDS`) are asked, as in 2; then the rest of 4.

What GitHub answers is merged as a delivery is, so an older state never overwrites a newer one;
a job GitHub no longer has (404, its repository still readable) is forgotten. A job asked and
found as it was is asked again only after as long again as it has been in doubt.

Requests stay within `share` of the token's hourly limit over any hour (a fifth by default,
the rest left to the runners list, the backfill and the token's other users), and the reader
never waits for GitHub's rate limit here: a pass that meets it ends, and the next goes on.
Of several replicas on one store, only the one holding the leader lease reconciles. What was
corrected is counted in the store (`/queue-status` tells the last hour's) and on /metrics.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from bot.domain.clock import SYSTEM, Clock
from bot.domain.jobs import JobAction, JobEvent
from bot.fleet.sources.budget_share import BudgetShare, ShareSpent
from bot.fleet.sources.doubts import (
    QUEUED_DOUBT_SECONDS,
    Correction,
    Doubt,
    ReconcilePass,
    expired,
    gone,
    running_too_long,
)
from bot.fleet.sources.github_http import GitHubDenied, GitHubError, GitHubNotFound, GitHubRejected
from bot.fleet.sources.github_rest import GitHubReader, RequestBudgetSpent
from bot.fleet.sources.job_history import rest_event
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import Store
from bot.store.doubts_sql import GITHUB_QUEUE_LIMIT_SECONDS
from bot.telemetry.passes import PassRecord

log = logging.getLogger(__name__)

#: The leader lease of reconciliation, held for this many intervals.
RECONCILE_ROLE = "reconcile"
LEASE_INTERVALS = 3
#: Repositories with jobs created within this are listed for runs, each at most this often.
ACTIVE_SECONDS = 86400.0
LIST_EVERY_SECONDS = 600.0
#: Jobs in doubt read from the store at a time, of each kind.
DOUBTS_READ = 5000
_HOUR = 3600.0


def _owner(repository: str) -> str:
    return repository.partition("/")[0]


def _path(repository: str) -> str:
    return "/".join(quote(part, safe="") for part in repository.split("/", 1))


class Reconciler:
    """Corrects the store's jobs from GitHub's REST API, a pass at a time."""

    def __init__(
        self,
        reader: GitHubReader,
        store: Store,
        config: JobsConfig,
        *,
        share: float = 0.2,
        clock: Clock = SYSTEM,
        record: PassRecord | None = None,
        on_corrected: Callable[[Correction, int], None] = lambda kind, jobs: None,
    ) -> None:
        self._github = BudgetShare(reader, share, clock)
        self._store, self._config, self._clock = store, config, clock
        self.record = record or PassRecord("reconciliation")
        self._on_corrected = on_corrected
        self._owner = uuid.uuid4().hex
        #: Job id → when it may be asked about again.
        self._next_ask: dict[int, float] = {}
        #: Repository → when its runs were last listed.
        self._listed: dict[str, float] = {}
        #: Run id → when its jobs were last read.
        self._run_read: dict[int, float] = {}
        #: Repositories this token cannot read, and owners whose share of the budget is
        #: spent (both asked again by the next pass).
        self._hidden: dict[str, bool] = {}
        self._spent: set[str] = set()

    async def run(self, interval: float) -> None:
        """A pass every `interval` seconds until cancelled; a failed pass never stops it."""
        while True:
            try:
                until = self._clock.time() + LEASE_INTERVALS * interval
                if await self._store.lead(RECONCILE_ROLE, self._owner, until):
                    await self.reconcile()
                    self.record.succeeded()
            except Exception:
                self.record.failed()
                log.exception("reconciliation failed; trying again in %.0fs", interval)
            await asyncio.sleep(interval)

    async def reconcile(self) -> ReconcilePass:
        """One pass (see the module's docstring)."""
        done = ReconcilePass()
        sent = self._github.sent
        self._hidden, self._spent = {}, set()
        # The fleet's moment (what the jobs' times are read against), as every reading is.
        now = self._clock.now().timestamp()
        await self._expire(now, done)
        queued, running = await self._doubts(now)
        try:
            # What the alert counts first: jobs that look queued, then those never told of.
            await self._ask_doubts(queued, now, done)
            # Listing runs takes half of what is left at most, so that the steps after it
            # are reached however many repositories are active; the rest wait their turn.
            in_progress = await self._discover(now, done, most=self._github.allowance() // 2)
            # Half of what is left for the runs in progress (the alert's numbers), then the
            # jobs that look running too long, then the rest of the runs.
            await self._rotate(in_progress, now, done, most=self._github.allowance() // 2)
            await self._ask_doubts(running, now, done)
            await self._rotate(in_progress, now, done)
        except (GitHubError, RequestBudgetSpent) as exc:
            done.stopped = str(exc)
            log.warning("reconciliation stopped early: %s", exc)
        if self._spent and not done.stopped:
            whose = ", ".join(sorted(self._spent))
            done.stopped = f"the share of GitHub's hourly budget is spent for now ({whose})"
        done.corrected = +done.corrected  # the kinds that happened
        done.requests = self._github.sent - sent
        await self._store.add_corrections(now, {k.value: n for k, n in done.corrected.items()})
        for kind, jobs in done.corrected.items():
            if jobs:
                self._on_corrected(kind, jobs)
        return done

    async def _expire(self, now: float, done: ReconcilePass) -> None:
        """Jobs still queued past GitHub's 24 hours end there, no runner having taken them, as
        GitHub ended them (its conclusion unknown here: no request is spent on it)."""
        oldest = now - self._config.max_queued_age_seconds
        stale, _ = await self._store.doubtful_jobs(
            oldest, now - GITHUB_QUEUE_LIMIT_SECONDS, oldest, oldest, DOUBTS_READ
        )
        ended = [expired(job) for job in await self._store.stored_jobs([d.job_id for d in stale])]
        await self._merge(ended, "expired")
        done.corrected[Correction.EXPIRED] += len(ended)

    async def _forget(self, job_ids: list[int], now: float, done: ReconcilePass) -> None:
        """Jobs GitHub no longer has stop counting: ended now, as far as anyone can tell."""
        ended = [
            gone(job, now)
            for job in await self._store.stored_jobs(job_ids)
            if job.action is not JobAction.COMPLETED
        ]
        await self._merge(ended, "gone")
        done.corrected[Correction.GONE] += len(ended)

    async def _doubts(self, now: float) -> tuple[list[Doubt], list[Doubt]]:
        """Jobs that look queued and jobs that look running too long, each with when the
        doubt began, the oldest first."""
        usual = await self._store.usual_run_seconds(now - 86400.0, now)
        since = now - self._config.max_queued_age_seconds
        queued, running = await self._store.doubtful_jobs(
            since, now - QUEUED_DOUBT_SECONDS, since, now, DOUBTS_READ
        )
        long_running = [
            Doubt(job.started_at, job)
            for job in running
            if job.started_at is not None and running_too_long(job, usual, now)
        ]
        doubts = [Doubt(job.created_at, job) for job in queued], long_running
        in_doubt = {doubt.job.job_id for part in doubts for doubt in part}
        self._next_ask = {job: at for job, at in self._next_ask.items() if job in in_doubt}
        return doubts

    async def _ask_doubts(self, doubts: list[Doubt], now: float, done: ReconcilePass) -> None:
        """The jobs in doubt, a run at a time, the run with the oldest doubt first: one job
        alone asked by its id, several of one run by the run's list of jobs."""
        runs: dict[tuple[str, int], list[Doubt]] = {}
        for doubt in doubts:
            if self._next_ask.get(doubt.job.job_id, 0.0) <= now:
                runs.setdefault((doubt.job.repository, doubt.job.run_id), []).append(doubt)
        for (repository, run_id), members in runs.items():
            if self._skipped(repository):
                continue
            try:
                await self._ask_run(repository, run_id, members, done)
            except ShareSpent as exc:
                self._spent.add(exc.owner)

    async def _ask_run(
        self, repository: str, run_id: int, members: list[Doubt], done: ReconcilePass
    ) -> None:
        """The jobs in doubt of one run asked of GitHub, and its answer settled."""
        try:
            if len(members) == 1:
                path = f"/repos/{_path(repository)}/actions/jobs/{members[0].job.job_id}"
                jobs = [await self._github.get(path, _owner(repository))]
            else:
                jobs = await self._run_jobs(repository, run_id)
        except GitHubNotFound:
            # A repository this token cannot see answers 404 too: jobs are forgotten only
            # when the repository itself is there.
            if not await self._visible(repository):
                return
            jobs = []
        except GitHubDenied as exc:
            self._hidden[repository] = True
            log.warning("reconciliation cannot read the jobs of %s: %s", repository, exc)
            return
        await self._settle(repository, members, jobs, done)

    async def _settle(
        self, repository: str, members: list[Doubt], jobs: list[Any], done: ReconcilePass
    ) -> None:
        """GitHub's answer for the jobs in doubt of one run merged; those it no longer has
        forgotten; those it shows as they were asked again later."""
        events = {
            event.job_id: event
            for job in jobs
            if (event := rest_event(job, repository, self._config)) is not None
        }
        known = await self._store.known_jobs(list(events))
        await self._merge(list(events.values()))
        done.corrected[Correction.FOUND] += sum(1 for job in events if job not in known)
        now = self._clock.now().timestamp()
        gone = [doubt.job.job_id for doubt in members if doubt.job.job_id not in events]
        await self._forget(gone, now, done)
        for doubt in members:
            job = doubt.job
            event = events.get(job.job_id)
            if event is None:
                continue
            if event.action.rank > JobAction(job.status).rank:
                self._next_ask.pop(job.job_id, None)
                done.corrected[
                    Correction.COMPLETED
                    if event.action is JobAction.COMPLETED
                    else Correction.STARTED
                ] += 1
            else:
                # As it was: asked again after as long again as it has been in doubt.
                wait = max(now - doubt.since, QUEUED_DOUBT_SECONDS)
                self._next_ask[job.job_id] = now + wait

    async def _run_jobs(self, repository: str, run_id: int) -> list[Any]:
        """Every attempt's jobs of a run."""
        path = f"/repos/{_path(repository)}/actions/runs/{run_id}/jobs?filter=all&per_page=100"
        return await self._github.listed(path, "jobs", _owner(repository))

    async def _discover(self, now: float, done: ReconcilePass, most: int) -> list[tuple[str, int]]:
        """Each active repository's runs queued or in progress: those no row knows are read,
        and those GitHub shows queued whose rows wait for nothing (a job queued while its
        delivery was lost); the other runs in progress are returned, the first listed first,
        for the pass to read as the budget allows."""
        active = await self._store.active_repositories(now - ACTIVE_SECONDS)
        active.sort(key=lambda repository: self._listed.get(repository, 0.0))
        later: list[tuple[str, str, int]] = []
        until = self._github.sent + most
        for repository in active:
            if self._github.sent >= until:
                break
            last = self._listed.get(repository)
            if self._skipped(repository) or (last is not None and now - last < LIST_EVERY_SECONDS):
                continue
            self._listed[repository] = now
            runs: dict[int, tuple[str, str]] = {}
            try:
                for status in ("queued", "in_progress"):
                    query = f"?status={status}&per_page=100"
                    path = f"/repos/{_path(repository)}/actions/runs{query}"
                    listed = await self._github.listed(path, "workflow_runs", _owner(repository))
                    for run in listed:
                        if isinstance(run, dict) and isinstance(run.get("id"), int):
                            runs[run["id"]] = (str(run.get("created_at", "")), status)
                known = await self._store.known_runs(sorted(runs))
                for run_id in sorted(runs, key=lambda run: (runs[run], run)):
                    created, status = runs[run_id]
                    if run_id not in known or (status == "queued" and not known[run_id]):
                        await self._read_run(repository, run_id, now, done)
                    else:
                        later.append((created, repository, run_id))
            except ShareSpent as exc:
                self._spent.add(exc.owner)
            except (GitHubDenied, GitHubRejected) as exc:
                self._hidden[repository] = True
                log.warning("reconciliation cannot read the runs of %s: %s", repository, exc)
        return [(repository, run_id) for _, repository, run_id in sorted(later)]

    async def _read_run(
        self, repository: str, run_id: int, now: float, done: ReconcilePass
    ) -> None:
        self._run_read[run_id] = now
        try:
            jobs = await self._run_jobs(repository, run_id)
        except GitHubNotFound:
            return  # the run was deleted since it was listed
        await self._settle(repository, [], jobs, done)

    async def _rotate(
        self, runs: list[tuple[str, int]], now: float, done: ReconcilePass, most: int | None = None
    ) -> None:
        """Runs in progress whose jobs are known, those read longest ago first, each once an
        hour at most (`most` of them at most): a job queued while its delivery was lost, in a
        run whose others were told."""
        runs.sort(key=lambda run: self._run_read.get(run[1], 0.0))
        for repository, run_id in runs:
            if most is not None and most <= 0:
                break
            if self._run_read.get(run_id, 0.0) > now - _HOUR or self._skipped(repository):
                continue
            try:
                await self._read_run(repository, run_id, now, done)
            except ShareSpent as exc:
                self._spent.add(exc.owner)
            most = None if most is None else most - 1
        # A run read more than an hour ago is read again whenever it is listed.
        self._run_read = {r: at for r, at in self._run_read.items() if at > now - _HOUR}

    def _skipped(self, repository: str) -> bool:
        """Whether this pass leaves the repository: unreadable, or its share spent."""
        return self._hidden.get(repository, False) or _owner(repository) in self._spent

    async def _visible(self, repository: str) -> bool:
        """Whether the token sees the repository (asked once a pass)."""
        if repository not in self._hidden:
            try:
                await self._github.get(f"/repos/{_path(repository)}", _owner(repository))
                self._hidden[repository] = False
            except GitHubNotFound:
                log.warning("reconciliation cannot see the repository %s (404)", repository)
                self._hidden[repository] = True
        return not self._hidden[repository]

    async def _merge(self, events: list[JobEvent], source: str = "rest") -> None:
        """Merged as deliveries are (named for where they come from, the job and its state,
        so the same answer twice changes nothing)."""
        if not events:
            return
        remember = self._clock.time() + self._config.retention_days * 86400.0
        counted = [
            replace(event, counted=self._config.counts(event.runner_type, event.repository))
            for event in events
        ]
        await self._store.record_jobs(
            [(e, f"{source}:{e.job_id}:{e.action.value}") for e in counted], remember
        )
