"""Retention: the store forgets resolved incidents, delivered messages and notification bodies
after the retention period, keeps what is still needed, never stores a body twice, and gives
the freed space back to the file system."""

from __future__ import annotations

import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.delivery import owed
from bot.domain.clock import Clock
from bot.domain.notifications import parse_webhook
from bot.incidents.service import IncidentService
from bot.store import OutboxState
from bot.store.sqlite import SQLiteStore
from bot.telemetry.metrics import Metrics
from testkit.harness import counted, running_stack
from testkit.payloads import encoded, reference

DAY = 86400.0


def _counts(database: Path) -> dict[str, int]:
    with sqlite3.connect(database) as db:
        return {
            table: int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # noqa: S608
            for table in ("incidents", "notifications", "notification_bodies", "outbox")
        }


def _named(name: str, status: str = "firing", padding: int = 0) -> dict[str, Any]:
    body = reference(status)
    body["groupKey"] = f'{{}}:{{alertname="{name}"}}'
    for labels in (body["alerts"][0]["labels"], body["commonLabels"], body["groupLabels"]):
        labels["alertname"] = name
    body["alerts"][0]["fingerprint"] = name
    body["alerts"][0]["annotations"]["description"] += " " + name * padding
    return body


async def test_a_resolved_incident_is_forgotten_after_the_retention_period(
    tmp_path: Path,
) -> None:
    """Past QUEUEBOT_RETENTION_DAYS, a resolved incident leaves the store with its outbox,
    notifications and bodies; the same alert firing again later opens a new incident."""
    database = tmp_path / "queuebot.db"
    async with running_stack(tmp_path, QUEUEBOT_RETENTION_DAYS=str(2 / DAY)) as stack:
        assert (await stack.webhook(reference())).status == 202
        (parent,) = await stack.parents(1)
        assert (await stack.webhook(reference("resolved"))).status == 202
        await stack.replies(parent, 1)
        await stack.settled()
        await counted(stack.url, "queuebot_retention_pruned_total", 1, what="incidents")
        assert _counts(database) == {
            "incidents": 0,
            "notifications": 0,
            "notification_bodies": 0,
            "outbox": 0,
        }
        assert (await stack.webhook(reference())).status == 202
        parents = await stack.parents(2)
        assert parents[0].ts != parents[1].ts


async def test_the_same_body_is_stored_once(tmp_path: Path) -> None:
    """Grafana re-sends a group unchanged (its repeat interval, its HA replicas): every
    notification is recorded, its body once."""
    database = tmp_path / "queuebot.db"
    async with running_stack(tmp_path) as stack:
        for _ in range(5):
            assert (await stack.webhook(reference())).status == 202
        await stack.settled()
        counts = _counts(database)
        assert counts["notifications"] == 5
        assert counts["notification_bodies"] == 1


async def test_what_is_still_needed_stays(tmp_path: Path) -> None:
    """Old, but still firing, still owed to Slack, or an unfinished diagnostics run's notice:
    kept. Old and done: gone."""
    now = [datetime(2026, 1, 1, tzinfo=UTC).timestamp()]
    store = await SQLiteStore.open(
        str(tmp_path / "queuebot.db"), clock=Clock(seconds=lambda: now[0])
    )
    service = IncidentService(
        store,
        default_channel="#alerts",
        metrics=Metrics(),
        clock=Clock.at(lambda: datetime.fromtimestamp(now[0], UTC)),
    )
    try:
        ids: dict[str, int] = {}
        for name in ("still-firing", "still-owed", "done"):
            _, incident_id = await service.accept(parse_webhook(encoded(_named(name))), "{}")
            assert incident_id is not None
            ids[name] = incident_id
        for name in ("still-owed", "done"):
            await service.accept(parse_webhook(encoded(_named(name, "resolved"))), "{}")
        async with store.transaction() as tx:
            note = await owed.note(
                tx, ids["still-firing"], owed.OwedMessage(text="Running", blocks=[])
            )
            await tx.add_diagnosis(ids["still-firing"], note)
        for name in ("still-firing", "done"):  # delivered; the still-owed one is not
            while (item := await store.next_item(ids[name])) is not None:
                await store.finish_item(item.id, OutboxState.DONE, posted_ts=f"{item.id}.0")
        now[0] += 31 * DAY
        pruned = await store.prune(now[0] - 30 * DAY)
        assert pruned.incidents == 1
        assert await store.get_incident(ids["done"]) is None
        assert await store.get_incident(ids["still-firing"]) is not None
        assert await store.get_incident(ids["still-owed"]) is not None
        assert await store.next_item(ids["still-owed"]) is not None
        assert [d.note_id for d in await store.unfinished_diagnoses()] == [note]
        assert await store.posted_ts(note) == f"{note}.0"
        assert _counts(tmp_path / "queuebot.db") == {
            "incidents": 2,
            "notifications": 0,
            "notification_bodies": 0,
            "outbox": 1 + len(await _pending(store, ids["still-owed"])),
        }
    finally:
        await store.close()


async def _pending(store: SQLiteStore, incident_id: int) -> list[int]:
    rows = await store._database.fetch(  # the rows themselves: what is left of its outbox
        "SELECT id FROM outbox WHERE incident_id = ? AND state = 'pending'", incident_id
    )
    return [int(row[0]) for row in rows]


async def test_freed_space_goes_back_to_the_file_system(tmp_path: Path) -> None:
    """Pruning a lot makes the file smaller, not just emptier."""
    path = tmp_path / "queuebot.db"
    now = [datetime(2026, 1, 1, tzinfo=UTC).timestamp()]
    store = await SQLiteStore.open(str(path), clock=Clock(seconds=lambda: now[0]))
    service = IncidentService(
        store,
        default_channel="#alerts",
        metrics=Metrics(),
        clock=Clock.at(lambda: datetime.fromtimestamp(now[0], UTC)),
    )
    try:
        for n in range(60):
            name = f"big-{n}"
            for status in ("firing", "resolved"):
                body = encoded(_named(name, status, padding=2000))
                await service.accept(parse_webhook(body), body.decode())
        for due in await store.due_incidents():
            while (item := await store.next_item(due.incident_id)) is not None:
                await store.finish_item(item.id, OutboxState.DONE, posted_ts="1.2")
        size_before = os.stat(path).st_size + _wal_size(path)
        now[0] += 31 * DAY
        pruned = await store.prune(now[0] - 30 * DAY)
        assert pruned.incidents == 60
        size_after = os.stat(path).st_size + _wal_size(path)
        assert size_after < size_before / 4, (size_before, size_after)
    finally:
        await store.close()


def _wal_size(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return os.stat(wal).st_size if wal.exists() else 0
