"""What reconciliation (`bot.fleet.sources.reconcile`) decides about a job in doubt, apart from
asking GitHub: when a job's state is doubted, what a job GitHub no longer has or one queued past
GitHub's 24 hours becomes, and what a pass tells of what it corrected. What it decides is merged
as a delivery would be, so the fleet's totals on /metrics count it as they count any delivery.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from bot.domain.jobs import JobAction, JobEvent
from bot.store import DoubtfulJob
from bot.store.doubts_sql import GITHUB_QUEUE_LIMIT_SECONDS

#: A job still queued this long after it was created is asked about.
QUEUED_DOUBT_SECONDS = 180.0
#: A job still running this long is asked about, or twice its type's mean run time if longer.
RUNNING_DOUBT_SECONDS = 900.0
RUNNING_FACTOR = 2.0


class Correction(StrEnum):
    """What reconciliation did to a job."""

    #: A job no delivery had told of (its `queued` was lost).
    FOUND = "found"
    #: A runner had taken it (its `in_progress` was lost).
    STARTED = "started"
    #: It had ended (its `completed` was lost).
    COMPLETED = "completed"
    #: GitHub no longer has it: forgotten.
    GONE = "gone"
    #: Still queued past GitHub's 24-hour limit: ended where GitHub ended it.
    EXPIRED = "expired"


@dataclass
class ReconcilePass:
    """What one pass did."""

    requests: int = 0
    corrected: Counter[Correction] = field(default_factory=Counter)
    #: Why the pass ended before it had asked all it wanted to; empty when it did.
    stopped: str = ""


@dataclass(frozen=True)
class Doubt:
    """A job in doubt, and since when (created, or taken by a runner)."""

    since: float
    job: DoubtfulJob


def running_too_long(job: DoubtfulJob, usual: dict[str, float], now: float) -> bool:
    """Whether a job still running at `now` has run past twice its type's mean run time
    (`usual`, seconds by runner type), and at least `RUNNING_DOUBT_SECONDS`."""
    if job.started_at is None:
        return False
    mean = usual.get(job.runner_type)
    after = RUNNING_DOUBT_SECONDS if mean is None else RUNNING_FACTOR * mean
    return now - job.started_at > max(after, RUNNING_DOUBT_SECONDS)


def expired(job: JobEvent) -> JobEvent:
    """A job still queued past GitHub's 24 hours, ended there with no runner (GitHub's
    conclusion for it unknown here: no request is spent on it)."""
    limit = timedelta(seconds=GITHUB_QUEUE_LIMIT_SECONDS)
    return replace(
        job,
        action=JobAction.COMPLETED,
        started_at=None,
        completed_at=job.created_at + limit,
        conclusion=None,
    )


def gone(job: JobEvent, now: float) -> JobEvent:
    """A job GitHub no longer has, ended at `now` as far as anyone can tell."""
    ended = datetime.fromtimestamp(now, UTC)
    return replace(job, action=JobAction.COMPLETED, completed_at=ended, conclusion=None)
