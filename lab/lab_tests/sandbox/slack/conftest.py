"""Fixtures for the local Slack workspace's own tests: a served sandbox and a client on it."""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from queuebot_lab.sandbox.slack import SlackSandbox
from queuebot_lab.sandbox.slack.server import SANDBOX_BOT_TOKEN

#: A small modal as an app would open it for a silence.
SILENCE_MODAL: dict[str, Any] = {
    "type": "modal",
    "callback_id": "silence",
    "title": {"type": "plain_text", "text": "Silence alert"},
    "submit": {"type": "plain_text", "text": "Silence"},
    "blocks": [
        {
            "type": "input",
            "block_id": "duration",
            "label": {"type": "plain_text", "text": "Minutes"},
            "element": {"type": "plain_text_input", "action_id": "minutes"},
        }
    ],
}


@pytest.fixture
async def sandbox() -> AsyncIterator[SlackSandbox]:
    sandbox = SlackSandbox()
    await sandbox.start()
    yield sandbox
    await sandbox.stop()


@pytest.fixture
def client(sandbox: SlackSandbox) -> AsyncWebClient:
    return AsyncWebClient(token=SANDBOX_BOT_TOKEN, base_url=sandbox.api_url)


async def refusal(call: Any) -> dict[str, Any]:
    """The body of the SlackApiError an awaited call raises."""
    with pytest.raises(SlackApiError) as raised:
        await call
    body: dict[str, Any] = raised.value.response.data
    return body
