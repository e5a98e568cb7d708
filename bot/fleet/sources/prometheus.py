"""Everything queuebot says to Prometheus: instant and range queries over the HTTP API.

It talks to PROMETHEUS_URL directly, or through Grafana's datasource proxy
(`{GRAFANA_URL}/api/datasources/proxy/uid/{uid}`) with the Grafana token, so a team that only
gives the bot Grafana access still gets diagnostics.

Errors, by what the caller should do about them:

    PrometheusError
    ├── PrometheusUnavailable  unreachable, timed out, 5xx: the data cannot be had right now
    └── PrometheusRejected     the query or the answer is wrong (400/422 bad_data, not JSON)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp

from bot.telemetry.redaction import host_of

#: Per query; diagnostics run many at once and must answer within seconds.
PROMETHEUS_TIMEOUT_SECONDS = 5.0


class PrometheusError(Exception):
    def __init__(self, detail: str, status: int | None = None) -> None:
        super().__init__(detail if status is None else f"HTTP {status}: {detail}")
        self.detail = detail
        self.status = status


class PrometheusUnavailable(PrometheusError):
    pass


class PrometheusRejected(PrometheusError):
    pass


@dataclass(frozen=True)
class Sample:
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class RangeSeries:
    labels: dict[str, str]
    points: tuple[tuple[datetime, float], ...]


def _number(raw: Any) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return math.nan
    return value


def _when(raw: Any) -> datetime:
    return datetime.fromtimestamp(float(raw), UTC)


class PrometheusClient:
    """Queries one Prometheus (or one Prometheus datasource behind Grafana)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = PROMETHEUS_TIMEOUT_SECONDS,
    ) -> None:
        self._session = session
        self.base_url = base_url.rstrip("/")
        self._headers = {"Accept": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._timeout = timeout
        #: Where the metrics come from, for messages people read (never credentials).
        self.where = host_of(self.base_url)

    @classmethod
    def through_grafana(
        cls,
        session: aiohttp.ClientSession,
        grafana_url: str,
        datasource_uid: str,
        token: str,
        *,
        timeout: float = PROMETHEUS_TIMEOUT_SECONDS,
    ) -> PrometheusClient:
        base = f"{grafana_url.rstrip('/')}/api/datasources/proxy/uid/{datasource_uid}"
        return cls(session, base, token=token, timeout=timeout)

    async def _get(self, path: str, params: dict[str, str]) -> Any:
        url = f"{self.base_url}{path}"
        try:
            async with self._session.get(
                url,
                params=params,
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=self._timeout),
            ) as response:
                status = response.status
                text = await response.text(errors="replace")
        except TimeoutError as exc:
            raise PrometheusUnavailable(
                f"Prometheus at {self.where} did not answer within {self._timeout:g}s"
            ) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise PrometheusUnavailable(
                f"cannot reach Prometheus at {self.where} ({type(exc).__name__})"
            ) from exc
        try:
            body = json.loads(text)
        except ValueError:
            kind = PrometheusUnavailable if status >= 500 else PrometheusRejected
            raise kind(
                f"Prometheus at {self.where} answered something that is not JSON", status
            ) from None
        if not isinstance(body, dict):
            raise PrometheusRejected(f"Prometheus at {self.where} answered {type(body).__name__}")
        if status >= 500 and body.get("errorType") != "bad_data":
            raise PrometheusUnavailable(str(body.get("error") or "server error"), status)
        if body.get("status") != "success":
            message = str(body.get("error") or body.get("message") or "query failed")[:300]
            if status in (401, 403):
                message += " (the Grafana token may not query this datasource)"
            raise PrometheusRejected(message, status)
        return body.get("data")

    async def instant(self, query: str, at: datetime) -> list[Sample]:
        """The query's instant vector (or scalar) at `at`."""
        data = await self._get("/api/v1/query", {"query": query, "time": f"{at.timestamp():.3f}"})
        kind = data.get("resultType") if isinstance(data, dict) else None
        result = data.get("result") if isinstance(data, dict) else None
        if kind == "scalar" and isinstance(result, list) and len(result) == 2:
            return [Sample({}, _number(result[1]))]
        if kind != "vector" or not isinstance(result, list):
            raise PrometheusRejected(f"expected an instant vector, got {kind!r}")
        samples = []
        for item in result:
            metric, value = item.get("metric") or {}, item.get("value") or [0, "NaN"]
            samples.append(Sample({str(k): str(v) for k, v in metric.items()}, _number(value[1])))
        return samples

    async def range(
        self, query: str, start: datetime, end: datetime, step: timedelta
    ) -> list[RangeSeries]:
        """The query's range vector from `start` to `end` every `step`."""
        params = {
            "query": query,
            "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}",
            "step": f"{step.total_seconds():g}",
        }
        data = await self._get("/api/v1/query_range", params)
        result = data.get("result") if isinstance(data, dict) else None
        if not isinstance(result, list):
            raise PrometheusRejected("expected a range vector")
        series = []
        for item in result:
            metric = item.get("metric") or {}
            points = tuple((_when(t), _number(v)) for t, v in item.get("values") or ())
            series.append(RangeSeries({str(k): str(v) for k, v in metric.items()}, points))
        return series
