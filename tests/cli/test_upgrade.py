"""Upgrades, with a real `queuebot serve`: a store is migrated as serve starts, and a queuebot
meeting a store a newer queuebot upgraded refuses to start in one line naming both schema
versions and the ways out, exits non-zero and leaves the store as it was (SQLite and
PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest

from bot import __version__
from bot.domain.notifications import parse_webhook
from bot.store.postgres import PostgresStore
from bot.store.schema import MIGRATIONS, Dialect, steps
from bot.store.sqlite import SQLiteStore
from queuebot_lab.sandbox.slack import SlackSandbox
from testkit.harness import (
    BOT_TOKEN,
    CHANNEL_NAME,
    SIGNING_SECRET,
    WEBHOOK_TOKEN,
    serve_process,
    stop_process,
)
from testkit.payloads import encoded, reference
from testkit.postgres import fresh_database
from testkit.servers import free_port

NEWER = len(MIGRATIONS) + 1
#: What the older queuebot says, and nothing more, before it exits.
REFUSAL = (
    f"queuebot: the store is at schema version {NEWER}, newer than this queuebot knows"
    f" (queuebot {__version__} knows schema versions up to {len(MIGRATIONS)}) and was left"
    " untouched: run the newer queuebot that upgraded it, or restore the backup taken before"
    " the upgrade (queuebot restore PATH; pg_restore for PostgreSQL)"
)


async def serve_refused(database: str | Path) -> tuple[int, list[str], str]:
    """Run `queuebot serve` on `database`, which must make it stop by itself: its exit
    status, the lines it said as queuebot, and all of stderr."""
    env = {
        "PATH": os.environ["PATH"],
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        # Never reached: the store is opened first.
        "SLACK_API_URL": f"http://127.0.0.1:{free_port()}/api/",
        "QUEUEBOT_CHANNEL": f"#{CHANNEL_NAME}",
        "QUEUEBOT_WEBHOOK_TOKEN": WEBHOOK_TOKEN,
        "QUEUEBOT_DATABASE": str(database),
        "HOST": "127.0.0.1",
        "PORT": str(free_port()),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", env=env, stderr=asyncio.subprocess.PIPE
    )
    try:
        async with asyncio.timeout(60):
            _, err = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError("queuebot serve started on a store a newer queuebot made") from None
    assert process.returncode is not None
    said = err.decode()
    return process.returncode, [x for x in said.splitlines() if x.startswith("queuebot:")], said


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def beside(store: Path) -> list[str]:
    """The files in the store's folder."""
    return sorted(p.name for p in store.parent.iterdir())


async def test_serve_refuses_a_sqlite_store_a_newer_queuebot_upgraded(tmp_path: Path) -> None:
    store = tmp_path / "queuebot.db"
    await (await SQLiteStore.open(str(store))).close()
    with contextlib.closing(sqlite3.connect(store)) as db:
        # What a newer queuebot's next step would have done.
        db.execute("CREATE TABLE later_feature (id INTEGER PRIMARY KEY)")
        db.execute(f"PRAGMA user_version = {NEWER}")
        db.commit()
    before, files = digest(store), beside(store)
    code, said, err = await serve_refused(store)
    assert code != 0
    assert said == [REFUSAL]
    assert "Traceback" not in err
    assert digest(store) == before
    assert beside(store) == files


async def test_serve_refuses_a_postgresql_store_a_newer_queuebot_upgraded() -> None:
    async with fresh_database() as url:
        await (await PostgresStore.open(url)).close()

        async def layout() -> tuple[object, ...]:
            conn = await asyncpg.connect(url)
            try:
                return (
                    await conn.fetch("SELECT version FROM schema_version ORDER BY version"),
                    await conn.fetch(
                        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                        " ORDER BY tablename"
                    ),
                    await conn.fetch("SELECT * FROM store_identity"),
                )
            finally:
                await conn.close()

        conn = await asyncpg.connect(url)
        try:
            async with conn.transaction():
                await conn.execute("CREATE TABLE later_feature (id BIGINT PRIMARY KEY)")
                await conn.execute("INSERT INTO schema_version (version) VALUES ($1)", NEWER)
        finally:
            await conn.close()
        before = await layout()
        code, said, err = await serve_refused(url)
        assert code != 0
        assert said == [REFUSAL]
        assert "Traceback" not in err
        assert await layout() == before


@pytest.mark.slow
async def test_an_older_backup_restored_is_migrated_as_serve_starts(tmp_path: Path) -> None:
    """A backup from an older queuebot is restored as it is and said to be older; `queuebot
    serve` migrates it as it starts, keeping its incidents."""
    older, store = tmp_path / "older.db", tmp_path / "queuebot.db"
    at = datetime.now(UTC).isoformat()
    group = parse_webhook(encoded(reference())).model_dump_json()
    with contextlib.closing(sqlite3.connect(older)) as db:
        for step in steps(Dialect.SQLITE)[: len(MIGRATIONS) - 1]:
            db.executescript(step)
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")
        db.execute(
            "INSERT INTO incidents (group_key, generation, channel, status, group_json,"
            " started_at, created_at, updated_at) VALUES ('older', 1, '#ci', 'firing', ?, ?, ?, ?)",
            (group, at, at, at),
        )
        db.commit()
    env = {"PATH": os.environ["PATH"], "QUEUEBOT_DATABASE": str(store)}
    # A new machine has no store yet: --force makes it there.
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "bot", "restore", "--force", str(older)),
        env=env,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    assert process.returncode == 0
    assert out.decode().endswith(
        f"; queuebot serve migrates it to schema version {len(MIGRATIONS)} as it starts\n"
    )

    sandbox = SlackSandbox(
        bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
    )
    await sandbox.start()
    try:
        bot = await serve_process(sandbox, store, free_port())
        await stop_process(bot)
    finally:
        await sandbox.stop()
    assert bot.returncode == 0
    with contextlib.closing(sqlite3.connect(store)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
        assert db.execute("SELECT group_key FROM incidents").fetchall() == [("older",)]
