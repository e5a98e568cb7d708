"""The store's connections to PostgreSQL: two pools (alerts and the rest; job history), each
connection waited for ACQUIRE_TIMEOUT at most.

Every asyncpg, socket and timeout error leaves here as StoreError (`postgres_errors`).
asyncpg's pool replaces a connection the server dropped by itself: the call that finds it
dropped fails (503, Grafana sends again), the next one gets a new connection.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import asyncpg

from bot.store.postgres_schema import migrate
from bot.store.records import StoreError
from bot.store.statements import numbered

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
        """One statement (`?` placeholders, `bot.store.statements`) in a transaction of its
        own; the rows it changed."""
        doing = "the store cannot be written"
        with postgres_errors(doing):
            conn = await self._acquire(self._pool, doing)
            try:
                return changed(await conn.execute(numbered(sql), *args))
            finally:
                await self._pool.release(conn)

    async def fetch(self, sql: str, *args: Any, jobs: bool = False) -> list[asyncpg.Record]:
        doing = "the store cannot be read"
        pool = self._jobs_pool if jobs else self._pool
        with postgres_errors(doing):
            conn = await self._acquire(pool, doing)
            try:
                return list(await conn.fetch(numbered(sql), *args))
            finally:
                await pool.release(conn)

    async def close(self) -> None:
        with postgres_errors("cannot close the connections"):
            await self._pool.close()
            await self._jobs_pool.close()
