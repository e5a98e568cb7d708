"""`Prometheus`: a real Prometheus holding a simulated fleet's history, for integration tests.

It serves on a port of its own, with no scrape targets, so the history is all it knows. The
history goes in one of two ways:
- `backfill` loads an OpenMetrics file with `promtool tsdb create-blocks-from openmetrics`
  before `start` (a running server does not pick up blocks written under it);
- `write` posts remote-write requests (`fleetmodel.series`) to the running server's receiver:
  no text to write and parse, about a third of the time promtool takes. The server answers
  400 and keeps nothing of a request holding a sample out of order or out of its head's
  bounds, so a request answered 204 was stored whole.

Behaviour of 2.42 (Debian package 2.42.0+ds) the helpers rely on:
- promtool parses its whole input once for every two-hour block it writes, so a file of H hours
  costs H/2 full parses. `backfill` therefore splits the file at two-hour boundaries (the block
  alignment promtool uses itself) and hands each piece to its own promtool, a few at a time:
  the same blocks, in one parse instead of H/2;
- promtool drops out-of-order samples without failing; `backfill` compares the samples promtool
  reports with the samples in the file and fails when any went missing;
- `--storage.tsdb.min-block-duration=10d` (a hidden flag, "for use in testing") keeps what
  `write` sends in the head: with the default two hours, the server cut days of history into
  blocks while the tests read it, at more CPU than promtool took;
- the server answers /-/ready once the blocks are open (measured: well under a second for
  50 hours of 8 runner types); `ready_timeout` leaves room for a loaded CI runner.
"""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import aiohttp

from testkit.servers import LocalServer

#: Scrape nothing: the backfilled history is the only data.
CONFIG = "scrape_configs: []\n"
RETENTION = "30d"
BLOCK_SECONDS = 2 * 3600
BACKFILL_TIMEOUT = 300.0
_FLUSH_LINES = 20_000


class PrometheusQueryError(Exception):
    pass


def split_by_block(source: Path, directory: Path) -> tuple[list[Path], int]:
    """Write `source` as one OpenMetrics file per two-hour block; the files and the samples.

    Each piece repeats the metadata of every family it has samples of, in the original order,
    and ends with `# EOF`.
    """
    directory.mkdir(parents=True, exist_ok=True)
    files: dict[int, IO[bytes]] = {}
    pending: dict[int, list[bytes]] = {}
    family_of: dict[int, int] = {}  # block -> the family whose metadata it has last
    family, name = 0, b""
    metadata: list[bytes] = []
    samples = 0

    def flush(block: int) -> None:
        files[block].write(b"".join(pending[block]))
        pending[block].clear()

    try:
        with source.open("rb") as stream:
            for line in stream:
                if line.startswith(b"#"):
                    if line.startswith(b"# EOF"):
                        break
                    parts = line.split(b" ", 3)
                    if len(parts) > 2 and parts[2] != name:
                        family, metadata, name = family + 1, [], parts[2]
                    metadata.append(line)
                    continue
                if not line.strip():
                    continue
                stamp = line.rsplit(b" ", 1)[1]
                block = int(float(stamp)) // BLOCK_SECONDS
                lines = pending.get(block)
                if lines is None:
                    files[block] = (directory / f"block-{block}.om").open("wb")
                    lines = pending[block] = []
                if family_of.get(block) != family:
                    lines.extend(metadata)
                    family_of[block] = family
                lines.append(line)
                samples += 1
                if len(lines) >= _FLUSH_LINES:
                    flush(block)
        for block in files:
            pending[block].append(b"# EOF\n")
            flush(block)
    finally:
        for file in files.values():
            file.close()
    return [directory / f"block-{block}.om" for block in sorted(files)], samples


def stored_samples(report: str) -> int:
    """The NUM SAMPLES column of promtool's block table."""
    total = 0
    for row in report.splitlines():
        cells = row.split()
        if len(cells) >= 8 and cells[0] != "BLOCK" and cells[4].isdigit():
            total += int(cells[4])
    return total


class Prometheus(LocalServer):
    """One Prometheus process over its own storage directory and port."""

    name = "Prometheus"
    ready_timeout = 30.0
    poll_interval = 0.05

    def __init__(self, binary: str, workdir: Path, promtool: str | None = None) -> None:
        super().__init__(binary, workdir)
        #: Only `backfill` needs promtool; `write` goes through the running server.
        self.promtool = promtool

    def arguments(self) -> list[str]:
        return [
            f"--config.file={self.config}",
            f"--storage.tsdb.path={self.storage}",
            f"--storage.tsdb.retention.time={RETENTION}",
            f"--web.listen-address={self.host}:{self.port}",
            "--web.enable-remote-write-receiver",
            "--storage.tsdb.min-block-duration=10d",
        ]

    def config_text(self) -> str:
        return CONFIG

    # -- data ----------------------------------------------------------------------------------

    async def backfill(self, openmetrics: Path) -> int:
        """Load `openmetrics` into the storage directory; the samples stored."""
        if self.running:
            raise RuntimeError("backfill before start: a running Prometheus ignores new blocks")
        pieces, expected = await asyncio.to_thread(
            split_by_block, openmetrics, self.workdir / "backfill"
        )
        return await self._load_pieces(pieces, expected, openmetrics.name)

    async def _load_pieces(self, pieces: list[Path], expected: int, what: str) -> int:
        """Load OpenMetrics files of one two-hour block each (removed once loaded), holding
        `expected` samples together, into the storage directory; the samples stored."""
        if self.running:
            raise RuntimeError("backfill before start: a running Prometheus ignores new blocks")
        self.storage.mkdir(parents=True, exist_ok=True)
        gate = asyncio.Semaphore(os.cpu_count() or 2)

        async def create(piece: Path) -> int:
            async with gate:
                return await self._promtool(piece)

        try:
            async with asyncio.timeout(BACKFILL_TIMEOUT), asyncio.TaskGroup() as group:
                tasks = [group.create_task(create(piece)) for piece in pieces]
        finally:
            for piece in pieces:
                piece.unlink(missing_ok=True)
        stored = sum(task.result() for task in tasks)
        if stored != expected:
            raise RuntimeError(
                f"promtool stored {stored} of the {expected} samples {what}"
                " (out-of-order samples are dropped without an error)"
            )
        return stored

    async def _promtool(self, piece: Path) -> int:
        if self.promtool is None:
            raise RuntimeError("backfill needs promtool: Prometheus(..., promtool=...)")
        process = await asyncio.create_subprocess_exec(
            self.promtool,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            str(piece),
            str(self.storage),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            output, _ = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        report = output.decode(errors="replace")
        if process.returncode != 0:
            raise RuntimeError(f"promtool failed on {piece.name} ({process.returncode}):\n{report}")
        return stored_samples(report)

    async def write(self, bodies: Iterable[bytes]) -> None:
        """Post snappy-compressed remote-write requests to the running server, in order."""
        headers = {
            "Content-Encoding": "snappy",
            "Content-Type": "application/x-protobuf",
            "X-Prometheus-Remote-Write-Version": "0.1.0",
        }
        async with aiohttp.ClientSession() as http:
            for body in bodies:
                async with http.post(
                    f"{self.url}/api/v1/write", data=io.BytesIO(body), headers=headers
                ) as response:
                    if response.status != 204:
                        raise RuntimeError(
                            f"remote write answered {response.status}: {await response.text()}"
                        )

    # -- API -----------------------------------------------------------------------------------

    async def query(self, promql: str, at: datetime) -> list[dict[str, Any]]:
        """GET /api/v1/query at `at`: the instant vector's samples (`metric`, `value`)."""
        params = {"query": promql, "time": f"{at.timestamp():.3f}"}
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{self.url}/api/v1/query", params=params) as response,
        ):
            body = await response.json(content_type=None)
        if response.status != 200 or body.get("status") != "success":
            raise PrometheusQueryError(f"{promql!r} answered {response.status}: {body}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result
