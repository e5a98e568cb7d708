"""`queuebot backup` and `queuebot restore` on a PostgreSQL store: both exit non-zero with the
pg_dump or pg_restore command line to run, the password left out; run, those lines carry the
store, as a bot filled it, into another database, which the store then opens."""

from __future__ import annotations

import asyncio
import shlex
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from bot.store.postgres import PostgresStore
from testkit.github import HOOK_SECRET, deliver, job_delivery
from testkit.harness import running_stack
from testkit.integration import require_binary
from testkit.payloads import reference
from testkit.postgres import fresh_database
from tests.cli.test_backup import queuebot

pytestmark = pytest.mark.integration

#: Jobs are kept 14 days by the machine's clock: the deliveries' times follow it.
T0 = (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0)


def incident(group_key: str) -> dict[str, object]:
    body = reference()
    body["groupKey"] = group_key
    return body


def with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{host}"))


def printed_command(err: str, program: str) -> list[str]:
    """The command line the refusal on stderr says to run, split as a shell would."""
    (line,) = [line.strip() for line in err.splitlines() if line.strip().startswith(program)]
    return shlex.split(line)


async def run(command: list[str]) -> None:
    process = await asyncio.create_subprocess_exec(*command, stderr=asyncio.subprocess.PIPE)
    _, err = await process.communicate()
    assert process.returncode == 0, err.decode()


async def test_postgresql_is_told_the_pg_dump_and_pg_restore_lines_that_work(
    tmp_path: Path,
) -> None:
    """For a PostgreSQL store both commands exit non-zero with the command line to run, the
    password left out; run, those lines carry the store into another database."""
    require_binary("pg_dump", "apt-get install -y postgresql-client")
    dump = tmp_path / "queuebot.dump"
    async with fresh_database() as source, fresh_database() as target:
        async with running_stack(
            tmp_path, QUEUEBOT_DATABASE=source, GITHUB_WEBHOOK_SECRET=HOOK_SECRET
        ) as stack:
            assert (await stack.webhook(incident("pg-incident"))).status == 202
            for job in range(1, 6):
                body = job_delivery("queued", job, T0)
                assert (await deliver(stack.http, stack.url, body))[0] == 202
            await stack.settled()
        await (await PostgresStore.open(target)).close()

        code, out, err = await queuebot(
            "backup", str(dump), database=with_password(source, "hunter2")
        )
        assert (code, out) == (2, "")
        assert "hunter2" not in err
        assert "pg_dump" in err.splitlines()[0]
        await run(printed_command(err, "pg_dump"))
        code, out, err = await queuebot(
            "restore", str(dump), database=with_password(target, "hunter2")
        )
        assert (code, out) == (2, "")
        assert "hunter2" not in err
        await run(printed_command(err, "pg_restore"))

        read = "SELECT store_id FROM store_identity", "SELECT id FROM jobs ORDER BY id"
        dumped, restored = await asyncpg.connect(source), await asyncpg.connect(target)
        try:
            for sql in read:
                assert await dumped.fetch(sql) == await restored.fetch(sql)
        finally:
            await dumped.close()
            await restored.close()
        opened = await PostgresStore.open(target)
        try:
            assert len(await opened.job_spans(0.0, 2.0**40)) == 5
            firing, _ = await opened.firing_incidents(10)
            assert [incident.group_key for incident in firing] == ["pg-incident"]
        finally:
            await opened.close()
