"""The store's contract fixtures: each test that takes `store` or `opener` runs on SQLite and on
PostgreSQL (a fresh database of its own)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.store import Store
from bot.store.postgres import PostgresStore
from bot.store.sqlite import SQLiteStore
from testkit.postgres import fresh_database
from tests.store.contract import Clock, Opener


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    async with fresh_database() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
async def opener(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> AsyncIterator[Opener]:
    """Opens a store on the test's own database: a SQLite file, or a fresh PostgreSQL one."""
    if request.param == "sqlite":
        path = str(tmp_path / "queuebot.db")

        async def sqlite() -> Store:
            return await SQLiteStore.open(path, clock.product)

        yield sqlite
        return
    async with fresh_database() as url:

        async def postgresql() -> Store:
            return await PostgresStore.open(url, clock.product)

        yield postgresql


@pytest.fixture
async def store(opener: Opener) -> AsyncIterator[Store]:
    opened = await opener()
    try:
        yield opened
    finally:
        await opened.close()
