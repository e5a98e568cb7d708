"""POST /slack/events: every Slack request, verified before Bolt sees it.

Bolt parses a body before it checks the signature and answers garbage from anyone with a 500
and a traceback; here an unverified request gets 401 and nothing else, and a body Bolt cannot
read gets 400.
"""

from __future__ import annotations

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier


class SlackEvents:
    """aiohttp handler for Slack's request URL (interactivity, slash commands, events)."""

    def __init__(self, bolt: AsyncApp, verifier: SignatureVerifier) -> None:
        self._bolt = bolt
        self._verifier = verifier

    async def __call__(self, request: web.Request) -> web.Response:
        body = await request.read()
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
            bolt_request = await to_bolt_request(request)
        except (ValueError, AttributeError, UnicodeDecodeError):
            return web.json_response({"error": "not a Slack request body"}, status=400)
        response = await self._bolt.async_dispatch(bolt_request)
        return await to_aiohttp_response(response)
