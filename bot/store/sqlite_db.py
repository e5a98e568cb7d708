"""One SQLite file, opened for the store: the connection, its settings, migrations, and what
every statement shares (one lock, errors as StoreError, the file's identity).

- One connection for writing, one asyncio lock: SQLite allows one writer, and a transaction on
  a shared connection must not interleave with another coroutine's statements. `BEGIN
  IMMEDIATE` takes the database's write lock at the start, so a second process on the same file
  waits instead of interleaving too.
- Reads go through a second, read-only connection with a lock of its own: in WAL mode a reader
  sees every committed write and never waits for the writer, so diagnostics reading a week of
  jobs hold no webhook up. (A capacity report reads its weeks of jobs in a worker process of
  its own, `bot.capacity.composing`.)
- Every sqlite3 error leaves here as `StoreError` (a full disk, an I/O error, a locked file):
  callers handle one error, and the webhook answers 503 so that Grafana sends again.
- A commit is durable against power loss, not only against a crash: WAL with
  `synchronous = FULL` syncs the log at every commit (with NORMAL, the last commits before a
  power cut may be lost, https://sqlite.org/pragma.html#pragma_synchronous).
- The file is the one opened: deleted, or replaced by another file, while the bot runs, writes
  would go to a file nobody will ever read again. Each transaction checks that the path still
  leads to the file opened (its device and inode) and refuses with StoreError otherwise.
- Freed pages are given back to the file system (`auto_vacuum = INCREMENTAL`, set on a new file
  before its first table and converted once by VACUUM on an older one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from bot.store.records import StoreError
from bot.store.schema import Dialect, pending, statements
from bot.store.statements import greatest

log = logging.getLogger(__name__)

#: `PRAGMA auto_vacuum` values.
_INCREMENTAL = 2


def _prepare(path: str) -> str:
    """Expand `~` and create the file's directory (blocking, so run in a thread)."""
    if path == ":memory:":
        return path
    full = Path(path).expanduser()
    full.parent.mkdir(parents=True, exist_ok=True)
    return str(full)


def _identity(path: str) -> tuple[int, int] | None:
    """The device and inode at `path`; None when nothing is there."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


@contextlib.contextmanager
def translated(doing: str) -> Iterator[None]:
    """sqlite3's errors as StoreError, saying what was being done."""
    try:
        yield
    except sqlite3.Error as exc:
        raise StoreError(f"{doing}: {exc}") from exc


class SQLiteDatabase:
    """The store's connection to one SQLite file."""

    def __init__(self, db: aiosqlite.Connection, path: str) -> None:
        self.db = db
        self.path = path
        self.lock = asyncio.Lock()
        #: The read-only connection (None for an in-memory database: reads use `db`).
        self.reader: aiosqlite.Connection | None = None
        self.read_lock = asyncio.Lock()
        self._identity = None if path == ":memory:" else _identity(path)

    @classmethod
    async def open(cls, path: str) -> SQLiteDatabase:
        try:
            path = await asyncio.to_thread(_prepare, path)
            db = await aiosqlite.connect(path, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the SQLite database {path!r}: {exc}") from exc
        database = cls(db, path)
        try:
            db.row_factory = sqlite3.Row
            await db.create_function("GREATEST", -1, greatest, deterministic=True)
            await db.execute("PRAGMA busy_timeout = 5000")
            await database._reclaim_space()
            await db.execute("PRAGMA journal_mode = WAL")
            await db.execute("PRAGMA synchronous = FULL")
            await db.execute("PRAGMA foreign_keys = ON")
            await database._migrate()
        except sqlite3.Error as exc:
            await db.close()
            raise StoreError(f"{path!r} is not a usable queuebot database: {exc}") from exc
        except StoreError:
            await db.close()
            raise
        if path != ":memory:":
            try:
                reader = await aiosqlite.connect(f"{Path(path).as_uri()}?mode=ro", uri=True)
                reader.row_factory = sqlite3.Row
                await reader.create_function("GREATEST", -1, greatest, deterministic=True)
                await reader.execute("PRAGMA busy_timeout = 5000")
            except sqlite3.Error as exc:
                await db.close()
                raise StoreError(f"cannot open {path!r} for reading: {exc}") from exc
            database.reader = reader
        return database

    async def _reclaim_space(self) -> None:
        """Incremental auto-vacuum: set on a new file, converted once on an older one."""
        async with self.db.execute("PRAGMA auto_vacuum") as cursor:
            row = await cursor.fetchone()
        if row is not None and int(row[0]) == _INCREMENTAL:
            return
        await self.db.execute(f"PRAGMA auto_vacuum = {_INCREMENTAL}")
        async with self.db.execute("SELECT count(*) FROM sqlite_master") as cursor:
            row = await cursor.fetchone()
        if row is None or int(row[0]) == 0:
            return
        # An existing file takes the setting only through VACUUM, and not in WAL mode. Another
        # process using the file keeps it in WAL mode: then this waits for a later start.
        try:
            # A PRAGMA that answers with a row keeps its statement open until the row is read:
            # read it, or the later switch to WAL finds a transaction still open.
            async with self.db.execute("PRAGMA journal_mode = DELETE") as cursor:
                await cursor.fetchall()
            await self.db.execute("VACUUM")
        except sqlite3.OperationalError as exc:
            log.warning("freed space is not given back until a restart: %s", exc)

    async def _migrate(self) -> None:
        # Read the version under the write lock, so two processes starting together on one
        # file migrate it once: the second waits, then finds nothing left to do.
        await self.db.execute("BEGIN IMMEDIATE")
        try:
            async with self.db.execute("PRAGMA user_version") as cursor:
                row = await cursor.fetchone()
            current = int(row[0]) if row else 0
            for version, step in pending(Dialect.SQLITE, current):
                for statement in statements(step):
                    await self.db.execute(statement)
                await self.db.execute(f"PRAGMA user_version = {version}")
            await self.db.execute(
                "INSERT OR IGNORE INTO store_identity (id, store_id) VALUES (1, ?)",
                (secrets.token_hex(16),),
            )
        except BaseException:
            await self.db.execute("ROLLBACK")
            raise
        await self.db.execute("COMMIT")

    def check_file(self) -> None:
        """Raise StoreError when the file at the path is no longer the one opened."""
        if self._identity is None:
            return
        if _identity(self.path) != self._identity:
            raise StoreError(
                f"the database file {self.path!r} was deleted or replaced while queuebot runs;"
                " what is written now would be lost: restart queuebot"
            )

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """An exclusive write transaction on the file this store opened; committed when the
        block ends, rolled back (and StoreError for SQLite's errors) when it raises."""
        async with self.lock:
            self.check_file()
            with translated("cannot start a transaction"):
                await self.db.execute("BEGIN IMMEDIATE")
            try:
                with translated("transaction failed"):
                    yield self.db
                    await self.db.execute("COMMIT")
            except BaseException:
                # After a failed COMMIT (a full disk) SQLite may already have rolled back.
                with contextlib.suppress(sqlite3.Error):
                    await self.db.execute("ROLLBACK")
                raise

    async def write(self, sql: str, *params: Any) -> int:
        """One statement in a transaction of its own; the rows it changed."""
        async with self.lock:
            with translated("the store cannot be written"):
                cursor = await self.db.execute(sql, params)
                return cursor.rowcount

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[aiosqlite.Connection]:
        """The connection reads go through (the read-only one), held for one read."""
        if self.reader is None:
            async with self.lock:
                yield self.db
            return
        # Reads, like the writer's, keep to the file opened (a replaced file is the writer's
        # to refuse).
        async with self.read_lock:
            yield self.reader

    async def fetch(self, sql: str, *params: Any) -> list[sqlite3.Row]:
        async with self.reading() as db:
            with translated("the store cannot be read"):
                # One call into the connection's thread, not three (execute, fetch, close).
                return list(await db.execute_fetchall(sql, params))

    async def probe(self, now: float) -> None:
        """Write to the store as a webhook would; StoreError says why it cannot."""
        async with self.transaction() as db:
            await db.execute("UPDATE store_identity SET checked_at = ? WHERE id = 1", (now,))

    async def release_free_pages(self) -> None:
        """Give freed pages back to the file system and cut the write-ahead log down."""
        async with self.lock:
            with translated("cannot reclaim space"):
                await self.db.execute("BEGIN IMMEDIATE")
                try:
                    async with self.db.execute("PRAGMA freelist_count") as cursor:
                        row = await cursor.fetchone()
                    # Python's sqlite3 steps a pragma without result columns once, and each
                    # step of incremental_vacuum frees one page: so one statement a page.
                    for _ in range(int(row[0]) if row else 0):
                        async with self.db.execute("PRAGMA incremental_vacuum(1)"):
                            pass
                    await self.db.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        await self.db.execute("ROLLBACK")
                    raise
                async with self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)") as cursor:
                    await cursor.fetchall()

    async def close(self) -> None:
        if self.reader is not None:
            await self.reader.close()
        await self.db.close()
