"""The incident store: incidents, the notifications that made them, the Slack outbox, and what
is remembered across replicas (claims, requests seen).

`Store` (in `bot.store.interface`) is what every backend answers; `open_store` picks the backend
from QUEUEBOT_DATABASE (a SQLite path today).
"""

from __future__ import annotations

from bot.store.interface import (
    Digest,
    Due,
    JobActivity,
    JobRow,
    NewIncident,
    OutboxItem,
    OutboxKind,
    OutboxState,
    Pruned,
    QueuedJob,
    Store,
    StoreError,
    Transaction,
    UnfinishedDiagnosis,
)
from bot.store.sqlite import SQLiteStore


async def open_store(database: str) -> Store:
    """Open (creating and migrating) the store named by QUEUEBOT_DATABASE."""
    if database.startswith(("postgresql://", "postgres://")):
        raise StoreError(
            "QUEUEBOT_DATABASE names PostgreSQL, which this version does not support yet;"
            " use a SQLite path"
        )
    return await SQLiteStore.open(database)


__all__ = [
    "Digest",
    "Due",
    "JobActivity",
    "JobRow",
    "NewIncident",
    "OutboxItem",
    "OutboxKind",
    "OutboxState",
    "Pruned",
    "QueuedJob",
    "Store",
    "StoreError",
    "Transaction",
    "UnfinishedDiagnosis",
    "open_store",
]
