"""Settings: environment variables (pydantic-settings) plus the optional YAML file.

Read once at start by the command line and handed to `create_app`; nothing reads the environment
after that. Secrets are `SecretStr`, so they never reach a log or a traceback by accident.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AnyHttpUrl,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.diagnostics.sources.querypack import QueryPack
from bot.incidents.routing import Route
from bot.silencing.permissions import SilencePolicy


class ConfigError(Exception):
    """A setting is missing or malformed; the message is one line that names it."""


class FileConfig(BaseModel):
    """What does not fit in environment variables: the YAML file named by QUEUEBOT_CONFIG."""

    model_config = ConfigDict(extra="forbid")

    routes: list[Route] = Field(default_factory=list)
    silence: SilencePolicy = Field(default_factory=SilencePolicy)
    #: Overrides of the diagnostics query pack (signal name → PromQL, and `window`).
    queries: QueryPack = Field(default_factory=QueryPack)
    #: Post the diagnostics report in the thread when an incident opens.
    auto_diagnose: bool = True


class Settings(BaseSettings):
    """Every environment variable queuebot reads (README lists them with their meaning)."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True, case_sensitive=True)

    slack_bot_token: SecretStr | None = Field(None, validation_alias="SLACK_BOT_TOKEN")
    slack_signing_secret: SecretStr | None = Field(None, validation_alias="SLACK_SIGNING_SECRET")
    slack_app_token: SecretStr | None = Field(None, validation_alias="SLACK_APP_TOKEN")
    slack_api_url: AnyHttpUrl = Field(
        AnyHttpUrl("https://slack.com/api/"), validation_alias="SLACK_API_URL"
    )
    channel: str | None = Field(None, validation_alias="QUEUEBOT_CHANNEL")
    webhook_token: SecretStr | None = Field(None, validation_alias="QUEUEBOT_WEBHOOK_TOKEN")
    webhook_hmac_secret: SecretStr | None = Field(
        None, validation_alias="QUEUEBOT_WEBHOOK_HMAC_SECRET"
    )
    webhook_hmac_timestamp_header: str | None = Field(
        None, validation_alias="QUEUEBOT_WEBHOOK_HMAC_TIMESTAMP_HEADER"
    )
    grafana_url: AnyHttpUrl | None = Field(None, validation_alias="GRAFANA_URL")
    grafana_token: SecretStr | None = Field(None, validation_alias="GRAFANA_TOKEN")
    silence_check_seconds: float = Field(
        30.0, gt=0, le=3600, validation_alias="QUEUEBOT_SILENCE_CHECK_SECONDS"
    )
    prometheus_url: AnyHttpUrl | None = Field(None, validation_alias="PROMETHEUS_URL")
    grafana_prometheus_datasource_uid: str | None = Field(
        None, validation_alias="GRAFANA_PROMETHEUS_DATASOURCE_UID"
    )
    database: str = Field("./queuebot.db", validation_alias="QUEUEBOT_DATABASE")
    host: str = Field("0.0.0.0", validation_alias="HOST")  # noqa: S104 - a server listens on all
    port: int = Field(3000, ge=0, le=65535, validation_alias="PORT")
    config_path: Path | None = Field(None, validation_alias="QUEUEBOT_CONFIG")
    # Either case is accepted; empty means the default, as for the other settings.
    log_format: Annotated[
        Literal["text", "json"],
        BeforeValidator(lambda v: (v.strip().lower() or "text") if isinstance(v, str) else v),
    ] = Field("text", validation_alias="QUEUEBOT_LOG_FORMAT")
    log_level: Annotated[
        Literal["DEBUG", "INFO", "WARNING", "ERROR"],
        BeforeValidator(lambda v: (v.strip().upper() or "INFO") if isinstance(v, str) else v),
    ] = Field("INFO", validation_alias="QUEUEBOT_LOG_LEVEL")

    file: FileConfig = Field(default_factory=FileConfig, exclude=True)

    @field_validator(
        "slack_bot_token",
        "slack_signing_secret",
        "slack_app_token",
        "webhook_token",
        "webhook_hmac_secret",
        "grafana_token",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator("channel", "webhook_hmac_timestamp_header", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value


_REQUIRED_FOR_SERVE = {
    "SLACK_BOT_TOKEN": "the Slack app's bot token (xoxb-…)",
    "SLACK_SIGNING_SECRET": "the Slack app's signing secret (Basic Information → App Credentials)",
    "QUEUEBOT_CHANNEL": "the channel alerts go to (an ID like C0123ABCD or a name like #alerts)",
}


def load_settings(env: Mapping[str, str] | None = None, *, for_serve: bool = False) -> Settings:
    """Read settings from `env` (default: the process environment) and the YAML file it names.

    Raises ConfigError with one line naming the variable at fault.
    """
    source = dict(os.environ if env is None else env)
    try:
        settings = Settings.model_validate(source)
    except ValidationError as exc:
        raise ConfigError(_first_error(exc)) from None
    if for_serve:
        for name, meaning in _REQUIRED_FOR_SERVE.items():
            if not source.get(name, "").strip():
                raise ConfigError(f"{name} is not set: it must be {meaning}")
        if settings.slack_bot_token and not settings.slack_bot_token.get_secret_value().startswith(
            "xoxb-"
        ):
            raise ConfigError("SLACK_BOT_TOKEN is malformed: a bot token starts with xoxb-")
        if settings.slack_app_token and not settings.slack_app_token.get_secret_value().startswith(
            "xapp-"
        ):
            raise ConfigError("SLACK_APP_TOKEN is malformed: an app-level token starts with xapp-")
    if settings.config_path is not None:
        settings.file = load_file_config(settings.config_path)
    return settings


def load_file_config(path: Path) -> FileConfig:
    """Parse the YAML file; any problem becomes a ConfigError naming QUEUEBOT_CONFIG."""
    where = f"QUEUEBOT_CONFIG ({path})"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{where} cannot be read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}:" if mark is not None else ""
        raise ConfigError(
            f"{where} is not valid YAML:{line} {getattr(exc, 'problem', exc)}"
        ) from None
    if raw is None:
        return FileConfig()
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a mapping at the top level")
    try:
        return FileConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    location = ".".join(str(part) for part in error["loc"]) or "value"
    given = error.get("input")
    shown = f", got {given!r}" if isinstance(given, str | int | float) and error["loc"] else ""
    if isinstance(given, str) and any(word in location.lower() for word in ("token", "secret")):
        shown = ""
    return f"{location} is malformed: {error['msg']}{shown}"
