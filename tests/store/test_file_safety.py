"""The store's file under the bot's feet: deleted, replaced, or on a disk that fills up. A
webhook is answered 503 (Grafana sends it again) rather than 202 for data that would be lost,
/healthz says why, and nothing accepted is lost once the disk has room again."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.store.sqlite import SQLiteStore
from bot.store.sqlite_db import SQLiteDatabase
from testkit.harness import Stack, running_stack
from testkit.integration import require
from testkit.payloads import reference


async def _health(stack: Stack) -> tuple[int, dict[str, Any]]:
    async with stack.http.get(f"{stack.url}/healthz") as response:
        return response.status, await response.json()


def _alert(name: str, padding: int = 0) -> dict[str, Any]:
    """The reference alert as a group of its own, `padding` bytes of description longer."""
    body = reference()
    body["groupKey"] = f'{{}}:{{alertname="{name}"}}'
    for labels in (body["alerts"][0]["labels"], body["commonLabels"], body["groupLabels"]):
        labels["alertname"] = name
    body["alerts"][0]["fingerprint"] = name
    body["alerts"][0]["annotations"]["description"] += " " + "x" * padding
    return body


@pytest.mark.parametrize("how", ["deleted", "replaced by another database", "moved away"])
async def test_a_database_file_gone_from_under_the_bot_refuses_webhooks(
    tmp_path: Path, how: str
) -> None:
    """What is written to a file nobody will open again is lost: 503, and /healthz says so."""
    database = tmp_path / "queuebot.db"
    async with running_stack(tmp_path) as stack:
        assert (await stack.webhook(_alert("before"))).status == 202
        await stack.parents(1)
        if how == "deleted":
            database.unlink()
        elif how == "moved away":
            database.rename(tmp_path / "queuebot.db.old")
        else:
            other = await SQLiteStore.open(str(tmp_path / "other.db"))
            await other.close()
            os.replace(tmp_path / "other.db", database)
        answer = await stack.webhook(_alert("after"))
        assert answer.status == 503
        assert "send again later" in answer.body["error"]
        status, body = await _health(stack)
        assert status == 503
        assert any("deleted or replaced" in reason for reason in body["reasons"])
        await stack.settled()
        assert len(stack.sandbox.messages()) == 1


@contextlib.contextmanager
def _small_disk(where: Path, megabytes: int) -> Iterator[Path]:
    """A tmpfs of its own, as small as a disk that fills up."""
    where.mkdir()
    mount, umount = shutil.which("mount") or "mount", shutil.which("umount") or "umount"
    mounted = subprocess.run(  # noqa: S603 - fixed arguments
        [mount, "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(where)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        require("a tmpfs of its own (mount, as root)", mounted.stderr.decode().strip())
    try:
        yield where
    finally:
        subprocess.run([umount, "-l", str(where)], check=False)  # noqa: S603


def _fill(disk: Path) -> Path:
    """Fill the disk to the last byte; the file that holds it."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return filler


async def test_a_full_disk_gets_503_and_loses_nothing(tmp_path: Path) -> None:
    """While the disk is full, a webhook gets 503 (never 500) and /healthz says why; once
    there is room again, every notification answered 202 is delivered, and the ones refused
    are taken when Grafana sends them again."""
    with _small_disk(tmp_path / "disk", 16) as disk:
        async with running_stack(disk, QUEUEBOT_DATABASE=str(disk / "queuebot.db")) as stack:
            assert (await stack.webhook(_alert("before"))).status == 202
            await stack.parents(1)
            filler = _fill(disk)
            statuses: dict[str, int] = {}
            for n in range(40):
                name = f"during-{n}"
                statuses[name] = (await stack.webhook(_alert(name, padding=20_000))).status
                if statuses[name] != 202:
                    break
            assert set(statuses.values()) <= {202, 503}
            assert 503 in statuses.values(), statuses
            status, body = await _health(stack)
            assert status == 503
            assert any("full" in reason for reason in body["reasons"]), body
            filler.unlink()
            refused = [name for name, status in statuses.items() if status == 503]
            for name in refused:  # what Grafana does at its next flush
                assert (await stack.webhook(_alert(name, padding=20_000))).status == 202
            await stack.settled(timeout=30)
            posted = {json.dumps(m.blocks) for m in stack.sandbox.messages() if m.thread_ts is None}
            for name in ["before", *statuses]:
                assert sum(name in text for text in posted) >= 1, name
            assert await _health(stack) == (200, {"status": "ok"})


async def test_commits_are_synced_to_disk(tmp_path: Path) -> None:
    """The store's connection writes ahead and syncs every commit (`synchronous = FULL`), so a
    202 survives a power cut, not only a crash (NORMAL in WAL mode syncs at checkpoints only)."""
    database = await SQLiteDatabase.open(str(tmp_path / "queuebot.db"))
    try:
        async with database.db.execute("PRAGMA journal_mode") as cursor:
            assert tuple(await cursor.fetchone() or ()) == ("wal",)
        async with database.db.execute("PRAGMA synchronous") as cursor:
            assert tuple(await cursor.fetchone() or ()) == (2,)  # FULL
    finally:
        await database.close()
