"""Records the store hands out besides incidents: GitHub's jobs as the queries read them,
heads-ups before the alert and scheduled capacity reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True)
class QueuedJob:
    """A job waiting for a runner at some moment."""

    runner_type: str
    repository: str
    workflow: str
    job: str
    created_at: float  # Unix seconds
    html_url: str | None = None


@dataclass(frozen=True)
class JobRow:
    """One job's part in a window's activity: its seconds are the wait of a start, the run of a
    completion, 0 for an arrival."""

    runner_type: str
    repository: str
    workflow: str
    seconds: float
    #: A completion that failed (the job's conclusion is `failure`).
    failed: bool = False
    #: The job's name within its workflow.
    job: str = ""


@dataclass(frozen=True)
class JobActivity:
    """Jobs created, taken by a runner, and completed within [since, until)."""

    since: float
    until: float
    arrivals: list[JobRow]
    starts: list[JobRow]
    completions: list[JobRow]


@dataclass(frozen=True)
class HeadsUpRecord:
    """A heads-up before the alert: how it should read (`view_json`, a `HeadsUpView`, changed
    with each `version`), and its message once shown."""

    channel: str
    runner_type: str
    started_at: float
    phase: str
    view_json: str
    updated_at: float
    ended_at: float | None = None
    version: int = 1
    shown_version: int = 0
    channel_id: str | None = None
    ts: str | None = None


class JobSpan(NamedTuple):
    """One job's whole life as far as it is known: when it was queued, taken by a runner and
    completed (Unix seconds; None where it has not happened, or was not reported). A tuple: a
    report reads a million of them, and the garbage collector stops tracking tuples of plain
    values, so its passes (which hold every thread) stay short."""

    runner_type: str
    repository: str
    workflow: str
    created_at: float
    started_at: float | None
    completed_at: float | None
    #: When it left the queue: taken by a runner, or cancelled before one took it.
    left_queue_at: float | None
    conclusion: str | None = None


@dataclass(frozen=True)
class ReportRecord:
    """A scheduled capacity report: one per `slot` (its channel and the time it was due), saved
    by whichever replica composed it first; its message once posted."""

    slot: str
    channel: str
    due_at: float
    #: The report as it should read (a `CapacityReport`), and its chart (PNG), if any.
    view_json: str
    chart: bytes | None
    created_at: float
    #: When a post of it last went to Slack; set without `ts`, its outcome is unknown.
    sent_at: float | None = None
    channel_id: str | None = None
    ts: str | None = None
