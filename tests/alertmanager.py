"""`Alertmanager`: a real Prometheus Alertmanager run as a subprocess for integration tests.

It serves at Grafana's path for its built-in Alertmanager (`PREFIX`), so the bot can use
`url` as GRAFANA_URL and speak to it exactly as it speaks to Grafana. Clustering is off and
every instance has its own port and storage directory. The helpers here are for arranging and
inspecting state in tests; they raise `AlertmanagerError` on any answer that is not 2xx.

Behaviour of 0.25 the tests rely on (observed on the Debian package 0.25.0-1+b4):
- it answers /-/ready well under a second after starting (measured: about 70 ms;
  `READY_TIMEOUT` leaves room for a loaded CI runner);
- a pushed alert is listed by GET /alerts as soon as the POST returns, and GET /alerts
  computes silencing when it is read, so a new or expired silence shows at once;
- an alert pushed without endsAt ends `resolve_timeout` (5 minutes) later, and an alert whose
  endsAt has passed is not listed at all;
- silences are snapshotted to the storage directory on SIGTERM and survive a restart;
  alerts are kept in memory only and do not;
- label names follow the classic rule `[a-zA-Z_][a-zA-Z0-9_]*`, so Grafana's
  `__alert_rule_uid__` is accepted in alerts and silence matchers.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

PREFIX = "/api/alertmanager/grafana"

#: The smallest configuration Alertmanager accepts: one route to one receiver that sends nothing.
CONFIG = """\
route:
  receiver: "null"
receivers:
  - name: "null"
"""

READY_TIMEOUT = 15.0
STOP_TIMEOUT = 5.0
_POLL_INTERVAL = 0.02
_POLL_TIMEOUT = 1.0
_PORT_ATTEMPTS = 3

# Processes still running when the interpreter exits (a test run interrupted between start and
# teardown) are killed here, so no Alertmanager outlives the test run.
_running: set[int] = set()


@atexit.register
def _kill_leftovers() -> None:
    for pid in list(_running):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _running.discard(pid)


class AlertmanagerError(Exception):
    def __init__(self, method: str, url: str, status: int, body: str) -> None:
        super().__init__(f"{method} {url} answered {status}: {body}")
        self.status = status
        self.body = body


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def rfc3339(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError(f"a time sent to Alertmanager needs a time zone: {moment!r}")
    return moment.astimezone(UTC).isoformat()


class Alertmanager:
    """One Alertmanager process, serving at `url` + `PREFIX`; restartable on the same port."""

    def __init__(self, binary: str, workdir: Path, port: int | None = None) -> None:
        self.binary = binary
        self.workdir = workdir
        self.storage = workdir / "data"
        self.config = workdir / "alertmanager.yml"
        self.log = workdir / "alertmanager.log"
        self.host = "127.0.0.1"
        # A port picked here may be taken by someone else before the process binds it; only then
        # is another one tried, and only before the first successful start.
        self._port_chosen = port is not None
        self.port = port if port is not None else free_port(self.host)
        self._process: asyncio.subprocess.Process | None = None
        self._log_offset = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def api(self) -> str:
        return f"{self.url}{PREFIX}/api/v2"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    # -- process -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start (or restart on the same port and storage) and wait until it is ready."""
        await self.stop()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.storage.mkdir(exist_ok=True)
        self.config.write_text(CONFIG)
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            try:
                await self._start_once()
            except _PortTaken:
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
                f"--config.file={self.config}",
                f"--storage.path={self.storage}",
                f"--web.listen-address={self.host}:{self.port}",
                f"--web.route-prefix={PREFIX}",
                "--cluster.listen-address=",
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
        ready = f"{self.url}{PREFIX}/-/ready"
        try:
            # A port someone else holds may accept and never answer: each probe is bounded too.
            probe = aiohttp.ClientTimeout(total=_POLL_TIMEOUT)
            async with asyncio.timeout(READY_TIMEOUT), aiohttp.ClientSession(timeout=probe) as http:
                while True:
                    if process.returncode is not None:
                        log = self._log_since_start()
                        if "address already in use" in log:
                            raise _PortTaken(f"{self.host}:{self.port} is taken:\n{log}")
                        raise RuntimeError(
                            f"Alertmanager exited with {process.returncode} while starting:\n{log}"
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
            raise RuntimeError(f"Alertmanager not ready after {READY_TIMEOUT}s:\n{log}") from None

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

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: list[tuple[str, str]] | None = None,
    ) -> Any:
        """Call `api` + `path`; the decoded JSON answer (None when empty), or AlertmanagerError."""
        url = f"{self.api}{path}"
        async with (
            aiohttp.ClientSession() as http,
            http.request(method, url, json=json, params=params) as response,
        ):
            text = await response.text()
            if response.status >= 300:
                raise AlertmanagerError(method, url, response.status, text)
            return await response.json(content_type=None) if text.strip() else None

    async def silences(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await self.request("GET", "/silences")
        return result

    async def active_silences(self) -> list[dict[str, Any]]:
        return [s for s in await self.silences() if s["status"]["state"] == "active"]

    async def silence(self, silence_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("GET", f"/silence/{silence_id}")
        return result

    async def create_silence(
        self,
        matchers: list[dict[str, Any]],
        ends_at: datetime,
        *,
        created_by: str = "test",
        comment: str = "test",
    ) -> str:
        """Create a silence starting now; its id. Matchers default to `isRegex: false`."""
        body = {
            "matchers": [{"isRegex": False, **matcher} for matcher in matchers],
            "startsAt": rfc3339(datetime.now(UTC)),
            "endsAt": rfc3339(ends_at),
            "createdBy": created_by,
            "comment": comment,
        }
        answer = await self.request("POST", "/silences", json=body)
        silence_id: str = answer["silenceID"]
        return silence_id

    async def expire(self, silence_id: str) -> None:
        await self.request("DELETE", f"/silence/{silence_id}")

    async def push_alert(
        self,
        labels: dict[str, str],
        annotations: dict[str, str] | None = None,
        *,
        starts_at: datetime | None = None,
        ends_at: datetime | None = None,
    ) -> None:
        """Post one alert as a rule evaluator does; without `ends_at` it lasts 5 minutes."""
        alert: dict[str, Any] = {"labels": labels, "annotations": annotations or {}}
        if starts_at is not None:
            alert["startsAt"] = rfc3339(starts_at)
        if ends_at is not None:
            alert["endsAt"] = rfc3339(ends_at)
        await self.request("POST", "/alerts", json=[alert])

    async def alerts(self, **filters: str | bool | list[str]) -> list[dict[str, Any]]:
        """GET /alerts; e.g. `alerts(filter=['type="x"'], silenced=False)`."""
        params: list[tuple[str, str]] = []
        for name, value in filters.items():
            values = value if isinstance(value, list) else [value]
            for item in values:
                text = str(item).lower() if isinstance(item, bool) else item
                params.append((name, text))
        result: list[dict[str, Any]] = await self.request("GET", "/alerts", params=params)
        return result


class _PortTaken(RuntimeError):
    pass
