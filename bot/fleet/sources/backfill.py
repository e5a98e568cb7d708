"""`queuebot backfill`: the jobs GitHub still has, read over its REST API into the store, so a new
install has a usual to compare with, a capacity report, and the jobs already queued.

For each organization, its repositories (`GET /orgs/{org}/repos`); for each repository and each
UTC day of the window, oldest first, its workflow runs created that day
(`GET /repos/{owner}/{repo}/actions/runs?created=A..B`), and each run's jobs, every attempt
(`GET …/runs/{run_id}/jobs?filter=all`). GitHub answers a search filtered by `created` with at
most 1,000 runs: a stretch that holds more is halved until each half holds fewer.

Each job is merged as a delivery of its status would be (`bot.fleet.sources.job_history`'s
parsing, the store's merge): loading it again changes nothing, and a newer state the webhook
brought is never overwritten by an older one. A finished day of a repository is remembered in
the store once read, so a walk cut short (Ctrl-C, a crash, the request budget) goes on where it
stopped. A repository the credentials cannot read is reported and skipped, and so is an
organization (one a GitHub App is not installed on); credentials GitHub refuses stop the walk.
Each request names its owner (the organization for its repositories, a repository's owner for
its runs and jobs), so a GitHub App asks with that owner's installation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from bot.domain.clock import SYSTEM, Clock
from bot.domain.jobs import JobEvent
from bot.fleet.sources.github_http import (
    GitHubBadCredentials,
    GitHubDenied,
    GitHubRateLimited,
    GitHubRejected,
    GitHubUnavailable,
)
from bot.fleet.sources.github_rest import GitHubReader, RequestBudgetSpent, moment
from bot.fleet.sources.job_history import rest_event
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import Store

#: GitHub keeps a run's logs and jobs for 90 days by default (400 at most).
MAX_DAYS = 400
#: What a search filtered by `created` reaches at most.
SEARCH_CAP = 1000
#: Jobs merged per store transaction.
LOT = 500


@dataclass
class Progress:
    """Where a walk stands: what the progress bar shows and the command's last line says."""

    repositories: int = 0
    repositories_done: int = 0
    runs: int = 0
    jobs: int = 0
    new: int = 0
    unreadable: int = 0
    calls: int = 0
    remaining: int | None = None
    limit: int | None = None
    #: Repositories skipped, each with why.
    skipped: list[str] = field(default_factory=list)
    #: Why the walk stopped before the end; empty when it went through.
    stopped: str = ""

    def line(self) -> str:
        budget = ""
        if self.remaining is not None:
            of = f" of {self.limit:,}" if self.limit else ""
            budget = f", {self.remaining:,}{of} left this hour"
        unreadable = f", {self.unreadable:,} unreadable" if self.unreadable else ""
        return (
            f"{self.repositories_done}/{self.repositories} repositories, {self.runs:,} runs,"
            f" {self.jobs:,} jobs ({self.new:,} new{unreadable}), {self.calls:,} requests{budget}"
        )


def day_windows(now: datetime, days: int) -> list[tuple[datetime, datetime]]:
    """The UTC days of the window, oldest first, the last one ending now."""
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    first = today - timedelta(days=days)
    starts = [first + timedelta(days=n) for n in range(days + 1)]
    windows = [(start, min(start + timedelta(days=1), now)) for start in starts]
    since = now - timedelta(days=days)
    return [(max(start, since), end) for start, end in windows if end > max(start, since)]


def _owner(repository: str) -> str:
    """The org or user an `owner/name` belongs to."""
    return repository.partition("/")[0]


class Backfill:
    """One walk over the organizations' repositories."""

    def __init__(
        self,
        reader: GitHubReader,
        store: Store,
        config: JobsConfig,
        orgs: Sequence[str],
        *,
        days: int,
        clock: Clock = SYSTEM,
        report: Callable[[Progress], None] = lambda progress: None,
    ) -> None:
        self._reader, self._store, self._config = reader, store, config
        self._orgs, self._clock = list(orgs), clock
        #: The days of history walked, the last ending now.
        self.days = days
        self._report = report
        self.progress = Progress()
        self._lot: list[tuple[JobEvent, str]] = []

    async def run(self) -> Progress:
        """Walk every repository; stops early (saying why in `stopped`) on the request budget
        or a rate limit too long to wait for. Raises GitHubBadCredentials."""
        try:
            repositories = [repo for org in self._orgs for repo in await self._organization(org)]
            self.progress.repositories = len(repositories)
            self._tell()
            for repository in repositories:
                await self._repository(repository)
                self.progress.repositories_done += 1
                self._tell()
        except (RequestBudgetSpent, GitHubRateLimited) as exc:
            self.progress.stopped = f"{exc}; run it again to go on where it stopped"
        finally:
            # What was read is kept, however the walk ends.
            await self._flush()
        self._tell()
        return self.progress

    def _tell(self) -> None:
        budget = self._reader.budget
        self.progress.calls = self._reader.calls
        self.progress.remaining, self.progress.limit = budget.remaining, budget.limit
        self._report(self.progress)

    async def _organization(self, org: str) -> list[str]:
        """The organization's repositories; none, said, when it cannot be read."""
        try:
            return await self._repositories(org)
        except GitHubBadCredentials:
            raise
        except GitHubDenied as exc:
            self.progress.skipped.append(f"organization {org}: {exc}")
            return []

    async def _repositories(self, org: str) -> list[str]:
        found: list[str] = []
        async for page in self._reader.pages(
            self._reader.url(f"/orgs/{quote(org, safe='')}/repos?per_page=100"), owner=org
        ):
            if not isinstance(page, list):
                raise GitHubRejected(f"{self._reader.where} listed no repositories of {org}")
            found += [repo["full_name"] for repo in page if isinstance(repo, dict)]
        return found

    async def _repository(self, repository: str) -> None:
        now = self._clock.now()
        try:
            for start, end in day_windows(now, self.days):
                mark = f"backfill:{repository}:{moment(start)}"
                if await self._store.remembered(mark):
                    continue
                await self._stretch(repository, start, end)
                await self._flush()
                if end <= now - timedelta(hours=1):
                    # A day over is read for good; today's is read again on the next walk.
                    kept = start + timedelta(days=self._config.retention_days + 1)
                    await self._store.first_seen(mark, kept.timestamp())
        except GitHubBadCredentials:
            raise
        except (GitHubDenied, GitHubUnavailable, GitHubRejected) as exc:
            self.progress.skipped.append(f"{repository}: {exc}")

    async def _stretch(self, repository: str, start: datetime, end: datetime) -> None:
        """The runs created in [start, end), halving the stretch while it holds more than a
        search reaches."""
        last = end - timedelta(seconds=1)
        path = f"/repos/{repository}/actions/runs"
        query = f"?created={moment(start)}..{moment(last)}&per_page=100"
        pages = self._reader.pages(self._reader.url(path + query), owner=_owner(repository))
        first = True
        async for page in pages:
            if not isinstance(page, dict):
                raise GitHubRejected(f"{self._reader.where} listed no runs of {repository}")
            # Halved on whole seconds (GitHub's times are), while there is a second to halve.
            middle = (start + (end - start) / 2).replace(microsecond=0)
            if first and page.get("total_count", 0) > SEARCH_CAP and start < middle < end:
                await pages.aclose()
                await self._stretch(repository, start, middle)
                await self._stretch(repository, middle, end)
                return
            first = False
            for run in page.get("workflow_runs", []):
                if not isinstance(run, dict) or not isinstance(run.get("id"), int):
                    raise GitHubRejected(f"{self._reader.where} listed a run without an id")
                self.progress.runs += 1
                await self._run(repository, run["id"])
            self._tell()

    async def _run(self, repository: str, run_id: int) -> None:
        path = f"/repos/{repository}/actions/runs/{run_id}/jobs?filter=all&per_page=100"
        async for page in self._reader.pages(self._reader.url(path), owner=_owner(repository)):
            if not isinstance(page, dict):
                raise GitHubRejected(f"{self._reader.where} listed no jobs of run {run_id}")
            for job in page.get("jobs", []):
                event = rest_event(job, repository, self._config)
                if event is None:
                    self.progress.unreadable += 1
                    continue
                self.progress.jobs += 1
                self._lot.append((event, f"backfill:{event.job_id}:{event.action.value}"))
        if len(self._lot) >= LOT:
            await self._flush()

    async def _flush(self) -> None:
        if self._lot:
            remember = self._clock.now() + timedelta(days=self._config.retention_days)
            self.progress.new += await self._store.record_jobs(self._lot, remember.timestamp())
            self._lot = []
