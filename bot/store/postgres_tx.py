"""The store's connections to PostgreSQL, and one transaction of it: what
`Store.transaction()` hands its caller.

Every asyncpg, socket and timeout error leaves here as StoreError (`postgres_errors`).
asyncpg's pool replaces a connection the server dropped by itself: the call that finds it
dropped fails (503, Grafana sends again), the next one gets a new connection.

SQLite's transaction is exclusive: the whole file is locked while one runs. PostgreSQL runs
replicas' transactions side by side (READ COMMITTED), so what the interface promises is kept
with locks taken where a decision is read:

- `current_incident` takes a transaction-level advisory lock on the group key before it reads,
  and locks the incident's row. Two notifications for one group key, on any replica, are
  applied one after the other: the second reads what the first committed, so a group never
  gets two current incidents and its first post is owed once. (SERIALIZABLE would give the
  same, but every caller would need to retry on serialization failures; a lock just waits.)
  `insert_incident` takes the same lock, and the UNIQUE (group_key, generation) constraint
  still stands behind it: a conflict is refused with StoreError, never a second incident.
- `incident` locks the incident's row (`FOR NO KEY UPDATE`), so a silence recorded on one
  replica and a notification applied on another never overwrite each other's change.
- `enqueue` locks the incident's row before the outbox entry takes its id: one incident's
  entries are committed in id order, which is the order the worker delivers them in.
- `open_digest` and `create_digest` take an advisory lock on the channel: one storm, one digest.

Locks are always taken in the order group key, incident, channel, digest; none is taken in
the other direction, so these transactions cannot deadlock one another.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import asyncpg

from bot.domain.incidents import Incident
from bot.store.interface import Digest, NewIncident, OutboxKind, StoreError
from bot.store.postgres_schema import Lock, migrate
from bot.store.rows import (
    DIGEST_COLUMNS,
    INCIDENT_COLUMNS,
    ParsedGroups,
    digest_from,
    incident_from,
)

if TYPE_CHECKING:
    from bot.store.postgres_schema import Connection

#: Seconds to connect, and for one statement: a server that stops answering is an error the
#: webhook reports (503), not a request that hangs.
CONNECT_TIMEOUT = 10.0
COMMAND_TIMEOUT = 30.0
#: Connections one replica holds at most for alerts, the outbox, silences and the rest...
POOL_SIZE = 10
#: ...and, apart, for GitHub's job deliveries and the long reads of job history (reports,
#: diagnostics' windows): a flood of deliveries or a locked jobs table never keeps an alert
#: waiting for a connection.
JOBS_POOL_SIZE = 5
#: How long a request waits for a free connection before the store says it is busy (503).
ACQUIRE_TIMEOUT = 5.0

#: What a lost server, a refused connection or a failed statement raises: all are StoreError
#: past this module, so a webhook answers 503 and Grafana sends it again.
#: (A connection the server drops in the middle of a statement can leave asyncpg's protocol
#: in a state it reports as an InternalClientError.)
FAILURES = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    OSError,
    TimeoutError,
)
#: Opening also fails on a URL asyncpg cannot parse.
OPEN_FAILURES = (*FAILURES, ValueError)


@contextlib.contextmanager
def postgres_errors(doing: str) -> Iterator[None]:
    """asyncpg's and the connection's errors as StoreError, saying what was being done."""
    try:
        yield
    except FAILURES as exc:
        # A connection's error names the server's address: kept out of the public words.
        public = f"{doing}: {exc.__class__.__name__}"
        if isinstance(exc, asyncpg.PostgresError):
            public += f": {exc}"
        raise StoreError(f"{doing}: {exc.__class__.__name__}: {exc}", public) from exc


def changed(status: str) -> int:
    """The rows a statement changed, from its command tag (`UPDATE 1`, `INSERT 0 1`)."""
    count = status.rpartition(" ")[2]
    return int(count) if count.isdigit() else 0


def moment(unix: float) -> datetime:
    return datetime.fromtimestamp(unix, UTC)


def _where(url: str) -> str:
    """The server and database a URL names, without its password."""
    parts = urlsplit(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path or '/'}"


class PostgresDatabase:
    """The store's two pools of connections to one PostgreSQL database: one for job history
    (`jobs=True`), one for everything else; a connection is waited for ACQUIRE_TIMEOUT at
    most."""

    def __init__(self, pool: asyncpg.Pool, jobs_pool: asyncpg.Pool) -> None:
        self._pool = pool
        self._jobs_pool = jobs_pool

    @classmethod
    async def open(cls, url: str) -> PostgresDatabase:
        """Connect and migrate (`bot.store.postgres_schema`)."""
        pools: list[asyncpg.Pool] = []
        try:
            for size in (POOL_SIZE, JOBS_POOL_SIZE):
                pools.append(
                    await asyncpg.create_pool(
                        url,
                        min_size=1,
                        max_size=size,
                        timeout=CONNECT_TIMEOUT,
                        command_timeout=COMMAND_TIMEOUT,
                    )
                )
        except OPEN_FAILURES as exc:
            for pool in pools:
                await pool.close()
            raise StoreError(
                f"cannot connect to PostgreSQL at {_where(url)}: {exc}",
                f"cannot connect to PostgreSQL: {exc.__class__.__name__}",
            ) from exc
        try:
            async with pools[0].acquire() as conn:
                await migrate(conn)
        except FAILURES as exc:
            for pool in pools:
                await pool.close()
            raise StoreError(f"{_where(url)} is not a usable queuebot database: {exc}") from exc
        except BaseException:
            for pool in pools:
                await pool.close()
            raise
        return cls(*pools)

    async def _acquire(self, pool: asyncpg.Pool, doing: str) -> Connection:
        try:
            return await pool.acquire(timeout=ACQUIRE_TIMEOUT)
        except TimeoutError as exc:
            busy = f"{doing}: every connection is busy (waited {ACQUIRE_TIMEOUT:g} s)"
            raise StoreError(busy) from exc

    @asynccontextmanager
    async def transaction(self, doing: str, *, jobs: bool = False) -> AsyncIterator[Connection]:
        """A connection (of the jobs' pool, `jobs`) in a transaction, committed when the block
        ends and rolled back when it raises; StoreError, saying what was being `doing`, when
        the database fails or no connection is free in time."""
        pool = self._jobs_pool if jobs else self._pool
        with postgres_errors(doing):
            conn = await self._acquire(pool, doing)
        try:
            with postgres_errors(doing):
                tx = conn.transaction()
                await tx.start()
            try:
                with postgres_errors(doing):
                    yield conn
            except BaseException:
                # A connection the server dropped has nothing to roll back: the error that
                # ended the block is the one to report.
                with contextlib.suppress(*FAILURES):
                    await tx.rollback()
                raise
            with postgres_errors(doing):
                await tx.commit()
        finally:
            with postgres_errors("cannot return a connection to the pool"):
                await pool.release(conn)

    async def write(self, sql: str, *args: Any) -> int:
        """One statement in a transaction of its own; the rows it changed."""
        doing = "the store cannot be written"
        with postgres_errors(doing):
            conn = await self._acquire(self._pool, doing)
            try:
                return changed(await conn.execute(sql, *args))
            finally:
                await self._pool.release(conn)

    async def fetch(self, sql: str, *args: Any, jobs: bool = False) -> list[asyncpg.Record]:
        doing = "the store cannot be read"
        pool = self._jobs_pool if jobs else self._pool
        with postgres_errors(doing):
            conn = await self._acquire(pool, doing)
            try:
                return list(await conn.fetch(sql, *args))
            finally:
                await pool.release(conn)

    async def close(self) -> None:
        with postgres_errors("cannot close the connections"):
            await self._pool.close()
            await self._jobs_pool.close()


class PostgresTransaction:
    def __init__(
        self,
        conn: Connection,
        groups: ParsedGroups,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._conn = conn
        self._groups = groups
        self._now = clock

    async def _one(self, sql: str, *args: Any) -> asyncpg.Record | None:
        with postgres_errors("the store cannot be read"):
            return await self._conn.fetchrow(sql, *args)

    async def _execute(self, sql: str, *args: Any) -> str:
        with postgres_errors("the store cannot be written"):
            return await self._conn.execute(sql, *args)

    async def _lock(self, kind: Lock, key: str) -> None:
        await self._execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", int(kind), key)

    async def current_incident(self, group_key: str) -> Incident | None:
        await self._lock(Lock.INCIDENT_GROUP, group_key)
        row = await self._one(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE group_key = $1"  # noqa: S608
            " ORDER BY generation DESC LIMIT 1 FOR NO KEY UPDATE",
            group_key,
        )
        return incident_from(row, self._groups) if row else None

    async def incident(self, incident_id: int) -> Incident | None:
        row = await self._one(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE id = $1"  # noqa: S608
            " FOR NO KEY UPDATE",
            incident_id,
        )
        return incident_from(row, self._groups) if row else None

    async def holds(self, incident_id: int, purpose: str, owner: str) -> bool:
        row = await self._one(
            "SELECT 1 FROM claims WHERE incident_id = $1 AND purpose = $2 AND owner = $3"
            " AND until >= $4",
            incident_id,
            purpose,
            owner,
            self._now(),
        )
        return row is not None

    async def insert_incident(self, new: NewIncident) -> Incident:
        await self._lock(Lock.INCIDENT_GROUP, new.group_key)
        now = moment(self._now())
        group_json = new.group.model_dump_json()
        self._groups.remember(group_json, new.group)
        row = await self._one(
            "INSERT INTO incidents (group_key, generation, channel, status, group_json,"  # noqa: S608
            " started_at, resolved_at, previous_id, created_at, updated_at, digest_id)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10)"
            " ON CONFLICT (group_key, generation) DO NOTHING"
            f" RETURNING {INCIDENT_COLUMNS}",
            new.group_key,
            new.generation,
            new.channel,
            new.status.value,
            group_json,
            new.started_at,
            new.resolved_at,
            new.previous_id,
            now,
            new.digest_id,
        )
        if row is None:
            raise StoreError(
                f"incident generation {new.generation} of group key {new.group_key!r} exists"
                " already: it was opened without reading the group's current incident first"
            )
        return incident_from(row, self._groups)

    async def save_incident(self, incident: Incident) -> None:
        group_json = incident.group.model_dump_json()
        self._groups.remember(group_json, incident.group)
        await self._execute(
            "UPDATE incidents SET status = $1, group_json = $2, resolved_at = $3,"
            " fired_count = $4, version = $5, silence_json = $6, updated_at = $7 WHERE id = $8",
            incident.status.value,
            group_json,
            incident.resolved_at,
            incident.fired_count,
            incident.version,
            incident.silence.model_dump_json() if incident.silence else None,
            moment(self._now()),
            incident.id,
        )

    async def add_notification(
        self,
        group_key: str,
        received_at: datetime,
        body: str | None,
        outcome: str,
        incident_id: int | None,
        content_key: str | None = None,
    ) -> int:
        sha256 = None
        if body is not None:
            # Kept once per distinct body, deflated: as on SQLite (`bot.store.sqlite_tx`).
            raw = body.encode()
            sha256 = hashlib.sha256(raw).hexdigest()
            await self._execute(
                "INSERT INTO notification_bodies (sha256, deflated) VALUES ($1, $2)"
                " ON CONFLICT (sha256) DO NOTHING",
                sha256,
                zlib.compress(raw, 1),
            )
        row = await self._one(
            "INSERT INTO notifications (group_key, received_at, body_sha256, outcome,"
            " incident_id, content_key) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            group_key,
            received_at,
            sha256,
            outcome,
            incident_id,
            content_key,
        )
        assert row is not None
        return int(row[0])

    async def seen_since(self, group_key: str, content_key: str, since: datetime) -> bool:
        row = await self._one(
            "SELECT 1 FROM notifications WHERE group_key = $1 AND content_key = $2"
            " AND received_at >= $3 LIMIT 1",
            group_key,
            content_key,
            since,
        )
        return row is not None

    async def open_digest(self, channel: str, joined_since: datetime) -> Digest | None:
        await self._lock(Lock.DIGEST_CHANNEL, channel)
        row = await self._one(
            f"SELECT {DIGEST_COLUMNS} FROM digests WHERE channel = $1"  # noqa: S608
            " AND last_joined_at >= $2 ORDER BY id DESC LIMIT 1",
            channel,
            joined_since,
        )
        return digest_from(row) if row else None

    async def count_opening(self, channel: str, at: datetime, window: timedelta) -> int:
        # Under the channel's lock, as the digest is: replicas count one storm together.
        await self._lock(Lock.DIGEST_CHANNEL, channel)
        moment = at.timestamp()
        await self._execute(
            "DELETE FROM channel_openings WHERE channel = $1 AND at < $2",
            channel,
            moment - window.total_seconds(),
        )
        await self._execute(
            "INSERT INTO channel_openings (channel, at) VALUES ($1, $2)", channel, moment
        )
        row = await self._one(
            "SELECT COUNT(*) AS n FROM channel_openings WHERE channel = $1 AND at <= $2",
            channel,
            moment,
        )
        return int(row["n"]) if row else 0

    async def create_digest(self, channel: str, at: datetime) -> Digest:
        await self._lock(Lock.DIGEST_CHANNEL, channel)
        row = await self._one(
            "INSERT INTO digests (channel, opened_at, last_joined_at) VALUES ($1, $2, $2)"  # noqa: S608
            f" RETURNING {DIGEST_COLUMNS}",
            channel,
            at,
        )
        assert row is not None
        return digest_from(row)

    async def touch_digest(self, digest_id: int, joined_at: datetime | None) -> None:
        await self._execute(
            "UPDATE digests SET version = version + 1,"
            " last_joined_at = COALESCE($2, last_joined_at) WHERE id = $1",
            digest_id,
            joined_at,
        )

    async def enqueue(self, incident_id: int, kind: OutboxKind, payload: str = "") -> int:
        # The row lock comes before the entry's id is drawn (see the module's docstring).
        row = await self._one(
            "WITH owner AS (SELECT id FROM incidents WHERE id = $1 FOR NO KEY UPDATE)"
            " INSERT INTO outbox (incident_id, kind, payload, created_at)"
            " SELECT id, $2, $3, $4 FROM owner RETURNING id",
            incident_id,
            kind.value,
            payload,
            self._now(),
        )
        if row is None:
            raise StoreError(f"no incident {incident_id} to owe a delivery for")
        return int(row[0])

    async def add_diagnosis(self, incident_id: int, note_id: int) -> int:
        row = await self._one(
            "INSERT INTO diagnoses (incident_id, note_id, requested_at) VALUES ($1, $2, $3)"
            " RETURNING id",
            incident_id,
            note_id,
            self._now(),
        )
        assert row is not None
        return int(row[0])

    async def finish_diagnosis(self, diagnosis_id: int) -> None:
        await self._execute(
            "UPDATE diagnoses SET finished_at = $1 WHERE id = $2", self._now(), diagnosis_id
        )
