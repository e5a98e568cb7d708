"""Records the store hands out besides incidents: the Slack outbox's entries, storm digests,
diagnostics under way, what retention removed; GitHub's jobs as the queries read them,
heads-ups before the alert and scheduled capacity reports. And the store's one error."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import NamedTuple

from bot.domain.alerts import AlertGroup
from bot.domain.incidents import IncidentStatus


class OutboxKind(StrEnum):
    POST_PARENT = "post_parent"
    UPDATE_PARENT = "update_parent"
    POST_REPLY = "post_reply"
    UPDATE_DIGEST = "update_digest"
    #: A message of queuebot's own in the thread (the diagnostics report, a notice), which a
    #: later EDIT_NOTE may replace.
    POST_NOTE = "post_note"
    EDIT_NOTE = "edit_note"
    #: A file (the diagnostics chart) shared in the thread.
    POST_FILE = "post_file"


class OutboxState(StrEnum):
    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class OutboxItem:
    """One Slack delivery owed for an incident, delivered in id order per incident."""

    id: int
    incident_id: int
    kind: OutboxKind
    payload: str
    attempts: int
    not_before: float
    #: When a post of this item last went to Slack; set, its outcome may be unknown.
    sent_at: float | None = None
    created_at: float = 0.0


@dataclass(frozen=True)
class Due:
    """An incident with deliveries owed, and when its first one may be tried (its retry time,
    or the end of another worker's lease on it)."""

    incident_id: int
    group_key: str
    not_before: float


@dataclass(frozen=True)
class Digest:
    """One storm digest message: the incidents that opened in a storm, listed together."""

    id: int
    channel: str
    channel_id: str | None
    ts: str | None
    opened_at: datetime
    last_joined_at: datetime
    version: int
    shown_version: int
    #: The ts of the thread replies that continue the list, page 2 onwards.
    pages: tuple[str, ...] = ()
    #: A link to the digest message, stored when it was posted.
    permalink: str | None = None
    #: Who last began editing it (a writer that finds another's mark re-edits every page).
    editor: str | None = None


@dataclass(frozen=True)
class UnfinishedDiagnosis:
    """A diagnostics run whose notice was owed but whose report was not (yet)."""

    id: int
    incident_id: int
    #: The outbox entry of its "Running diagnostics…" notice, which the report replaces.
    note_id: int


@dataclass(frozen=True)
class NewIncident:
    group_key: str
    generation: int
    channel: str
    status: IncidentStatus
    group: AlertGroup
    started_at: datetime
    resolved_at: datetime | None
    previous_id: int | None
    digest_id: int | None = None


class StoreError(Exception):
    """The store could not be opened, read or written; the message says why. `public` says it
    without what only an admin should read (a server's address): what /healthz shows."""

    def __init__(self, message: str, public: str | None = None) -> None:
        super().__init__(message)
        self.public = message if public is None else public


@dataclass(frozen=True)
class Pruned:
    """What one pass of retention removed."""

    incidents: int = 0
    notifications: int = 0
    bodies: int = 0
    outbox: int = 0
    digests: int = 0
    #: Remembered request signatures and delivery ids past their expiry.
    seen: int = 0
    #: Heads-ups that ended, and were shown ended, before the cut-off.
    heads_ups: int = 0

    @property
    def rows(self) -> int:
        return sum(dataclasses.astuple(self))

    def __add__(self, other: Pruned) -> Pruned:
        return Pruned(
            *(
                a + b
                for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(other), strict=True)
            )
        )


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
class DoubtfulJob:
    """A job whose row may be wrong: still queued or still running longer than is likely."""

    job_id: int
    run_id: int
    repository: str
    runner_type: str
    status: str
    created_at: float  # Unix seconds
    started_at: float | None


class QueueCount(NamedTuple):
    """The jobs of one runner type and repository waiting for a runner at some moment."""

    runner_type: str
    repository: str
    jobs: int
    #: When the longest-waiting of them was created (Unix seconds).
    oldest_created: float


@dataclass(frozen=True)
class FleetTotals:
    """What the fleet's jobs have done since the store began, per runner type, as counted once
    per delivery (`bot.store.fleet_totals_sql`)."""

    #: The runner types counted under their own name, the first seen first.
    types: tuple[str, ...]
    #: (runner type, what, part, total): `OVERFLOW` for the types past the store's cap; a
    #: histogram's buckets have `bucket_part`s, and its sum the part `sum`.
    totals: tuple[tuple[str, str, str, float], ...]


def bucket_part(bound: float) -> str:
    """A histogram bucket's part in `FleetTotals.totals`: its upper bound as written (`60`),
    `+Inf` for the last."""
    return "+Inf" if math.isinf(bound) else f"{bound:g}"


class JobRow(NamedTuple):
    """One job's part in a window's activity: its seconds are the wait of a start, the run of a
    completion, 0 for an arrival (a tuple: a window's reading makes a row of each of hundreds of
    thousands of jobs)."""

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
