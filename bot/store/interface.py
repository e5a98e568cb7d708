"""The store's interface: what every backend keeps and answers, by role (the records it hands
out are `bot.store.records`').

Every change to an incident happens inside `transaction()`, which is exclusive: two
notifications for one group key are applied one after the other, never interleaved, so the first
post of an incident is claimed exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import Protocol

from bot.domain.incidents import Incident
from bot.domain.jobs import JobEvent
from bot.store.records import (
    Digest,
    DoubtfulJob,
    Due,
    FleetTotals,
    HeadsUpRecord,
    JobActivity,
    JobSpan,
    NewIncident,
    OutboxItem,
    OutboxKind,
    OutboxState,
    Pruned,
    QueueCount,
    QueuedJob,
    ReportRecord,
    UnfinishedDiagnosis,
)


class Transaction(Protocol):
    async def current_incident(self, group_key: str) -> Incident | None: ...

    async def incident(self, incident_id: int) -> Incident | None: ...

    async def holds(self, incident_id: int, purpose: str, owner: str) -> bool:
        """Whether `owner`'s claim on the incident for `purpose` still stands."""
        ...

    async def insert_incident(self, new: NewIncident) -> Incident: ...

    async def save_incident(self, incident: Incident) -> None: ...

    async def add_notification(
        self,
        group_key: str,
        received_at: datetime,
        body: str | None,
        outcome: str,
        incident_id: int | None,
        content_key: str | None = None,
    ) -> int:
        """Record a notification; its `body` is kept (once per distinct body) unless None."""
        ...

    async def seen_since(self, group_key: str, content_key: str, since: datetime) -> bool:
        """Whether a notification with this content arrived for the group key since `since`."""
        ...

    async def enqueue(self, incident_id: int, kind: OutboxKind, payload: str = "") -> int: ...

    async def add_diagnosis(self, incident_id: int, note_id: int) -> int:
        """A diagnostics run begins; its notice is the outbox entry `note_id`."""
        ...

    async def finish_diagnosis(self, diagnosis_id: int) -> None: ...

    async def open_digest(self, channel: str, joined_since: datetime) -> Digest | None:
        """The channel's storm digest still taking incidents (one joined since then)."""
        ...

    async def create_digest(self, channel: str, at: datetime) -> Digest: ...

    async def count_opening(self, channel: str, at: datetime, window: timedelta) -> int:
        """Record an incident opening in `channel` at `at`; how many opened there within
        `window` up to `at`, this one included (storms are counted across replicas)."""
        ...

    async def touch_digest(self, digest_id: int, joined_at: datetime | None) -> None:
        """The digest has news (version + 1); `joined_at` when an incident joined it."""
        ...


class IncidentStore(Protocol):
    """Incidents and storm digests, and where Slack shows them (`bot.store.incidents_sql`);
    changed in a transaction."""

    def transaction(self) -> AbstractAsyncContextManager[Transaction]: ...

    async def get_incident(self, incident_id: int) -> Incident | None: ...

    async def silenced_incidents(self, channel: str | None = None) -> list[Incident]:
        """Firing incidents with a silence queuebot made, oldest first; with `channel` (a Slack
        channel id), only those routed there."""
        ...

    async def firing_incidents(
        self, limit: int, channel: str | None = None
    ) -> tuple[list[Incident], int]:
        """The `limit` most recently started firing incidents, silenced ones included, and how
        many are firing in all; with `channel` (a Slack channel id), only those routed there."""
        ...

    async def channel_id_for(self, channel: str) -> str | None:
        """The Slack id of a channel known by the name incidents were routed to, if seen."""
        ...

    async def set_parent(
        self,
        incident_id: int,
        channel_id: str,
        parent_ts: str,
        version: int,
        previous_link: str | None,
    ) -> None:
        """The parent message is in Slack: where it is, the version it shows, and the link to
        the previous incident it shows."""
        ...

    async def set_permalink(self, incident_id: int, permalink: str) -> None:
        """The link to the incident's thread, asked of Slack once, when its parent is posted."""
        ...

    async def set_parent_version(self, incident_id: int, version: int) -> None: ...

    async def get_digest(self, digest_id: int) -> Digest | None: ...

    async def digest_members(self, digest_id: int) -> list[Incident]: ...

    async def set_digest_posted(
        self, digest_id: int, channel_id: str, ts: str, version: int
    ) -> None: ...

    async def set_digest_permalink(self, digest_id: int, permalink: str) -> None: ...

    async def set_digest_shown(self, digest_id: int, version: int) -> None: ...

    async def set_digest_editor(self, digest_id: int, editor: str) -> None: ...

    async def add_digest_page(self, digest_id: int, ts: str) -> None: ...


class OutboxStore(Protocol):
    """The Slack outbox (`bot.store.outbox_sql`): what is owed to Slack, per incident in order."""

    async def due_incidents(self, owner: str | None = None) -> list[Due]:
        """Every incident with pending deliveries, oldest first, with its first one's time
        (`owner`'s own leases do not hold it back)."""
        ...

    async def next_item(self, incident_id: int) -> OutboxItem | None: ...

    async def has_later_update(self, incident_id: int, after_id: int) -> bool: ...

    async def finish_item(
        self,
        item_id: int,
        state: OutboxState,
        error: str | None = None,
        *,
        posted_ts: str | None = None,
    ) -> None:
        """The item is done (or failed); `posted_ts`, the ts of the message it posted."""
        ...

    async def posted_ts(self, item_id: int) -> str | None:
        """The ts of the message an outbox item posted, once delivered."""
        ...

    async def claim_item(self, item_id: int, owner: str, until: float) -> bool:
        """Lease a pending item to `owner` until `until`; False if another holds it. An
        owner's own lease is its to take again: a worker whose write of an outcome failed
        tries again at once, not when its lease runs out."""
        ...

    async def release_leases(self, owner: str) -> None: ...

    async def defer_item(self, item_id: int, not_before: float, error: str) -> None: ...

    async def outbox_stats(self) -> tuple[int, float | None]:
        """Pending outbox entries, and when the oldest of them was stored (Unix seconds)."""
        ...

    async def mark_sending(self, item_id: int, at: float) -> None:
        """Record that the item is about to go to Slack (before the call, so a crash or a
        lost answer leaves the mark)."""
        ...


class ClaimStore(Protocol):
    """Who may do what across replicas (`bot.store.claims_sql`): leader leases, an incident's
    claims, diagnoses under way; and Slack's posting pace they share."""

    async def lead(self, role: str, owner: str, until: float) -> bool:
        """Hold the leader lease `role` for `owner` until `until` (taking it if free or
        lapsed, renewing it if held); False while another owner holds it."""
        ...

    async def take_pace(self, channel: str, per_second: float, burst: float) -> float:
        """Take a post's token from `channel`'s bucket (`bot.domain.pace`) at the store's
        clock: 0 when taken, else the seconds to wait before asking again. Atomic across
        every process on the store."""
        ...

    async def claim(self, incident_id: int, purpose: str, owner: str, until: float) -> bool:
        """Reserve the incident for `purpose` (silencing, diagnostics) to `owner` until `until`;
        False if another holds it. Two people silencing at once (on any replica) make one
        silence; a second click while diagnostics run starts no second run."""
        ...

    async def renew(self, incident_id: int, purpose: str, owner: str, until: float) -> bool:
        """Extend `owner`'s claim to `until`; False if it is no longer `owner`'s."""
        ...

    async def release(self, incident_id: int, purpose: str, owner: str) -> None:
        """Give up `owner`'s claim (never another's)."""
        ...

    async def unfinished_diagnoses(self) -> list[UnfinishedDiagnosis]:
        """Diagnostics runs begun and not finished, oldest first."""
        ...

    async def diagnosis_unfinished(self, diagnosis_id: int) -> bool: ...


class JobStore(Protocol):
    """GitHub's jobs (`bot.store.shared_sql`): deliveries merged, queues and activity read."""

    async def record_job(self, event: JobEvent, delivery: str, remember_until: float) -> bool:
        """Merge a `workflow_job` delivery into its job; False (nothing changed) when the
        delivery `delivery` was recorded before (GitHub's redelivery keeps its id)."""
        ...

    async def record_jobs(
        self, deliveries: Sequence[tuple[JobEvent, str]], remember_until: float
    ) -> int:
        """`record_job` for many deliveries in one transaction (loading a history); how many
        were new."""
        ...

    async def queued_jobs(self, at: float, queued_after: float, max_age: float) -> list[QueuedJob]:
        """Jobs waiting for a runner at `at` for more than `queued_after` seconds, created less
        than `max_age` seconds before."""
        ...

    async def queue_counts(
        self, at: float, queued_after: float, max_age: float
    ) -> list[QueueCount]:
        """`queued_jobs`' jobs counted per runner type and repository, with the creation of
        the longest-waiting: one small read however many jobs wait."""
        ...

    async def fleet_totals(self) -> FleetTotals:
        """What the fleet's jobs have done since the store began, per runner type, counted
        once per delivery (`bot.store.fleet_totals_sql`)."""
        ...

    async def job_activity(self, since: float, until: float) -> JobActivity: ...

    async def running_jobs(self, at: float, lookback: float) -> dict[tuple[str, str], int]:
        """Jobs a runner was working on at `at`, per (runner type, repository), among those
        started no more than `lookback` seconds before."""
        ...

    async def first_job_created(self) -> float | None:
        """When the earliest job kept was created (Unix seconds); None with no jobs."""
        ...

    async def prune_jobs(self, before: float, recorded_before: float = 0.0) -> int:
        """Forget jobs created before `before`, or last recorded (by the store's own clock)
        before `recorded_before`; how many."""
        ...


class DoubtStore(Protocol):
    """Jobs in doubt, for reconciliation with GitHub's REST API (`bot.store.doubts_sql` says
    what each does)."""

    async def doubtful_jobs(
        self,
        queued_since: float,
        queued_until: float,
        running_since: float,
        running_until: float,
        limit: int,
    ) -> tuple[list[DoubtfulJob], list[DoubtfulJob]]: ...

    async def usual_run_seconds(self, since: float, until: float) -> dict[str, float]: ...

    async def active_repositories(self, since: float) -> list[str]: ...

    async def known_runs(self, run_ids: Sequence[int]) -> dict[int, bool]: ...

    async def known_jobs(self, job_ids: Sequence[int]) -> dict[int, str]: ...

    async def stored_jobs(self, job_ids: Sequence[int]) -> list[JobEvent]: ...

    async def add_corrections(self, at: float, counts: dict[str, int]) -> None: ...

    async def corrections_since(self, since: float) -> dict[str, int]: ...


class HeadsUpStore(Protocol):
    """Heads-ups before the alert (`bot.store.heads_ups_sql`)."""

    async def heads_ups(self, channel: str, since: float) -> list[HeadsUpRecord]:
        """The channel's heads-ups still out, and those changed since `since`, oldest first."""
        ...

    async def save_heads_up(self, record: HeadsUpRecord) -> None:
        """A heads-up as it should read now (a new one, or the next version of the one with
        the same channel, runner type and start); its message is left to the writer."""
        ...

    async def unshown_heads_ups(self) -> list[HeadsUpRecord]:
        """Heads-ups whose latest version is not yet shown in Slack, oldest change first."""
        ...

    async def set_heads_up_shown(self, record: HeadsUpRecord, channel_id: str, ts: str) -> None:
        """`record`'s version is what its message (`channel_id`, `ts`) shows."""
        ...


class ReportStore(Protocol):
    """The capacity report's part: a window's jobs, whole, and the scheduled reports (one per
    slot, whoever composes it, posted once)."""

    async def job_spans(self, since: float, until: float) -> list[JobSpan]:
        """Jobs created within [since, until), oldest first, with what is known of each."""
        ...

    async def save_report(self, record: ReportRecord) -> bool:
        """Keep `record` unless its slot has a report already; whether it was kept."""
        ...

    async def report(self, slot: str) -> ReportRecord | None: ...

    async def unposted_reports(self) -> list[ReportRecord]:
        """Reports not yet posted, the earliest due first."""
        ...

    async def set_report_sent(self, slot: str, at: float) -> None:
        """A post of the report is going to Slack now (its outcome may never be known)."""
        ...

    async def set_report_posted(self, slot: str, channel_id: str, ts: str) -> None: ...

    async def prune_reports(self, before: float) -> int:
        """Forget the posted reports due before `before`; how many."""
        ...


class Store(
    IncidentStore,
    OutboxStore,
    ClaimStore,
    JobStore,
    DoubtStore,
    HeadsUpStore,
    ReportStore,
    Protocol,
):
    """Everything a backend keeps and answers, by role; and what concerns it whole."""

    async def probe(self) -> None:
        """Write to the store as a webhook would: StoreError says why it cannot (a full disk,
        an I/O error, its file deleted or replaced)."""
        ...

    async def first_seen(self, key: str, expires_at: float) -> bool:
        """Remember `key` until `expires_at`; False if it is remembered already (a replayed
        request, on any replica sharing the store)."""
        ...

    async def remembered(self, key: str) -> bool:
        """Whether `key` is remembered now (`first_seen` took it, and it has not expired)."""
        ...

    async def prune(self, before: float) -> Pruned:
        """Remove what retention lets go of (Unix seconds): resolved incidents and their
        rows, delivered outbox entries, notifications and bodies, all older than `before`;
        then give the freed space back."""
        ...

    async def close(self) -> None: ...
