"""How GitHub's job events are read (the YAML file's `jobs:`): which label names a job's runner
type, which runner types and repositories count, when a queued job counts as queueing and when
it is taken for lost, and how long jobs are kept.

The defaults are the reference alert's: the machine_type rule, jobs queued more than 5 minutes,
for at most a week (a run cancelled before a runner took its jobs can leave them "queued"
forever). The reference alert also leaves out runner types containing rocm, xpu, s390x, b200,
h100 or macos: `exclude: [rocm, xpu, s390x, b200, h100, macos]` does the same.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict, Field

from bot.domain.jobs import RunnerTypeRule


class JobsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    runner_type: RunnerTypeRule = Field(default_factory=RunnerTypeRule)
    #: Runner types whose name contains any of these (any case) are left out.
    exclude: tuple[str, ...] = ()
    #: Repositories counted (`owner/name`, `*` patterns allowed); none listed: every one.
    repositories: tuple[str, ...] = ()
    #: A queued job counts as queueing once it has waited this long (the alert's 5 minutes).
    queued_after_seconds: float = Field(300.0, ge=0, le=86400)
    #: A job queued longer than this is taken for lost and counts no more.
    max_queued_age_seconds: float = Field(7 * 86400.0, gt=0, le=30 * 86400)
    #: Jobs are kept this long.
    retention_days: float = Field(14.0, gt=0, le=365)

    def counts(self, runner_type: str, repository: str) -> bool:
        """Whether a job of `runner_type` in `repository` counts."""
        lowered = runner_type.lower()
        if any(part.lower() in lowered for part in self.exclude if part):
            return False
        return not self.repositories or any(
            fnmatchcase(repository, pattern) for pattern in self.repositories
        )
