"""`LocalServer`: a real server binary (Alertmanager, Prometheus) run as a subprocess for the
integration tests, on a port and a working directory of its own.

It starts the binary, waits until its readiness endpoint answers, and stops it — killing it if
it ignores SIGTERM or the wait is cancelled (a test timing out). Processes still running when
the interpreter exits (a run interrupted between start and teardown) are killed too, so no
server outlives the test run. A port picked here may be taken by someone else before the
process binds it; only then is another one tried, and only before the first successful start
(a restart keeps its port).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import socket
from pathlib import Path

import aiohttp

STOP_TIMEOUT = 5.0
_POLL_TIMEOUT = 1.0
_PORT_ATTEMPTS = 3

_running: set[int] = set()


@atexit.register
def _kill_leftovers() -> None:
    for pid in list(_running):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _running.discard(pid)


# Ports are handed out below the kernel's ephemeral range, in a block of their own per pytest
# worker: a port the kernel picks for any client socket (or for `bind(0)`) never falls there, and
# two workers never hand out the same one. A port picked and let go before its server binds it
# can then be taken only by this process's own next pick, which moves on.
_FIRST_PORT = 12000
_BLOCK = 2000
_next_port: dict[int, int] = {}


def _ephemeral_floor() -> int:
    try:
        low = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0]
    except (OSError, IndexError):
        return 0
    return int(low)


def _block() -> int | None:
    """The first of this process's ports: one block per xdist worker, the last for others."""
    blocks = (_ephemeral_floor() - _FIRST_PORT) // _BLOCK
    if blocks < 2:
        return None
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker[2:]) % (blocks - 1) if worker[2:].isdigit() else blocks - 1
    return _FIRST_PORT + index * _BLOCK


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on, not handed out before by this process in a while."""
    first = _block()
    if first is not None:
        start = _next_port.get(first, first + os.getpid() % _BLOCK)
        for step in range(_BLOCK):
            port = first + (start - first + step) % _BLOCK
            if _bindable(host, port):
                _next_port[first] = first + (port - first + 1) % _BLOCK
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        chosen: int = sock.getsockname()[1]
        return chosen


def _listens(pid: int, port: int) -> bool:
    """Whether process `pid` holds the socket listening on local TCP `port` (Linux's /proc;
    elsewhere, true: whoever answers is taken at its word)."""
    table = Path("/proc/net/tcp")
    if not table.exists():
        return True
    listening = set()
    for line in table.read_text().splitlines()[1:]:
        fields = line.split()
        # local address "0100007F:2EE0", state 0A = LISTEN, the socket's inode tenth.
        if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
            listening.add(f"socket:[{fields[9]}]")
    try:
        held = {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
    except OSError:
        return False
    return bool(listening & held)


class PortTaken(RuntimeError):
    pass


class LocalServer:
    """One server process; subclasses say what to run and where it reports ready."""

    #: Shown in errors, and the stem of the config and log file names.
    name = "server"
    ready_path = "/-/ready"
    ready_timeout = 15.0
    poll_interval = 0.02

    def __init__(self, binary: str, workdir: Path, port: int | None = None) -> None:
        self.binary = binary
        self.workdir = workdir
        self.storage = workdir / "data"
        self.config = workdir / f"{self.name.lower()}.yml"
        self.log = workdir / f"{self.name.lower()}.log"
        self.host = "127.0.0.1"
        self._port_chosen = port is not None
        self.port = port if port is not None else free_port(self.host)
        self._process: asyncio.subprocess.Process | None = None
        self._log_offset = 0

    def arguments(self) -> list[str]:
        """The binary's command-line arguments."""
        raise NotImplementedError

    def config_text(self) -> str:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def start(self) -> None:
        """Start (or restart on the same port and storage) and wait until it is ready."""
        await self.stop()
        self.storage.mkdir(parents=True, exist_ok=True)
        self.config.write_text(self.config_text())
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            try:
                await self._start_once()
            except PortTaken:
                if self._port_chosen or attempt == _PORT_ATTEMPTS:
                    raise
                self.port = free_port(self.host)
            else:
                self._port_chosen = True
                return

    async def _start_once(self) -> None:
        with self.log.open("ab") as log:
            self._log_offset = log.tell()
            self._process = await asyncio.create_subprocess_exec(
                self.binary,
                *self.arguments(),
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
        ready = f"{self.url}{self.ready_path}"
        try:
            # A port someone else holds may accept and never answer: each probe is bounded too.
            probe = aiohttp.ClientTimeout(total=_POLL_TIMEOUT)
            async with (
                asyncio.timeout(self.ready_timeout),
                aiohttp.ClientSession(timeout=probe) as http,
            ):
                while True:
                    if process.returncode is not None:
                        log = self.log_since_start()
                        if "address already in use" in log:
                            raise PortTaken(f"{self.host}:{self.port} is taken:\n{log}")
                        raise RuntimeError(
                            f"{self.name} exited with {process.returncode} while starting:\n{log}"
                        )
                    try:
                        async with http.get(ready) as response:
                            # Another server may hold the port (this one then exits with
                            # "address already in use"): ready only when it is this one's.
                            if response.status == 200 and _listens(process.pid, self.port):
                                return
                    except (aiohttp.ClientError, TimeoutError):
                        pass
                    await asyncio.sleep(self.poll_interval)
        except TimeoutError:
            log = self.log_since_start()
            raise RuntimeError(
                f"{self.name} not ready after {self.ready_timeout}s:\n{log}"
            ) from None

    def log_since_start(self) -> str:
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
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
            _running.discard(process.pid)


async def answers_healthz(url: str, *, tries: int = 600, pause: float = 0.1) -> bool:
    """Whether queuebot at `url` answers `GET /healthz` 200 within `tries` tries, `pause`
    seconds apart (a bot starting in a container or under systemd)."""
    async with aiohttp.ClientSession() as http:
        for _ in range(tries):
            with contextlib.suppress(aiohttp.ClientError):
                async with http.get(f"{url}/healthz") as answer:
                    if answer.status == 200:
                        return True
            await asyncio.sleep(pause)
    return False
