"""Everything queuebot says to Grafana: silences and alert state, through Grafana's
Alertmanager-compatible API at `{GRAFANA_URL}/api/alertmanager/grafana/api/v2`.

Errors, by what the caller should do about them:

    GrafanaError
    ├── GrafanaUnavailable  try again later: timed out, 5xx, 409 (not ready), answer lost
    │   └── GrafanaUnreachable  no connection was made, so the request did nothing
    ├── GrafanaDenied       401 (the token) or 403 (a permission the service account lacks)
    ├── GrafanaRejected     another 4xx; `detail` is Grafana's own message
    └── SilenceNotFound     the silence does not exist (404; Alertmanager 0.25 answers a DELETE
                            of an unknown silence with 500 "silence not found")

The token goes out in the Authorization header only; no error or log line carries it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.domain.silences import Matcher, MatcherSet
from bot.telemetry.redaction import host_of

log = logging.getLogger(__name__)

API_PREFIX = "/api/alertmanager/grafana/api/v2"
GRAFANA_TIMEOUT_SECONDS = 10.0


class GrafanaError(Exception):
    """Grafana did not do what was asked."""

    def __init__(self, detail: str, status: int | None = None) -> None:
        super().__init__(detail if status is None else f"HTTP {status}: {detail}")
        self.detail = detail
        self.status = status


class GrafanaUnavailable(GrafanaError):
    pass


class GrafanaUnreachable(GrafanaUnavailable):
    """No connection was made: the request certainly did nothing."""


class GrafanaDenied(GrafanaError):
    pass


class GrafanaRejected(GrafanaError):
    pass


class SilenceNotFound(GrafanaError):
    pass


class SilenceStatus(BaseModel):
    model_config = ConfigDict(extra="ignore")

    state: str


class GrafanaSilence(BaseModel):
    """A silence as Grafana's GET answers it (gettableSilence)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    id: str
    status: SilenceStatus
    ends_at: datetime = Field(alias="endsAt")
    created_by: str = Field("", alias="createdBy")
    comment: str = ""

    @property
    def active(self) -> bool:
        return self.status.state in ("active", "pending")


@dataclass(frozen=True)
class GrafanaAlert:
    fingerprint: str
    state: str
    silenced_by: tuple[str, ...]


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _message(body: str) -> str:
    """Grafana's `{"message": …}`, Alertmanager's JSON string or `{code, message}`, or the text."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:300] or "no message"
    if isinstance(data, dict):
        return str(data.get("message") or data.get("error") or data)[:300]
    return str(data)[:300]


class GrafanaClient:
    """Calls to one Grafana, on a session the app owns (closed with the app)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        token: str,
        *,
        timeout: float = GRAFANA_TIMEOUT_SECONDS,
    ) -> None:
        self._session = session
        self._timeout = timeout
        netloc = host_of(base_url)
        # Settings refuse credentials in GRAFANA_URL (bot.config); should a URL with some reach
        # here all the same, they are dropped: the token authenticates, and a URL that is shown
        # or logged must not carry a password.
        self.base_url = urlsplit(base_url.rstrip("/"))._replace(netloc=netloc).geturl()
        #: Where Grafana is, for messages people read.
        self.where = f"Grafana at {netloc}"
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}

    async def _call(
        self,
        method: str,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        params: list[tuple[str, str]] | None = None,
        not_found: bool = False,
    ) -> Any:
        url = f"{self.base_url}{API_PREFIX}{path}"
        where = self.where
        try:
            async with self._session.request(
                method,
                url,
                json=body,
                params=params,
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=self._timeout),
            ) as response:
                status = response.status
                text = await response.text(errors="replace")
        except TimeoutError as exc:
            raise GrafanaUnavailable(f"no answer from {where} within {self._timeout:g}s") from exc
        except (aiohttp.ClientConnectorError, aiohttp.InvalidURL) as exc:
            raise GrafanaUnreachable(f"cannot reach {where} ({type(exc).__name__})") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise GrafanaUnavailable(
                f"lost the answer from {where} ({type(exc).__name__})"
            ) from exc
        if status < 300:
            try:
                return json.loads(text) if text.strip() else None
            except ValueError:
                # A login page or proxy answering in Grafana's place.
                raise GrafanaRejected(
                    f"{where} answered HTTP {status} with something that is not JSON"
                    " (is GRAFANA_URL Grafana itself, not a login page or proxy?)"
                ) from None
        detail = _message(text)
        if not_found and (status == 404 or (status == 500 and "not found" in detail)):
            raise SilenceNotFound(detail, status)
        if status in (401, 403):
            raise GrafanaDenied(detail, status)
        if status >= 500 or status == 409:
            raise GrafanaUnavailable(detail, status)
        raise GrafanaRejected(detail, status)

    async def create_silence(
        self,
        matchers: MatcherSet,
        starts_at: datetime,
        ends_at: datetime,
        created_by: str,
        comment: str,
    ) -> str:
        """Create a silence and return its id (Grafana answers 202, Alertmanager 200)."""
        if not matchers:
            # Grafana would refuse it (422), but nothing may ever ask for a silence of everything.
            raise ValueError("a silence needs at least one matcher")
        body = {
            "matchers": [m.model_dump(by_alias=True) for m in matchers],
            "startsAt": _iso(starts_at),
            "endsAt": _iso(ends_at),
            "createdBy": created_by,
            "comment": comment,
        }
        data = await self._call("POST", "/silences", body=body)
        silence_id = data.get("silenceID") if isinstance(data, dict) else None
        if not isinstance(silence_id, str) or not silence_id:
            raise GrafanaRejected(f"the answer names no silence: {str(data)[:200]}")
        return silence_id

    async def get_silence(self, silence_id: str) -> GrafanaSilence:
        data = await self._call("GET", f"/silence/{silence_id}", not_found=True)
        try:
            return GrafanaSilence.model_validate(data)
        except ValidationError as exc:
            raise GrafanaRejected(
                f"unreadable silence {silence_id}: {exc.error_count()} errors"
            ) from exc

    async def find_silences(self, matcher: Matcher, marker: str) -> list[GrafanaSilence]:
        """Active silences with `matcher` whose comment carries `marker`: how a create whose
        answer was lost is found again."""
        written = matcher.filter()
        params = [("filter", written)] if written is not None else []
        data = await self._call("GET", "/silences", params=params)
        if not isinstance(data, list):
            raise GrafanaRejected(
                f"{self.where} answered the silence list with {type(data).__name__}"
            )
        found = []
        for item in data:
            try:
                silence = GrafanaSilence.model_validate(item)
            except ValidationError:
                continue
            if silence.active and marker in silence.comment:
                found.append(silence)
        return found

    async def expire_silence(self, silence_id: str) -> None:
        await self._call("DELETE", f"/silence/{silence_id}", not_found=True)

    async def alerts(self, matchers: Iterable[Matcher]) -> list[GrafanaAlert]:
        """Every current alert the matchers select, silenced or not.

        Matchers whose label name the `filter=` syntax cannot carry (`Matcher.filter`) stay out
        of the query and are applied here to the labels of each alert listed, so a name never
        turns into another matcher and the answer is exactly what the matchers select.
        """
        matchers = tuple(matchers)
        if not matchers:
            raise ValueError("listing alerts needs at least one matcher")
        params = [("filter", f) for m in matchers if (f := m.filter()) is not None]
        unwritten = [m for m in matchers if m.filter() is None]
        params += [("active", "true"), ("silenced", "true"), ("inhibited", "true")]
        data = await self._call("GET", "/alerts", params=params)
        if not isinstance(data, list):
            raise GrafanaRejected(
                f"{self.where} answered the alert list with {type(data).__name__}"
            )
        found: list[GrafanaAlert] = []
        for item in data:
            if not isinstance(item, dict):
                continue
            labels = item.get("labels")
            if unwritten and not (
                isinstance(labels, dict) and all(m.matches(labels) for m in unwritten)
            ):
                continue
            raw_status = item.get("status")
            status: dict[str, Any] = raw_status if isinstance(raw_status, dict) else {}
            found.append(
                GrafanaAlert(
                    fingerprint=str(item.get("fingerprint", "")),
                    state=str(status.get("state", "")),
                    silenced_by=tuple(str(s) for s in status.get("silencedBy") or ()),
                )
            )
        return found
