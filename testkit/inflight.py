"""A request held in flight: how the tests show that `queuebot serve`, told to stop, closes its
door to new connections at once but finishes the requests it is already answering.

A Grafana notification is held inside its handler by the store. The test takes, in PostgreSQL,
the advisory lock the bot takes on a notification's group key before it reads the group's
incident (`bot.store.postgres_tx`), and sees in `pg_stat_activity` the bot's connection wait
for it: the request's body has been read and its handler is running, for as long as the test
holds the lock. (A request still sending its body when the stop comes is not in flight in this
sense: aiohttp stops reading every connection at once, and drops such a request after the
grace.)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from bot.store.postgres_schema import Lock

#: Connections of the current database waiting for an advisory lock.
WAITING = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    " AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
)


class GroupHold:
    """The group key's lock, held by the test in an open transaction."""

    def __init__(self, conn: asyncpg.Connection, url: str) -> None:
        self._conn, self._url = conn, url
        self._transaction = conn.transaction()

    async def take(self, group_key: str) -> None:
        await self._transaction.start()
        await self._conn.execute(
            "SELECT pg_advisory_xact_lock($1, hashtext($2))", int(Lock.INCIDENT_GROUP), group_key
        )

    async def waited_for(self, within: float = 10.0) -> None:
        """Wait until a connection of the bot waits for the lock."""
        watcher = await asyncpg.connect(self._url)
        try:
            async with asyncio.timeout(within):
                while not await watcher.fetchval(WAITING):  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
        finally:
            await watcher.close()

    async def release(self) -> None:
        await self._transaction.commit()


@asynccontextmanager
async def group_held(url: str, group_key: str) -> AsyncIterator[GroupHold]:
    """Hold the store's lock on `group_key` in the PostgreSQL database at `url` until
    `release()` (or the block's end)."""
    conn = await asyncpg.connect(url)
    try:
        hold = GroupHold(conn, url)
        await hold.take(group_key)
        yield hold
    finally:
        await conn.close()


async def refused(host: str, port: int, within: float = 10.0) -> None:
    """Wait until connecting to `host:port` is refused: the server takes no new requests."""
    async with asyncio.timeout(within):
        while True:
            try:
                _reader, writer = await asyncio.open_connection(host, port)
            except ConnectionRefusedError:
                return
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            await asyncio.sleep(0.02)
