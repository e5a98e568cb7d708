"""Reading a request's body within a time limit: a client that sends it slowly (by design or by
accident) must not hold a connection, and its memory, as long as it likes."""

from __future__ import annotations

import asyncio

from aiohttp import web

#: Where create_app keeps QUEUEBOT_HTTP_READ_TIMEOUT_SECONDS for the handlers.
READ_TIMEOUT = web.AppKey("read_timeout", float)


class SlowBody(Exception):
    """The body did not arrive in time."""


async def read_body(request: web.Request) -> bytes:
    """The whole body; SlowBody when it takes longer than the app's read timeout.
    aiohttp's HTTPRequestEntityTooLarge passes through."""
    limit = request.app[READ_TIMEOUT]
    try:
        async with asyncio.timeout(limit):
            return await request.read()
    except TimeoutError:
        raise SlowBody(f"the body did not arrive within {limit:g} s") from None


def slow_body_answer(exc: SlowBody) -> web.Response:
    """408, and the connection closed: the rest of the body is not waited for."""
    return web.json_response({"error": str(exc)}, status=408, headers={"Connection": "close"})
