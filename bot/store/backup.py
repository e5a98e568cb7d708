"""Copies of a SQLite store taken while the bot serves on it, and a copy put back in the
store's place: what `queuebot backup` and `queuebot restore` do (`bot.cli.backup` words it).

- A copy is SQLite's online backup (https://sqlite.org/backup.html) taken in one step, so one
  read transaction: the copy is the store as one commit left it, and in WAL mode
  (`bot.store.sqlite_db`) the bot's writes never wait for it. Taken in several steps, any write
  between two of them starts the copy over (https://sqlite.org/c3ref/backup_finish.html), and
  a busy bot could keep it from ever ending.
- A copy is written beside where it goes under a temporary name, made a file of its own
  (a rollback journal, so no `-wal` file holds part of it), synced, then moved into place: a
  crash leaves the old file or the whole new one, never part of one.
- A copy goes back only while no other connection has the store open. The store is asked for
  its exclusive lock in EXCLUSIVE locking mode (https://sqlite.org/pragma.html#pragma_locking_mode),
  without waiting: every connection with a WAL file open holds a shared lock on it for as long
  as it stays open (a serving bot holds two), so the lock is refused while a bot serves and no
  bot can start while restore holds it. Holding it, restore folds the write-ahead log into the
  file (a bot that was killed leaves its last commits there), keeps the file as
  `<db>.before-restore`, and moves the copy into place. (A bot that still reached the old file
  would refuse to write to it: `SQLiteDatabase.check_file`.)
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bot.store.records import StoreError
from bot.store.schema import MIGRATIONS

#: What the store a restore replaced is kept as, after the store's own name.
BEFORE_RESTORE = ".before-restore"
#: The files SQLite keeps beside a store while it is open in WAL mode.
WAL_FILES = ("-wal", "-shm")


@dataclass(frozen=True)
class StoreFacts:
    """What a store file holds, as `queuebot backup` and `restore` say it."""

    #: The file's size in bytes.
    size: int
    #: Its schema version (`bot.store.schema`).
    version: int
    incidents: int
    #: Firing incidents under a silence queuebot made.
    silenced: int
    jobs: int

    def line(self) -> str:
        return (
            f"{self.size:,} bytes, schema version {self.version}, {self.incidents:,} incidents"
            f" ({self.silenced:,} silenced), {self.jobs:,} jobs"
        )


@dataclass(frozen=True)
class Restored:
    """A restore done: what the store holds now, and where the store it replaced is kept
    (None when there was none)."""

    facts: StoreFacts
    kept: Path | None


class StoreInUse(StoreError):
    """Another connection has the store open, so it cannot be replaced."""


@contextlib.contextmanager
def _errors(doing: str) -> Iterator[None]:
    """sqlite3's and the file system's errors as StoreError, saying what was being done."""
    try:
        yield
    except sqlite3.Error as exc:
        raise StoreError(f"{doing}: {exc}") from exc
    except OSError as exc:
        raise StoreError(f"{doing}: {exc.strerror or exc}") from exc


def _store_path(database: str) -> Path:
    if database == ":memory:":
        raise StoreError("QUEUEBOT_DATABASE is :memory:, a store no other process can reach")
    return Path(database).expanduser()


def _read_only(path: Path) -> sqlite3.Connection:
    """A connection that can only read `path` (it never creates the file, nor writes it)."""
    uri = f"{Path(os.path.abspath(path)).as_uri()}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


def _schema(conn: sqlite3.Connection, path: Path) -> tuple[int, set[str]]:
    """The schema version and the tables of the store at `path`, open on `conn`; StoreError
    for a file that is no queuebot store."""
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a SQLite database: {exc}") from exc
    if version < 1 or "incidents" not in tables:
        raise StoreError(f"{path} is not a queuebot store: it holds no incidents table")
    return version, tables


def _facts(conn: sqlite3.Connection, path: Path) -> StoreFacts:
    """What the store at `path`, open on `conn`, holds."""
    version, tables = _schema(conn, path)

    def count(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    # A store from before silences (version 2) or job events (version 5) has none of them.
    silenced = "SELECT COUNT(*) FROM incidents WHERE silence_json IS NOT NULL"
    return StoreFacts(
        size=path.stat().st_size,
        version=version,
        incidents=count("SELECT COUNT(*) FROM incidents"),
        silenced=count(f"{silenced} AND status = 'firing'") if version >= 2 else 0,
        jobs=count("SELECT COUNT(*) FROM jobs") if "jobs" in tables else 0,
    )


def _sync(path: Path) -> None:
    """Flush `path` (a file or a folder) to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_copy(source: sqlite3.Connection, partial: Path) -> StoreFacts:
    """Copy the store open on `source` into the new file `partial`, synced; what it holds."""
    with contextlib.closing(sqlite3.connect(partial, isolation_level=None)) as copy:
        # pages=-1: the whole store in one step (see the module's docstring).
        source.backup(copy, pages=-1)
        copy.execute("PRAGMA journal_mode = DELETE").fetchall()
        facts = _facts(copy, partial)
    _sync(partial)
    return facts


def _partial(beside: Path) -> Path:
    return beside.with_name(f".{beside.name}.{secrets.token_hex(4)}.partial")


def back_up(database: str, target: Path, *, force: bool = False) -> StoreFacts:
    """Copy the store QUEUEBOT_DATABASE names to `target` (replacing a file there only with
    `force`), while a bot may be serving on it; what the copy holds."""
    store = _store_path(database)
    if not store.is_file():
        raise StoreError(f"there is no store at {store} (QUEUEBOT_DATABASE) to back up")
    if target.exists():
        if target.samefile(store):
            raise StoreError(f"{target} is the store itself: give the backup another path")
        if not force:
            raise StoreError(
                f"{target} already exists: give another path, or --force to replace it"
            )
    partial = _partial(target)
    try:
        with _errors(f"cannot back up {store} to {target}"):
            with contextlib.closing(_read_only(store)) as source:
                _schema(source, store)
                facts = _write_copy(source, partial)
            if force:
                os.replace(partial, target)
            else:
                # A link, unlike a rename, never replaces a file that appeared meanwhile.
                try:
                    os.link(partial, target)
                except FileExistsError:
                    raise StoreError(
                        f"{target} already exists: give another path, or --force to replace it"
                    ) from None
            _sync(target.parent)
    finally:
        partial.unlink(missing_ok=True)
    return facts


def _checked_backup(source: sqlite3.Connection, path: Path) -> None:
    """Refuse a backup this queuebot cannot open: no store, a damaged one, a newer one."""
    version, _ = _schema(source, path)
    if version > len(MIGRATIONS):
        raise StoreError(
            f"{path} is at schema version {version}, newer than this queuebot knows (it"
            f" knows schema versions up to {len(MIGRATIONS)}): restore it with the queuebot"
            " that wrote it, or a newer one"
        )
    with _errors(f"cannot check {path}"):
        problems = [row[0] for row in source.execute("PRAGMA quick_check")]
    if problems != ["ok"]:
        raise StoreError(f"{path} is damaged (SQLite's quick_check: {problems[0]}): not restored")


@contextlib.contextmanager
def _alone(store: Path) -> Iterator[sqlite3.Connection]:
    """The store's exclusive lock, held until the block ends; StoreInUse at once when another
    connection has the store open."""
    conn = sqlite3.connect(store, isolation_level=None, timeout=0)
    try:
        conn.execute("PRAGMA locking_mode = EXCLUSIVE").fetchall()
        try:
            # In EXCLUSIVE locking mode the lock a transaction takes outlives it.
            conn.execute("BEGIN EXCLUSIVE")
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY:
                raise
            raise StoreInUse(
                f"{store} is open in another process (queuebot serve, or another queuebot"
                " command): SQLite gives restore the store's exclusive lock only while no"
                " other connection has it open. Stop queuebot, then restore again; the store"
                " was left as it was"
            ) from exc
        yield conn
    finally:
        conn.close()


def _drop_wal_files(store: Path) -> None:
    """Remove what SQLite kept beside a store that is gone or out of WAL mode: a stale log
    would be taken for the new file's own."""
    for suffix in WAL_FILES:
        Path(f"{store}{suffix}").unlink(missing_ok=True)


def _owned_like(path: Path, replaced: os.stat_result) -> None:
    """The restored store keeps the owner and mode of the one it replaces: restored by root
    for a service's own user (systemd's DynamicUser, a container's uid), it must stay theirs."""
    os.chmod(path, stat.S_IMODE(replaced.st_mode))
    if os.geteuid() == 0:
        os.chown(path, replaced.st_uid, replaced.st_gid)


def restore(backup: Path, database: str, *, force: bool = False) -> Restored:
    """Put the backup at `backup` in place of the store QUEUEBOT_DATABASE names, keeping the
    store it replaces as `<db>.before-restore` (replacing an earlier one only with `force`).
    StoreInUse while a bot (or any connection) has the store open."""
    store = _store_path(database)
    if not backup.is_file():
        raise StoreError(f"there is no backup at {backup}")
    kept = store.with_name(store.name + BEFORE_RESTORE)
    exists = store.exists()
    if not exists and not force:
        # QUEUEBOT_DATABASE unset or mistyped would put the backup where no bot reads it.
        raise StoreError(
            f"there is no store at {store} to replace: check QUEUEBOT_DATABASE (the store"
            " `queuebot serve` uses), or --force to make one there"
        )
    if exists and backup.samefile(store):
        raise StoreError(f"{backup} is the store itself: nothing to restore")
    owner = store.stat() if exists else None
    partial = _partial(store)
    try:
        with _errors(f"cannot restore {backup} to {store}"):
            with contextlib.closing(_read_only(backup)) as source:
                _checked_backup(source, backup)
                if exists and kept.exists() and not force:
                    raise StoreError(
                        f"{kept} already holds the store an earlier restore replaced: move it"
                        " away, or --force to replace it"
                    )
                facts = _write_copy(source, partial)
            with _alone(store) if exists else contextlib.nullcontext() as held:
                if held is not None:
                    # The write-ahead log folded into the file, which is then whole alone.
                    held.execute("PRAGMA journal_mode = DELETE").fetchall()
                    os.replace(store, kept)
                _drop_wal_files(store)
                if owner is not None:
                    _owned_like(partial, owner)
                os.replace(partial, store)
                _sync(store.parent)
    finally:
        partial.unlink(missing_ok=True)
    return Restored(facts, kept if exists else None)
