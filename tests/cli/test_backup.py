"""`queuebot backup` and `queuebot restore`, run as processes: a SQLite store copied while the
bot keeps taking Grafana's and GitHub's webhooks, put back once no bot serves on it, and opened
again by a bot; and the refusals (a bot serving, a file in the way, a newer or foreign backup).
PostgreSQL's answer is `test_backup_postgres`'s."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import stat
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.slack.contract import ActionId, SilenceInput
from bot.store.backup import BEFORE_RESTORE
from bot.store.schema import MIGRATIONS
from bot.web.routes import EDGES
from queuebot_lab.sandbox.slack import ONCALL_USER, PostedMessage, SlackSandbox
from testkit.alertmanager import Alertmanager
from testkit.github import HOOK_SECRET, deliver, job_delivery
from testkit.harness import (
    BOT_TOKEN,
    CHANNEL_NAME,
    SIGNING_SECRET,
    Stack,
    running_stack,
    serve_process,
)
from testkit.payloads import reference
from testkit.servers import free_port

#: Jobs are kept 14 days by the machine's clock: the deliveries' times follow it.
T0 = (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0)


async def queuebot(*args: str, database: str | Path) -> tuple[int, str, str]:
    """Run `queuebot ARGS` with QUEUEBOT_DATABASE=`database`: its exit status, stdout, stderr."""
    env = {"PATH": os.environ["PATH"], "QUEUEBOT_DATABASE": str(database)}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
        return [tuple(row) for row in db.execute(sql)]


def job_ids(path: Path) -> set[int]:
    """The ids of the jobs the store at `path` holds (none where it has no jobs table yet)."""
    if not rows(path, "SELECT name FROM sqlite_master WHERE name = 'jobs'"):
        return set()
    return {row[0] for row in rows(path, "SELECT id FROM jobs")}


def partials(folder: Path) -> list[Path]:
    """Copies left half-written in `folder`."""
    return list(folder.glob(".*.partial"))


def wal_files(store: Path) -> list[Path]:
    """What SQLite keeps beside the store at `store` while it is in WAL mode."""
    return [found for suffix in ("-wal", "-shm") if (found := Path(f"{store}{suffix}")).exists()]


def alert(group_key: str) -> dict[str, Any]:
    body = reference()
    body["groupKey"] = group_key
    return body


class Feeder:
    """Webhooks sent to the bot until stopped: a new job's `queued` delivery from GitHub, and
    every fifth time a notification of a new incident from Grafana."""

    def __init__(self, stack: Stack) -> None:
        self._stack = stack
        self.statuses: list[int] = []
        self._stopped = asyncio.Event()

    async def run(self) -> None:
        sent = 0
        while not self._stopped.is_set():
            sent += 1
            body = job_delivery("queued", 100_000 + sent, T0 + timedelta(seconds=sent))
            status, _ = await deliver(self._stack.http, self._stack.url, body)
            self.statuses.append(status)
            if sent % 5 == 0:
                self.statuses.append((await self._stack.webhook(alert(f"fed-{sent}"))).status)

    async def more(self, count: int) -> None:
        """Wait until `count` more webhooks were answered."""
        target = len(self.statuses) + count
        async with asyncio.timeout(30):
            while len(self.statuses) < target:  # noqa: ASYNC110
                await asyncio.sleep(0.01)

    def stop(self) -> None:
        self._stopped.set()


@contextlib.asynccontextmanager
async def feeding(stack: Stack) -> AsyncIterator[Feeder]:
    feeder = Feeder(stack)
    task = asyncio.create_task(feeder.run())
    try:
        yield feeder
    finally:
        feeder.stop()
        await task


async def silence(stack: Stack, parent: PostedMessage) -> None:
    """The on-call silences the incident for 2 hours through Slack's modal."""
    sandbox = stack.sandbox
    opened = len(sandbox.views)
    clicked = await sandbox.click(sandbox.channel_id, parent.ts, ActionId.SILENCE.value)
    assert clicked.status == 200
    view = await sandbox.wait_for(
        lambda: sandbox.views[opened] if len(sandbox.views) > opened else None
    )
    form = {SilenceInput.DURATION.value: {SilenceInput.DURATION.value: "2h"}}
    assert (await sandbox.submit_view(view.id, form, ONCALL_USER)).status == 200

    def silenced() -> bool:
        shown = sandbox.message(None, parent.ts)
        return shown is not None and "Silenced until" in stack.text(shown)

    await sandbox.wait_for(silenced, timeout=10)


@pytest.mark.integration
async def test_backup_and_restore_round_trip_while_webhooks_keep_coming(
    tmp_path: Path, alertmanager: Alertmanager
) -> None:
    """A backup taken while GitHub's and Grafana's webhooks keep coming is one consistent
    moment of the store (incidents, a silence, jobs); restored once the bot has stopped, it is
    what a new bot opens, and the store it replaced is kept whole."""
    env = {
        "GRAFANA_URL": alertmanager.url,
        "GRAFANA_TOKEN": "glsa_test_token",
        "GITHUB_WEBHOOK_SECRET": HOOK_SECRET,
    }
    store, copy = tmp_path / "queuebot.db", tmp_path / "backups" / "queuebot-1.db"
    copy.parent.mkdir()
    async with running_stack(tmp_path, **env) as stack:
        for n in range(3):
            assert (await stack.webhook(alert(f"incident-{n}"))).status == 202
        parents = await stack.parents(3)
        await silence(stack, parents[0])
        for job in range(1, 41):
            body = job_delivery("queued", job, T0 + timedelta(seconds=job))
            assert (await deliver(stack.http, stack.url, body))[0] == 202
        async with feeding(stack) as feeder:
            await feeder.more(10)
            answered = len(feeder.statuses)
            code, out, err = await queuebot("backup", str(copy), database=store)
            during = len(feeder.statuses) - answered
            await feeder.more(10)
        assert (code, err) == (0, "")
        assert during > 0, "no webhook came while the backup ran"
        assert set(feeder.statuses) == {202}
        await stack.settled()
        (silenced,) = await stack.app[EDGES].store.silenced_incidents()

    # One moment of the store: everything before the backup, none of what came after it.
    backed, live = job_ids(copy), job_ids(store)
    assert set(range(1, 41)) < backed < live
    assert rows(copy, "PRAGMA integrity_check") == [("ok",)]
    assert rows(copy, "PRAGMA foreign_key_check") == []
    assert not partials(copy.parent)
    assert rows(copy, "PRAGMA journal_mode") == [("delete",)]
    (incidents,) = rows(copy, "SELECT COUNT(*) FROM incidents")[0]
    assert out == (
        f"queuebot: wrote {copy}: {copy.stat().st_size:,} bytes, schema version"
        f" {len(MIGRATIONS)}, {incidents:,} incidents (1 silenced), {len(backed):,} jobs\n"
    )
    held = {
        table: rows(copy, f"SELECT * FROM {table} ORDER BY 1")  # noqa: S608 - our own names
        for table in ("incidents", "jobs", "outbox", "notifications")
    }
    replaced = {table: rows(store, f"SELECT * FROM {table} ORDER BY 1") for table in held}  # noqa: S608

    code, out, err = await queuebot("restore", str(copy), database=store)
    assert (code, err) == (0, "")
    kept = tmp_path / f"queuebot.db{BEFORE_RESTORE}"
    assert out.startswith(f"queuebot: restored {copy} to {store}: ")
    assert out.endswith(f"; the store it replaced is kept as {kept}\n")
    for table, before in held.items():
        assert rows(store, f"SELECT * FROM {table} ORDER BY 1") == before  # noqa: S608
        assert rows(kept, f"SELECT * FROM {table} ORDER BY 1") == replaced[table]  # noqa: S608

    async with running_stack(tmp_path, **env) as again:
        opened = again.app[EDGES].store
        firing, _ = await opened.firing_incidents(1000)
        assert len(firing) == incidents
        assert [i.group_key for i in await opened.silenced_incidents()] == [silenced.group_key]
        assert len(await opened.job_spans(0.0, 2.0**40)) == len(backed)
        fresh = job_delivery("queued", 999_999, T0)
        assert (await deliver(again.http, again.url, fresh))[0] == 202
    assert 999_999 in job_ids(store)


async def test_restore_refuses_while_a_bot_serves(tmp_path: Path) -> None:
    """Restore is refused while a bot has the store open, saying how that was told; the store
    is left as it was and the bot goes on writing to it."""
    store, copy = tmp_path / "queuebot.db", tmp_path / "copy.db"
    async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
        assert (await deliver(stack.http, stack.url, job_delivery("queued", 1, T0)))[0] == 202
        assert (await queuebot("backup", str(copy), database=store))[0] == 0
        code, out, err = await queuebot("restore", str(copy), database=store)
        assert (code, out) == (1, "")
        assert err == (
            f"queuebot: {store} is open in another process (queuebot serve, or another queuebot"
            " command): SQLite gives restore the store's exclusive lock only while no other"
            " connection has it open. Stop queuebot, then restore again; the store was left as"
            " it was\n"
        )
        assert not (tmp_path / f"queuebot.db{BEFORE_RESTORE}").exists()
        assert (await deliver(stack.http, stack.url, job_delivery("queued", 2, T0)))[0] == 202
    assert job_ids(store) == {1, 2}
    assert not partials(tmp_path)


@pytest.mark.slow
async def test_restore_keeps_what_a_killed_bot_left_in_its_log(tmp_path: Path) -> None:
    """A bot killed with SIGKILL leaves its last commits in the write-ahead log only: the store
    restore replaces is kept with them, and no log of it is left for the restored file."""
    store, copy = tmp_path / "queuebot.db", tmp_path / "empty.db"
    sandbox = SlackSandbox(
        bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
    )
    await sandbox.start()
    try:
        port = free_port()
        bot = await serve_process(sandbox, store, port, GITHUB_WEBHOOK_SECRET=HOOK_SECRET)
        try:
            assert (await queuebot("backup", str(copy), database=store))[0] == 0
            async with aiohttp.ClientSession() as http:
                for job in range(1, 21):
                    body = job_delivery("queued", job, T0)
                    assert (await deliver(http, f"http://127.0.0.1:{port}", body))[0] == 202
        finally:
            bot.kill()
            await bot.wait()
    finally:
        await sandbox.stop()
    alone = tmp_path / "file-alone.db"
    alone.write_bytes(store.read_bytes())
    assert len(job_ids(alone)) < 20, "the jobs were folded into the file before the kill"

    code, _, err = await queuebot("restore", str(copy), database=store)
    assert (code, err) == (0, "")
    assert job_ids(tmp_path / f"queuebot.db{BEFORE_RESTORE}") == set(range(1, 21))
    assert job_ids(store) == set()
    assert wal_files(store) == []


async def test_backup_refuses_to_overwrite_a_file_without_force(tmp_path: Path) -> None:
    store, target = tmp_path / "queuebot.db", tmp_path / "taken.db"
    async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
        assert (await deliver(stack.http, stack.url, job_delivery("queued", 1, T0)))[0] == 202
        target.write_text("someone's file")
        code, out, err = await queuebot("backup", str(target), database=store)
        assert (code, out) == (1, "")
        assert err == (
            f"queuebot: {target} already exists: give another path, or --force to replace it\n"
        )
        assert target.read_text() == "someone's file"
        code, out, _ = await queuebot("backup", "--force", str(target), database=store)
        assert code == 0
        assert job_ids(target) == {1}
        code, _, err = await queuebot("backup", "--force", str(store), database=store)
        assert (code, err) == (
            1,
            f"queuebot: {store} is the store itself: give the backup another path\n",
        )


async def test_restore_refuses_a_newer_or_foreign_backup(tmp_path: Path) -> None:
    """A backup a newer queuebot wrote, or a file that is no queuebot store, is refused before
    the store is touched."""
    store = tmp_path / "queuebot.db"
    async with running_stack(tmp_path):
        pass
    newer, foreign = tmp_path / "newer.db", tmp_path / "foreign.db"
    assert (await queuebot("backup", str(newer), database=store))[0] == 0
    with contextlib.closing(sqlite3.connect(newer)) as db:
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with contextlib.closing(sqlite3.connect(foreign)) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
    before = store.read_bytes()
    code, _, err = await queuebot("restore", str(newer), database=store)
    assert code == 1
    assert err == (
        f"queuebot: {newer} is at schema version {len(MIGRATIONS) + 1}, newer than this queuebot"
        f" knows (it knows schema versions up to {len(MIGRATIONS)}): restore it with the"
        " queuebot that wrote it, or a newer one\n"
    )
    code, _, err = await queuebot("restore", str(foreign), database=store)
    assert (code, err) == (
        1,
        f"queuebot: {foreign} is not a queuebot store: it holds no incidents table\n",
    )
    assert store.read_bytes() == before
    assert not (tmp_path / f"queuebot.db{BEFORE_RESTORE}").exists()


async def test_restore_where_no_store_is_asks_for_force_and_keeps_the_owner_and_mode(
    tmp_path: Path,
) -> None:
    """A QUEUEBOT_DATABASE naming no store (unset, mistyped) is not filled without --force;
    the restored store keeps the mode of the one it replaces (a service's own file)."""
    store = tmp_path / "queuebot.db"
    async with running_stack(tmp_path):
        pass
    backup = tmp_path / "backup.db"
    assert (await queuebot("backup", str(backup), database=store))[0] == 0
    elsewhere = tmp_path / "typo" / "queuebot.db"
    elsewhere.parent.mkdir()
    code, _, err = await queuebot("restore", str(backup), database=elsewhere)
    assert (code, err) == (
        1,
        f"queuebot: there is no store at {elsewhere} to replace: check QUEUEBOT_DATABASE (the"
        " store `queuebot serve` uses), or --force to make one there\n",
    )
    assert not elsewhere.exists()
    assert (await queuebot("restore", "--force", str(backup), database=elsewhere))[0] == 0
    assert elsewhere.exists()
    store.chmod(0o600)
    assert (await queuebot("restore", str(backup), database=store))[0] == 0
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
