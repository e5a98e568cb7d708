"""Credentials in GRAFANA_URL: refused at start in one line naming GRAFANA_URL, and never
repeated (Grafana's service accounts authenticate with GRAFANA_TOKEN as Bearer; a request
carries one Authorization header, and aiohttp refuses a URL's credentials beside it)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from bot.app import create_app
from bot.config import ConfigError, Settings, load_settings

PASSWORD = "hunter2-s3cret"


@pytest.mark.parametrize(
    "url",
    [
        f"https://admin:{PASSWORD}@grafana.example.com",
        f"https://admin:{PASSWORD}@grafana.example.com:3000/grafana/",
        f"https://{PASSWORD}@grafana.example.com",
        f"http://:{PASSWORD}@127.0.0.1:3000",
    ],
)
def test_credentials_in_the_url_are_refused_without_repeating_them(url: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings({"GRAFANA_URL": url, "GRAFANA_TOKEN": "glsa_t"})
    message = str(raised.value)
    assert message.startswith("GRAFANA_URL ") and "GRAFANA_TOKEN" in message
    assert "\n" not in message and PASSWORD not in message and "admin" not in message


@pytest.mark.parametrize(
    "url",
    [f"http://admin:{PASSWORD}#x@grafana.example.com", f"http://admin:{PASSWORD}/x@grafana:3000"],
)
def test_a_malformed_url_with_credentials_is_not_repeated(url: str) -> None:
    """A password with a character that breaks the URL: the error names GRAFANA_URL only."""
    with pytest.raises(ConfigError) as raised:
        load_settings({"GRAFANA_URL": url})
    assert str(raised.value).startswith("GRAFANA_URL is malformed")
    assert PASSWORD not in str(raised.value)


def test_the_app_refuses_them_too() -> None:
    """Settings made without load_settings reach the same refusal when the app is built."""
    settings = Settings.model_validate(
        {
            "SLACK_SIGNING_SECRET": "s",
            "QUEUEBOT_CHANNEL": "#alerts",
            "QUEUEBOT_WEBHOOK_AUTH": "none",
            "GRAFANA_URL": f"https://admin:{PASSWORD}@grafana.example.com",
            "GRAFANA_TOKEN": "glsa_t",
        }
    )
    with pytest.raises(ConfigError) as raised:
        create_app(settings)
    assert "GRAFANA_URL" in str(raised.value) and PASSWORD not in str(raised.value)


async def test_queuebot_check_says_so_without_a_traceback(tmp_path: Path) -> None:
    """`queuebot check` stops at the configuration and prints neither the password nor a
    traceback (aiohttp would otherwise refuse the probe with a ValueError)."""
    env = {
        "PATH": os.environ["PATH"],
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "secret",
        "SLACK_API_URL": "http://127.0.0.1:9/api/",
        "QUEUEBOT_CHANNEL": "#queue-alerts",
        "QUEUEBOT_WEBHOOK_TOKEN": "check-webhook-token",
        "QUEUEBOT_DATABASE": str(tmp_path / "queuebot.db"),
        "GRAFANA_URL": f"http://admin:{PASSWORD}@127.0.0.1:9",
        "GRAFANA_TOKEN": "glsa_t",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "check",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 2, (out, err)
    assert b"configuration error: GRAFANA_URL must not carry" in err
    assert PASSWORD.encode() not in out + err and b"Traceback" not in err
