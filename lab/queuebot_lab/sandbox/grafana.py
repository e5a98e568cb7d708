"""`GrafanaSandbox`: the demo's stand-in for Grafana's silence API, so `queuebot demo` runs with
nothing but Python. It serves the bot's routes under Grafana's Alertmanager path with Grafana's
status codes and `{"message": ...}` errors, and Alertmanager 0.25's rules for validating,
updating, matching and listing silences. tests/test_silence_api.py holds it to the same contract
as a real Alertmanager, which is what the bot's own tests run against.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from queuebot_lab.sandbox.serving import serve

PREFIX = "/api/alertmanager/grafana/api/v2"
# prometheus/common model.LabelNameRE, which Alertmanager 0.25 checks label names against.
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# alertmanager pkg/labels/parse.go: the `filter=` syntax, with the value quoted or not.
_FILTER = re.compile(r'\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(=~|=|!=|!~)\s*"?(.*?)"?\s*', re.DOTALL)
_REQUIRED = {"matchers": list, "startsAt": str, "endsAt": str, "createdBy": str, "comment": str}
_TRUE = {"true", "1", "yes", "ok", "y", "on", "selected", "checked", "t", "enabled"}
_RANK = {"active": 0, "pending": 1, "expired": 2}
MatcherJson = dict[str, Any]  # {"name", "value", "isRegex", "isEqual"}, as the API spells it


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def _time(text: str, name: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ApiError(400, f"{name}: {text!r} is not an RFC 3339 time")
    return moment.astimezone(UTC)


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _matcher(body: Any, index: int) -> MatcherJson:
    body = body if isinstance(body, dict) else {}
    matcher = {k: body.get(k) for k in ("name", "value", "isRegex")}
    matcher["isEqual"] = body.get("isEqual", True)
    if list(map(type, matcher.values())) != [str, str, bool, bool]:
        raise ApiError(400, f"matchers.{index}: name and value (strings) and isRegex are required")
    invalid = f"silence invalid: invalid label matcher {index}"
    if not _LABEL_NAME.fullmatch(matcher["name"]):
        raise ApiError(400, f"{invalid}: invalid label name {matcher['name']!r}")
    try:
        re.compile(matcher["value"] if matcher["isRegex"] else "")
    except re.error as error:
        raise ApiError(400, f"{invalid}: invalid regular expression: {error}") from None
    return matcher


def _matches(matcher: MatcherJson, labels: dict[str, str]) -> bool:
    # An absent label matches as the empty string; regexes must match the whole value.
    actual, value = labels.get(matcher["name"], ""), matcher["value"]
    hit = re.fullmatch(value, actual) is not None if matcher["isRegex"] else actual == value
    return hit == bool(matcher["isEqual"])


def _matches_empty(matcher: MatcherJson) -> bool:
    # silences.go matchesEmpty: negative matchers never count, and the regex is not anchored.
    value = matcher["value"]
    return bool(matcher["isEqual"] and (re.search(value, "") if matcher["isRegex"] else not value))


def _filters(request: web.Request) -> list[MatcherJson]:
    matchers = []
    for text in request.query.getall("filter", []):
        if (found := _FILTER.fullmatch(text)) is None:
            raise ApiError(400, f"bad matcher format: {text}")
        name, op, value = found.groups()
        if "~" in op:
            _matcher({"name": name, "value": value, "isRegex": True}, 0)
        matchers.append(
            {"name": name, "value": value, "isRegex": "~" in op, "isEqual": op[0] != "!"}
        )
    return matchers


@dataclass
class StoredSilence:
    id: str
    matchers: list[MatcherJson]
    starts_at: datetime
    ends_at: datetime
    created_by: str
    comment: str
    updated_at: datetime

    def state(self, now: datetime) -> str:
        if self.ends_at <= now:
            return "expired"
        return "pending" if self.starts_at > now else "active"

    def json(self, now: datetime) -> dict[str, Any]:
        times = {"updatedAt": self.updated_at, "startsAt": self.starts_at, "endsAt": self.ends_at}
        return {
            "id": self.id,
            "status": {"state": self.state(now)},
            "comment": self.comment,
            "createdBy": self.created_by,
            "matchers": self.matchers,
            **{key: _stamp(moment) for key, moment in times.items()},
        }


class GrafanaSandbox:
    """Silences and alerts of one Grafana org, served on a real port; state lives in memory."""

    def __init__(
        self,
        *,
        token: str | None = None,
        clock: Callable[[], datetime] | None = None,
        resolve_timeout: timedelta = timedelta(minutes=5),
    ) -> None:
        self.token = token
        self.clock = clock or (lambda: datetime.now(UTC))
        # Alertmanager's resolve_timeout: how long a pushed alert without endsAt stays firing.
        self.resolve_timeout = resolve_timeout
        self.silences: dict[str, StoredSilence] = {}
        #: Alerts by fingerprint, in the API's shape without `status`, with their parsed end.
        self.alerts: dict[str, tuple[dict[str, Any], datetime]] = {}
        self._runner: web.AppRunner | None = None
        self._url: str | None = None

    def now(self) -> datetime:
        return self.clock().astimezone(UTC)

    def create_app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/api/health", self._health)
        app.router.add_post(f"{PREFIX}/silences", self._post_silence)
        app.router.add_get(f"{PREFIX}/silences", self._get_silences)
        app.router.add_get(f"{PREFIX}/silence/{{id}}", self._get_silence)
        app.router.add_delete(f"{PREFIX}/silence/{{id}}", self._delete_silence)
        app.router.add_post(f"{PREFIX}/alerts", self._post_alerts)
        app.router.add_get(f"{PREFIX}/alerts", self._get_alerts)
        return app

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        authorized = request.headers.get("Authorization") == f"Bearer {self.token}"
        if self.token and request.path != "/api/health" and not authorized:
            return web.json_response({"message": "Unauthorized"}, status=401)
        try:
            response: web.StreamResponse = await handler(request)
        except ApiError as error:
            return web.json_response({"message": error.message}, status=error.status)
        except json.JSONDecodeError as error:
            return web.json_response({"message": f"bad request data: {error}"}, status=400)
        return response

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"database": "ok", "version": "sandbox"})

    async def _json(self, request: web.Request, kind: type) -> Any:
        if not isinstance(body := await request.json(), kind):
            raise ApiError(400, f"bad request data: the body must be a JSON {kind.__name__}")
        return body

    def _silence(self, silence_id: str) -> StoredSilence:
        if silence_id not in self.silences:
            raise ApiError(404, "silence not found")
        return self.silences[silence_id]

    async def _post_silence(self, request: web.Request) -> web.Response:
        body, now = await self._json(request, dict), self.now()
        for name, kind in _REQUIRED.items():
            if not isinstance(body.get(name), kind) or (name == "matchers" and not body[name]):
                raise ApiError(400, f"{name} in body is required (a non-empty {kind.__name__})")
        matchers = [_matcher(m, i) for i, m in enumerate(body["matchers"])]
        starts_at, ends_at = _time(body["startsAt"], "startsAt"), _time(body["endsAt"], "endsAt")
        if starts_at >= ends_at:
            raise ApiError(400, "Failed to create silence: start time must be before end time")
        if ends_at < now:
            raise ApiError(400, "Failed to create silence: end time can't be in the past")
        if all(_matches_empty(m) for m in matchers):
            raise ApiError(
                400, "silence invalid: at least one matcher must not match the empty string"
            )
        new = StoredSilence(
            "", matchers, starts_at, ends_at, body["createdBy"], body["comment"], now
        )
        if body.get("id"):
            prev = self._silence(str(body["id"]))
            state = prev.state(now)
            # silences.go canUpdate: same matchers, and a running silence keeps its start (to
            # the second, so a start echoed back in milliseconds counts as the same).
            same_start = int(starts_at.timestamp()) == int(prev.starts_at.timestamp())
            if prev.matchers == matchers and (
                (state == "active" and same_start) or (state == "pending" and starts_at >= now)
            ):
                new.id = prev.id
            elif state != "expired":
                prev.ends_at = prev.updated_at = now
        if not new.id:
            new.id, new.starts_at = str(uuid.uuid4()), max(starts_at, now)
        self.silences[new.id] = new
        # Grafana answers 202 where Alertmanager answers 200 (grafana api_alertmanager.go).
        return web.json_response({"silenceID": new.id}, status=202)

    async def _get_silences(self, request: web.Request) -> web.Response:
        now, filters = self.now(), _filters(request)

        # api/v2 CheckSilenceMatchesFilterLabels: a filter lists the silences that have the very
        # same matcher (name, operator and value); it is not evaluated against their values.
        def listed(silence: StoredSilence) -> bool:
            return all(f in silence.matchers for f in filters)

        # api/v2 SortSilences: active by end, then pending by start, then expired latest first.
        def order(silence: StoredSilence) -> tuple[int, float]:
            state = silence.state(now)
            moment = (silence.starts_at if state == "pending" else silence.ends_at).timestamp()
            return _RANK[state], -moment if state == "expired" else moment

        found = sorted(filter(listed, self.silences.values()), key=order)
        return web.json_response([silence.json(now) for silence in found])

    async def _get_silence(self, request: web.Request) -> web.Response:
        return web.json_response(self._silence(request.match_info["id"]).json(self.now()))

    async def _delete_silence(self, request: web.Request) -> web.Response:
        silence, now = self._silence(request.match_info["id"]), self.now()
        if (state := silence.state(now)) != "expired":
            silence.starts_at = now if state == "pending" else silence.starts_at
            silence.ends_at = silence.updated_at = now
        return web.json_response({"message": "silence deleted"})

    async def _post_alerts(self, request: web.Request) -> web.Response:
        body, now = await self._json(request, list), self.now()
        for item in body:
            labels = item.get("labels") if isinstance(item, dict) else None
            if not isinstance(labels, dict) or not labels:
                raise ApiError(400, "at least one label pair required")
            if bad := [name for name in labels if not _LABEL_NAME.fullmatch(str(name))]:
                raise ApiError(400, f"invalid label set: invalid name {bad[0]!r}")
            labels = {str(name): str(value) for name, value in labels.items()}
            key = "\xff".join(f"{name}\xff{value}" for name, value in sorted(labels.items()))
            fingerprint = hashlib.sha256(key.encode()).hexdigest()[:16]
            starts_at = _time(item["startsAt"], "startsAt") if item.get("startsAt") else now
            if (prev := self.alerts.get(fingerprint)) and prev[1] >= now:
                starts_at = min(starts_at, _time(prev[0]["startsAt"], "startsAt"))
            ends_at = _time(item["endsAt"], "endsAt") if item.get("endsAt") else None
            ends_at = ends_at or max(starts_at, now) + self.resolve_timeout
            alert = {
                "labels": labels,
                "annotations": dict(item.get("annotations") or {}),
                "generatorURL": str(item.get("generatorURL", "")),
                "fingerprint": fingerprint,
                "receivers": [{"name": "grafana-default-email"}],
                "startsAt": _stamp(starts_at),
                "endsAt": _stamp(ends_at),
                "updatedAt": _stamp(now),
            }
            self.alerts[fingerprint] = (alert, ends_at)
        return web.Response()

    async def _get_alerts(self, request: web.Request) -> web.Response:
        now, filters = self.now(), _filters(request)
        # go-openapi swag.ConvertBool reads the flags: an unknown word means false, and an empty
        # or absent one the default, true. Nothing is ever inhibited here.
        show_active, show_silenced = (
            (request.query.get(k) or "true").lower() in _TRUE for k in ("active", "silenced")
        )
        silences = [s for s in self.silences.values() if s.state(now) == "active"]
        listed = []
        for fingerprint in sorted(self.alerts):
            alert, ends_at = self.alerts[fingerprint]
            labels = alert["labels"]
            if ends_at < now or not all(_matches(f, labels) for f in filters):
                continue
            silenced_by = [s.id for s in silences if all(_matches(m, labels) for m in s.matchers)]
            if not (show_silenced if silenced_by else show_active):
                continue
            state = "suppressed" if silenced_by else "active"
            status = {"state": state, "silencedBy": silenced_by, "inhibitedBy": []}
            listed.append({**alert, "status": status})
        return web.json_response(listed)

    # -- serving -------------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve on `host:port` (0 picks a free port); `url` says where."""
        self._runner, self._url = await serve(self.create_app(), host, port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> GrafanaSandbox:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        """Base URL to use as GRAFANA_URL, e.g. http://127.0.0.1:PORT."""
        if self._url is None:
            raise RuntimeError("the Grafana sandbox is not serving: call start() first")
        return self._url
