"""What `bench/footprint.py` measures with: a store filled with a week of a fleet's jobs through
the store's own merge, and its size on disk, whole and table by table; a process's memory, CPU
time and children, from /proc; the container image's size in podman's storage.

The jobs are `bench/metrics_scrape.py`'s week (runner types of uneven sizes, most jobs done,
some running, a few thousand waiting now), stored with `Store.record_jobs` in lots, as the
history loader stores GitHub's deliveries: each job's row, its type's totals and one delivery id
remembered as the webhook remembers them (3 days). PostgreSQL merges a delivery in a few round
trips, so lots go in on a few connections at once there (smaller lots: each holds an advisory
lock per job until it commits, and the server's lock table holds 6,400).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from bench.metrics_scrape import Fleet, history, runner_types
from bot.domain.jobs import JobEvent
from bot.store import open_store
from testkit.podman import DebianBase, Podman, build_image, debian_mirror

#: Deliveries per `record_jobs` call, and calls at once, by backend.
LOTS = {"sqlite": (5000, 1), "postgresql": (1000, 3)}
#: How long the GitHub webhook remembers a delivery's id (GitHub redelivers for 3 days).
REMEMBERED = 3 * 86400.0
PROGRESS_EVERY = 200_000


def backend_of(database: str) -> str:
    return "postgresql" if database.startswith("postgresql://") else "sqlite"


async def migrate(database: str) -> None:
    """Make the store's tables as the bot would at its first start, and nothing else."""
    store = await open_store(database)
    await store.close()


async def fill(database: str, jobs: int, types: int, queued: int) -> tuple[float, int]:
    """Store `jobs` jobs of `types` runner types (`queued` of them waiting now) through the
    store's merge; the seconds it took and how many were stored. Then the writes are flushed
    to disk, and PostgreSQL's tables vacuumed and analysed as autovacuum leaves them."""
    lot_size, at_once = LOTS[backend_of(database)]
    now = time.time()
    events = history(jobs, Fleet(runner_types(types)), min(queued, jobs // 10), now)
    store = await open_store(database)
    began = time.monotonic()
    stored = 0
    reported = 0

    def next_lot() -> list[tuple[JobEvent, str]]:
        return [
            (e, f"fill-{e.job_id}-{e.action.value}") for e in itertools.islice(events, lot_size)
        ]

    async def worker() -> None:
        nonlocal stored, reported
        while lot := next_lot():
            new = await store.record_jobs(lot, now + REMEMBERED)
            stored += new  # after the await: `stored += await …` would lose the others' lots
            if stored - reported >= PROGRESS_EVERY:
                reported = stored
                print(f"    {stored:,} jobs stored ({time.monotonic() - began:.0f} s)", flush=True)

    try:
        await asyncio.gather(*(worker() for _ in range(at_once)))
    finally:
        await store.close()
    took = time.monotonic() - began
    if backend_of(database) == "postgresql":
        conn = await asyncpg.connect(database)
        try:
            await conn.execute("VACUUM (ANALYZE)")
            await conn.execute("CHECKPOINT")
        finally:
            await conn.close()
    else:
        await asyncio.to_thread(os.sync)
    return took, stored


@dataclass(frozen=True)
class StoreSize:
    """The database's bytes on disk (SQLite: the file and its write-ahead log; PostgreSQL:
    `pg_database_size`), and each table's with its indexes (and TOAST)."""

    total: int
    wal: int
    tables: dict[str, int]


async def size_of(database: str) -> StoreSize:
    if backend_of(database) == "postgresql":
        return await _postgres_size(database)
    return await asyncio.to_thread(_sqlite_size, Path(database))


def _sqlite_size(path: Path) -> StoreSize:
    wal = path.with_name(path.name + "-wal")
    wal_bytes = wal.stat().st_size if wal.exists() else 0
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        # dbstat: every page of the file, by the table or index it belongs to.
        rows = db.execute(
            "SELECT COALESCE(m.tbl_name, d.name), SUM(d.pgsize) FROM dbstat AS d"
            " LEFT JOIN sqlite_master AS m ON m.name = d.name GROUP BY 1"
        ).fetchall()
    db.close()
    return StoreSize(path.stat().st_size + wal_bytes, wal_bytes, {n: int(s) for n, s in rows})


async def _postgres_size(database: str) -> StoreSize:
    conn = await asyncpg.connect(database)
    try:
        total = await conn.fetchval("SELECT pg_database_size(current_database())")
        rows = await conn.fetch(
            "SELECT c.relname, pg_total_relation_size(c.oid) AS bytes FROM pg_class AS c"
            " JOIN pg_namespace AS n ON n.oid = c.relnamespace"
            " WHERE c.relkind = 'r' AND n.nspname = current_schema()"
        )
    finally:
        await conn.close()
    return StoreSize(int(total), 0, {row["relname"]: int(row["bytes"]) for row in rows})


def memory(pid: int) -> tuple[int, int]:
    """A process's resident memory now and at most so far (VmRSS, VmHWM), in KiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.split()
    return int(fields["VmRSS"][0]), int(fields["VmHWM"][0])


def cpu_seconds(pid: int) -> float:
    """The CPU time a process has spent, in user and kernel mode, all its threads."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # After the command's name (in parentheses, which may hold anything): utime and stime are
    # the 14th and 15th fields of proc(5), the 12th and 13th after the name.
    after = stat.rsplit(")", 1)[1].split()
    return (int(after[11]) + int(after[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[tuple[int, str]]:
    """The processes `pid` started (and theirs), with what each runs."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # ended meanwhile
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    out = []
    for child in sorted(found):
        try:
            command = (Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")).decode()
        except OSError:
            continue
        out.append((child, command.strip()))
    return out


async def image_size(name: str, workdir: Path, *, build: bool = False) -> str:
    """What podman's storage says of the image `name`: its size, or that none is built;
    `build`: built first from this checkout's Containerfile on a Debian base, as the container
    test builds it. Podman runs as that test runs it (`testkit.podman`: runc, a containers.conf
    of its own)."""
    if shutil.which("podman") is None or shutil.which("runc") is None:
        return "no image built (podman or runc is not installed)"
    podman = Podman(workdir)
    if build:
        base = await DebianBase(debian_mirror()).image(podman, workdir)
        await build_image(podman, base, name, workdir)
    if not await podman.exists(name):
        return f"no image built (no `{name}` in podman's storage; --build-image builds it)"
    found = await podman(
        "image", "inspect", "--format", "{{.Size}} {{.Id}} {{.Created}} {{.RepoTags}}", name
    )
    size, image_id, rest = found.stdout.strip().split(" ", 2)
    return f"{int(size) / 1e6:.0f} MB ({int(size):,} bytes), image {image_id[:12]}, {rest}"
