"""The silence API the bot relies on, held to one contract on two servers: a real Alertmanager 0.25
at Grafana's path (marked integration) and `GrafanaSandbox`, the demo's stand-in for Grafana.

Where Grafana and upstream Alertmanager answer differently, the test states both answers
(`Differ`); everything else must be identical on both.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from queuebot_lab.sandbox.grafana import GrafanaSandbox
from testkit.alertmanager import PREFIX, Alertmanager
from testkit.integration import require_binary

TOKEN = "glsa_contract_test_token"
RULE_UID = "dez2aomgvru2oe"
QUEUE_LABELS = {
    "__alert_rule_uid__": RULE_UID,
    "alertname": "QueueTooLong",
    "type": "alerting-infra",
}
MS = timedelta(milliseconds=1)


@dataclass(frozen=True)
class Differ:
    """One answer from upstream Alertmanager 0.25 and another from Grafana (and the sandbox)."""

    alertmanager: Any
    grafana: Any


# grafana pkg/services/ngalert/api/api_alertmanager.go: RouteCreateSilence answers 202 Accepted.
CREATED = Differ(alertmanager=200, grafana=202)
# Alertmanager 0.25 answers DELETE of an unknown silence with 500 "silence not found"; Grafana
# maps the same error to 404.
DELETE_UNKNOWN = Differ(alertmanager=500, grafana=404)
# Upstream answers an expiry with an empty body, Grafana with a message.
DELETED_BODY = Differ(alertmanager=None, grafana={"message": "silence deleted"})
# Upstream's swagger validation refuses a malformed body with 422; Grafana answers 400.
SCHEMA_REFUSAL = Differ(alertmanager=422, grafana=400)


@dataclass
class Api:
    kind: str
    base: str
    http: aiohttp.ClientSession

    def expect(self, answer: Any) -> Any:
        """This server's answer: `answer` itself unless it is a `Differ`."""
        if not isinstance(answer, Differ):
            return answer
        return answer.alertmanager if self.kind == "alertmanager" else answer.grafana

    async def call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        data: str | None = None,
        params: list[tuple[str, str]] | None = None,
    ) -> tuple[int, Any]:
        payload = data if data is not None else None if body is None else json.dumps(body)
        async with self.http.request(
            method,
            f"{self.base}{path}",
            data=payload,
            params=params,
            headers={"Content-Type": "application/json"},
        ) as response:
            text = await response.text()
            return response.status, json.loads(text) if text.strip() else None

    async def create(self, body: dict[str, Any]) -> str:
        status, answer = await self.call("POST", "/silences", body=body)
        assert status == self.expect(CREATED), answer
        silence_id: str = answer["silenceID"]
        return silence_id

    async def get(self, silence_id: str) -> dict[str, Any]:
        status, answer = await self.call("GET", f"/silence/{silence_id}")
        assert status == 200, answer
        result: dict[str, Any] = answer
        return result

    async def listing(self, path: str, *params: tuple[str, str]) -> list[dict[str, Any]]:
        status, answer = await self.call("GET", path, params=list(params))
        assert status == 200, answer
        result: list[dict[str, Any]] = answer
        return result

    async def push(self, labels: dict[str, str]) -> None:
        status, answer = await self.call("POST", "/alerts", body=[{"labels": labels}])
        assert status == 200, answer


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text)


def matcher(name: str, value: str, *, regex: bool = False, equal: bool = True) -> dict[str, Any]:
    return {"name": name, "value": value, "isRegex": regex, "isEqual": equal}


def silence_body(
    *matchers: dict[str, Any],
    starts_in: timedelta = timedelta(minutes=-1),
    ends_in: timedelta = timedelta(hours=1),
    **fields: Any,
) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {
        "matchers": list(matchers)
        or [matcher("__alert_rule_uid__", RULE_UID), matcher("type", "alerting-infra")],
        "startsAt": stamp(now + starts_in),
        "endsAt": stamp(now + ends_in),
        "createdBy": "queuebot",
        "comment": "Silenced from Slack by alice",
        **fields,
    }


@pytest.fixture
async def grafana_sandbox() -> AsyncIterator[GrafanaSandbox]:
    async with GrafanaSandbox(token=TOKEN) as sandbox:
        yield sandbox


@pytest.fixture(params=[pytest.param("alertmanager", marks=pytest.mark.integration), "sandbox"])
def server(request: pytest.FixtureRequest) -> tuple[str, str]:
    if request.param == "alertmanager":
        alertmanager: Alertmanager = request.getfixturevalue("alertmanager")
        return "alertmanager", alertmanager.url
    sandbox: GrafanaSandbox = request.getfixturevalue("grafana_sandbox")
    return "sandbox", sandbox.url


@pytest.fixture
async def api(server: tuple[str, str]) -> AsyncIterator[Api]:
    kind, url = server
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession(headers=headers) as http:
        yield Api(kind, f"{url}{PREFIX}/api/v2", http)


async def test_created_silence_reads_back_active(api: Api) -> None:
    before = datetime.now(UTC)
    body = silence_body()
    silence_id = await api.create(body)

    silence = await api.get(silence_id)
    assert silence["id"] == silence_id
    assert silence["status"] == {"state": "active"}
    assert sorted(silence["matchers"], key=lambda m: m["name"]) == body["matchers"]
    assert silence["createdBy"] == "queuebot"
    assert silence["comment"] == "Silenced from Slack by alice"
    assert abs(parse(silence["endsAt"]) - parse(body["endsAt"])) <= MS
    # A start in the past is moved to the moment of creation.
    assert parse(silence["startsAt"]) >= before - MS
    assert parse(silence["updatedAt"]) >= before - MS
    assert [s["id"] for s in await api.listing("/silences")] == [silence_id]


async def test_delete_expires_the_silence(api: Api) -> None:
    silence_id = await api.create(silence_body())

    status, answer = await api.call("DELETE", f"/silence/{silence_id}")
    assert (status, answer) == (200, api.expect(DELETED_BODY))
    silence = await api.get(silence_id)
    assert silence["status"] == {"state": "expired"}
    assert parse(silence["endsAt"]) <= datetime.now(UTC)
    # Expired silences stay listed, and expiring one again is no error.
    assert [s["status"]["state"] for s in await api.listing("/silences")] == ["expired"]
    status, _ = await api.call("DELETE", f"/silence/{silence_id}")
    assert status == 200


async def test_unknown_silence(api: Api) -> None:
    unknown = "00000000-0000-0000-0000-000000000000"
    status, _ = await api.call("GET", f"/silence/{unknown}")
    assert status == 404
    status, _ = await api.call("DELETE", f"/silence/{unknown}")
    assert status == api.expect(DELETE_UNKNOWN)
    status, _ = await api.call("POST", "/silences", body=silence_body(id=unknown))
    assert status == 404
    assert await api.listing("/silences") == []


async def test_update_keeps_the_id_unless_the_matchers_change(api: Api) -> None:
    silence_id = await api.create(silence_body())
    current = await api.get(silence_id)
    later = stamp(datetime.now(UTC) + timedelta(hours=3))

    extended = {**current, "endsAt": later, "comment": "extended"}
    del extended["status"], extended["updatedAt"]
    assert await api.create(extended) == silence_id
    silence = await api.get(silence_id)
    assert (silence["comment"], silence["status"]["state"]) == ("extended", "active")
    assert abs(parse(silence["endsAt"]) - parse(later)) <= MS

    narrowed = {**extended, "matchers": [matcher("__alert_rule_uid__", RULE_UID)]}
    replacement = await api.create(narrowed)
    assert replacement != silence_id
    assert (await api.get(silence_id))["status"]["state"] == "expired"
    assert (await api.get(replacement))["status"]["state"] == "active"


async def test_future_silence_is_pending_and_suppresses_nothing(api: Api) -> None:
    await api.push(QUEUE_LABELS)
    silence_id = await api.create(silence_body(starts_in=timedelta(minutes=30)))

    assert (await api.get(silence_id))["status"] == {"state": "pending"}
    [alert] = await api.listing("/alerts")
    assert alert["status"]["state"] == "active"


async def test_matching_alert_is_suppressed_until_the_silence_expires(api: Api) -> None:
    await api.push(QUEUE_LABELS)
    [alert] = await api.listing("/alerts")
    # A pushed alert is listed at once (no delay to wait out in Alertmanager either).
    assert alert["labels"] == QUEUE_LABELS
    assert alert["status"] == {"state": "active", "silencedBy": [], "inhibitedBy": []}

    silence_id = await api.create(silence_body())
    [alert] = await api.listing("/alerts")
    assert alert["status"] == {"state": "suppressed", "silencedBy": [silence_id], "inhibitedBy": []}
    assert await api.listing("/alerts", ("silenced", "false")) == []
    # The flags are read as go-openapi's swag.ConvertBool reads them: an unknown word is false,
    # an empty value the default.
    assert await api.listing("/alerts", ("silenced", "maybe")) == []
    assert len(await api.listing("/alerts", ("silenced", ""), ("active", "yes"))) == 1
    assert len(await api.listing("/alerts", ("active", "false"))) == 1
    assert len(await api.listing("/alerts", ("inhibited", "false"))) == 1

    await api.call("DELETE", f"/silence/{silence_id}")
    [alert] = await api.listing("/alerts")
    assert alert["status"]["state"] == "active"
    assert await api.listing("/alerts", ("active", "false")) == []


async def test_matcher_semantics(api: Api) -> None:
    await api.push({**QUEUE_LABELS, "team": "infra"})
    await api.push({"alertname": "QueueTooLong", "type": "alerting"})
    await api.push({"alertname": "DiskFull", "type": "alerting-infra"})
    # Regexes must match the whole value: "alerting" does not match "alerting-infra".
    whole = await api.create(silence_body(matcher("type", "alerting", regex=True)))
    prefix = await api.create(silence_body(matcher("type", "alerting.*", regex=True)))
    unequal = await api.create(
        silence_body(matcher("alertname", "QueueTooLong"), matcher("type", "alerting", equal=False))
    )
    not_regex = await api.create(
        silence_body(matcher("alertname", "Queue.*", regex=True, equal=False))
    )
    # An absent label matches as the empty string.
    no_team = await api.create(silence_body(matcher("type", "alerting"), matcher("team", "")))

    silenced = {
        (a["labels"]["alertname"], a["labels"]["type"]): sorted(a["status"]["silencedBy"])
        for a in await api.listing("/alerts")
    }
    assert silenced == {
        ("QueueTooLong", "alerting-infra"): sorted([prefix, unequal]),
        ("QueueTooLong", "alerting"): sorted([whole, prefix, no_team]),
        ("DiskFull", "alerting-infra"): sorted([prefix, not_regex]),
    }


async def test_alert_filters(api: Api) -> None:
    await api.push(QUEUE_LABELS)
    await api.push({"alertname": "QueueTooLong", "type": "gpu"})
    await api.push({"alertname": "DiskFull", "type": "alerting-infra"})

    async def names(*filters: str) -> list[tuple[str, str]]:
        alerts = await api.listing("/alerts", *(("filter", f) for f in filters))
        return sorted((a["labels"]["alertname"], a["labels"]["type"]) for a in alerts)

    assert await names('type="alerting-infra"') == [
        ("DiskFull", "alerting-infra"),
        ("QueueTooLong", "alerting-infra"),
    ]
    assert await names('alertname="QueueTooLong"', 'type!="gpu"') == [
        ("QueueTooLong", "alerting-infra")
    ]
    assert await names('alertname=~"Queue.*"', 'type!~"alerting.*"') == [("QueueTooLong", "gpu")]
    assert await names(f'__alert_rule_uid__="{RULE_UID}"') == [("QueueTooLong", "alerting-infra")]
    assert await names('alertname=~"Queue"') == []
    for bad in ("alertname", 'type=~"(unclosed"'):
        status, _ = await api.call("GET", "/alerts", params=[("filter", bad)])
        assert status == 400, bad


async def test_silence_filters(api: Api) -> None:
    queue = await api.create(silence_body())
    other = await api.create(silence_body(matcher("alertname", "DiskFull")))

    async def ids(*filters: str) -> list[str]:
        return [s["id"] for s in await api.listing("/silences", *(("filter", f) for f in filters))]

    assert sorted(await ids()) == sorted([queue, other])
    assert await ids('type="alerting-infra"') == [queue]
    assert await ids(f'__alert_rule_uid__="{RULE_UID}"', 'type="alerting-infra"') == [queue]
    assert await ids('alertname="DiskFull"') == [other]
    assert await ids('type="gpu"') == []
    # A filter selects silences holding the very same matcher; it is not evaluated against them.
    assert await ids('type=~"alerting.*"') == []
    assert await ids('type!="gpu"') == []
    regex = await api.create(silence_body(matcher("type", "alerting.*", regex=True)))
    assert await ids('type=~"alerting.*"') == [regex]
    status, _ = await api.call("GET", "/silences", params=[("filter", "{type}")])
    assert status == 400


REFUSALS = [
    (
        "endsAt in the past",
        silence_body(starts_in=timedelta(hours=-2), ends_in=timedelta(hours=-1)),
        400,
    ),
    ("endsAt before startsAt", silence_body(starts_in=timedelta(hours=2)), 400),
    ("endsAt equal to startsAt", silence_body(starts_in=timedelta(hours=1)), 400),
    ("empty matchers", silence_body(matchers=[]), SCHEMA_REFUSAL),
    ("no isRegex", silence_body(matchers=[{"name": "type", "value": "x"}]), SCHEMA_REFUSAL),
    ("no createdBy", {k: v for k, v in silence_body().items() if k != "createdBy"}, SCHEMA_REFUSAL),
    ("no comment", {k: v for k, v in silence_body().items() if k != "comment"}, SCHEMA_REFUSAL),
    ("no startsAt", {k: v for k, v in silence_body().items() if k != "startsAt"}, SCHEMA_REFUSAL),
    ("invalid label name", silence_body(matcher("bad-name", "x")), 400),
    ("empty label name", silence_body(matcher("", "x")), 400),
    ("invalid regex", silence_body(matcher("type", "(unclosed", regex=True)), 400),
    ("matches everything", silence_body(matcher("type", ".*", regex=True), matcher("a", "")), 400),
    ("time not RFC 3339", silence_body(startsAt="tomorrow"), 400),
    ("malformed JSON", "{not json", 400),
]


@pytest.mark.parametrize(
    ("body", "expected"), [pytest.param(b, e, id=case) for case, b, e in REFUSALS]
)
async def test_refused_silences(
    api: Api, body: dict[str, Any] | str, expected: int | Differ
) -> None:
    if isinstance(body, str):
        status, answer = await api.call("POST", "/silences", data=body)
    else:
        status, answer = await api.call("POST", "/silences", body=body)
    assert status == api.expect(expected), answer
    if api.kind == "sandbox":
        assert isinstance(answer["message"], str)
    assert await api.listing("/silences") == []


@pytest.mark.parametrize(
    ("alert", "expected"),
    [
        ({"labels": {}}, 400),
        ({"labels": {"bad-name": "x"}}, 400),
        ({"annotations": {"summary": "no labels"}}, SCHEMA_REFUSAL),
    ],
)
async def test_refused_alerts(api: Api, alert: dict[str, Any], expected: int | Differ) -> None:
    status, _ = await api.call("POST", "/alerts", body=[alert])
    assert status == api.expect(expected)
    assert await api.listing("/alerts") == []


async def test_negative_matcher_alone_is_accepted(api: Api) -> None:
    # silences.go matchesEmpty never counts != and !~ as matching the empty string.
    silence_id = await api.create(silence_body(matcher("type", "gpu", equal=False)))
    assert (await api.get(silence_id))["status"]["state"] == "active"


# -- the Alertmanager fixture and the real Alertmanager only ----------------------------------


def test_missing_binary_skips_locally_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUEUEBOT_REQUIRE_INTEGRATION", raising=False)
    with pytest.raises(pytest.skip.Exception, match="install it with: apt-get install -y x"):
        require_binary("queuebot-no-such-binary", "apt-get install -y x")
    monkeypatch.setenv("QUEUEBOT_REQUIRE_INTEGRATION", "1")
    with pytest.raises(pytest.fail.Exception, match="install it with: apt-get install -y x"):
        require_binary("queuebot-no-such-binary", "apt-get install -y x")
    assert require_binary("sh", "apt-get install -y dash").endswith("/sh")


@pytest.mark.integration
async def test_alertmanager_helpers(alertmanager: Alertmanager) -> None:
    assert alertmanager.api == f"{alertmanager.url}{PREFIX}/api/v2"
    await alertmanager.push_alert(QUEUE_LABELS, {"summary": "queue is long"})
    silence_id = await alertmanager.create_silence(
        [{"name": "__alert_rule_uid__", "value": RULE_UID}],
        datetime.now(UTC) + timedelta(hours=1),
    )
    assert [s["id"] for s in await alertmanager.active_silences()] == [silence_id]
    [alert] = await alertmanager.alerts(filter=[f'__alert_rule_uid__="{RULE_UID}"'])
    assert alert["annotations"] == {"summary": "queue is long"}
    assert alert["status"]["silencedBy"] == [silence_id]
    assert await alertmanager.alerts(silenced=False) == []

    await alertmanager.expire(silence_id)
    assert await alertmanager.active_silences() == []
    assert (await alertmanager.silence(silence_id))["status"]["state"] == "expired"
    assert len(await alertmanager.silences()) == 1


@pytest.mark.integration
async def test_alertmanager_restart_keeps_silences_not_alerts(alertmanager: Alertmanager) -> None:
    await alertmanager.push_alert(QUEUE_LABELS)
    silence_id = await alertmanager.create_silence(
        [{"name": "type", "value": "alerting-infra"}], datetime.now(UTC) + timedelta(hours=1)
    )
    await alertmanager.stop()
    with pytest.raises(aiohttp.ClientConnectionError):
        await alertmanager.silences()

    await alertmanager.start()
    assert [s["id"] for s in await alertmanager.active_silences()] == [silence_id]
    assert await alertmanager.alerts() == []


@pytest.mark.integration
async def test_alertmanager_resolved_alert_is_not_listed(alertmanager: Alertmanager) -> None:
    now = datetime.now(UTC)
    await alertmanager.push_alert(
        QUEUE_LABELS, starts_at=now - timedelta(minutes=10), ends_at=now - timedelta(minutes=1)
    )
    assert await alertmanager.alerts() == []


# -- the sandbox only ------------------------------------------------------------------------


async def test_sandbox_requires_the_bearer_token(grafana_sandbox: GrafanaSandbox) -> None:
    api = f"{grafana_sandbox.url}{PREFIX}/api/v2"
    async with aiohttp.ClientSession() as http:
        for headers in ({}, {"Authorization": "Bearer glsa_wrong"}, {"Authorization": TOKEN}):
            async with http.get(f"{api}/silences", headers=headers) as response:
                assert response.status == 401
                assert await response.json() == {"message": "Unauthorized"}
        async with http.get(f"{grafana_sandbox.url}/api/health") as response:
            assert await response.json() == {"database": "ok", "version": "sandbox"}


async def test_sandbox_without_token_is_open_and_follows_its_clock() -> None:
    now = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
    sandbox = GrafanaSandbox(clock=lambda: now)
    with pytest.raises(RuntimeError):
        _ = sandbox.url
    async with sandbox, aiohttp.ClientSession() as http:
        body = silence_body(startsAt=stamp(now), endsAt=stamp(now + timedelta(hours=1)))
        api = Api("sandbox", f"{sandbox.url}{PREFIX}/api/v2", http)
        silence_id = await api.create(body)
        assert (await api.get(silence_id))["startsAt"] == "2026-01-05T12:00:00.000Z"
        now += timedelta(hours=1)
        assert (await api.get(silence_id))["status"] == {"state": "expired"}
    with pytest.raises(aiohttp.ClientConnectionError):
        async with aiohttp.ClientSession() as http, http.get(f"{sandbox.url}/api/health"):
            pass
