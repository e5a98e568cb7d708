"""The runner supply: GitHub's self-hosted runners parsed at the edge, and counted per runner type.

A runner type is a custom label (`linux.2xlarge`, `linux.g5.4xlarge.nvidia.gpu`): the labels
GitHub gives every runner — `self-hosted`, the OS (`Linux`, `Windows`, `macOS`) and the
architecture (`X64`, `ARM`, `ARM64`) — are read-only and name no type. A runner with several custom
labels can take a job asking for any of them, so it counts under each. GitHub matches `runs-on`
labels without regard to case; so does everything here.

Pure: no I/O. `bot.fleet.sources.github_runners` fills these from the REST API, one scope's
list at a time; `bot.fleet.sources.orgs` puts several organizations' lists together (`merged`),
and `RunnersSource` is what the readers of either ask.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError


class LabelType(StrEnum):
    READ_ONLY = "read-only"
    CUSTOM = "custom"


class RunnerStatus(StrEnum):
    ONLINE = "online"
    OFFLINE = "offline"


#: The labels GitHub gives every self-hosted runner (docs.github.com, "Using labels with
#: self-hosted runners"): how a label whose answer has no `type` is told apart. The OpenAPI
#: description makes `type` optional, and older GitHub Enterprise Server versions leave it out.
DEFAULT_RUNNER_LABELS = frozenset(
    {"self-hosted", "linux", "windows", "macos", "x64", "x86", "arm", "arm64"}
)


class RunnerLabel(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    id: int | None = None
    name: str
    type: LabelType | None = None

    @property
    def names_a_type(self) -> bool:
        if self.type is not None:
            return self.type is LabelType.CUSTOM
        return self.name.casefold() not in DEFAULT_RUNNER_LABELS


class SelfHostedRunner(BaseModel):
    """One runner as `GET …/actions/runners` lists it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: int
    name: str
    os: str
    status: RunnerStatus
    busy: bool
    ephemeral: bool | None = None
    runner_group_id: int | None = None
    labels: tuple[RunnerLabel, ...] = ()

    @property
    def runner_types(self) -> tuple[str, ...]:
        """Its custom labels, each once whatever its case, as GitHub spells them."""
        seen: dict[str, str] = {}
        for label in self.labels:
            if label.names_a_type:
                seen.setdefault(label.name.casefold(), label.name)
        return tuple(seen.values())


def parse_runners(items: Iterable[Any]) -> tuple[list[SelfHostedRunner], int]:
    """The runners among `items` (a page's `runners`), and how many could not be read.

    One runner GitHub describes in a way this model does not know (a new status, a missing
    field) is left out and counted, rather than costing the whole fleet its answer.
    """
    runners, unreadable = [], 0
    for item in items:
        try:
            runners.append(SelfHostedRunner.model_validate(item))
        except ValidationError:
            unreadable += 1
    return runners, unreadable


@dataclass(frozen=True)
class TypeSupply:
    """The runners of one runner type now. A busy runner is normally online too; idle ones are
    online and not busy, the ones that can take a queued job at once."""

    runner_type: str
    online: int = 0
    offline: int = 0
    busy: int = 0
    idle: int = 0

    @property
    def total(self) -> int:
        return self.online + self.offline


def supply_by_type(runners: Iterable[SelfHostedRunner]) -> dict[str, TypeSupply]:
    """Every runner type's supply, keyed by its label case-folded."""
    counts: dict[str, list[int]] = {}
    spelled: dict[str, str] = {}
    for runner in runners:
        online = runner.status is RunnerStatus.ONLINE
        for name in runner.runner_types:
            key = name.casefold()
            spelled.setdefault(key, name)
            row = counts.setdefault(key, [0, 0, 0, 0])
            row[0 if online else 1] += 1
            row[2] += runner.busy
            row[3] += online and not runner.busy
    return {key: TypeSupply(spelled[key], *row) for key, row in sorted(counts.items())}


def supply_for(
    supply: Mapping[str, TypeSupply], runner_types: Iterable[str]
) -> dict[str, TypeSupply]:
    """The supply of each of `runner_types` (as jobs name them), keyed as asked; a type no
    runner carries has zero of everything, which is itself a finding."""
    return {
        name: supply.get(name.casefold()) or TypeSupply(name)
        for name in dict.fromkeys(runner_types)
    }


@dataclass(frozen=True)
class RunnerFleet:
    """One answer of the runners list: every runner of the scope, when it was had, and whether
    it is whole."""

    #: What was listed, for people: "org pytorch", "repository pytorch/pytorch".
    scope: str
    runners: tuple[SelfHostedRunner, ...]
    fetched_at: datetime
    #: What GitHub said the scope holds (`total_count`).
    total_count: int
    #: Pages read; a fleet of more pages than the client's limit stops there.
    pages: int = 1
    complete: bool = True
    #: Runners left out because their description could not be read.
    unreadable: int = 0
    #: Set when this answer is older than the cache's lifetime because GitHub may not be asked
    #: yet (its rate limit); says until when.
    stale_reason: str | None = None
    #: The organizations whose runners are not in it, each with why (`org pytorch-labs: …`):
    #: set, the answer is partial.
    failed: tuple[str, ...] = ()
    _supply: dict[str, TypeSupply] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_supply", supply_by_type(self.runners))

    def age(self, now: datetime) -> timedelta:
        return max(now - self.fetched_at, timedelta(0))

    @property
    def supply(self) -> dict[str, TypeSupply]:
        """Every runner type's supply, keyed by its label case-folded."""
        return dict(self._supply)

    def supply_for(self, runner_types: Iterable[str]) -> dict[str, TypeSupply]:
        """The supply of each of `runner_types`, matched without regard to case."""
        return supply_for(self._supply, runner_types)


class RunnersSource(Protocol):
    """What lists the runners: one scope's client, or several organizations' together."""

    async def fleet(self) -> RunnerFleet:
        """The runners now, or the last answer while it is fresh (raises a GitHubError)."""
        ...

    def latest(self) -> RunnerFleet | None:
        """The latest answer had, however old, never waited for."""
        ...

    async def close(self) -> None: ...


def merged(fleets: Sequence[RunnerFleet], scope: str, failed: Sequence[str] = ()) -> RunnerFleet:
    """Several lists' answers (at least one) as one: their runners side by side (GitHub's
    runner ids are its own across organizations, so none is counted twice), as old as the
    oldest, whole when every one is; `failed` names the lists that gave none."""
    stale = [f"{f.scope}: {f.stale_reason}" for f in fleets if f.stale_reason]
    return RunnerFleet(
        scope=scope,
        runners=tuple(runner for fleet in fleets for runner in fleet.runners),
        fetched_at=min(fleet.fetched_at for fleet in fleets),
        total_count=sum(fleet.total_count for fleet in fleets),
        pages=sum(fleet.pages for fleet in fleets),
        complete=all(fleet.complete for fleet in fleets),
        unreadable=sum(fleet.unreadable for fleet in fleets),
        stale_reason="; ".join(stale) or None,
        failed=(*failed, *(reason for fleet in fleets for reason in fleet.failed)),
    )
