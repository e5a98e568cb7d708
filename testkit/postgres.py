"""A fresh PostgreSQL database for a test, dropped afterwards.

The server is the one at QUEUEBOT_TEST_POSTGRES (a URL of a database to connect to while
creating the test's own), by default a local PostgreSQL with trust authentication. A test
needing it is skipped where no server answers, and fails in CI (`QUEUEBOT_REQUIRE_INTEGRATION=1`,
`testkit.integration`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from testkit.integration import require
from testkit.servers import free_port

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


class PrivateCluster:
    """A PostgreSQL cluster of the test's own (Debian's `initdb` and `pg_ctl`, run as the
    `postgres` user) on a free local port, for tests that stop and start the server."""

    def __init__(self) -> None:
        self._bin, self._runuser = _server_binaries()
        self.port = free_port()
        # Not under pytest's own temporary folder: the postgres user cannot enter root's.
        self.workdir = Path(tempfile.mkdtemp(prefix="queuebot-pg-"))
        shutil.chown(self.workdir, "postgres")

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str) -> None:
        subprocess.run(  # noqa: S603 - Debian's PostgreSQL programs, our arguments
            [self._runuser, "-u", "postgres", "--", *command],
            check=True,
            capture_output=True,
            timeout=60,
        )

    def create(self) -> None:
        self._run(
            f"{self._bin}/initdb", "-D", str(self.workdir / "db"), "-A", "trust", "-U", "postgres"
        )

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.workdir}"
        log = str(self.workdir / "server.log")
        self._run(
            f"{self._bin}/pg_ctl",
            "-D",
            str(self.workdir / "db"),
            "-l",
            log,
            "-w",
            "-o",
            options,
            "start",
        )

    def stop(self) -> None:
        self._run(f"{self._bin}/pg_ctl", "-D", str(self.workdir / "db"), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        """Stop the server if it runs, and delete the cluster."""
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run(
                f"{self._bin}/pg_ctl", "-D", str(self.workdir / "db"), "-m", "immediate", "stop"
            )
        shutil.rmtree(self.workdir, ignore_errors=True)


def _server_binaries() -> tuple[str, str]:
    """Debian's newest PostgreSQL server programs' folder, and runuser; skips the test (fails
    it in CI) without them."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: p.parent.parent.name
    )
    runuser = shutil.which("runuser")
    if not found or runuser is None:
        require("PostgreSQL's server programs", "apt-get install -y postgresql")
    assert runuser is not None
    return str(found[-1].parent), runuser
