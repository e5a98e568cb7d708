"""The workspace answers only under an address it listens on, to its own page, and takes only
JSON for what changes state outside Slack's API: another web page can neither act nor read
there, by a cross-site post or by DNS rebinding (the browser test does it from a real page)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from queuebot_lab.sandbox.slack import SlackSandbox
from queuebot_lab.sandbox.slack.guard import Listening, LocalGuard, split_authority
from queuebot_lab.sandbox.slack.server import SANDBOX_BOT_TOKEN
from queuebot_lab.sandbox.slack.web import UiControl

JSON_TYPE = {"Content-Type": "application/json"}


@pytest.fixture
async def sandbox() -> AsyncIterator[SlackSandbox]:
    async with SlackSandbox() as sandbox:
        yield sandbox


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
def fired(sandbox: SlackSandbox) -> list[str]:
    """What the host's "surge" control did: it appends each time it runs."""
    runs: list[str] = []

    async def fire() -> str:
        runs.append("surge")
        return "Fired a surge"

    sandbox.ui.controls["surge"] = UiControl("Fire a surge", fire)
    return runs


def _port(sandbox: SlackSandbox) -> int:
    return sandbox.port


async def _status(
    http: aiohttp.ClientSession,
    sandbox: SlackSandbox,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    data: Any = None,
) -> int:
    async with http.request(method, f"{sandbox.url}{path}", headers=headers, data=data) as answer:
        return answer.status


# What a rebinding page could reach: the page, its state and live stream, a file, every way
# to act, the fault switch and the call log, and Slack's API itself.
EVERY_KIND_OF_REQUEST = [
    ("GET", "/", None),
    ("GET", "/static/app.js", None),
    ("GET", "/ui/state?user=U0ONCALL", None),
    ("GET", "/ui/events", None),
    ("GET", "/ui/files/F0", None),
    ("POST", "/ui/click", b"{}"),
    ("POST", "/ui/command", b'{"text": "/queue-status"}'),
    ("POST", "/ui/control/surge", b"{}"),
    ("POST", "/_sandbox/faults", b'{"status": 500}'),
    ("DELETE", "/_sandbox/faults", None),
    ("GET", "/_sandbox/calls", None),
    ("POST", "/api/auth.test", b"{}"),
]


@pytest.mark.parametrize(("method", "path", "body"), EVERY_KIND_OF_REQUEST)
async def test_a_request_under_another_name_is_misdirected(
    sandbox: SlackSandbox,
    http: aiohttp.ClientSession,
    fired: list[str],
    method: str,
    path: str,
    body: bytes | None,
) -> None:
    """Host: evil.example:PORT (a rebound name) gets 421 and nothing happens."""
    sandbox.faults.add(method="chat.update")
    headers = {**JSON_TYPE, "Host": f"evil.example:{_port(sandbox)}"}
    assert await _status(http, sandbox, method, path, headers=headers, data=body) == 421
    assert fired == [] and len(sandbox.faults.pending) == 1 and sandbox.calls() == []


@pytest.mark.parametrize("named", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}"])
async def test_the_addresses_it_listens_on_are_answered(
    sandbox: SlackSandbox, http: aiohttp.ClientSession, fired: list[str], named: str
) -> None:
    headers = {**JSON_TYPE, "Host": named.format(port=_port(sandbox))}
    assert await _status(http, sandbox, "GET", "/ui/state", headers=headers) == 200
    assert await _status(http, sandbox, "POST", "/ui/control/surge", headers=headers) == 200
    assert fired == ["surge"]


@pytest.mark.parametrize("named", ["127.0.0.1:{other}", "127.0.0.1", "192.0.2.7:{port}"])
async def test_another_port_or_address_is_misdirected(
    sandbox: SlackSandbox, http: aiohttp.ClientSession, named: str
) -> None:
    port = _port(sandbox)
    headers = {"Host": named.format(port=port, other=port + 1)}
    assert await _status(http, sandbox, "GET", "/ui/state", headers=headers) == 421


async def test_a_request_without_host_is_misdirected(sandbox: SlackSandbox) -> None:
    """HTTP/1.0 lets a client leave Host out; the workspace does not guess."""
    reader, writer = await asyncio.open_connection("127.0.0.1", _port(sandbox))
    writer.write(b"GET /ui/state HTTP/1.0\r\n\r\n")
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    await writer.wait_closed()
    assert status_line.split()[1] == b"421"


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/ui/control/surge"), ("POST", "/_sandbox/faults"), ("GET", "/ui/events")],
)
@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://localhost:{port}"])
async def test_another_origin_is_refused(
    sandbox: SlackSandbox,
    http: aiohttp.ClientSession,
    fired: list[str],
    method: str,
    path: str,
    origin: str,
) -> None:
    """An Origin that is not the page's own (the Host it was loaded under) gets 403."""
    headers = {**JSON_TYPE, "Origin": origin.format(port=_port(sandbox))}
    body = b'{"status": 500}'
    assert await _status(http, sandbox, method, path, headers=headers, data=body) == 403
    assert fired == [] and sandbox.faults.pending == []


async def test_the_pages_own_origin_may_act(
    sandbox: SlackSandbox, http: aiohttp.ClientSession, fired: list[str]
) -> None:
    port = _port(sandbox)
    for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
        headers = {**JSON_TYPE, "Host": host, "Origin": f"http://{host}"}
        assert await _status(http, sandbox, "POST", "/ui/control/surge", headers=headers) == 200
    assert fired == ["surge", "surge"]


@pytest.mark.parametrize(
    "kind", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None]
)
async def test_controls_and_the_fault_switch_take_only_json(
    sandbox: SlackSandbox, http: aiohttp.ClientSession, fired: list[str], kind: str | None
) -> None:
    """What a cross-site form or no-cors fetch can send without asking is 415, and does
    nothing: not a demo control, not a fault added, not the faults cleared."""
    headers = {} if kind is None else {"Content-Type": kind}
    sandbox.faults.add(method="chat.update")
    body = b'{"status": 500}'
    for path in ("/ui/control/surge", "/_sandbox/faults", "/ui/close"):
        assert await _status(http, sandbox, "POST", path, headers=headers, data=body) == 415
    assert await _status(http, sandbox, "DELETE", "/_sandbox/faults", headers=headers) == 415
    assert fired == [] and [f.method for f in sandbox.faults.pending] == ["chat.update"]


async def test_slacks_api_keeps_taking_forms_and_json(
    sandbox: SlackSandbox, http: aiohttp.ClientSession
) -> None:
    """The Web API answers form and JSON bodies as Slack does; only the Host is checked."""
    form = {"token": SANDBOX_BOT_TOKEN, "channel": sandbox.channel_id, "text": "by form"}
    async with http.post(f"{sandbox.api_url}chat.postMessage", data=form) as answer:
        assert (await answer.json())["ok"] is True
    bearer = {"Authorization": f"Bearer {SANDBOX_BOT_TOKEN}"}
    body = {"channel": sandbox.channel_id, "text": "by JSON"}
    async with http.post(f"{sandbox.api_url}chat.postMessage", json=body, headers=bearer) as answer:
        assert (await answer.json())["ok"] is True
    assert [m.text for m in sandbox.messages()] == ["by form", "by JSON"]


async def test_it_listens_on_loopback_unless_asked(sandbox: SlackSandbox) -> None:
    assert sandbox._runner is not None
    assert [address[0] for address in sandbox._runner.addresses] == ["127.0.0.1"]


async def test_every_interface_when_asked_with_a_warning(
    http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    """0.0.0.0 is had when asked for: the URL names loopback, any address literal of this
    machine is answered (a rebinding page names a domain, never an address), a name is not."""
    caplog.set_level(logging.WARNING, logger="queuebot_lab.sandbox.slack.server")
    sandbox = SlackSandbox()
    await sandbox.start(host="0.0.0.0")  # noqa: S104 - what this test is about
    try:
        port = _port(sandbox)
        assert sandbox.url == f"http://127.0.0.1:{port}"
        assert any("anyone who can reach it" in r.getMessage() for r in caplog.records)
        for host, status in (
            (f"192.0.2.7:{port}", 200),
            (f"localhost:{port}", 200),
            (f"evil.example:{port}", 421),
        ):
            answered = await _status(http, sandbox, "GET", "/ui/state", headers={"Host": host})
            assert answered == status, host
    finally:
        await sandbox.stop()


@pytest.mark.parametrize(
    ("header", "parsed"),
    [
        ("127.0.0.1:8080", ("127.0.0.1", 8080)),
        ("LOCALHOST:5", ("localhost", 5)),
        ("[::1]:3000", ("::1", 3000)),
        ("[::1]", ("::1", 80)),
        ("evil.example", ("evil.example", 80)),
        ("127.0.0.1:x", None),
        ("[::1", None),
        ("[::1]x", None),
        ("", None),
        ("h:0", None),
        ("h:65536", None),
    ],
)
def test_a_host_header_is_split_into_host_and_port(
    header: str, parsed: tuple[str, int] | None
) -> None:
    assert split_authority(header) == parsed


@pytest.mark.parametrize(
    ("bound", "named", "answered"),
    [
        ("127.0.0.1", "127.0.0.1", True),
        ("127.0.0.1", "localhost", True),
        ("127.0.0.1", "::1", True),
        ("127.0.0.1", "127.0.0.2", False),
        ("127.0.0.1", "evil.example", False),
        ("::1", "localhost", True),
        ("192.0.2.7", "192.0.2.7", True),
        ("192.0.2.7", "127.0.0.1", False),
        ("0.0.0.0", "198.51.100.4", True),  # noqa: S104 - a bound address, as data
        ("0.0.0.0", "evil.example", False),  # noqa: S104
        ("localhost", "127.0.0.1", True),
    ],
)
def test_which_names_an_address_answers_for(bound: str, named: str, answered: bool) -> None:
    at = Listening(bound, 4000)
    assert at.answers_for(named, 4000) is answered
    assert at.answers_for(named, 4001) is False


@pytest.mark.parametrize(
    ("asked", "bound", "named", "answered"),
    [
        # A name asked for is answered, besides the address it resolved to; no other name is.
        ("queuebot-demo.example", "192.0.2.7", "queuebot-demo.example", True),
        ("queuebot-demo.example", "192.0.2.7", "192.0.2.7", True),
        ("queuebot-demo.example", "192.0.2.7", "evil.example", False),
        ("192.0.2.7", "192.0.2.7", "evil.example", False),
        ("[::]", "::", "2001:db8::1", True),
    ],
)
def test_what_was_asked_for_is_answered(asked: str, bound: str, named: str, answered: bool) -> None:
    guard = LocalGuard()
    guard.listening(asked, bound, 4000)
    assert guard.at is not None and guard.at.answers_for(named, 4000) is answered


@pytest.mark.parametrize("path", ["/", "/static/app.js", "/ui/state?user=U0ONCALL"])
async def test_no_other_site_may_frame_the_page(
    sandbox: SlackSandbox, http: aiohttp.ClientSession, path: str
) -> None:
    """Framed by another site, the page would take alice's clicks for it (clickjacking)."""
    async with http.get(f"{sandbox.url}{path}") as answer:
        assert answer.status == 200
        assert answer.headers["X-Frame-Options"] == "DENY"
        assert answer.headers["Content-Security-Policy"] == "frame-ancestors 'none'"
