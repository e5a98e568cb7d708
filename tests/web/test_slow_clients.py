"""Slow clients: a connection that dribbles its headers, or its body, is cut off after
QUEUEBOT_HTTP_READ_TIMEOUT_SECONDS instead of holding the bot's resources as long as it likes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from urllib.parse import urlsplit

from testkit.harness import WEBHOOK_TOKEN, Stack, running_stack
from testkit.payloads import reference

#: Far longer than the read timeout the tests set, far shorter than aiohttp's own (an hour).
PATIENCE = 10.0


async def _connect(stack: Stack) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    where = urlsplit(stack.url)
    assert where.hostname is not None and where.port is not None
    return await asyncio.open_connection(where.hostname, where.port)


async def test_headers_that_never_end_are_cut_off(tmp_path: Path) -> None:
    """A request whose headers never finish: the connection is closed, with nothing said."""
    async with running_stack(tmp_path, QUEUEBOT_HTTP_READ_TIMEOUT_SECONDS="0.5") as stack:
        reader, writer = await _connect(stack)
        writer.write(b"POST /webhooks/grafana HTTP/1.1\r\nHost: queuebot\r\nX-Slow: ")
        await writer.drain()
        async with asyncio.timeout(PATIENCE):
            assert await reader.read() == b""
        writer.close()


async def test_an_idle_connection_is_closed(tmp_path: Path) -> None:
    async with running_stack(tmp_path, QUEUEBOT_HTTP_READ_TIMEOUT_SECONDS="0.5") as stack:
        reader, writer = await _connect(stack)
        async with asyncio.timeout(PATIENCE):
            assert await reader.read() == b""
        writer.close()


async def test_a_body_that_never_arrives_gets_408(tmp_path: Path) -> None:
    """Headers in time, then a tenth of the body: 408, the connection closed, nothing stored;
    the bot takes the next webhook as usual."""
    body = json.dumps(reference()).encode()
    async with running_stack(tmp_path, QUEUEBOT_HTTP_READ_TIMEOUT_SECONDS="0.5") as stack:
        reader, writer = await _connect(stack)
        writer.write(
            b"POST /webhooks/grafana HTTP/1.1\r\nHost: queuebot\r\n"
            b"Content-Type: application/json\r\n"
            + f"Authorization: Bearer {WEBHOOK_TOKEN}\r\n".encode()
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body[: len(body) // 10]
        )
        await writer.drain()
        async with asyncio.timeout(PATIENCE):
            head = await reader.readuntil(b"\r\n\r\n")
            status_line, *header_lines = head.decode().strip().split("\r\n")
            headers = dict(line.split(": ", 1) for line in header_lines)
            answer = json.loads(await reader.readexactly(int(headers["Content-Length"])))
        writer.close()
        assert status_line == "HTTP/1.1 408 Request Timeout"
        assert answer == {"error": "the body did not arrive within 0.5 s"}
        await stack.settled()
        assert stack.sandbox.messages() == []
        assert (await stack.webhook(reference())).status == 202
        await stack.parents(1)
