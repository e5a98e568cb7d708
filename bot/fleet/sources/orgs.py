"""A fleet across several GitHub organizations (GITHUB_ORG names several): their runners lists
read as one, and the part of the fleet one organization owns.

- `OrgRunners`: a runners client per organization, asked together. Their runners are put in one
  list, so a runner type two organizations both have adds up. An organization whose list
  cannot be had leaves the others' answer, marked partial (`RunnerFleet.failed` says whose and
  why); only when none answers is there no answer.
- `OrgJobs`: the `jobs:` settings counting only the repositories of some organizations (a
  job's organization is the owner in its repository's `owner/name`); `runners_of`: the runners
  list of one organization.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

from bot.fleet.sources.github_access import ScopeKind
from bot.fleet.sources.github_http import GitHubError
from bot.fleet.sources.github_runners import GitHubRunnersClient
from bot.fleet.sources.jobs_config import JobsConfig
from bot.fleet.sources.runner_supply import RunnerFleet, RunnersSource, merged


class OrgRunners:
    """The runners of several organizations, one client each, as one list."""

    def __init__(self, clients: Mapping[str, GitHubRunnersClient]) -> None:
        """`clients`: each organization's, by its name as configured (at least one)."""
        if not clients:
            raise ValueError("no organization to list the runners of")
        self._clients = dict(clients)
        first = next(iter(self._clients.values()))
        #: GITHUB_API_URL, and where GitHub is, for messages people read.
        self.base_url, self.where = first.base_url, first.where
        self.scope = f"orgs {', '.join(self._clients)}"

    @property
    def orgs(self) -> tuple[str, ...]:
        return tuple(self._clients)

    def of(self, org: str) -> GitHubRunnersClient | None:
        """The client of `org` (any case), if it is one of these."""
        for name, client in self._clients.items():
            if name.casefold() == org.casefold():
                return client
        return None

    async def fleet(self) -> RunnerFleet:
        """Every organization's runners, listed at once (each client keeps its own cache and
        rate budget). Raises GitHubError when no organization's list could be had."""
        asked = list(self._clients.items())
        answers = await asyncio.gather(*(c.fleet() for _, c in asked), return_exceptions=True)
        fleets: list[RunnerFleet] = []
        failed: list[tuple[str, GitHubError]] = []
        for (org, _), answer in zip(asked, answers, strict=True):
            if isinstance(answer, GitHubError):
                failed.append((org, answer))
            elif isinstance(answer, BaseException):
                raise answer
            else:
                fleets.append(answer)
        if not fleets:
            if len(failed) == 1:
                raise failed[0][1]
            raise GitHubError("; ".join(f"org {org}: {exc}" for org, exc in failed))
        return merged(fleets, self.scope, [f"org {org}: {exc}" for org, exc in failed])

    def latest(self) -> RunnerFleet | None:
        """Every organization's latest answer, however old, never waited for (each client
        starts a new listing when its own is no longer fresh); None before any."""
        had = [(org, client.latest()) for org, client in self._clients.items()]
        fleets = [fleet for _, fleet in had if fleet is not None]
        if not fleets:
            return None
        return merged(fleets, self.scope, [f"org {org}: not listed yet" for org, f in had if not f])

    async def close(self) -> None:
        await asyncio.gather(*(client.close() for client in self._clients.values()))


def runners_of(source: RunnersSource | None, org: str) -> RunnersSource | None:
    """The runners list of `org` alone: its client among several, or the one client when that
    lists this organization (or a repository of it); None when no list has its runners."""
    if isinstance(source, OrgRunners):
        return source.of(org)
    if isinstance(source, GitHubRunnersClient):
        scope = source.scope
        if scope.kind is ScopeKind.ORG and scope.name.casefold() == org.casefold():
            return source
        owner = scope.name.split("/", 1)[0]
        if scope.kind is ScopeKind.REPOSITORY and owner.casefold() == org.casefold():
            return source
    return None


class OrgJobs(JobsConfig):
    """The `jobs:` settings, counting only the jobs of these organizations' repositories."""

    #: The organizations, case-folded (GitHub's names are not case sensitive).
    orgs: frozenset[str] = frozenset()

    def counts(self, runner_type: str, repository: str) -> bool:
        owner = repository.split("/", 1)[0].casefold()
        return owner in self.orgs and super().counts(runner_type, repository)


def org_jobs(config: JobsConfig, orgs: Iterable[str]) -> OrgJobs:
    """`config`, counting only the jobs of `orgs`."""
    fields = {name: getattr(config, name) for name in JobsConfig.model_fields}
    return OrgJobs(**fields, orgs=frozenset(org.casefold() for org in orgs))
