"""A fresh PostgreSQL database for a test, dropped afterwards.

The server is the one at QUEUEBOT_TEST_POSTGRES (a URL of a database to connect to while
creating the test's own), by default a local PostgreSQL with trust authentication. A test
needing it is skipped where no server answers, and fails in CI (`QUEUEBOT_REQUIRE_INTEGRATION=1`,
`tests.support.integration`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from tests.support.integration import require

DEFAULT_BASE = "postgresql://postgres@127.0.0.1:5432/test"

#: Read when the tests are collected: every test's environment is cleared of QUEUEBOT_*
#: variables (tests/conftest.py) before it runs.
BASE = os.environ.get("QUEUEBOT_TEST_POSTGRES") or DEFAULT_BASE


def with_database(url: str, name: str) -> str:
    """`url` naming the database `name` instead of its own."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


async def admin_connection(url: str = BASE) -> asyncpg.Connection:
    """A connection to the server's base database; skips the test (fails it in CI) when no
    server answers there."""
    try:
        return await asyncpg.connect(url, timeout=5)
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        require(f"PostgreSQL at {urlsplit(url).hostname}:{urlsplit(url).port or 5432}", str(exc))
        raise  # require() has skipped or failed the test already


@asynccontextmanager
async def fresh_database() -> AsyncIterator[str]:
    """The URL of a new, empty database, dropped (its connections closed) afterwards."""
    admin = await admin_connection()
    name = f"queuebot_{secrets.token_hex(6)}"
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield with_database(BASE, name)
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()
