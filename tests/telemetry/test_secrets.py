"""No token or secret ever reaches a log line, whatever the log level; a URL is shown without
its credentials."""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import pytest

from bot.slack.contract import ActionId
from bot.telemetry.redaction import REDACTED, Redactor, redact_url
from testkit.harness import BOT_TOKEN, SIGNING_SECRET, running_stack
from testkit.payloads import reference

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


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:hunter22@grafana.example/", f"https://{REDACTED}@grafana.example/"),
        ("http://glsa_token-only@[::1]:3000/api/", f"http://{REDACTED}@[::1]:3000/api/"),
        # An unescaped "@" in the password: everything up to the host goes.
        ("postgresql://q:p@ss@db:5432/queuebot", f"postgresql://{REDACTED}@db:5432/queuebot"),
        (
            "http://prom:9090/api/v1/query?access_token=abc&orgId=1",
            f"http://prom:9090/api/v1/query?access_token={REDACTED}&orgId=1",
        ),
        (
            "https://s3.example/f?X-Amz-Credential=AK%2F1&X-Amz-Signature=9f&apiKey=k1&token=t",
            f"https://s3.example/f?X-Amz-Credential={REDACTED}&X-Amz-Signature={REDACTED}"
            f"&apiKey={REDACTED}&token={REDACTED}",
        ),
        # Nothing secret: shown as it is.
        (
            "http://127.0.0.1:3000/api/?groupKey=abc#top",
            "http://127.0.0.1:3000/api/?groupKey=abc#top",
        ),
    ],
)
def test_a_url_is_shown_without_its_credentials(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_urls_inside_text_lose_their_credentials_and_prose_stays() -> None:
    """The same shapes go out of log lines; an e-mail address or a plain URL stays."""
    redact = Redactor(())
    line = "GET https://u:pw-1234@h/x?token=t-1 failed; ask ops@example.org, see https://h/a"
    assert redact(line) == (
        f"GET https://{REDACTED}@h/x?token={REDACTED} failed; ask ops@example.org, see https://h/a"
    )
