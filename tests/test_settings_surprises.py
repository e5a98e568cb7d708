"""Settings that cannot surprise an operator, tried as a new user would: each mistake is refused
in one line that says what to do, every mistake at once, in plain words."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import ConfigError, load_settings
from bot.telemetry.redaction import Redactor

SERVE_ENV = {
    "SLACK_BOT_TOKEN": "xoxb-test-token",
    "SLACK_SIGNING_SECRET": "signing-secret",
    "QUEUEBOT_CHANNEL": "#ci-alerts",
    "QUEUEBOT_WEBHOOK_TOKEN": "webhook-token",
}


def _refused(env: dict[str, str], *, for_serve: bool = True) -> str:
    with pytest.raises(ConfigError) as raised:
        load_settings(env, for_serve=for_serve)
    text = str(raised.value)
    assert "\n" not in text and "Input should be" not in text
    return text


def test_an_empty_queuebot_config_says_it_is_empty() -> None:
    text = _refused(SERVE_ENV | {"QUEUEBOT_CONFIG": ""})
    assert text.startswith("QUEUEBOT_CONFIG is set but empty: name the YAML file")
    assert "Is a directory" not in text


@pytest.mark.parametrize("url", ["mysql://x/y", "sqlite:///tmp/q.db", "redis://127.0.0.1"])
def test_a_database_of_another_kind_is_refused(url: str, tmp_path: Path) -> None:
    text = _refused(SERVE_ENV | {"QUEUEBOT_DATABASE": url})
    scheme = url.split("://")[0]
    assert text.startswith(f"QUEUEBOT_DATABASE names a '{scheme}' database")
    assert "SQLite" in text and "PostgreSQL" in text


def test_a_database_in_a_missing_folder_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "queuebot.db"
    text = _refused(SERVE_ENV | {"QUEUEBOT_DATABASE": str(missing)})
    assert "does not exist" in text and str(missing.parent) in text
    assert not missing.parent.exists()


def test_a_channel_that_is_neither_an_id_nor_a_hash_name_is_refused() -> None:
    text = _refused(SERVE_ENV | {"QUEUEBOT_CHANNEL": "alerts"})
    assert "QUEUEBOT_CHANNEL" in text and "#ci-alerts" in text
    assert load_settings(SERVE_ENV | {"QUEUEBOT_CHANNEL": "C0123ABCD"}, for_serve=True).channel


def test_every_mistake_is_said_at_once() -> None:
    env = SERVE_ENV | {"PORT": "eighty", "QUEUEBOT_RETENTION_DAYS": "a month"}
    del env["SLACK_SIGNING_SECRET"]
    text = _refused(env)
    assert "PORT is malformed: must be a whole number, got 'eighty'" in text
    assert "QUEUEBOT_RETENTION_DAYS is malformed: must be a number" in text
    assert "SLACK_SIGNING_SECRET is not set" in text


def test_a_misspelt_yaml_key_is_named_with_the_key_it_resembles(tmp_path: Path) -> None:
    path = tmp_path / "queuebot.yml"
    path.write_text("routes:\n  - chanel: '#infra'\nsilense: {}\n")
    text = _refused(SERVE_ENV | {"QUEUEBOT_CONFIG": str(path)})
    assert "routes.0.chanel is not a setting queuebot knows (did you mean channel?)" in text
    assert "silense is not a setting queuebot knows (did you mean silence?)" in text
    assert "routes.0.channel is required" in text


def test_the_hint_for_the_signing_secret_is_not_taken_for_a_credential() -> None:
    text = _refused({k: v for k, v in SERVE_ENV.items() if k != "SLACK_SIGNING_SECRET"})
    assert Redactor([])(text) == text
    assert "Basic Information → App Credentials" in text
