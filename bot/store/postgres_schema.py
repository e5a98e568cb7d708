"""How a PostgreSQL database takes the store's migrations (`bot.store.schema`), and the
advisory locks its replicas share.

Several replicas may start together on one database: `migrate` runs in one transaction under a
transaction-level advisory lock, so the first migrates and the others wait, then find nothing
left to do. `CREATE TABLE IF NOT EXISTS` alone is not enough: two sessions creating the same
table at once can both pass the check and one fails on the catalog's unique index.
"""

from __future__ import annotations

import secrets
from enum import IntEnum
from typing import TYPE_CHECKING, TypeAlias

import asyncpg

from bot.store.schema import LEGACY_POSTGRES, Dialect, pending

if TYPE_CHECKING:
    from asyncpg.pool import PoolConnectionProxy

    #: A connection the store's pool lent.
    Connection: TypeAlias = PoolConnectionProxy[asyncpg.Record]


class Lock(IntEnum):
    """The first key of queuebot's two-key advisory locks (`pg_advisory_xact_lock(a, b)`); the
    second is a hash of what is locked. PostgreSQL keeps two-key locks apart from one-key
    locks, so other users of the database's one-key locks never collide with these; a hash
    collision between two group keys only makes one wait for the other."""

    MIGRATION = 0x51420001
    #: Held while a transaction reads and decides about a group key's current incident.
    INCIDENT_GROUP = 0x51420002
    #: Held while a transaction looks for, or opens, a channel's storm digest.
    DIGEST_CHANNEL = 0x51420003
    #: Held while a delivery is merged into a job's row.
    JOB = 0x51420004
    #: Held while a transaction registers runner types for the fleet's totals.
    FLEET_TYPES = 0x51420005


async def migrate(conn: Connection) -> None:
    """Bring the database to the newest schema, once however many replicas start together."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1, 0)", int(Lock.MIGRATION))
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY,"
            " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        current = await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_version")
        if current in LEGACY_POSTGRES:
            current = await _renumber(conn)
        for version, step in pending(Dialect.POSTGRESQL, current):
            # Without arguments, asyncpg sends the step as one simple query: all of it.
            await conn.execute(step)
            await conn.execute("INSERT INTO schema_version (version) VALUES ($1)", version)
        await conn.execute(
            "INSERT INTO store_identity (id, store_id) VALUES (1, $1) ON CONFLICT (id) DO NOTHING",
            secrets.token_hex(16),
        )


async def _renumber(conn: Connection) -> int:
    """Give the versions of a database made before the history was one their numbers in it
    (`LEGACY_POSTGRES`), the highest first so no two meet; the version it is now at.

    A database this history made is never seen at one of those numbers: it commits every
    step up to the newest in the one transaction."""
    for old, new in sorted(LEGACY_POSTGRES.items(), reverse=True):
        await conn.execute("UPDATE schema_version SET version = $1 WHERE version = $2", new, old)
    return int(await conn.fetchval("SELECT MAX(version) FROM schema_version"))
