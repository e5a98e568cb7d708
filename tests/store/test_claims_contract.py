"""Claims, leases and what replicas share, on SQLite and on PostgreSQL: an incident's claims,
leader leases, diagnoses under way, requests seen, a channel's posting pace; replicas asking
at once."""

from __future__ import annotations

import asyncio

import pytest

from bot.store import OutboxKind, Store
from bot.store.postgres import PostgresStore
from tests.store.contract import DAY, NOW, Clock, opened


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


async def test_first_seen_remembers_a_key_until_it_expires(store: Store, clock: Clock) -> None:
    assert await store.first_seen("slack:1", NOW + 300)
    assert not await store.first_seen("slack:1", NOW + 300)
    assert await store.first_seen("slack:2", NOW + 300)
    clock.now = NOW + 301
    assert await store.first_seen("slack:1", NOW + 600)
    assert not await store.first_seen("slack:1", NOW + 600)


async def test_remembered_says_whether_a_key_is_held_now_without_taking_it(
    store: Store, clock: Clock
) -> None:
    assert not await store.remembered("backfill:a")
    assert not await store.remembered("backfill:a")  # asking does not take it
    assert await store.first_seen("backfill:a", NOW + 300)
    assert await store.remembered("backfill:a")
    assert not await store.remembered("backfill:b")
    clock.now = NOW + 301
    assert not await store.remembered("backfill:a")


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


async def test_replicas_share_a_channels_pace(postgres_url: str, clock: Clock) -> None:
    """Slack's limit is per app and channel: asked at once by two replicas, a channel's burst
    of 3 gives 3 tokens in all, not 3 each."""
    one, two = [await PostgresStore.open(postgres_url, clock.product) for _ in range(2)]
    try:
        asks = [s.take_pace("C1", 1.0, 3) for _ in range(3) for s in (one, two)]
        pauses = await asyncio.gather(*asks)
        assert sum(pause == 0.0 for pause in pauses) == 3, pauses
    finally:
        await one.close()
        await two.close()


async def test_one_of_two_replicas_asking_at_once_leads(postgres_url: str, clock: Clock) -> None:
    one, two = [await PostgresStore.open(postgres_url, clock.product) for _ in range(2)]
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
