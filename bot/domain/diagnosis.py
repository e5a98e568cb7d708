"""What diagnostics find: the runbook's five causes, a verdict on each, and the evidence.

`Report.to_json()` is the contract of `queuebot diagnose --format json`: `primary_cause`,
`findings` (each with `cause`, `verdict`, `runner_types`, `evidence`; each evidence item with
`now`, `baseline` (the usual: the median of the previous days), `yesterday` and `week_ago` (the
same time on those days), `workflows`, `job`, `repository`), `runner_types` (each with `name`,
`queued`, `max_wait_seconds`, `busy`, `registered`, `max`, and `yesterday` and `week_ago`, each
`{queued, max_wait_seconds}` or null) and `waiting` (per queueing runner type, its `name` and
the longest-waiting `jobs`, each with `workflow`, `job`, `created_at`, `url`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict


class Cause(StrEnum):
    """The five usual causes of queueing, in RUNBOOK.md's words."""

    INCREASED_WORKLOAD = "increased_workload"
    RESOURCE_CONSTRAINTS = "resource_constraints"
    LONG_RUNNING_JOBS = "long_running_jobs"
    AUTOSCALING_LIMITS = "autoscaling_limits"
    INFRASTRUCTURE = "infrastructure"

    @property
    def label(self) -> str:
        return CAUSE_TITLES[self]

    @property
    def next_step(self) -> str:
        return NEXT_STEPS[self]


CAUSE_TITLES = {
    Cause.INCREASED_WORKLOAD: "Increased workload",
    Cause.RESOURCE_CONSTRAINTS: "Resource constraints",
    Cause.LONG_RUNNING_JOBS: "Long-running jobs",
    Cause.AUTOSCALING_LIMITS: "Autoscaling configuration limits",
    Cause.INFRASTRUCTURE: "Infrastructure problems",
}

#: The runbook's next steps for each cause.
NEXT_STEPS = {
    Cause.INCREASED_WORKLOAD: (
        "Check the autoscaler provisions fast enough for the new demand; find the workflows"
        " behind the surge; watch arrival rates and queue lengths to tune scaling ahead of time."
    ),
    Cause.RESOURCE_CONSTRAINTS: (
        "Look at runner utilisation (throttling, OOM kills); resize runner types or rebalance"
        " allocation; fix the underlying infrastructure issue."
    ),
    Cause.LONG_RUNNING_JOBS: (
        "Find the slow jobs and workflows (a regression, a heavy new test, a slow external"
        " dependency); profile them; split large jobs into parallel smaller ones."
    ),
    Cause.AUTOSCALING_LIMITS: (
        "Review min/max runner counts, scaling triggers (queue length) and cooldowns; raise the"
        " maximum where demand is legitimate."
    ),
    Cause.INFRASTRUCTURE: (
        "Check infrastructure metrics (runners failing to start or register, network, disk);"
        " work with the infrastructure team (network, hardware, cloud capacity)."
    ),
}


class Confidence(StrEnum):
    """How sure the primary cause is: every cause measured and its signature unambiguous
    (high); some cause not measured, or a cause told from what the others leave with some
    signature of its own (medium); the maximum named without knowing whether demand or job
    time changed, or a cause told by elimination alone (low)."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Verdict(StrEnum):
    LIKELY = "likely"
    RULED_OUT = "ruled_out"
    NO_DATA = "no_data"


class Evidence(BaseModel):
    """One number behind a verdict, with its baseline when there is one."""

    model_config = ConfigDict(frozen=True)

    runner_type: str
    measure: str
    now: float | None
    baseline: float | None = None
    unit: str = ""
    #: The same time yesterday and a week before, where known; `baseline` is the usual.
    yesterday: float | None = None
    week_ago: float | None = None
    #: Workflows behind it (a surge's or a slowdown's), busiest change first.
    workflows: tuple[str, ...] = ()
    #: The one job name, and the one repository, behind most of that change, when one is.
    job: str = ""
    repository: str = ""
    #: Where the number came from (GitHub job events, GitHub runners, Prometheus).
    source: str = ""
    #: Why the number does not point where it seems to, under a verdict it could be read
    #: against ("runners still starting: busy runners 180 → 261 in half an hour").
    why: str = ""


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)

    cause: Cause
    verdict: Verdict
    runner_types: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    summary: str = ""

    @property
    def next_step(self) -> str:
        return self.cause.next_step


class PastQueue(BaseModel):
    """A runner type's queue at the same time on an earlier day."""

    model_config = ConfigDict(frozen=True)

    queued: float | None
    max_wait_seconds: float | None


#: Desired or registered runners at this share of the maximum count as "at the maximum".
AT_MAX_SHARE = 0.95


class RunnerTypeState(BaseModel):
    """One runner type now."""

    model_config = ConfigDict(frozen=True)

    name: str
    queued: float | None
    max_wait_seconds: float | None
    busy: float | None
    registered: float | None
    idle: float | None = None
    desired: float | None = None
    max: float | None = None
    #: Queueing beyond its usual at this time: the runner types a diagnosis explains.
    affected: bool = False
    #: Jobs waiting long (a job 10 minutes, or 5 jobs), usual or not.
    queueing: bool = False
    #: The queue usual at this time (the median of the previous days), where measured.
    usual: PastQueue | None = None
    #: When the longest-waiting job was created (job events only).
    since: float | None = None
    #: The queue the same time yesterday and a week before (job events only).
    yesterday: PastQueue | None = None
    week_ago: PastQueue | None = None

    @property
    def at_max(self) -> bool:
        """The autoscaler wants, or has, (nearly) its configured maximum of runners."""
        if self.max is None or self.max <= 0:
            return False
        return max(self.desired or 0.0, self.registered or 0.0) >= AT_MAX_SHARE * self.max

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "queued": self.queued,
            "max_wait_seconds": self.max_wait_seconds,
            "busy": self.busy,
            "registered": self.registered,
            "max": self.max,
            "yesterday": self.yesterday.model_dump() if self.yesterday else None,
            "week_ago": self.week_ago.model_dump() if self.week_ago else None,
        }


class Scope(StrEnum):
    NONE = "none"
    ISOLATED = "isolated"
    WIDESPREAD = "widespread"


class Report(BaseModel):
    """Diagnostics at one moment: the fleet, the verdict on each cause, the most likely one."""

    model_config = ConfigDict(frozen=True)

    at: datetime
    window: str
    scope: Scope
    runner_types: tuple[RunnerTypeState, ...]
    findings: tuple[Finding, ...]
    primary_cause: Cause | None
    confidence: Confidence | None = None
    notes: tuple[str, ...] = ()
    #: Signals that could not be read, with why (said plainly, never guessed around).
    missing: tuple[str, ...] = ()
    #: The sources read (GitHub job events, GitHub runners, Prometheus).
    sources: tuple[str, ...] = ()
    #: The longest-waiting jobs of each queueing runner type: (workflow, job, created at (Unix
    #: seconds), link to the job).
    waiting: tuple[tuple[str, tuple[tuple[str, str, float, str], ...]], ...] = ()

    @property
    def affected(self) -> tuple[RunnerTypeState, ...]:
        return tuple(t for t in self.runner_types if t.affected)

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(),
            "window": self.window,
            "scope": self.scope.value,
            "primary_cause": self.primary_cause.value if self.primary_cause else "none",
            "confidence": self.confidence.value if self.confidence else None,
            "sources": list(self.sources),
            "findings": [
                {
                    "cause": f.cause.value,
                    "verdict": f.verdict.value,
                    "runner_types": list(f.runner_types),
                    "summary": f.summary,
                    "next_step": f.next_step,
                    "evidence": [e.model_dump(mode="json") for e in f.evidence],
                }
                for f in self.findings
            ],
            "runner_types": [t.to_json() for t in self.runner_types],
            "waiting": [
                {
                    "name": name,
                    "jobs": [
                        {
                            "workflow": workflow,
                            "job": job,
                            "created_at": datetime.fromtimestamp(created, UTC).isoformat(),
                            "url": url or None,
                        }
                        for workflow, job, created, url in jobs
                    ],
                }
                for name, jobs in self.waiting
            ],
            "notes": list(self.notes),
            "missing": list(self.missing),
        }
