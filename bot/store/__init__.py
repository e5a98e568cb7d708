"""The incident store: incidents, the notifications that made them, and the Slack outbox.

`Store` (in `bot.store.interface`) is what every backend answers; `open_store` picks the backend
from QUEUEBOT_DATABASE (a SQLite path today).
"""

from __future__ import annotations

from bot.store.interface import (
    Digest,
    Due,
    NewIncident,
    OutboxItem,
    OutboxKind,
    OutboxState,
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
    "NewIncident",
    "OutboxItem",
    "OutboxKind",
    "OutboxState",
    "Store",
    "StoreError",
    "Transaction",
    "UnfinishedDiagnosis",
    "open_store",
]
