"""The store's contract, held by every backend: each test runs on SQLite and on PostgreSQL.

The tests at the end are PostgreSQL's own: several replicas on one database (stores opened
side by side), its migrations, and a server that drops the store's connections.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from bot.domain.alerts import AlertGroup
from bot.domain.incidents import Incident, IncidentStatus
from bot.domain.jobs import JobAction, JobEvent
from bot.domain.notifications import parse_webhook
from bot.domain.silences import Matcher, Person, Silence
from bot.store import (
    Due,
    HeadsUpRecord,
    JobActivity,
    NewIncident,
    OutboxKind,
    OutboxState,
    Pruned,
    Store,
    StoreError,
    open_store,
)
from bot.store.postgres import PostgresStore
from bot.store.postgres_schema import POSTGRES_MIGRATIONS
from bot.store.sqlite import SQLiteStore
from tests.support.payloads import encoded, reference
from tests.support.postgres import fresh_database

NOW = 1_700_000_000.0
AT = datetime.fromtimestamp(NOW, UTC)
DAY = 86400.0


class Clock:
    """Unix seconds the test moves forward by hand."""

    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


Opener = Callable[[], Awaitable[Store]]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    async with fresh_database() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
async def opener(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> AsyncIterator[Opener]:
    """Opens a store on the test's own database: a SQLite file, or a fresh PostgreSQL one."""
    if request.param == "sqlite":
        path = str(tmp_path / "queuebot.db")

        async def sqlite() -> Store:
            return await SQLiteStore.open(path, clock)

        yield sqlite
        return
    async with fresh_database() as url:

        async def postgresql() -> Store:
            return await PostgresStore.open(url, clock)

        yield postgresql


@pytest.fixture
async def store(opener: Opener) -> AsyncIterator[Store]:
    opened = await opener()
    try:
        yield opened
    finally:
        await opened.close()


def group(name: str = "a", status: str = "firing") -> AlertGroup:
    body = reference(status)
    body["groupKey"] = f'{{}}:{{alertname="{name}"}}'
    for labels in (body["alerts"][0]["labels"], body["commonLabels"], body["groupLabels"]):
        labels["alertname"] = name
    return parse_webhook(encoded(body))


def new(
    name: str = "a",
    generation: int = 1,
    previous_id: int | None = None,
    digest_id: int | None = None,
    resolved_at: datetime | None = None,
) -> NewIncident:
    alerts = group(name)
    return NewIncident(
        group_key=alerts.group_key,
        generation=generation,
        channel="#ci",
        status=IncidentStatus.RESOLVED if resolved_at else IncidentStatus.FIRING,
        group=alerts,
        started_at=alerts.started_at,
        resolved_at=resolved_at,
        previous_id=previous_id,
        digest_id=digest_id,
    )


async def opened(
    store: Store,
    name: str = "a",
    generation: int = 1,
    previous_id: int | None = None,
    digest_id: int | None = None,
    resolved_at: datetime | None = None,
) -> Incident:
    async with store.transaction() as tx:
        return await tx.insert_incident(new(name, generation, previous_id, digest_id, resolved_at))


def silence() -> Silence:
    return Silence(
        ids=("s1",),
        matchers=((Matcher(name="alertname", value="a"),),),
        starts_at=AT,
        ends_at=AT + timedelta(hours=2),
        by=Person(id="U1", name="ana"),
    )


async def test_an_inserted_incident_is_its_group_keys_current_one(store: Store) -> None:
    first = await opened(store)
    second = await opened(store, generation=2, previous_id=first.id)
    async with store.transaction() as tx:
        current = await tx.current_incident(first.group_key)
        assert await tx.incident(first.id) == first
    assert current == second
    assert second.previous_id == first.id and second.generation == 2
    assert await store.get_incident(second.id) == second
    assert await store.get_incident(second.id + 100) is None


async def test_a_saved_incident_reads_back_as_saved(store: Store) -> None:
    incident = await opened(store)
    changed = incident.model_copy(update={"silence": silence(), "version": 2, "fired_count": 3})
    async with store.transaction() as tx:
        await tx.save_incident(changed)
    assert await store.get_incident(incident.id) == changed
    assert await store.silenced_incidents() == [changed]
    assert await store.firing_incidents(10) == ([changed], 1)
    resolved = changed.model_copy(
        update={"status": IncidentStatus.RESOLVED, "resolved_at": AT, "version": 3}
    )
    async with store.transaction() as tx:
        await tx.save_incident(resolved)
    assert await store.get_incident(incident.id) == resolved
    assert await store.silenced_incidents() == []
    assert await store.firing_incidents(10) == ([], 0)


async def test_incidents_are_read_by_the_channel_they_are_routed_to(store: Store) -> None:
    """Posted to C1 under `#ci`; routed to `#ci` and not posted yet (so C1's too); routed to C2
    by id; posted to C3 under another name. Each channel reads its own, and no channel all."""

    async def routed(name: str, channel: str, posted_to: str | None = None) -> Incident:
        async with store.transaction() as tx:
            made = await tx.insert_incident(replace(new(name), channel=channel))
        if posted_to is not None:
            await store.set_parent(made.id, posted_to, "1.5", 1, None)
        changed = await store.get_incident(made.id)
        assert changed is not None
        silenced = changed.model_copy(update={"silence": silence(), "version": 2})
        async with store.transaction() as tx:
            await tx.save_incident(silenced)
        return silenced

    posted = await routed("a", "#ci", "C1")
    waiting = await routed("b", "#ci")
    by_id = await routed("c", "C2")
    elsewhere = await routed("d", "#other", "C3")
    every = {posted.id, waiting.id, by_id.id, elsewhere.id}
    for channel, expected in (
        ("C1", {posted.id, waiting.id}),
        ("C2", {by_id.id}),
        ("C3", {elsewhere.id}),
        ("C9", set()),
        (None, every),
    ):
        firing, total = await store.firing_incidents(10, channel)
        assert {i.id for i in firing} == expected and total == len(expected), channel
        assert {i.id for i in await store.silenced_incidents(channel)} == expected, channel


async def test_a_second_incident_of_one_generation_is_refused(store: Store) -> None:
    await opened(store)
    with pytest.raises(StoreError):
        await opened(store)


async def test_a_transaction_that_raises_keeps_nothing(store: Store) -> None:
    with pytest.raises(RuntimeError, match="decided otherwise"):
        async with store.transaction() as tx:
            incident = await tx.insert_incident(new())
            await tx.enqueue(incident.id, OutboxKind.POST_PARENT)
            raise RuntimeError("decided otherwise")
    async with store.transaction() as tx:
        assert await tx.current_incident(incident.group_key) is None
    assert await store.outbox_stats() == (0, None)


async def test_seen_since_finds_the_content_of_the_group_within_the_window(store: Store) -> None:
    incident = await opened(store)
    async with store.transaction() as tx:
        first = await tx.add_notification("k", AT, "{}", "opened", incident.id, "c1")
        second = await tx.add_notification("k", AT, None, "duplicate", incident.id, "c1")
        assert second > first
    async with store.transaction() as tx:
        assert await tx.seen_since("k", "c1", AT - timedelta(minutes=1))
        assert await tx.seen_since("k", "c1", AT)
        assert not await tx.seen_since("k", "c1", AT + timedelta(seconds=1))
        assert not await tx.seen_since("k", "c2", AT - timedelta(minutes=1))
        assert not await tx.seen_since("other", "c1", AT - timedelta(minutes=1))


async def test_the_outbox_delivers_an_incidents_items_in_order(store: Store) -> None:
    incident = await opened(store)
    async with store.transaction() as tx:
        ids = [
            await tx.enqueue(incident.id, OutboxKind.POST_PARENT),
            await tx.enqueue(incident.id, OutboxKind.UPDATE_PARENT),
            await tx.enqueue(incident.id, OutboxKind.POST_REPLY, "reply"),
        ]
    assert ids == sorted(ids)
    assert await store.outbox_stats() == (3, NOW)
    assert await store.due_incidents() == [Due(incident.id, incident.group_key, 0.0)]
    item = await store.next_item(incident.id)
    assert item is not None and (item.id, item.kind, item.attempts) == (
        ids[0],
        OutboxKind.POST_PARENT,
        0,
    )
    assert await store.has_later_update(incident.id, ids[0])
    assert not await store.has_later_update(incident.id, ids[1])
    await store.mark_sending(ids[0], NOW + 1)
    sending = await store.next_item(incident.id)
    assert sending is not None and sending.sent_at == NOW + 1
    await store.finish_item(ids[0], OutboxState.DONE, posted_ts="1.000100")
    assert await store.posted_ts(ids[0]) == "1.000100"
    assert await store.posted_ts(ids[1]) is None
    await store.finish_item(ids[1], OutboxState.FAILED, "channel_not_found")
    last = await store.next_item(incident.id)
    assert last is not None and (last.id, last.payload) == (ids[2], "reply")
    await store.finish_item(ids[2], OutboxState.DONE)
    assert await store.next_item(incident.id) is None
    assert await store.due_incidents() == []
    assert await store.outbox_stats() == (0, None)


async def test_a_deferred_item_waits_and_counts_its_attempt(store: Store) -> None:
    incident = await opened(store)
    async with store.transaction() as tx:
        item_id = await tx.enqueue(incident.id, OutboxKind.POST_PARENT)
    assert await store.claim_item(item_id, "w1", NOW + 30)
    await store.defer_item(item_id, NOW + 60, "rate limited")
    item = await store.next_item(incident.id)
    assert item is not None and (item.attempts, item.not_before) == (1, NOW + 60)
    assert await store.due_incidents() == [Due(incident.id, incident.group_key, NOW + 60)]
    # Deferring let the lease go.
    assert await store.claim_item(item_id, "w2", NOW + 30)


async def test_an_item_lease_holds_until_it_lapses_or_is_released(
    store: Store, clock: Clock
) -> None:
    incident = await opened(store)
    async with store.transaction() as tx:
        item_id = await tx.enqueue(incident.id, OutboxKind.POST_PARENT)
    assert await store.claim_item(item_id, "w1", NOW + 30)
    assert not await store.claim_item(item_id, "w2", NOW + 30)
    assert await store.claim_item(item_id, "w1", NOW + 40)
    assert await store.due_incidents("w2") == [Due(incident.id, incident.group_key, NOW + 40)]
    assert await store.due_incidents("w1") == [Due(incident.id, incident.group_key, 0.0)]
    clock.now = NOW + 41
    assert await store.claim_item(item_id, "w2", NOW + 100)
    assert not await store.claim_item(item_id, "w1", NOW + 100)
    await store.release_leases("w1")
    assert not await store.claim_item(item_id, "w3", NOW + 100)
    await store.release_leases("w2")
    assert await store.claim_item(item_id, "w3", NOW + 100)
    await store.finish_item(item_id, OutboxState.DONE)
    assert not await store.claim_item(item_id, "w3", NOW + 100)


async def test_an_incident_claim_is_one_owners_until_it_lapses(store: Store, clock: Clock) -> None:
    incident = await opened(store)
    assert await store.claim(incident.id, "silencing", "ana", NOW + 10)
    assert not await store.claim(incident.id, "silencing", "bob", NOW + 10)
    assert await store.claim(incident.id, "diagnostics", "bob", NOW + 10)
    assert await store.renew(incident.id, "silencing", "ana", NOW + 20)
    assert not await store.renew(incident.id, "silencing", "bob", NOW + 20)
    clock.now = NOW + 15
    async with store.transaction() as tx:
        assert await tx.holds(incident.id, "silencing", "ana")
        assert not await tx.holds(incident.id, "silencing", "bob")
        assert not await tx.holds(incident.id, "diagnostics", "bob")
    assert await store.claim(incident.id, "diagnostics", "cy", NOW + 30)
    await store.release(incident.id, "diagnostics", "bob")
    assert not await store.claim(incident.id, "diagnostics", "dee", NOW + 30)
    await store.release(incident.id, "diagnostics", "cy")
    assert await store.claim(incident.id, "diagnostics", "dee", NOW + 30)


async def test_first_seen_remembers_a_key_until_it_expires(store: Store, clock: Clock) -> None:
    assert await store.first_seen("slack:1", NOW + 300)
    assert not await store.first_seen("slack:1", NOW + 300)
    assert await store.first_seen("slack:2", NOW + 300)
    clock.now = NOW + 301
    assert await store.first_seen("slack:1", NOW + 600)
    assert not await store.first_seen("slack:1", NOW + 600)


async def test_remembered_keys_are_deleted_by_retention_in_batches_not_when_asked(
    store: Store, clock: Clock
) -> None:
    """Asking about a key deletes nothing else (that DELETE held every write up); retention
    deletes the expired ones, a batch at a time, and keeps those still remembered."""
    for n in range(2500):
        assert await store.first_seen(f"github:{n}", NOW + 60)
    assert await store.first_seen("slack:late", NOW + 600)
    clock.now = NOW + 61
    assert await store.first_seen("slack:new", NOW + 300)
    assert not await store.first_seen("slack:late", NOW + 900)
    assert await store.first_seen("github:0", NOW + 900)  # expired: new again
    pruned = await store.prune(NOW - 30 * DAY)
    assert pruned.seen == 2499 and pruned.rows == 2499
    assert not await store.first_seen("slack:late", NOW + 900)
    assert not await store.first_seen("github:0", NOW + 900)
    assert (await store.prune(NOW - 30 * DAY)).seen == 0


async def test_a_channels_pace_allows_a_burst_then_one_post_a_second(
    store: Store, clock: Clock
) -> None:
    """Slack's posting limit as the store keeps it: a burst of 3, then one token a second;
    each channel its own bucket."""
    assert [await store.take_pace("C1", 1.0, 3) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert await store.take_pace("C1", 1.0, 3) == pytest.approx(1.0)
    assert await store.take_pace("C2", 1.0, 3) == 0.0
    clock.now = NOW + 0.5
    assert await store.take_pace("C1", 1.0, 3) == pytest.approx(0.5)
    clock.now = NOW + 1.0
    assert await store.take_pace("C1", 1.0, 3) == 0.0
    assert await store.take_pace("C1", 1.0, 3) == pytest.approx(1.0)


async def test_a_leader_lease_is_one_owners_until_it_lapses(store: Store, clock: Clock) -> None:
    assert await store.lead("silence-watcher", "a", NOW + 15)
    assert not await store.lead("silence-watcher", "b", NOW + 15)
    assert await store.lead("silence-watcher", "a", NOW + 30)  # renewed
    assert await store.lead("other-role", "b", NOW + 15)
    clock.now = NOW + 20
    assert not await store.lead("silence-watcher", "b", NOW + 35)
    clock.now = NOW + 31
    assert await store.lead("silence-watcher", "b", NOW + 45)
    assert not await store.lead("silence-watcher", "a", NOW + 45)


async def test_a_digest_collects_a_storms_incidents(store: Store) -> None:
    async with store.transaction() as tx:
        assert await tx.open_digest("#ci", AT - timedelta(minutes=5)) is None
        digest = await tx.create_digest("#ci", AT)
    async with store.transaction() as tx:
        assert await tx.open_digest("#ci", AT - timedelta(minutes=5)) == digest
        assert await tx.open_digest("#other", AT - timedelta(minutes=5)) is None
        assert await tx.open_digest("#ci", AT + timedelta(seconds=1)) is None
        await tx.touch_digest(digest.id, AT + timedelta(minutes=1))
        await tx.touch_digest(digest.id, None)
    members = [await opened(store, name, digest_id=digest.id) for name in ("a", "b")]
    assert await store.digest_members(digest.id) == members
    await store.set_digest_posted(digest.id, "C1", "2.0", 3)
    await store.set_digest_shown(digest.id, 2)
    await store.set_digest_permalink(digest.id, "https://slack/d")
    await store.add_digest_page(digest.id, "2.1")
    await store.add_digest_page(digest.id, "2.2")
    assert (await store.get_digest(digest.id)).editor is None  # type: ignore[union-attr]
    await store.set_digest_editor(digest.id, "writer-a")
    await store.set_digest_editor(digest.id, "writer-b")
    stored = await store.get_digest(digest.id)
    assert stored is not None and stored.editor == "writer-b"
    assert (stored.version, stored.shown_version, stored.channel_id, stored.ts) == (
        3,
        3,
        "C1",
        "2.0",
    )
    assert stored.last_joined_at == AT + timedelta(minutes=1) and stored.opened_at == AT
    assert (stored.pages, stored.permalink) == (("2.1", "2.2"), "https://slack/d")
    assert await store.get_digest(digest.id + 1) is None


async def test_a_posted_parent_is_remembered_with_its_channel(store: Store) -> None:
    incident = await opened(store)
    assert await store.channel_id_for("#ci") is None
    await store.set_parent(incident.id, "C42", "1.5", 2, "https://slack/prev")
    await store.set_permalink(incident.id, "https://slack/p")
    await store.set_parent_version(incident.id, 1)
    stored = await store.get_incident(incident.id)
    assert stored is not None
    assert (stored.channel_id, stored.parent_ts, stored.parent_version) == ("C42", "1.5", 2)
    assert (stored.previous_link, stored.permalink) == ("https://slack/prev", "https://slack/p")
    await store.set_parent_version(incident.id, 5)
    assert (await store.get_incident(incident.id)).parent_version == 5  # type: ignore[union-attr]
    assert await store.channel_id_for("#ci") == "C42"
    assert await store.channel_id_for("#elsewhere") is None


async def test_a_diagnosis_is_unfinished_until_finished(store: Store) -> None:
    incident = await opened(store)
    async with store.transaction() as tx:
        note = await tx.enqueue(incident.id, OutboxKind.POST_NOTE, "running")
        diagnosis = await tx.add_diagnosis(incident.id, note)
    (unfinished,) = await store.unfinished_diagnoses()
    assert (unfinished.id, unfinished.incident_id, unfinished.note_id) == (
        diagnosis,
        incident.id,
        note,
    )
    assert await store.diagnosis_unfinished(diagnosis)
    async with store.transaction() as tx:
        await tx.finish_diagnosis(diagnosis)
    assert await store.unfinished_diagnoses() == []
    assert not await store.diagnosis_unfinished(diagnosis)


T = datetime(2024, 1, 1, tzinfo=UTC)


def job(action: JobAction) -> JobEvent:
    taken = action in (JobAction.IN_PROGRESS, JobAction.COMPLETED)
    done = action is JobAction.COMPLETED
    return JobEvent(
        job_id=9_000_000_001,
        run_id=7_000_000_001,
        run_attempt=1,
        repository="org/repo",
        workflow="ci",
        job="build",
        labels=("self-hosted", "linux.2xlarge"),
        runner_type="linux.2xlarge",
        html_url="https://github.com/org/repo/actions/runs/1",
        head_branch="main",
        action=action,
        created_at=T,
        started_at=T + timedelta(seconds=60) if taken else None,
        completed_at=T + timedelta(seconds=360) if done else None,
        conclusion="failure" if done else None,
        runner_name="runner-1" if taken else None,
    )


async def test_a_job_from_the_far_future_is_forgotten_by_when_it_was_recorded(
    store: Store, clock: Clock
) -> None:
    """A row created "in the year 9999" (stored before deliveries were bounded) never gets old
    by its own time; retention forgets it by when the store last recorded it."""
    far = job(JobAction.QUEUED).model_copy(
        update={"created_at": datetime(9999, 1, 1, tzinfo=UTC), "job_id": 9_000_000_009}
    )
    assert await store.record_job(far, "far", NOW + DAY)
    assert await store.record_job(job(JobAction.QUEUED), "near", NOW + DAY)
    clock.now = NOW + 20 * DAY
    assert await store.record_job(
        job(JobAction.IN_PROGRESS), "near-again", clock.now + DAY
    )  # recorded again lately: kept
    assert await store.prune_jobs(NOW - 30 * DAY, clock.now - 14 * DAY) == 1
    assert await store.first_job_created() == T.timestamp()


async def test_job_deliveries_merge_out_of_order_and_once(store: Store) -> None:
    keep = NOW + DAY
    assert await store.record_job(job(JobAction.COMPLETED), "d3", keep)
    assert await store.record_job(job(JobAction.IN_PROGRESS), "d2", keep)
    assert not await store.record_job(job(JobAction.IN_PROGRESS), "d2", keep)
    assert (
        await store.record_jobs(
            [(job(JobAction.QUEUED), "d1"), (job(JobAction.QUEUED), "d3")], keep
        )
        == 1
    )
    t = T.timestamp()
    window = await store.job_activity(t - 1, t + 1000)
    assert [(r.seconds, r.failed, r.job) for r in window.arrivals] == [(0.0, False, "build")]
    assert [r.seconds for r in window.starts] == [60.0]
    assert [(r.seconds, r.failed) for r in window.completions] == [(300.0, True)]
    assert await store.job_activity(t + 1000, t + 2000) == JobActivity(
        t + 1000, t + 2000, [], [], []
    )
    (queued,) = await store.queued_jobs(t + 30, 10, 7 * DAY)
    assert (queued.runner_type, queued.created_at, queued.job) == ("linux.2xlarge", t, "build")
    assert await store.queued_jobs(t + 120, 10, 7 * DAY) == []
    assert await store.queued_jobs(t + 30, 60, 7 * DAY) == []
    assert await store.running_jobs(t + 120, 3600) == {("linux.2xlarge", "org/repo"): 1}
    assert await store.running_jobs(t + 400, 3600) == {}
    assert await store.first_job_created() == t
    assert await store.prune_jobs(t) == 0
    assert await store.prune_jobs(t + 1) == 1
    assert await store.first_job_created() is None


async def test_one_lot_merges_a_jobs_deliveries_out_of_order_and_each_once(store: Store) -> None:
    lot = [
        (job(JobAction.COMPLETED), "x3"),
        (job(JobAction.QUEUED), "x1"),
        (job(JobAction.IN_PROGRESS), "x2"),
        (job(JobAction.IN_PROGRESS), "x2"),
    ]
    assert await store.record_jobs(lot, NOW + DAY) == 3
    assert await store.record_jobs(lot, NOW + DAY) == 0
    t = T.timestamp()
    (span,) = await store.job_spans(t - 1, t + 1)
    assert (span.started_at, span.completed_at, span.conclusion) == (t + 60, t + 360, "failure")
    assert await store.queued_jobs(t + 30, 10, 7 * DAY) != []
    assert await store.queued_jobs(t + 120, 10, 7 * DAY) == []


async def test_a_job_held_for_approval_is_not_queued(store: Store) -> None:
    assert await store.record_job(job(JobAction.WAITING), "w1", NOW + DAY)
    t = T.timestamp()
    assert await store.queued_jobs(t + 30, 10, 7 * DAY) == []
    assert (await store.job_activity(t - 1, t + 1)).arrivals == []


async def test_retention_forgets_old_resolved_incidents_and_keeps_the_rest(
    store: Store, clock: Clock
) -> None:
    old = AT - timedelta(days=40)
    gone = await opened(store, "gone", resolved_at=old)
    kept = await opened(store, "kept")
    async with store.transaction() as tx:
        await tx.add_notification(gone.group_key, old, "old body", "resolved", gone.id)
        await tx.add_notification(kept.group_key, AT, "new body", "opened", kept.id)
        delivered = await tx.enqueue(gone.id, OutboxKind.POST_PARENT)
        pending = await tx.enqueue(kept.id, OutboxKind.POST_PARENT)
    await store.finish_item(delivered, OutboxState.DONE)
    assert await store.prune(NOW - 30 * DAY) == Pruned(
        incidents=1, notifications=1, bodies=1, outbox=1
    )
    assert await store.get_incident(gone.id) is None
    assert await store.get_incident(kept.id) == kept
    assert (await store.next_item(kept.id)).id == pending  # type: ignore[union-attr]
    assert await store.prune(NOW - 30 * DAY) == Pruned()


async def test_probe_writes_and_a_closed_store_reopens_with_its_data(opener: Opener) -> None:
    first = await opener()
    await first.probe()
    incident = await opened(first)
    await first.close()
    second = await opener()
    try:
        await second.probe()
        assert await second.get_incident(incident.id) == incident
    finally:
        await second.close()


# PostgreSQL's own: replicas sharing one database, migrations, a server that drops connections.


async def test_open_store_picks_the_backend_by_the_databases_scheme(
    postgres_url: str, tmp_path: Path
) -> None:
    for url in (postgres_url, postgres_url.replace("postgresql://", "postgres://", 1)):
        store = await open_store(url)
        try:
            assert isinstance(store, PostgresStore)
        finally:
            await store.close()
    store = await open_store(str(tmp_path / "queuebot.db"))
    try:
        assert isinstance(store, SQLiteStore)
    finally:
        await store.close()


async def test_an_unreachable_server_is_a_store_error() -> None:
    with pytest.raises(
        StoreError, match=r"cannot connect to PostgreSQL at 127\.0\.0\.1:9/"
    ) as raised:
        await open_store("postgresql://queuebot:secret@127.0.0.1:9/queuebot")
    assert "secret" not in str(raised.value)


async def test_replicas_starting_together_migrate_once(postgres_url: str) -> None:
    stores = await asyncio.gather(*(PostgresStore.open(postgres_url) for _ in range(3)))
    try:
        for store in stores:
            await store.probe()
    finally:
        for store in stores:
            await store.close()
    conn = await asyncpg.connect(postgres_url)
    try:
        versions = [r[0] for r in await conn.fetch("SELECT version FROM schema_version")]
        identities = await conn.fetchval("SELECT COUNT(*) FROM store_identity")
    finally:
        await conn.close()
    assert sorted(versions) == list(range(1, len(POSTGRES_MIGRATIONS) + 1))
    assert identities == 1


async def test_a_database_of_a_newer_queuebot_is_refused(postgres_url: str) -> None:
    await (await PostgresStore.open(postgres_url)).close()
    conn = await asyncpg.connect(postgres_url)
    try:
        newer = len(POSTGRES_MIGRATIONS) + 1
        await conn.execute("INSERT INTO schema_version (version) VALUES ($1)", newer)
    finally:
        await conn.close()
    with pytest.raises(StoreError, match="newer than this queuebot knows"):
        await PostgresStore.open(postgres_url)


async def test_the_store_recovers_when_the_server_drops_its_connections(
    postgres_url: str,
) -> None:
    store = await PostgresStore.open(postgres_url)
    try:
        incident = await opened(store)
        admin = await asyncpg.connect(postgres_url)
        try:
            dropped = await admin.fetchval(
                "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        finally:
            await admin.close()
        assert dropped >= 1
        # The call that meets a dropped connection may fail, as StoreError (a 503) only.
        with contextlib.suppress(StoreError):
            await store.probe()
        await store.probe()
        assert await store.get_incident(incident.id) == incident
    finally:
        await store.close()


async def test_one_of_two_replicas_racing_for_an_item_leases_it(
    postgres_url: str, clock: Clock
) -> None:
    one, two = [await PostgresStore.open(postgres_url, clock) for _ in range(2)]
    try:
        incident = await opened(one)
        async with one.transaction() as tx:
            items = [await tx.enqueue(incident.id, OutboxKind.POST_REPLY) for _ in range(20)]
        for item in items:
            won = await asyncio.gather(
                one.claim_item(item, "w1", NOW + 60), two.claim_item(item, "w2", NOW + 60)
            )
            assert sorted(won) == [False, True]
        seen = await asyncio.gather(*(s.first_seen("slack:9", NOW + 60) for s in (one, two)))
        assert sorted(seen) == [False, True]
    finally:
        await one.close()
        await two.close()


async def test_replicas_share_a_channels_pace(postgres_url: str, clock: Clock) -> None:
    """Slack's limit is per app and channel: asked at once by two replicas, a channel's burst
    of 3 gives 3 tokens in all, not 3 each."""
    one, two = [await PostgresStore.open(postgres_url, clock) for _ in range(2)]
    try:
        asks = [s.take_pace("C1", 1.0, 3) for _ in range(3) for s in (one, two)]
        pauses = await asyncio.gather(*asks)
        assert sum(pause == 0.0 for pause in pauses) == 3, pauses
    finally:
        await one.close()
        await two.close()


async def test_one_of_two_replicas_asking_at_once_leads(postgres_url: str, clock: Clock) -> None:
    one, two = [await PostgresStore.open(postgres_url, clock) for _ in range(2)]
    try:
        for round_ in range(10):
            role = f"role-{round_}"
            won = await asyncio.gather(
                one.lead(role, "w1", NOW + 60), two.lead(role, "w2", NOW + 60)
            )
            assert sorted(won) == [False, True]
    finally:
        await one.close()
        await two.close()


async def test_two_replicas_opening_a_groups_first_incident_make_one(postgres_url: str) -> None:
    stores = [await PostgresStore.open(postgres_url) for _ in range(2)]
    decided = asyncio.Event()
    arrived = 0

    async def accept(store: Store) -> tuple[bool, int]:
        """What the incident service does: read the current incident, open one if none."""
        nonlocal arrived
        async with store.transaction() as tx:
            current = await tx.current_incident(group("race").group_key)
            if current is not None:
                return False, current.id
            arrived += 1
            # Hold the decision open long enough for the other replica to read too, were it
            # not kept waiting.
            await decided.wait()
            return True, (await tx.insert_incident(new("race"))).id

    async def release() -> None:
        await asyncio.sleep(0.2)
        decided.set()

    try:
        one, two, _ = await asyncio.gather(accept(stores[0]), accept(stores[1]), release())
    finally:
        for store in stores:
            await store.close()
    assert arrived == 1
    assert sorted([one[0], two[0]]) == [False, True]
    assert one[1] == two[1]


async def test_retention_forgets_heads_ups_that_ended_and_were_shown(store: Store) -> None:
    """Ended and shown before the cut-off: forgotten. Still out, not yet shown ended, or ended
    after the cut-off: kept."""
    day = 86400.0

    def record(runner_type: str, ended: float | None) -> HeadsUpRecord:
        phase = "warning" if ended is None else "normal"
        started = (ended or NOW) - 600.0
        return HeadsUpRecord(
            "#ci", runner_type, started, phase, "view", ended or started, ended_at=ended
        )

    records = {
        "old-shown": record("old-shown", NOW - 40 * day),
        "old-unshown": record("old-unshown", NOW - 40 * day),
        "recent": record("recent", NOW - day),
        "out": record("out", None),
    }
    for saved in records.values():
        await store.save_heads_up(saved)
    for shown in await store.unshown_heads_ups():
        if shown.runner_type in ("old-shown", "recent", "out"):
            await store.set_heads_up_shown(shown, "C1", f"1.{len(shown.runner_type)}")
    assert (await store.prune(NOW - 30 * day)).heads_ups == 1
    left = {r.runner_type for r in await store.heads_ups("#ci", 0.0)}
    assert left == {"old-unshown", "recent", "out"}


async def test_heads_ups_are_saved_as_versions_and_shown_by_the_writer(store: Store) -> None:
    def record(runner_type: str, started: float, phase: str = "warning") -> HeadsUpRecord:
        return HeadsUpRecord("#ci", runner_type, started, phase, f"{phase} view", started)

    out, older = record("linux.2xlarge", 100.0), record("linux.4xlarge", 50.0, "normal")
    older = replace(older, ended_at=60.0, updated_at=60.0)
    for saved in (out, older, replace(out, channel="#other")):
        await store.save_heads_up(saved)
    unshown = [r for r in await store.unshown_heads_ups() if r.channel == "#ci"]
    assert [(r.runner_type, r.version, r.shown_version) for r in unshown] == [
        ("linux.4xlarge", 1, 0),
        ("linux.2xlarge", 1, 0),
    ]
    # The writer shows one; the early warning saves its next version, which is unshown again.
    await store.set_heads_up_shown(unshown[1], "C1", "1.5")
    assert [r.runner_type for r in await store.unshown_heads_ups() if r.channel == "#ci"] == [
        "linux.4xlarge"
    ]
    fired = replace(out, phase="fired", view_json="fired view", updated_at=130.0, ended_at=130.0)
    await store.save_heads_up(fired)
    (again,) = [
        r
        for r in await store.unshown_heads_ups()
        if r.runner_type == "linux.2xlarge" and r.channel == "#ci"
    ]
    assert (again.version, again.shown_version, again.channel_id, again.ts) == (2, 1, "C1", "1.5")
    assert (again.phase, again.view_json, again.ended_at) == ("fired", "fired view", 130.0)
    # Out, or changed since: what a new leader resumes from.
    assert [r.runner_type for r in await store.heads_ups("#ci", 100.0)] == ["linux.2xlarge"]
    assert [r.runner_type for r in await store.heads_ups("#ci", 0.0)] == [
        "linux.4xlarge",
        "linux.2xlarge",
    ]
