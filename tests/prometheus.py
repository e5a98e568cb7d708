"""`Prometheus`: a real Prometheus holding a simulated fleet's history, for integration tests.

`backfill` loads an OpenMetrics file with `promtool tsdb create-blocks-from openmetrics`; `start`
then serves the blocks on a port of its own, with no scrape targets, so the history is all it
knows. Backfill before starting: a running server does not pick up blocks written under it.

Behaviour of 2.42 (Debian package 2.42.0+ds) the helpers rely on:
- promtool parses its whole input once for every two-hour block it writes, so a file of H hours
  costs H/2 full parses. `backfill` therefore splits the file at two-hour boundaries (the block
  alignment promtool uses itself) and hands each piece to its own promtool, a few at a time:
  the same blocks, in one parse instead of H/2;
- promtool drops out-of-order samples without failing; `backfill` compares the samples promtool
  reports with the samples in the file and fails when any went missing;
- the server answers /-/ready once the blocks are open (measured: well under a second for
  50 hours of 8 runner types); `READY_TIMEOUT` leaves room for a loaded CI runner.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import aiohttp

from tests.alertmanager import free_port

#: Scrape nothing: the backfilled history is the only data.
CONFIG = "scrape_configs: []\n"
RETENTION = "30d"
BLOCK_SECONDS = 2 * 3600
READY_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0
BACKFILL_TIMEOUT = 300.0
_POLL_INTERVAL = 0.05
_POLL_TIMEOUT = 1.0
_PORT_ATTEMPTS = 3
_FLUSH_LINES = 20_000

# Processes still running when the interpreter exits (a test run interrupted between start and
# teardown) are killed here, so no Prometheus outlives the test run.
_running: set[int] = set()


@atexit.register
def _kill_leftovers() -> None:
    for pid in list(_running):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _running.discard(pid)


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


class Prometheus:
    """One Prometheus process over its own storage directory and port."""

    def __init__(self, binary: str, promtool: str, workdir: Path) -> None:
        self.binary = binary
        self.promtool = promtool
        self.workdir = workdir
        self.storage = workdir / "data"
        self.config = workdir / "prometheus.yml"
        self.log = workdir / "prometheus.log"
        self.host = "127.0.0.1"
        self.port = free_port(self.host)
        self._process: asyncio.subprocess.Process | None = None
        self._log_offset = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    # -- data ----------------------------------------------------------------------------------

    async def backfill(self, openmetrics: Path) -> int:
        """Load `openmetrics` into the storage directory; the samples stored."""
        if self.running:
            raise RuntimeError("backfill before start: a running Prometheus ignores new blocks")
        self.storage.mkdir(parents=True, exist_ok=True)
        pieces_dir = self.workdir / "backfill"
        pieces, expected = await asyncio.to_thread(split_by_block, openmetrics, pieces_dir)
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
                f"promtool stored {stored} of the {expected} samples in {openmetrics}"
                " (out-of-order samples are dropped without an error)"
            )
        return stored

    async def _promtool(self, piece: Path) -> int:
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

    # -- process -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Serve the storage directory and wait until it is ready."""
        await self.stop()
        self.storage.mkdir(parents=True, exist_ok=True)
        self.config.write_text(CONFIG)
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            try:
                await self._start_once()
            except _PortTaken:
                if attempt == _PORT_ATTEMPTS:
                    raise
                self.port = free_port(self.host)
            else:
                return

    async def _start_once(self) -> None:
        with self.log.open("ab") as log:
            self._log_offset = log.tell()
            self._process = await asyncio.create_subprocess_exec(
                self.binary,
                f"--config.file={self.config}",
                f"--storage.tsdb.path={self.storage}",
                f"--storage.tsdb.retention.time={RETENTION}",
                f"--web.listen-address={self.host}:{self.port}",
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        _running.add(self._process.pid)
        try:
            await self._wait_ready()
        except BaseException:
            await self.stop()
            raise

    async def _wait_ready(self) -> None:
        process = self._process
        assert process is not None
        ready = f"{self.url}/-/ready"
        try:
            probe = aiohttp.ClientTimeout(total=_POLL_TIMEOUT)
            async with asyncio.timeout(READY_TIMEOUT), aiohttp.ClientSession(timeout=probe) as http:
                while True:
                    if process.returncode is not None:
                        log = self._log_since_start()
                        if "address already in use" in log:
                            raise _PortTaken(f"{self.host}:{self.port} is taken:\n{log}")
                        raise RuntimeError(
                            f"Prometheus exited with {process.returncode} while starting:\n{log}"
                        )
                    try:
                        async with http.get(ready) as response:
                            if response.status == 200:
                                return
                    except (aiohttp.ClientError, TimeoutError):
                        pass
                    await asyncio.sleep(_POLL_INTERVAL)
        except TimeoutError:
            log = self._log_since_start()
            raise RuntimeError(f"Prometheus not ready after {READY_TIMEOUT}s:\n{log}") from None

    def _log_since_start(self) -> str:
        with self.log.open("rb") as log:
            log.seek(self._log_offset)
            return log.read().decode(errors="replace")

    async def stop(self) -> None:
        """Terminate and wait for the process; afterwards its port refuses connections."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.terminate()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(STOP_TIMEOUT):
                        await process.wait()
        finally:
            # Reached with the process alive when it ignored SIGTERM or the wait was cancelled
            # (a test timing out): it is killed, never left behind.
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
            _running.discard(process.pid)

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


class _PortTaken(RuntimeError):
    pass
