"""POST /slack/events: every Slack request, verified before Bolt sees it.

Bolt parses a body before it checks the signature and answers garbage from anyone with a 500
and a traceback; here an unverified request gets 401 and nothing else, and a body Bolt cannot
read gets 400. A signed request is taken once: its signature is remembered in the store (so on
every replica) for as long as Slack's five-minute window could accept it, and a captured
request sent again gets 401 (https://docs.slack.dev/authentication/verifying-requests-from-slack).
"""

from __future__ import annotations

import logging

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier

from bot.store import Store, StoreError
from bot.web.bodies import SlowBody, read_body, slow_body_answer

log = logging.getLogger(__name__)

#: Slack's window for a request's timestamp, each side of now; kept a minute longer.
REMEMBERED_SECONDS = 5 * 60 + 60


class SlackEvents:
    """aiohttp handler for Slack's request URL (interactivity, slash commands, events)."""

    def __init__(self, bolt: AsyncApp, verifier: SignatureVerifier, store: Store) -> None:
        self._bolt = bolt
        self._verifier = verifier
        self._store = store

    async def __call__(self, request: web.Request) -> web.Response:
        try:
            body = await read_body(request)
        except SlowBody as exc:
            return slow_body_answer(exc)
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        signature = request.headers.get("X-Slack-Signature", "")
        try:
            valid = timestamp.isdigit() and self._verifier.is_valid(body, timestamp, signature)
        except (ValueError, UnicodeDecodeError):
            valid = False
        if not valid:
            return web.json_response({"error": "invalid Slack signature"}, status=401)
        if request.headers.get("X-Slack-Retry-Num"):
            # Slack retries a request it thinks went unanswered; the first one was handled, and
            # handling it again would act twice (https://docs.slack.dev/apis/events-api/#retries).
            return web.Response(status=200, headers={"X-Slack-No-Retry": "1"})
        try:
            first = await self._store.first_seen(
                f"slack:{signature}", int(timestamp) + REMEMBERED_SECONDS
            )
        except StoreError as exc:
            log.error("cannot tell a replayed Slack request from a new one: %s", exc)
            return web.json_response({"error": "the store is unavailable"}, status=503)
        if not first:
            log.warning("replayed Slack request refused (timestamp %s)", timestamp)
            return web.json_response({"error": "request already received"}, status=401)
        try:
            bolt_request = await to_bolt_request(request)
        except (ValueError, AttributeError, UnicodeDecodeError):
            return web.json_response({"error": "not a Slack request body"}, status=400)
        response = await self._bolt.async_dispatch(bolt_request)
        return await to_aiohttp_response(response)
