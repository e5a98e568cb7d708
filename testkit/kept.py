"""What the suite fills its servers and stores with, kept from one run of the suite to the next.

A simulated fleet written into a Prometheus costs seconds of CPU (the simulation, and
Prometheus taking a million samples through its remote-write receiver), and so does a week of
its job events loaded into a store; the same code writes the same files from the same spec
every time. So what a fill leaves is kept in pytest's cache directory (`.pytest_cache/d/kept`;
removing it starts from nothing) under a digest of everything that made it: what the caller
names (the spec, the shape), the source of the simulators and of the test kit's fills, the
Prometheus binary that wrote it, and for a store queuebot's own source. A changed simulator,
a changed queuebot, a changed fill or another Prometheus fills anew; nothing is ever read that
the code of this checkout would not write.

One process fills while the others wanting the same storage wait for it (a lock beside it);
the copy is marked whole last, so a run stopped halfway leaves nothing that is read. Entries
no run has used for two days are removed as a run starts. Outside pytest (the benches) nothing
is kept: every fill fills.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import hashlib
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import open_store
from testkit.prometheus import Prometheus

#: Entries unused for this long are removed when a run starts.
UNUSED_SECONDS = 2 * 86400.0
#: The source that decides what a fill writes: both simulators, and the test kit's modules that
#: fill (a change elsewhere in the kit keeps what was filled).
_MAKERS = (
    "fleetmodel",
    "lab/queuebot_lab/simulator",
    "testkit/kept.py",
    "testkit/prometheus.py",
    "testkit/fixtures.py",
    "testkit/fleet_reading.py",
    "testkit/github_fleet.py",
)

#: The product, where it wrote what is kept (a store its own code loaded).
PRODUCT = "bot"

_root: Path | None = None


def configure(config: pytest.Config) -> None:
    """Keep fills under this run's pytest cache (none when the cache plugin is off); the run's
    controller (or a run without workers) first removes what no run has used lately."""
    global _root
    cache = getattr(config, "cache", None)
    if cache is None:
        return
    _root = Path(cache.mkdir("kept"))
    if "PYTEST_XDIST_WORKER" not in os.environ:
        _prune(_root, time.time() - UNUSED_SECONDS)


def _modules(maker: Path) -> list[Path]:
    """The modules of a package, or the one module named."""
    return sorted(maker.rglob("*.py")) if maker.is_dir() else [maker]


@functools.cache
def _sources(makers: tuple[str, ...]) -> bytes:
    top = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for maker in makers:
        for module in _modules(top / maker):
            digest.update(str(module.relative_to(top)).encode() + b"\0" + module.read_bytes())
    return digest.digest()


def _key(what: str, binary: str | None, *, product: bool = False) -> str:
    made_by = ""
    if binary is not None:
        found = os.stat(binary)
        made_by = f"{os.path.realpath(binary)}:{found.st_size}:{found.st_mtime_ns}"
    makers = (*_MAKERS, PRODUCT) if product else _MAKERS
    digest = hashlib.sha256(_sources(makers) + f"\0{made_by}\0{what}".encode())
    return digest.hexdigest()[:24]


async def kept_storage(
    what: str,
    storage: Path,
    fill: Callable[[], Awaitable[bytes]],
    *,
    binary: str | None = None,
    product: bool = False,
) -> bytes:
    """Leave in `storage` what `fill` leaves there (its server stopped, its store closed) and
    return what `fill` returned; when a run of this suite filled the same `what` before with
    the same code (queuebot's own too, where `product` made it: a store it loaded) and
    `binary`, copy its storage instead of filling."""
    if _root is None:
        return await fill()
    key = _key(what, binary, product=product)
    with contextlib.ExitStack() as stack:
        # Another worker may be filling it: the loop goes on while this one waits.
        entry, made = await asyncio.to_thread(stack.enter_context, _locked(_root, key))
        if made.exists():
            await asyncio.to_thread(shutil.copytree, entry / "data", storage, dirs_exist_ok=True)
            os.utime(made)
            return made.read_bytes()
        remembered = await fill()
        await asyncio.to_thread(shutil.rmtree, entry, True)
        with contextlib.suppress(OSError):  # a full disk keeps nothing, and fails no test
            await asyncio.to_thread(shutil.copytree, storage, entry / "data")
            made.write_bytes(remembered)  # last: the copy is whole
        return remembered


async def kept_prometheus(
    server: Prometheus, what: str, series: Callable[[], tuple[bytes, Iterable[bytes]]]
) -> bytes:
    """Leave in `server`'s storage the remote-write bodies `series()` gives (made in a thread,
    taken by the server started for them and stopped after, its write-ahead log whole), or a
    copy of an earlier fill of `what` by the same code and binary; what `series()` named to
    remember with them (a fleet's truth)."""

    async def fill() -> bytes:
        remembered, bodies = await asyncio.to_thread(series)
        await server.start()
        await server.write(bodies)
        await server.stop()
        return remembered

    return await kept_storage(what, server.storage, fill, binary=server.binary)


def kept_folder(what: str) -> Path | None:
    """A folder of `what`'s own that later runs find again (marked used now), for what writes
    its files whole itself (a simulation's recording); None outside pytest."""
    if _root is None:
        return None
    with _locked(_root, _key(what, None)) as (entry, made):
        (entry / "data").mkdir(parents=True, exist_ok=True)
        made.write_bytes(what.encode())
    return entry / "data"


@contextlib.contextmanager
def _locked(root: Path, key: str) -> Iterator[tuple[Path, Path]]:
    """The entry of `key` and its mark of a whole copy, held by this process alone."""
    with (root / f"{key}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield root / key, root / key / "made"


async def kept_history(
    database: Path,
    what: str,
    bodies: Callable[[], Iterable[Any]],
    config: JobsConfig,
    *,
    remember_until: float,
) -> None:
    """Leave at `database` (alone in its folder) a store holding the `workflow_job` bodies
    `bodies()` gives, loaded as `load_history` loads them, or a copy of the store an earlier
    run loaded from the same `what` with the same code, queuebot's included."""

    async def fill() -> bytes:
        store = await open_store(str(database))
        try:
            await load_history(store, bodies(), config, remember_until=remember_until)
        finally:
            await store.close()
        return b""

    database.parent.mkdir(parents=True, exist_ok=True)
    await kept_storage(
        f"history {what} {config!r} {remember_until!r}", database.parent, fill, product=True
    )


def _prune(root: Path, before: float) -> None:
    for lock in root.glob("*.lock"):
        entry = lock.with_suffix("")
        made = entry / "made"
        try:
            unused = not made.exists() or made.stat().st_mtime < before
        except OSError:
            unused = True
        if unused:
            shutil.rmtree(entry, ignore_errors=True)
            lock.unlink(missing_ok=True)
