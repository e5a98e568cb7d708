"""One migration history for both backends: the same tables, columns and indexes on each, and a
database made before it (a SQLite file at the version before the newest; a PostgreSQL database
of the six steps PostgreSQL once had of its own) upgraded in place, its rows kept, to the very
schema a new database gets."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import asyncpg

from bot.domain.incidents import IncidentStatus
from bot.store import open_store
from bot.store.schema import MIGRATIONS, Dialect, steps
from testkit.postgres import fresh_database
from tests.store.contract import T, group, opened

BEFORE_ONE_HISTORY = Path(__file__).parents[1] / "fixtures" / "postgres_before_one_history.sql"


def sqlite_schema(path: Path) -> list[tuple[str, str, str]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(
            "SELECT type, name, sql FROM sqlite_master"
            " WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
        ).fetchall()


async def postgres_layout(url: str) -> dict[str, list[tuple[object, ...]]]:
    conn = await asyncpg.connect(url)
    try:
        columns = await conn.fetch(
            "SELECT table_name, column_name, data_type, is_nullable, column_default,"
            " is_identity FROM information_schema.columns WHERE table_schema = 'public'"
            " ORDER BY table_name, column_name"
        )
        indexes = await conn.fetch(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'"
            " ORDER BY indexname"
        )
        constraints = await conn.fetch(
            "SELECT conrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2"
        )
    finally:
        await conn.close()
    return {
        "columns": [tuple(r) for r in columns],
        "indexes": [tuple(r) for r in indexes],
        "constraints": [tuple(r) for r in constraints],
    }


async def test_both_backends_get_the_same_tables_columns_and_indexes(
    tmp_path: Path, postgres_url: str
) -> None:
    await (await open_store(str(tmp_path / "new.db"))).close()
    await (await open_store(postgres_url)).close()
    sqlite_tables: set[tuple[str, str]] = set()
    with contextlib.closing(sqlite3.connect(tmp_path / "new.db")) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            sqlite_tables |= {(table, r[1]) for r in db.execute(f"PRAGMA table_info({table})")}
        sqlite_indexes = {
            r[0]
            for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
            )
        }
    on_postgres = await postgres_layout(postgres_url)
    postgres_tables = {
        (str(r[0]), str(r[1])) for r in on_postgres["columns"] if r[0] != "schema_version"
    }
    # Those that keep a primary key or a unique constraint are SQLite's automatic ones.
    postgres_indexes = {
        str(r[0]) for r in on_postgres["indexes"] if not str(r[0]).endswith(("_pkey", "_key"))
    }
    assert sqlite_tables == postgres_tables
    assert ("notifications", "body") not in sqlite_tables
    assert sqlite_indexes == postgres_indexes
    assert "outbox_leases" in sqlite_indexes


async def test_a_postgres_database_made_before_one_history_upgrades_in_place() -> None:
    async with fresh_database() as older, fresh_database() as new:
        conn = await asyncpg.connect(older)
        try:
            await conn.execute(BEFORE_ONE_HISTORY.read_text())
            await conn.execute(
                "INSERT INTO incidents (group_key, generation, channel, status, group_json,"
                " started_at, created_at, updated_at) VALUES ('g', 1, '#ci', 'firing', $1,"
                " $2, $2, $2)",
                group().model_dump_json(),
                T,
            )
        finally:
            await conn.close()
        store = await open_store(older)
        try:
            kept = await store.get_incident(1)
            assert kept is not None
            assert kept.status == IncidentStatus.FIRING
            assert kept.group.group_key == group().group_key
            # The identity column goes on from the rows there were.
            assert (await opened(store, "another")).id == 2
        finally:
            await store.close()
        await (await open_store(new)).close()
        assert await postgres_layout(older) == await postgres_layout(new)
        conn = await asyncpg.connect(older)
        try:
            versions = [r[0] for r in await conn.fetch("SELECT version FROM schema_version")]
            identity = await conn.fetchval("SELECT store_id FROM store_identity")
        finally:
            await conn.close()
        # Its six steps are this history's 5 to 10; it took 11 and the newest since.
        assert sorted(versions) == list(range(5, len(MIGRATIONS) + 1))
        assert identity == "a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0"


async def test_a_sqlite_file_at_the_version_before_upgrades_to_the_new_files_schema(
    tmp_path: Path,
) -> None:
    older, new = tmp_path / "older.db", tmp_path / "new.db"
    before = len(MIGRATIONS) - 1
    with contextlib.closing(sqlite3.connect(older)) as db:
        for step in steps(Dialect.SQLITE)[:before]:
            db.executescript(step)
        db.execute(f"PRAGMA user_version = {before}")
        db.execute(
            "INSERT INTO incidents (group_key, generation, channel, status, group_json,"
            " started_at, created_at, updated_at) VALUES ('g', 1, '#ci', 'firing', ?, ?, ?, ?)",
            (group().model_dump_json(), T.isoformat(), T.isoformat(), T.isoformat()),
        )
        db.commit()
    store = await open_store(str(older))
    try:
        assert await store.get_incident(1) is not None
    finally:
        await store.close()
    await (await open_store(str(new))).close()
    assert sqlite_schema(older) == sqlite_schema(new)
    with contextlib.closing(sqlite3.connect(older)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
