"""How GitHub's job events are read (the YAML file's `jobs:`): which label names a job's runner
type, which runner types and repositories count, when a queued job counts as queueing and when
it is taken for lost, and how long jobs are kept.

The defaults are the reference alert's: the machine_type rule, jobs queued more than 5 minutes,
for at most a week (a run cancelled before a runner took its jobs can leave them "queued"
forever), and runner types whose name contains rocm, xpu, s390x, b200, h100 or macos (any case)
left out, as the alert leaves them out. `exclude: []` counts every runner type.
"""

from __future__ import annotations

import functools
from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict, Field

from bot.domain.jobs import RunnerTypeRule

#: The runner types the reference alert leaves out: names containing any of these.
ALERT_EXCLUDES = ("rocm", "xpu", "s390x", "b200", "h100", "macos")


class JobsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    runner_type: RunnerTypeRule = Field(default_factory=RunnerTypeRule)
    #: Runner types whose name contains any of these (any case) are left out.
    exclude: tuple[str, ...] = ALERT_EXCLUDES
    #: Repositories counted (`owner/name`, `*` patterns allowed); none listed: every one.
    repositories: tuple[str, ...] = ()
    #: A queued job counts as queueing once it has waited this long (the alert's 5 minutes).
    queued_after_seconds: float = Field(300.0, ge=0, le=86400)
    #: A job queued longer than this is taken for lost and counts no more.
    max_queued_age_seconds: float = Field(7 * 86400.0, gt=0, le=30 * 86400)
    #: Jobs are kept this long.
    retention_days: float = Field(14.0, gt=0, le=365)
    #: Runner types exported on /metrics under their own name at most, the first seen first;
    #: the rest are summed as `runner_type="other"`.
    metrics_runner_types: int = Field(100, ge=1, le=1000)

    def leaves_out(self, runner_type: str) -> bool:
        """Whether `runner_type` is excluded."""
        return _leaves_out(self.exclude, runner_type)

    def counts(self, runner_type: str, repository: str) -> bool:
        """Whether a job of `runner_type` in `repository` counts."""
        return _counts(self.exclude, self.repositories, runner_type, repository)


# A reading asks of every job whether it counts, and a fleet has few runner types and
# repositories: the answers are remembered.
@functools.lru_cache(maxsize=65536)
def _leaves_out(exclude: tuple[str, ...], runner_type: str) -> bool:
    lowered = runner_type.lower()
    return any(part.lower() in lowered for part in exclude if part)


@functools.lru_cache(maxsize=65536)
def _counts(
    exclude: tuple[str, ...], repositories: tuple[str, ...], runner_type: str, repository: str
) -> bool:
    if _leaves_out(exclude, runner_type):
        return False
    return not repositories or any(fnmatchcase(repository, pattern) for pattern in repositories)
