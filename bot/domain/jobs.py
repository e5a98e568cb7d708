"""GitHub's `workflow_job` webhook deliveries, parsed at the edge into what the store keeps.

GitHub sends one delivery per change of a job: `queued`, `waiting` (held for an environment's
approval: not queueing for a runner), `in_progress` (a runner took it), `completed`
(https://docs.github.com/en/webhooks/webhook-events-and-payloads#workflow_job). Deliveries can
arrive late, twice or out of order, so every time is the job's own (`created_at`,
`started_at`, `completed_at`), never when a delivery arrived: history replayed later reads the
same. `started_at` is present on every action and equals `created_at` while the job is queued,
so a job counts as started only when an `in_progress` or `completed` delivery shows a runner
took it.

The runner type of a job comes from its `labels` (what `runs-on` asked for) by `RunnerTypeRule`:
by default the reference alert's machine_type rule, the second label when there are two or
more (`[self-hosted, linux.2xlarge]`), else the first (`[linux.2xlarge]`), else the runner
group's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

#: The bounds of what a delivery may carry (GitHub's own limits where it states them, else a
#: cap no real job comes near): a row id is a signed 64-bit integer on both backends; a label
#: (a runner type) and a runner's name are short; names and branches are kept readable.
MAX_ID = 2**63 - 1
MAX_LABEL = 256
MAX_LABELS = 100
MAX_NAME = 1000
MAX_BRANCH = 1024
MAX_URL = 2048
MAX_WORD = 64
#: The fleet's queue-time histogram's buckets, seconds: from a quick start to GitHub's own
#: 24-hour limit on a queued job.
QUEUE_TIME_BUCKETS = (
    10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0,
    7200.0, 14400.0, 28800.0, 43200.0, 86400.0,
)  # fmt: skip
#: The conclusions GitHub gives a completed job; any other is counted as `other`.
CONCLUSIONS = frozenset(
    {
        "success",
        "failure",
        "cancelled",
        "skipped",
        "timed_out",
        "action_required",
        "neutral",
        "stale",
        "startup_failure",
    }
)
#: No job is older than GitHub Actions (2018); GitHub itself began in 2008.
EARLIEST = datetime(2008, 1, 1, tzinfo=UTC)


def _no_nul(value: str) -> str:
    # PostgreSQL's text cannot hold U+0000, and no name GitHub sends has one.
    if "\x00" in value:
        raise ValueError("contains a NUL character")
    return value


Label = Annotated[str, Field(max_length=MAX_LABEL), AfterValidator(_no_nul)]
Name = Annotated[str, Field(max_length=MAX_NAME), AfterValidator(_no_nul)]
Branch = Annotated[str, Field(max_length=MAX_BRANCH), AfterValidator(_no_nul)]
Url = Annotated[str, Field(max_length=MAX_URL), AfterValidator(_no_nul)]
Word = Annotated[str, Field(max_length=MAX_WORD), AfterValidator(_no_nul)]


class JobAction(StrEnum):
    WAITING = "waiting"
    QUEUED = "queued"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"

    @property
    def rank(self) -> int:
        """How far along a job is: a delivery never moves a job back (they come out of order)."""
        return _RANKS[self]


_RANKS = {
    JobAction.WAITING: 0,
    JobAction.QUEUED: 1,
    JobAction.IN_PROGRESS: 2,
    JobAction.COMPLETED: 3,
}


class GitHubWorkflowJob(BaseModel):
    """`workflow_job` of a delivery: the fields queuebot reads."""

    model_config = ConfigDict(extra="ignore")

    id: int = Field(ge=1, le=MAX_ID)
    run_id: int = Field(ge=0, le=MAX_ID)
    run_attempt: int = Field(1, ge=0, le=MAX_ID)
    workflow_name: Name | None = None
    name: Name
    head_branch: Branch | None = None
    html_url: Url | None = None
    status: Word = ""
    conclusion: Word | None = None
    created_at: datetime
    started_at: datetime | None = None
    completed_at: datetime | None = None
    labels: list[Label] = Field(default_factory=list, max_length=MAX_LABELS)
    runner_id: int | None = Field(None, ge=0, le=MAX_ID)
    runner_name: Label | None = None
    runner_group_name: Label | None = None
    steps: list[dict[str, Any]] = Field(default_factory=list)

    @field_validator("created_at", "started_at", "completed_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        try:
            value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        except OverflowError:  # 0001-01-01T00:00:00+01:00 is before the year 1 in UTC
            raise ValueError("is not a time GitHub could send") from None
        if value < EARLIEST:
            raise ValueError(f"is before {EARLIEST:%Y}: not a time GitHub could send")
        return value


class GitHubRepository(BaseModel):
    model_config = ConfigDict(extra="ignore")

    full_name: Annotated[str, Field(min_length=1, max_length=300), AfterValidator(_no_nul)]


class WorkflowJobDelivery(BaseModel):
    """The body of a `workflow_job` delivery."""

    model_config = ConfigDict(extra="ignore")

    action: JobAction
    workflow_job: GitHubWorkflowJob
    repository: GitHubRepository


class RunnerTypeRule(BaseModel):
    """How a job's labels name its runner type (the YAML file's `jobs.runner_type`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The first label matching this regular expression, when set; else the reference rule.
    label_pattern: str | None = None

    @field_validator("label_pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return value

    def runner_type(self, labels: list[str] | tuple[str, ...], runner_group: str | None) -> str:
        if self.label_pattern is not None:
            pattern = re.compile(self.label_pattern)
            for label in labels:
                if pattern.search(label):
                    return label
        if len(labels) > 1:
            return labels[1]
        if labels:
            return labels[0]
        return runner_group or "unknown"


@dataclass(frozen=True, slots=True)
class JobEvent:
    """One delivery, as the store merges it into what it knows of the job (made from a
    validated delivery: a plain record, a webhook's history is hundreds of thousands of
    them)."""

    job_id: int
    run_id: int
    run_attempt: int
    repository: str
    workflow: str
    job: str
    labels: tuple[str, ...]
    runner_type: str
    html_url: str | None
    head_branch: str | None
    action: JobAction
    created_at: datetime
    #: When a runner took the job: only from a delivery that shows one did.
    started_at: datetime | None
    completed_at: datetime | None
    conclusion: str | None
    runner_name: str | None
    #: Whether the job's runner type and repository count (the YAML file's `jobs:`): only
    #: those go into the fleet's totals that `/metrics` exports.
    counted: bool = True


def job_event(delivery: WorkflowJobDelivery, rule: RunnerTypeRule) -> JobEvent:
    """What one delivery says about its job."""
    job = delivery.workflow_job
    action = delivery.action
    # On a queued or waiting delivery `started_at` is just `created_at`; a completed job that
    # no runner took (cancelled while queued) has neither a runner nor steps.
    taken = action in (JobAction.IN_PROGRESS, JobAction.COMPLETED) and (
        job.runner_id is not None or bool(job.runner_name) or bool(job.steps)
    )
    started = job.started_at if taken else None
    return JobEvent(
        job_id=job.id,
        run_id=job.run_id,
        run_attempt=job.run_attempt,
        repository=delivery.repository.full_name,
        workflow=job.workflow_name or "",
        job=job.name,
        labels=tuple(job.labels),
        runner_type=rule.runner_type(job.labels, job.runner_group_name),
        html_url=job.html_url,
        head_branch=job.head_branch,
        action=action,
        created_at=job.created_at,
        started_at=started,
        completed_at=job.completed_at if action is JobAction.COMPLETED else None,
        conclusion=job.conclusion if action is JobAction.COMPLETED else None,
        runner_name=job.runner_name if taken else None,
    )
