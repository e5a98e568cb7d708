"""The two backends themselves: the backend picked by the database's scheme, a store probed and
reopened with its data, an unreachable server; PostgreSQL's own: replicas migrating together,
a newer schema refused, connections dropped by the server, two replicas opening one group's
first incident."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path

import asyncpg
import pytest

from bot.store import Store, StoreError, open_store
from bot.store.postgres import PostgresStore
from bot.store.schema import MIGRATIONS, Dialect, steps
from bot.store.sqlite import SQLiteStore
from tests.store.contract import Opener, T, group, new, opened


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
    assert sorted(versions) == list(range(1, len(MIGRATIONS) + 1))
    assert identities == 1


async def test_a_database_of_a_newer_queuebot_is_refused(postgres_url: str) -> None:
    await (await PostgresStore.open(postgres_url)).close()
    conn = await asyncpg.connect(postgres_url)
    try:
        newer = len(MIGRATIONS) + 1
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


async def test_a_sqlite_file_whose_notifications_kept_bodies_upgrades_in_place(
    tmp_path: Path,
) -> None:
    """A file made at schema version 10 (without incremental auto-vacuum, as versions before
    11 made them), with an incident and a notification that kept its body in the old column,
    opens with its rows kept, converted to incremental auto-vacuum; it then records
    notifications as a new file does."""
    path = tmp_path / "older.db"
    before = 10
    with contextlib.closing(sqlite3.connect(path)) as db:
        for step in steps(Dialect.SQLITE)[:before]:
            db.executescript(step)
        db.execute(f"PRAGMA user_version = {before}")
        db.execute(
            "INSERT INTO incidents (group_key, generation, channel, status, group_json,"
            " started_at, created_at, updated_at) VALUES ('g', 1, '#ci', 'firing', ?, ?, ?, ?)",
            (group().model_dump_json(), T.isoformat(), T.isoformat(), T.isoformat()),
        )
        db.execute(
            "INSERT INTO notifications (group_key, received_at, body, outcome, incident_id)"
            " VALUES ('g', ?, '{}', 'opened', 1)",
            (T.isoformat(),),
        )
        db.commit()
    store = await open_store(str(path))
    try:
        assert (await store.get_incident(1)) is not None
        async with store.transaction() as tx:
            added = await tx.add_notification("g", T, '{"b": 1}', "updated", 1, "key")
            assert await tx.seen_since("g", "key", T)
    finally:
        await store.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
        assert db.execute("PRAGMA auto_vacuum").fetchone() == (2,)  # incremental
        rows = db.execute("SELECT id, outcome FROM notifications ORDER BY id").fetchall()
        assert rows == [(1, "opened"), (added, "updated")]
