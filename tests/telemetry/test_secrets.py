"""No token or secret ever reaches a log line, whatever the log level."""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import pytest

from bot.slack.contract import ActionId
from tests.support.harness import BOT_TOKEN, SIGNING_SECRET, running_stack
from tests.support.payloads import reference

WEBHOOK_TOKEN = "webhook-token-never-logged"


async def test_full_story_logs_no_secret(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A firing, a wrong credential, a click and a resolution at DEBUG leak no secret."""
    caplog.set_level(logging.DEBUG)
    async with running_stack(tmp_path, QUEUEBOT_WEBHOOK_TOKEN=WEBHOOK_TOKEN) as stack:
        bearer = {"Authorization": f"Bearer {WEBHOOK_TOKEN}"}
        await stack.webhook(reference(), bearer)
        (parent,) = await stack.parents(1)
        wrong = base64.b64encode(b"grafana:" + WEBHOOK_TOKEN[::-1].encode()).decode()
        assert (await stack.webhook(reference(), {"Authorization": f"Basic {wrong}"})).status == 401
        await stack.sandbox.click(stack.sandbox.channel_id, parent.ts, ActionId.SILENCE.value)
        await stack.webhook(reference("resolved"), bearer)
        await stack.replies(parent, 1)
        await stack.settled()
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "notification accepted" in text
    for secret in (BOT_TOKEN, SIGNING_SECRET, WEBHOOK_TOKEN, WEBHOOK_TOKEN[::-1]):
        assert secret not in text
