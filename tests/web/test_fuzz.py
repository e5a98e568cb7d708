"""Fuzzing the bot's two public doors: the Grafana webhook and Slack's request URL.

Properties: whatever arrives at `POST /webhooks/grafana` is answered 2xx or 4xx, never 5xx,
and the bot keeps serving; `POST /slack/events` refuses unsigned, wrongly signed, stale,
future-dated and replayed requests with 401 and acts on none of them; a request Slack sends
again (`X-Slack-Retry-Num`) does not open a second modal. Inputs that once got a 500 (times
out of range in UTC, a 400-digit signature timestamp, bodies Bolt could not parse) are tested
one by one at the end of this module.

Hypothesis and asyncio: hypothesis drives synchronous functions, the stack is asynchronous.
Each test opens ONE running stack on an `asyncio.Runner` of its own (`live_stack`), then
defines its property as an inner `@given` function and calls it; every example runs its
requests with `live.run(...)` on that same event loop. Between examples the loop is idle,
so the servers are at rest while hypothesis generates and shrinks, and the outbox and the
other background tasks progress whenever an example runs. A synchronous client (the
schemathesis test in test_openapi.py uses `live_stack` too) runs under `live.run`
in `asyncio.to_thread`, so the servers on the loop can answer it.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import hmac
import io
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.slack.contract import ActionId
from bot.web.grafana_webhook import MAX_BODY_BYTES, is_json
from queuebot_lab.sandbox.grafana import GrafanaSandbox
from queuebot_lab.sandbox.slack import ONCALL_USER, payloads
from testkit.harness import SIGNING_SECRET, Stack, running_stack, webhook_headers
from testkit.live import Live, live_stack
from testkit.payloads import reference

T = TypeVar("T")

#: Modest example counts: the module runs in CI on every push.
FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FEW = settings(FUZZ, max_examples=12)

WEBHOOK_TOKEN = "fuzz-webhook-token"
HMAC_SECRET = "fuzz-hmac-secret"
TS_HEADER = "X-Grafana-Alerting-Signature-Timestamp"
#: Slack refuses requests older (or newer) than 5 minutes; 302 s clears the window even when
#: the second ticks over between signing and checking.
OUTSIDE_WINDOW = 302


# -- the webhook ---------------------------------------------------------------------------------


class Sent:
    """One webhook request: its body, its Content-Type (None: no header) and transfer."""

    # Not a dataclass: hypothesis prints a dataclass field by field, and a 1 MiB body would
    # drown its report.
    def __init__(
        self, body: bytes, content_type: str | None = "application/json", chunked: bool = False
    ) -> None:
        self.body, self.content_type, self.chunked = body, content_type, chunked

    def __repr__(self) -> str:
        shown = self.body if len(self.body) <= 200 else self.body[:200] + b"..."
        return f"Sent({shown!r} [{len(self.body)} bytes], {self.content_type!r}, {self.chunked})"


async def _post(stack: Stack, sent: Sent, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """POST `sent` to the webhook; the status and the JSON answer (None if not JSON)."""
    # A file-like body: aiohttp warns that raw bytes this large might block the loop.
    data: io.BytesIO | AsyncIterator[bytes] = io.BytesIO(sent.body)
    if sent.chunked:

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(sent.body), 65536):
                yield sent.body[start : start + 65536]

        data = chunks()
    sent_headers = webhook_headers(headers, stack.token)
    del sent_headers["Content-Type"]
    if sent.content_type is not None:
        sent_headers["Content-Type"] = sent.content_type
    async with stack.http.post(
        f"{stack.url}/webhooks/grafana",
        data=data,
        headers=sent_headers,
        # aiohttp would add `application/octet-stream`; "no Content-Type" must mean none.
        skip_auto_headers=() if sent.content_type else ("Content-Type",),
    ) as response:
        raw = await response.read()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, None


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=40)
    | st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _paths(node: Any, at: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if at:
        yield at
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*at, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*at, index))


def _kind(path: tuple[str | int, ...]) -> str:
    value: Any = reference()
    for step in path:
        value = value[step]
    if str(path[-1]).endswith("At"):
        return "time"
    return type(value).__name__


REFERENCE_PATHS = sorted(set(_paths(reference())), key=repr)
#: The reference's fields by kind (time, str, int, dict, list): each kind gets an equal share
#: of the examples, so the two time fields are not drowned by thirty strings.
FIELDS_BY_KIND = [
    [path for path in REFERENCE_PATHS if _kind(path) == kind]
    for kind in sorted({_kind(path) for path in REFERENCE_PATHS})
]

_ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=14)), timezone(-timedelta(hours=12)), timezone(timedelta(0))]
)
# Years 2 to 9998: a time that leaves datetime's range once turned into UTC is a known 500
# (test_out_of_range_time_is_refused below).
_times = st.datetimes(
    min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31), timezones=_ZONES
).map(lambda moment: moment.isoformat())

#: Values of the right JSON type that a careless sender might still put there.
adversarial = st.one_of(
    st.text(),
    st.text(st.sampled_from("\x00\u202e\ufeff\U0001f525<>&*_~`|\\\"'\n"), max_size=50),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    _times,
    st.sampled_from(["", "0001-01-01T00:00:00Z", "firing", "resolved", "1", "4"]),
)


def _replaced(path: tuple[str | int, ...], value: Any, delete: bool) -> bytes:
    body = reference()
    parent: Any = body
    for step in path[:-1]:
        parent = parent[step]
    if delete and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return json.dumps(body).encode()


def _odd_values(path: tuple[str | int, ...]) -> st.SearchStrategy[Any]:
    """Any JSON value (mostly of the wrong type), or an odd one of the field's own type."""
    if str(path[-1]).endswith("At"):
        return json_values | _times | adversarial
    return json_values | adversarial


mutated_reference = st.one_of(*map(st.sampled_from, FIELDS_BY_KIND)).flatmap(
    lambda path: st.builds(_replaced, st.just(path), _odd_values(path), st.booleans())
)


def _nested(depth: int, opener: str, closed: bool) -> bytes:
    closer = {"[": "]", '{"a":': "}"}[opener]
    return (opener * depth + ("0" + closer * depth if closed else "")).encode()


deep = st.builds(
    _nested, st.integers(1, 20_000), st.sampled_from(["[", '{"a":']), st.booleans()
) | st.just(b"[" * 10_000)


def _sized(size: int) -> bytes:
    """The reference body padded (in its description) to exactly `size` bytes."""
    body = reference()
    body["alerts"][0]["annotations"]["description"] = ""
    bare = len(json.dumps(body).encode())
    body["alerts"][0]["annotations"]["description"] = "x" * (size - bare)
    return json.dumps(body).encode()


near_limit = st.integers(MAX_BODY_BYTES - 64, MAX_BODY_BYTES + 64)


def _many_alerts(count: int) -> bytes:
    body = reference()
    alert = {"status": "firing", "startsAt": "2024-12-01T02:23:00Z", "labels": {"a": "b"}}
    body["alerts"] = [alert] * count
    return json.dumps(body).encode()


def _huge_array(size: int) -> bytes:
    return b"[" + b"0," * (size // 2) + b"0]"


def _with_bytes(position: int, junk: bytes) -> bytes:
    raw = json.dumps(reference()).encode()
    at = position % len(raw)
    return raw[:at] + junk + raw[at:]


invalid_utf8 = st.builds(
    _with_bytes,
    st.integers(0, 10_000),
    st.binary(min_size=1, max_size=8).filter(lambda junk: not _is_utf8(junk))
    | st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"]),
)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


content_types = st.sampled_from(
    [
        "application/json",
        None,
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin-1",
        "application/json; charset=utf-16",
        "garbage/;;==",
    ]
)

webhook_requests = st.builds(
    Sent,
    st.one_of(
        st.just(b""),
        json_values.map(lambda value: json.dumps(value).encode()),
        mutated_reference,
        deep,
        invalid_utf8,
        st.binary(max_size=64),
        st.sampled_from([9_999, 10_000, 10_001]).map(_many_alerts),
        st.integers(MAX_BODY_BYTES - 16, MAX_BODY_BYTES + 16).map(_huge_array),
    ),
    content_types,
    st.booleans(),
)


def _assert_answer(status: int, answer: Any, sent: Sent) -> None:
    assert status < 500, f"{status} for {sent!r}"
    assert status in (202, 400, 413, 415), f"{status} for {sent!r}"
    too_large = len(sent.body) > MAX_BODY_BYTES
    assert (status == 413) == too_large, f"{status} for {sent!r}"
    not_json = not is_json(sent.content_type or "")
    assert (status == 415) == (not_json and not too_large), f"{status} for {sent!r}"
    if status == 400:
        assert isinstance(answer, dict) and answer["error"] and "details" in answer


def _still_serving(live: Live) -> None:
    stack = live.stack
    assert live.run(stack.webhook(reference())).status == 202

    async def health() -> int:
        async with stack.http.get(f"{stack.url}/healthz") as response:
            return response.status

    assert live.run(health()) == 200


@pytest.mark.slow
def test_webhook_answers_every_body_without_a_server_error(tmp_path: Path) -> None:
    """Arbitrary JSON, the reference with a field of the wrong type or an odd value, deep
    nesting, invalid UTF-8, any Content-Type (or none), empty and huge bodies: 202, 400, 413
    (exactly when over 1 MiB) or 415 (exactly when not declared JSON), never 5xx; afterwards
    the bot still takes an alert."""
    with live_stack(tmp_path) as live:

        @FUZZ
        @given(sent=webhook_requests)
        def answered(sent: Sent) -> None:
            _assert_answer(*live.run(_post(live.stack, sent)), sent)

        answered()
        _still_serving(live)


@pytest.mark.slow
def test_webhook_answers_odd_fields_without_a_server_error(tmp_path: Path) -> None:
    """The reference alert with one field deleted, of the wrong type, or holding an odd value
    of its own type (control and bidi characters, lone surrogates, huge numbers, far-off
    times): 202 or 400, never 5xx; afterwards the bot still takes an alert."""
    with live_stack(tmp_path) as live:

        @FUZZ
        @given(sent=mutated_reference.map(Sent))
        def answered(sent: Sent) -> None:
            status, answer = live.run(_post(live.stack, sent))
            assert status in (202, 400), f"{status} for {sent!r}"
            _assert_answer(status, answer, sent)

        answered()
        _still_serving(live)


@pytest.mark.slow
def test_webhook_size_limit_is_exact(tmp_path: Path) -> None:
    """A valid body within 64 bytes of 1 MiB: 202 up to the limit, 413 past it, whether it
    comes with a Content-Length or chunked."""
    with live_stack(tmp_path) as live:

        @FEW
        @given(size=near_limit, chunked=st.booleans())
        def limited(size: int, chunked: bool) -> None:
            sent = Sent(_sized(size), chunked=chunked)
            assert len(sent.body) == size
            status, _ = live.run(_post(live.stack, sent))
            assert status == (202 if size <= MAX_BODY_BYTES else 413), sent

        limited()
        _still_serving(live)


printable = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=80)


def _basic(credentials: bytes) -> str:
    return "Basic " + base64.b64encode(credentials).decode()


authorization_headers = st.one_of(
    printable,
    st.builds(
        lambda scheme, rest: f"{scheme} {rest}", st.sampled_from(["Bearer", "Basic"]), printable
    ),
    st.binary(max_size=40).map(_basic),
    st.builds(
        lambda user, password: _basic(user + b":" + password),
        st.binary(max_size=8),
        st.binary(max_size=20),
    ),
)


@pytest.mark.slow
def test_webhook_refuses_wrong_credentials_without_a_server_error(tmp_path: Path) -> None:
    """Token and timestamped signature configured: random Authorization values, signatures
    and timestamps get 401 (the reference body is valid, so only they can be at fault)."""
    env = {
        "QUEUEBOT_WEBHOOK_TOKEN": WEBHOOK_TOKEN,
        "QUEUEBOT_WEBHOOK_HMAC_SECRET": HMAC_SECRET,
        "QUEUEBOT_WEBHOOK_HMAC_TIMESTAMP_HEADER": TS_HEADER,
    }
    body = json.dumps(reference()).encode()
    with live_stack(tmp_path, **env) as live:

        @FUZZ
        @given(
            authorization=st.none() | authorization_headers,
            signature=st.none() | st.from_regex(r"\A[0-9a-f]{64}\Z") | printable,
            # Within float range: a timestamp of 309 digits or more is a known 500
            # (test_huge_signature_timestamp_is_refused below).
            stamp=st.none() | printable | st.integers(-(10**300), 10**300).map(str),
        )
        def refused(authorization: str | None, signature: str | None, stamp: str | None) -> None:
            headers = {
                name: value
                for name, value in (
                    ("Authorization", authorization),
                    ("X-Grafana-Alerting-Signature", signature),
                    (TS_HEADER, stamp),
                )
                if value is not None
            }
            status, answer = live.run(_post(live.stack, Sent(body), headers))
            assert status == 401, (status, headers)
            assert answer["error"].startswith("unauthorized: ")

        refused()
        now = str(int(time.time()))
        signed = hmac.new(HMAC_SECRET.encode(), f"{now}:".encode() + body, hashlib.sha256)
        headers = {
            "Authorization": f"Bearer {WEBHOOK_TOKEN}",
            "X-Grafana-Alerting-Signature": signed.hexdigest(),
            TS_HEADER: now,
        }
        assert live.run(_post(live.stack, Sent(body), headers))[0] == 202


# -- Slack's request URL -------------------------------------------------------------------------


def _signed(body: str, at: float | None = None, secret: str = SIGNING_SECRET) -> dict[str, str]:
    stamp = str(int(time.time() if at is None else at))
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": payloads.sign(secret, stamp, body),
    }


async def _slack(stack: Stack, body: str, headers: dict[str, str]) -> int:
    async with stack.http.post(f"{stack.url}/slack/events", data=body, headers=headers) as r:
        await r.read()
        return r.status


async def _posted(stack: Stack) -> str:
    assert (await stack.webhook(reference())).status == 202
    (parent,) = await stack.parents(1)
    return parent.ts


def _click(stack: Stack, ts: str, action: ActionId) -> str:
    """The form Slack would send when the on-call clicks `action` in message `ts`: a fresh
    trigger_id and response_url that the local Slack workspace honours."""
    sandbox = stack.sandbox
    workspace = sandbox.workspace
    channel, user = workspace.channel(sandbox.channel_id), workspace.users[ONCALL_USER]
    message = sandbox.message(None, ts)
    assert message is not None
    element = payloads.find_element(message.blocks, action.value)
    assert element is not None
    target = workspace.issue_response_url(channel.id, user.id, ts)
    payload = payloads.block_actions(
        workspace.identity,
        user,
        channel,
        message.to_slack(),
        element,
        is_ephemeral=False,
        trigger_id=workspace.issue_trigger(user.id).id,
        response_url=sandbox.people.response_url(target.id),
        action_ts=f"{time.time():.6f}",
    )
    return urlencode({"payload": json.dumps(payload)})


@dataclass(frozen=True)
class Seen:
    """What the local Slack workspace recorded: Web API calls, response_url posts, views."""

    calls: tuple[str, ...]
    response_posts: int
    ephemerals: int
    views: int

    @classmethod
    def now(cls, stack: Stack) -> Seen:
        sandbox = stack.sandbox
        return cls(
            tuple(c.method for c in sandbox.calls()),
            len(sandbox.response_posts),
            len(sandbox.ephemerals()),
            len(sandbox.views),
        )


async def _answered_click(stack: Stack, ts: str) -> None:
    """A genuine Run diagnostics click, and its private answer (diagnostics are not set up
    here): once it shows, whatever an earlier request set off would have shown too."""
    before = len(stack.sandbox.response_posts)
    body = _click(stack, ts, ActionId.RUN_DIAGNOSTICS)
    assert await _slack(stack, body, _signed(body)) == 200
    await stack.sandbox.wait_for(lambda: len(stack.sandbox.response_posts) > before)


def _form(fields: dict[str, str]) -> str:
    return urlencode(fields)


#: Form keys and JSON fields: anything but `ssl_check`, which Slack sends unsigned to test TLS
#: and Bolt answers 200 without doing anything.
_keys = st.text(max_size=10).filter(lambda key: key != "ssl_check")
_objects = st.dictionaries(_keys, json_values, max_size=5)


def _slack_bodies(click: str) -> st.SearchStrategy[str]:
    """Slack-shaped bodies: a real click's form, a slash command, an Events API URL check,
    block_actions payloads and JSON bodies Slack could send, and arbitrary form fields.
    Bodies that Bolt cannot parse at all are a known 500 (test_unparsable_slack_body_is_refused
    below) and stay out."""
    command = _form(
        {"command": "/queue-status", "text": "", "user_id": ONCALL_USER, "team_id": "T0QUEUEBOT"}
    )
    challenge = json.dumps({"type": "url_verification", "challenge": "c", "token": "t"})
    return st.one_of(
        st.sampled_from([click, command, challenge]),
        _objects.map(lambda payload: _form({"payload": json.dumps(payload)})),
        _objects.map(json.dumps),
        st.dictionaries(_keys.filter(lambda key: "payload" not in key), st.text(), max_size=5).map(
            _form
        ),
    )


@dataclass(frozen=True)
class Forged:
    """A request that must not pass: what kind of forgery, its headers and the body sent."""

    kind: str
    headers: dict[str, str]
    body: str


def _tampered(body: str, extra: str) -> str:
    """`body` changed after it was signed, still parseable (unparsable ones are a known 500)."""
    if body.startswith("{"):
        return json.dumps({**json.loads(body), "tampered": extra})
    return body + "&" + _form({"tampered": extra})


def _forgeries(body: str) -> st.SearchStrategy[Forged]:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    current = str(int(time.time()))
    signatures = st.from_regex(r"\Av0=[0-9a-f]{64}\Z")
    return st.one_of(
        st.just(Forged("unsigned", form, body)),
        st.just(Forged("timestamp only", form | {"X-Slack-Request-Timestamp": current}, body)),
        st.builds(
            lambda sig: Forged("signature only", form | {"X-Slack-Signature": sig}, body),
            signatures,
        ),
        st.builds(
            lambda sig: Forged(
                "random signature", _signed(body) | {"X-Slack-Signature": sig}, body
            ),
            signatures | printable,
        ),
        st.builds(
            lambda secret: Forged("wrong secret", _signed(body, secret=secret), body),
            printable.filter(lambda secret: secret != SIGNING_SECRET),
        ),
        st.builds(
            lambda extra: Forged("tampered", _signed(body), _tampered(body, extra)),
            st.text(),
        ),
        st.builds(
            lambda age: Forged("stale", _signed(body, at=time.time() - age), body),
            st.integers(OUTSIDE_WINDOW, 10**10),
        ),
        st.builds(
            lambda ahead: Forged("future", _signed(body, at=time.time() + ahead), body),
            st.integers(OUTSIDE_WINDOW, 10**10),
        ),
    )


@pytest.mark.slow
def test_unverified_slack_requests_are_refused_and_do_nothing(tmp_path: Path) -> None:
    """Unsigned, badly signed, signed with another secret, stale and future-dated requests
    get 401, and the local Slack workspace sees nothing come of them."""
    with live_stack(tmp_path) as live:
        stack = live.stack
        ts = live.run(_posted(stack))
        live.run(_answered_click(stack, ts))
        live.run(stack.settled())
        click = _click(stack, ts, ActionId.RUN_DIAGNOSTICS)
        before = Seen.now(stack)

        @FUZZ
        @given(data=st.data())
        def refused(data: st.DataObject) -> None:
            body = data.draw(_slack_bodies(click), label="body")
            forged = data.draw(_forgeries(body), label="request")
            assert live.run(_slack(stack, forged.body, forged.headers)) == 401, forged

        refused()
        live.run(_answered_click(stack, ts))
        after = Seen.now(stack)
        assert after.calls == before.calls
        assert after.views == before.views
        # The one answer is the barrier click's own.
        assert after.response_posts == before.response_posts + 1
        assert after.ephemerals == before.ephemerals + 1


@pytest.mark.slow
def test_replayed_slack_request_is_refused_and_does_nothing(tmp_path: Path) -> None:
    """A correctly signed click is acted on once; the same bytes and headers sent again more
    than 5 minutes later (the bot's clock moved on) get 401 and do nothing."""
    real_time = time.time
    with live_stack(tmp_path) as live:
        stack = live.stack
        ts = live.run(_posted(stack))

        @FEW
        @given(later=st.integers(OUTSIDE_WINDOW, 10**9))
        def replayed(later: int) -> None:
            body = _click(stack, ts, ActionId.RUN_DIAGNOSTICS)
            headers = _signed(body)
            first = Seen.now(stack)
            assert live.run(_slack(stack, body, headers)) == 200
            live.run(
                stack.sandbox.wait_for(
                    lambda: len(stack.sandbox.response_posts) > first.response_posts
                )
            )
            acted = Seen.now(stack)
            # Bolt checks the timestamp against slack_sdk's clock: move it, not the request.
            with mock.patch("slack_sdk.signature.time", lambda: real_time() + later):
                assert live.run(_slack(stack, body, headers)) == 401
            live.run(_answered_click(stack, ts))
            after = Seen.now(stack)
            assert after.calls == acted.calls
            assert after.response_posts == acted.response_posts + 1  # the barrier's

        replayed()


# -- Slack's own retries -------------------------------------------------------------------------

RETRY_HEADERS = {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}


async def _silence_clicked_twice(stack: Stack) -> Seen:
    """A signed Silence… click, then the same payload again as Slack's first retry (a fresh
    signature, retry headers); what the workspace recorded after both were answered."""
    ts = await _posted(stack)
    await stack.settled()
    body = _click(stack, ts, ActionId.SILENCE)
    assert await _slack(stack, body, _signed(body)) == 200
    await stack.sandbox.wait_for(lambda: stack.sandbox.views)
    assert await _slack(stack, body, _signed(body) | RETRY_HEADERS) == 200
    await _answered_click(stack, ts)
    return Seen.now(stack)


@contextmanager
def _with_grafana(tmp_path: Path) -> Iterator[Live]:
    """A running stack whose Silence… button works: a local Grafana silence API behind it."""
    with asyncio.Runner() as runner:
        exits = AsyncExitStack()
        grafana = runner.run(exits.enter_async_context(GrafanaSandbox(token="glsa_fuzz")))
        env = {"GRAFANA_URL": grafana.url, "GRAFANA_TOKEN": "glsa_fuzz"}
        stack = runner.run(exits.enter_async_context(running_stack(tmp_path, **env)))
        try:
            yield Live(stack, runner)
        finally:
            runner.run(exits.aclose())


def test_a_retried_silence_click_opens_one_modal(tmp_path: Path) -> None:
    """Slack's retry of a Silence… click does not open a second modal: the retry carries the
    same trigger_id, which Slack (and the local workspace) honours once."""
    with _with_grafana(tmp_path) as live:
        seen = live.run(_silence_clicked_twice(live.stack))
        assert seen.views == 1


def test_a_retried_silence_click_is_not_acted_on_again(tmp_path: Path) -> None:
    """The retry of a click already acked is not handled a second time."""
    with _with_grafana(tmp_path) as live:
        seen = live.run(_silence_clicked_twice(live.stack))
        assert seen.calls.count("views.open") == 1
        assert not any("could not open" in e.text for e in live.stack.sandbox.ephemerals())


# -- inputs that once got a 500 ---------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("startsAt", "0001-01-01T00:00:00+01:00"),
        ("startsAt", "9999-12-31T23:59:59-01:00"),
        ("endsAt", "9999-12-31T23:59:59-01:00"),
    ],
)
async def test_out_of_range_time_is_refused(tmp_path: Path, field: str, value: str) -> None:
    """A time that is valid RFC 3339 but out of datetime's range in UTC is a 400."""
    body = copy.deepcopy(reference())
    body["alerts"][0][field] = value
    async with running_stack(tmp_path) as stack:
        assert (await stack.webhook(body)).status == 400


async def test_huge_signature_timestamp_is_refused(tmp_path: Path) -> None:
    """A timestamp header of 400 digits is refused with 401 like any other bad timestamp."""
    env = {
        "QUEUEBOT_WEBHOOK_HMAC_SECRET": HMAC_SECRET,
        "QUEUEBOT_WEBHOOK_HMAC_TIMESTAMP_HEADER": TS_HEADER,
    }
    async with running_stack(tmp_path, **env) as stack:
        headers = {"X-Grafana-Alerting-Signature": "0" * 64, TS_HEADER: "1" + "0" * 400}
        assert (await stack.webhook(reference(), headers)).status == 401


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (b"{not json", {}),
        (b"payload=%7Bnope", {}),
        (b"payload=%5B1%5D", {}),
        (b'"x"', {"Content-Type": "application/json"}),
        (b"text=\xff\xfe", {}),
        (
            b"command=%2Fqueue-status",
            {"X-Slack-Request-Timestamp": "abc", "X-Slack-Signature": "v0=00"},
        ),
    ],
    ids=[
        "bad-json",
        "payload-not-json",
        "payload-a-list",
        "json-string",
        "invalid-utf8",
        "bad-timestamp",
    ],
)
async def test_unparsable_slack_body_is_refused(
    tmp_path: Path, body: bytes, headers: dict[str, str]
) -> None:
    """An unsigned request Bolt cannot parse is refused with 401, like any unsigned one."""
    async with (
        running_stack(tmp_path) as stack,
        stack.http.post(
            f"{stack.url}/slack/events",
            data=body,
            headers={"Content-Type": "application/x-www-form-urlencoded", **headers},
        ) as response,
    ):
        assert response.status == 401
