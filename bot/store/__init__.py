"""The incident store: incidents, the notifications that made them, the Slack outbox, and what
is remembered across replicas (claims, requests seen).

`Store` (in `bot.store.interface`) is what every backend answers; `open_store` picks the backend
from QUEUEBOT_DATABASE: a `postgresql://` (or `postgres://`) URL names a PostgreSQL database,
which several replicas can share; anything else is the path of a SQLite file.
"""

from __future__ import annotations

from bot.domain.clock import SYSTEM, Clock
from bot.store.interface import Store, Transaction
from bot.store.postgres import PostgresStore
from bot.store.records import (
    Digest,
    DoubtfulJob,
    Due,
    FleetTotals,
    HeadsUpRecord,
    JobActivity,
    JobRow,
    JobSpan,
    NewIncident,
    OutboxItem,
    OutboxKind,
    OutboxState,
    Pruned,
    QueueCount,
    QueuedJob,
    ReportRecord,
    StoreError,
    UnfinishedDiagnosis,
    bucket_part,
)
from bot.store.sqlite import SQLiteStore

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_server(database: str) -> bool:
    """Whether QUEUEBOT_DATABASE names a PostgreSQL server rather than a SQLite file."""
    return database.startswith(POSTGRES_SCHEMES)


async def open_store(database: str, clock: Clock = SYSTEM) -> Store:
    """Open (creating and migrating) the store named by QUEUEBOT_DATABASE; it reads `clock`'s
    Unix seconds."""
    if is_server(database):
        return await PostgresStore.open(database, clock)
    return await SQLiteStore.open(database, clock)


__all__ = [
    "Digest",
    "DoubtfulJob",
    "Due",
    "FleetTotals",
    "HeadsUpRecord",
    "JobActivity",
    "JobRow",
    "JobSpan",
    "NewIncident",
    "OutboxItem",
    "OutboxKind",
    "OutboxState",
    "Pruned",
    "QueueCount",
    "QueuedJob",
    "ReportRecord",
    "Store",
    "StoreError",
    "Transaction",
    "UnfinishedDiagnosis",
    "bucket_part",
    "is_server",
    "open_store",
]
