"""Settings: environment variables (pydantic-settings) plus the optional YAML file.

Read once at start by the command line and handed to `create_app`; nothing reads the environment
after that. Secrets are `SecretStr`, so they never reach a log or a traceback by accident.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AnyHttpUrl,
    BeforeValidator,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from bot.config import github
from bot.config.file import FileConfig, load_file_config
from bot.config.github_app import AppKey, AppKeyFile, AppNumber, check_github_app
from bot.config.words import ConfigError
from bot.config.words import problems as _problems
from bot.domain.incidents import is_channel_id
from bot.domain.timings import Timings

__all__ = [
    "ConfigError",
    "FileConfig",
    "Settings",
    "check_url_credentials",
    "check_webhook_auth",
    "load_file_config",
    "load_settings",
]

#: A Slack channel's #name (Slack's names are lower case letters, digits, hyphens and
#: underscores, at most 80); or its id (`is_channel_id`).
_CHANNEL_NAME = re.compile(r"#[\w.-]{1,80}")
#: The timings' documented defaults.
_DEFAULT = Timings()
#: Each timing's environment variable, by its name in `Timings`.
TIMING_VARIABLES = {
    "outbox_lease": "QUEUEBOT_OUTBOX_LEASE_SECONDS",
    "outbox_poll": "QUEUEBOT_OUTBOX_POLL_SECONDS",
    "posts_per_second": "QUEUEBOT_SLACK_POSTS_PER_SECOND",
    "digest_edit": "QUEUEBOT_DIGEST_EDIT_SECONDS",
    "digest_claim": "QUEUEBOT_DIGEST_CLAIM_SECONDS",
    "diagnosis_claim": "QUEUEBOT_DIAGNOSIS_CLAIM_SECONDS",
    "heads_up_poll": "QUEUEBOT_HEADS_UP_POLL_SECONDS",
    "report_poll": "QUEUEBOT_REPORT_POLL_SECONDS",
    "schedule_check": "QUEUEBOT_CAPACITY_SCHEDULE_CHECK_SECONDS",
    "prune_interval": "QUEUEBOT_PRUNE_SECONDS",
    "silence_check": "QUEUEBOT_SILENCE_CHECK_SECONDS",
    "forecast_check": "QUEUEBOT_FORECAST_CHECK_SECONDS",
}


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
    #: "none" is the operator's explicit choice to take webhooks from anyone; unset, a token or
    #: an HMAC secret is required.
    webhook_auth: Annotated[
        Literal["required", "none"],
        BeforeValidator(lambda v: (v.strip().lower() or "required") if isinstance(v, str) else v),
    ] = Field("required", validation_alias="QUEUEBOT_WEBHOOK_AUTH")
    grafana_url: AnyHttpUrl | None = Field(None, validation_alias="GRAFANA_URL")
    grafana_token: SecretStr | None = Field(None, validation_alias="GRAFANA_TOKEN")
    silence_check_seconds: float = Field(
        _DEFAULT.silence_check, gt=0, le=3600, validation_alias=TIMING_VARIABLES["silence_check"]
    )
    forecast_check_seconds: float = Field(
        _DEFAULT.forecast_check, gt=0, le=3600, validation_alias=TIMING_VARIABLES["forecast_check"]
    )
    # The other timings (bot.domain.timings says what each is for).
    outbox_lease_seconds: float = Field(
        _DEFAULT.outbox_lease, ge=0.1, le=3600, validation_alias=TIMING_VARIABLES["outbox_lease"]
    )
    outbox_poll_seconds: float = Field(
        _DEFAULT.outbox_poll, gt=0, le=3600, validation_alias=TIMING_VARIABLES["outbox_poll"]
    )
    slack_posts_per_second: float = Field(
        _DEFAULT.posts_per_second,
        gt=0,
        le=100,
        validation_alias=TIMING_VARIABLES["posts_per_second"],
    )
    digest_edit_seconds: float = Field(
        _DEFAULT.digest_edit, ge=0, le=600, validation_alias=TIMING_VARIABLES["digest_edit"]
    )
    digest_claim_seconds: float = Field(
        _DEFAULT.digest_claim, ge=0.1, le=3600, validation_alias=TIMING_VARIABLES["digest_claim"]
    )
    diagnosis_claim_seconds: float = Field(
        _DEFAULT.diagnosis_claim,
        ge=0.1,
        le=3600,
        validation_alias=TIMING_VARIABLES["diagnosis_claim"],
    )
    heads_up_poll_seconds: float = Field(
        _DEFAULT.heads_up_poll, gt=0, le=3600, validation_alias=TIMING_VARIABLES["heads_up_poll"]
    )
    report_poll_seconds: float = Field(
        _DEFAULT.report_poll, gt=0, le=3600, validation_alias=TIMING_VARIABLES["report_poll"]
    )
    schedule_check_seconds: float = Field(
        _DEFAULT.schedule_check,
        gt=0,
        le=3600,
        validation_alias=TIMING_VARIABLES["schedule_check"],
    )
    prune_interval_seconds: float = Field(
        _DEFAULT.prune_interval, gt=0, le=86400, validation_alias=TIMING_VARIABLES["prune_interval"]
    )
    #: Reconciliation with GitHub's REST API (`bot.fleet.sources.reconcile`): a pass every so
    #: many seconds (0: off), within this share of the token's hourly budget.
    reconcile_seconds: float = Field(
        300.0, ge=0, le=86400, validation_alias="QUEUEBOT_RECONCILE_SECONDS"
    )
    reconcile_budget_share: float = Field(
        0.2, gt=0, le=1, validation_alias="QUEUEBOT_RECONCILE_BUDGET_SHARE"
    )
    #: Days of history `queuebot serve` reads from GitHub's REST API in the background when
    #: it first starts on a store (`queuebot backfill --days N`); 0: it does not.
    backfill_on_start_days: int = Field(
        0, ge=0, le=400, validation_alias="QUEUEBOT_BACKFILL_ON_START_DAYS"
    )
    prometheus_url: AnyHttpUrl | None = Field(None, validation_alias="PROMETHEUS_URL")
    grafana_prometheus_datasource_uid: str | None = Field(
        None, validation_alias="GRAFANA_PROMETHEUS_DATASOURCE_UID"
    )
    #: The runner supply from GitHub's REST API: a token, and whose runners (one of three).
    github_token: SecretStr | None = Field(None, validation_alias="GITHUB_TOKEN")
    #: Or a GitHub App instead of the token (`bot.config.github_app` says what is checked).
    github_app_id: AppNumber = Field(None, validation_alias="GITHUB_APP_ID")
    github_app_key: AppKey = Field(None, validation_alias="GITHUB_APP_PRIVATE_KEY")
    github_app_key_file: AppKeyFile = Field(None, validation_alias="GITHUB_APP_PRIVATE_KEY_FILE")
    github_app_installation: AppNumber = Field(None, validation_alias="GITHUB_APP_INSTALLATION_ID")
    #: The secret of the GitHub webhooks that send workflow_job events (X-Hub-Signature-256);
    #: an organization's own, and the GitHub App's, are `bot.config.github`'s.
    github_webhook_secret: SecretStr | None = Field(None, validation_alias="GITHUB_WEBHOOK_SECRET")
    github_app_webhook_secret: SecretStr | None = Field(
        None, validation_alias="GITHUB_APP_WEBHOOK_SECRET"
    )
    github_org_secrets: dict[str, tuple[SecretStr, ...]] = Field(default_factory=dict, exclude=True)
    github_org: str | None = Field(None, validation_alias="GITHUB_ORG")
    github_repository: str | None = Field(None, validation_alias="GITHUB_REPOSITORY")
    github_enterprise: str | None = Field(None, validation_alias="GITHUB_ENTERPRISE")
    #: GitHub Enterprise Server's is https://HOST/api/v3.
    github_api_url: AnyHttpUrl = Field(
        AnyHttpUrl("https://api.github.com"), validation_alias="GITHUB_API_URL"
    )
    database: str = Field("./queuebot.db", validation_alias="QUEUEBOT_DATABASE")
    #: A request's headers, and then its body, must arrive within this; a connection idle
    #: this long is closed (nginx's client_header_timeout and client_body_timeout are 60 s too;
    #: behind a load balancer, keep it above the balancer's idle timeout).
    http_read_timeout: float = Field(
        60.0, gt=0, le=600, validation_alias="QUEUEBOT_HTTP_READ_TIMEOUT_SECONDS"
    )
    #: Resolved incidents, delivered messages and notification bodies are kept this long.
    retention_days: float = Field(30.0, gt=0, le=3650, validation_alias="QUEUEBOT_RETENTION_DAYS")
    #: /healthz is unhealthy once a Slack delivery has been owed this long.
    health_max_outbox_age: float = Field(
        900.0, gt=0, validation_alias="QUEUEBOT_HEALTH_MAX_OUTBOX_AGE_SECONDS"
    )
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
        "github_token",
        "github_webhook_secret",
        "github_app_webhook_secret",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator(
        "channel",
        "webhook_hmac_timestamp_header",
        "github_org",
        "github_repository",
        "github_enterprise",
        mode="before",
    )
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("config_path", mode="before")
    @classmethod
    def _config_named(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            raise ValueError("is set but empty: name the YAML file, or unset it")
        return value

    @field_validator("database")
    @classmethod
    def _database(cls, value: str) -> str:
        """A postgresql:// URL, or a SQLite file in a folder that exists: a typo must not put
        the data somewhere else (a folder made on an ephemeral disk, a file named `mysql:`)."""
        scheme, sep, _ = value.partition("://")
        if sep:
            if scheme.lower() not in ("postgresql", "postgres"):
                raise ValueError(
                    f"names a {scheme[:20]!r} database: queuebot keeps its store in SQLite (a"
                    " file path) or PostgreSQL (postgresql://…)"
                )
            return value
        if value != ":memory:":
            folder = Path(value).expanduser().parent
            if not folder.is_dir():
                raise ValueError(f"is in a folder that does not exist ({folder}): create it first")
        return value

    @field_validator("channel")
    @classmethod
    def _channel(cls, value: str | None) -> str | None:
        if value is not None and not (
            is_channel_id(value.strip()) or _CHANNEL_NAME.fullmatch(value.strip())
        ):
            raise ValueError(
                "must be a channel's id (like C0123ABCD) or its name with # (like #ci-alerts)"
            )
        return value.strip() if value is not None else None

    # Each becomes a path segment of GitHub's API: a name, never a path.
    _github_orgs = field_validator("github_org")(github.org_list)
    _github_enterprise = field_validator("github_enterprise")(github.enterprise_name)
    _github_repository = field_validator("github_repository")(github.repository_name)

    @property
    def timings(self) -> Timings:
        """Leases, pacing and pollers, as set."""
        return Timings(
            outbox_lease=self.outbox_lease_seconds,
            outbox_poll=self.outbox_poll_seconds,
            posts_per_second=self.slack_posts_per_second,
            digest_edit=self.digest_edit_seconds,
            digest_claim=self.digest_claim_seconds,
            diagnosis_claim=self.diagnosis_claim_seconds,
            heads_up_poll=self.heads_up_poll_seconds,
            report_poll=self.report_poll_seconds,
            schedule_check=self.schedule_check_seconds,
            prune_interval=self.prune_interval_seconds,
            silence_check=self.silence_check_seconds,
            forecast_check=self.forecast_check_seconds,
        )

    def github_scope(self) -> tuple[github.GitHubScopeKind, str] | None:
        """Whose runners queuebot lists (`bot.config.github.scope_of`)."""
        return github.scope_of(self)

    @property
    def github_orgs(self) -> tuple[str, ...]:
        """The organizations queuebot watches: GITHUB_ORG's, else the YAML file's."""
        return tuple(self.github_org.split(",")) if self.github_org else self.file.github.names


_REQUIRED_FOR_SERVE = {
    "SLACK_BOT_TOKEN": "the Slack app's bot token (xoxb-…)",
    "SLACK_SIGNING_SECRET": "the Slack app's signing secret (Basic Information → App Credentials)",
    "QUEUEBOT_CHANNEL": "the channel alerts go to (an ID like C0123ABCD or a name like #alerts)",
}


def check_webhook_auth(settings: Settings) -> None:
    """Fail closed: the Grafana webhook needs a credential unless the operator said none."""
    has_credential = settings.webhook_token is not None or settings.webhook_hmac_secret is not None
    if settings.webhook_auth == "none" and has_credential:
        raise ConfigError(
            "QUEUEBOT_WEBHOOK_AUTH=none contradicts QUEUEBOT_WEBHOOK_TOKEN or"
            " QUEUEBOT_WEBHOOK_HMAC_SECRET: unset one or the other"
        )
    if settings.webhook_auth == "required" and not has_credential:
        raise ConfigError(
            "QUEUEBOT_WEBHOOK_TOKEN or QUEUEBOT_WEBHOOK_HMAC_SECRET is not set: set the secret"
            " Grafana's contact point sends, or QUEUEBOT_WEBHOOK_AUTH=none to accept webhooks"
            " from anyone who can reach the bot"
        )


def check_url_credentials(settings: Settings) -> None:
    """Refuse a user name or password in GRAFANA_URL, SLACK_API_URL or GITHUB_API_URL, without
    repeating them.

    Grafana's service accounts authenticate with their token as a Bearer credential, and so do
    Slack's bot token and GitHub's; a request carries one Authorization header: Basic
    credentials from the URL could only be sent instead of the token, and aiohttp refuses to
    send both. Dropping
    them silently would leave an admin believing a proxy's or a user's password is in use when
    it is not; an admin who puts them there expects them to count, so queuebot says at start
    that they cannot. (PROMETHEUS_URL may carry them: Prometheus behind Basic auth is usual, and
    the client sends them.)
    """
    for name, url, token in (
        ("GRAFANA_URL", settings.grafana_url, "GRAFANA_TOKEN (a service-account token"),
        ("SLACK_API_URL", settings.slack_api_url, "SLACK_BOT_TOKEN (the bot token"),
        ("GITHUB_API_URL", settings.github_api_url, "GITHUB_TOKEN (a token"),
    ):
        if url is not None and (url.username or url.password):
            raise ConfigError(
                f"{name} must not carry a user name or password: queuebot authenticates with"
                f" {token}, sent as Bearer); remove them from the URL"
            )


def load_settings(env: Mapping[str, str] | None = None, *, for_serve: bool = False) -> Settings:
    """Read settings from `env` (default: the process environment) and the YAML file it names.

    Raises ConfigError with one line naming every variable at fault, all at once.
    """
    source = dict(os.environ if env is None else env)
    problems: list[str] = []
    settings: Settings | None = None
    try:
        settings = Settings.model_validate(source)
    except ValidationError as exc:
        problems += _problems(exc, Settings)
    if for_serve:
        problems += [
            f"{name} is not set: it must be {meaning}"
            for name, meaning in _REQUIRED_FOR_SERVE.items()
            if not source.get(name, "").strip()
        ]
    if settings is not None:
        # The file first: it may name GitHub's organizations, which the checks read.
        if settings.config_path is not None:
            try:
                settings.file = load_file_config(settings.config_path)
            except ConfigError as exc:
                problems.append(str(exc))
        for check in (
            check_url_credentials,
            Settings.github_scope,
            lambda given: github.check_github(given, source, for_serve=for_serve),
            check_github_app,
            *((_check_tokens, check_webhook_auth) if for_serve else ()),
        ):
            try:
                check(settings)
            except ConfigError as exc:
                problems.append(str(exc))
    if problems:
        raise ConfigError("; ".join(dict.fromkeys(problems)))
    assert settings is not None
    return settings


def _check_tokens(settings: Settings) -> None:
    if settings.slack_bot_token and not settings.slack_bot_token.get_secret_value().startswith(
        "xoxb-"
    ):
        raise ConfigError("SLACK_BOT_TOKEN is malformed: a bot token starts with xoxb-")
    if settings.slack_app_token and not settings.slack_app_token.get_secret_value().startswith(
        "xapp-"
    ):
        raise ConfigError("SLACK_APP_TOKEN is malformed: an app-level token starts with xapp-")
