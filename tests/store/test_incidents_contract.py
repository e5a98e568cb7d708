"""The incidents' and storm digests' part of the store's contract, on SQLite and on PostgreSQL:
an incident per group key and generation, changed in transactions, read by channel, and
where Slack shows it; retention of resolved incidents."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from bot.domain.incidents import Incident, IncidentStatus
from bot.store import OutboxKind, OutboxState, Pruned, Store, StoreError
from tests.store.contract import AT, DAY, NOW, Clock, new, opened, silence


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
