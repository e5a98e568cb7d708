"""The Slack outbox's part of the store's contract, on SQLite and on PostgreSQL: each incident's
items in order, deferred and leased; two replicas racing for one item."""

from __future__ import annotations

import asyncio

from bot.store import Due, OutboxKind, OutboxState, Store
from bot.store.postgres import PostgresStore
from tests.store.contract import NOW, Clock, opened


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


async def test_one_of_two_replicas_racing_for_an_item_leases_it(
    postgres_url: str, clock: Clock
) -> None:
    one, two = [await PostgresStore.open(postgres_url, clock.product) for _ in range(2)]
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
