"""`Alertmanager`: a real Prometheus Alertmanager run as a subprocess for integration tests.

It serves at Grafana's path for its built-in Alertmanager (`PREFIX`), so the bot can use
`url` as GRAFANA_URL and speak to it exactly as it speaks to Grafana. Clustering is off and
every instance has its own port and storage directory. The helpers here are for arranging and
inspecting state in tests; they raise `AlertmanagerError` on any answer that is not 2xx.

Behaviour of 0.25 the tests rely on (observed on the Debian package 0.25.0-1+b4):
- it answers /-/ready well under a second after starting (measured: about 70 ms;
  `ready_timeout` leaves room for a loaded CI runner);
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

from datetime import UTC, datetime
from typing import Any

import aiohttp

from testkit.servers import LocalServer

PREFIX = "/api/alertmanager/grafana"

#: The smallest configuration Alertmanager accepts: one route to one receiver that sends nothing.
CONFIG = """\
route:
  receiver: "null"
receivers:
  - name: "null"
"""


class AlertmanagerError(Exception):
    def __init__(self, method: str, url: str, status: int, body: str) -> None:
        super().__init__(f"{method} {url} answered {status}: {body}")
        self.status = status
        self.body = body


def rfc3339(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError(f"a time sent to Alertmanager needs a time zone: {moment!r}")
    return moment.astimezone(UTC).isoformat()


class Alertmanager(LocalServer):
    """One Alertmanager process, serving at `url` + `PREFIX`; restartable on the same port."""

    name = "Alertmanager"
    ready_path = f"{PREFIX}/-/ready"

    def arguments(self) -> list[str]:
        return [
            f"--config.file={self.config}",
            f"--storage.path={self.storage}",
            f"--web.listen-address={self.host}:{self.port}",
            f"--web.route-prefix={PREFIX}",
            "--cluster.listen-address=",
        ]

    def config_text(self) -> str:
        return CONFIG

    @property
    def api(self) -> str:
        return f"{self.url}{PREFIX}/api/v2"

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
