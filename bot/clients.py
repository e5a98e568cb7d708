"""The outside services' clients, built from the settings here and nowhere else: Slack's Web
API, Grafana's silences, Prometheus (directly or through Grafana's datasource proxy), GitHub's
credentials (a token or a GitHub App), its runners list and its REST reader. A client whose
settings are missing is None, and what needs it says how to turn it on."""

from __future__ import annotations

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Settings
from bot.config.github_app import app_private_key
from bot.fleet.sources.github_access import RunnerScope, ScopeKind
from bot.fleet.sources.github_app import GitHubApp, GitHubCredentials, PersonalToken
from bot.fleet.sources.github_rest import MAX_WAIT_SECONDS, GitHubReader
from bot.fleet.sources.github_runners import GitHubRunnersClient
from bot.fleet.sources.orgs import OrgRunners
from bot.fleet.sources.prometheus import PrometheusClient
from bot.silencing.grafana import GrafanaClient

SLACK_TIMEOUT_SECONDS = 15


def slack_client_for(settings: Settings) -> AsyncWebClient:
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    # A call slower than this is Slack in trouble; it also bounds how long a delivery holds
    # its outbox lease (delivery.LEASE_SECONDS), so a crashed bot's work is taken over soon.
    return AsyncWebClient(
        token=token, base_url=str(settings.slack_api_url), timeout=SLACK_TIMEOUT_SECONDS
    )


def grafana_client_for(
    settings: Settings, session: aiohttp.ClientSession | None
) -> GrafanaClient | None:
    """Grafana's client, when GRAFANA_URL and GRAFANA_TOKEN are both set (else silencing is
    off, and the Silence… button says how to turn it on)."""
    if session is None or settings.grafana_url is None or settings.grafana_token is None:
        return None
    return GrafanaClient(
        session, str(settings.grafana_url), settings.grafana_token.get_secret_value()
    )


def prometheus_client_for(
    settings: Settings, session: aiohttp.ClientSession | None
) -> PrometheusClient | None:
    """Prometheus directly (PROMETHEUS_URL), or through Grafana's datasource proxy."""
    if session is None:
        return None
    if settings.prometheus_url is not None:
        return PrometheusClient(session, str(settings.prometheus_url))
    if (
        settings.grafana_prometheus_datasource_uid
        and settings.grafana_url is not None
        and settings.grafana_token is not None
    ):
        return PrometheusClient.through_grafana(
            session,
            str(settings.grafana_url),
            settings.grafana_prometheus_datasource_uid,
            settings.grafana_token.get_secret_value(),
        )
    return None


def github_runners_client_for(
    settings: Settings,
    session: aiohttp.ClientSession | None,
    credentials: GitHubCredentials | None = None,
) -> GitHubRunnersClient | OrgRunners | None:
    """GitHub's runners list, when GITHUB_TOKEN or a GitHub App and one of GITHUB_ORG,
    GITHUB_REPOSITORY or GITHUB_ENTERPRISE are set (else the runner supply is not measured);
    `credentials` shared with the other clients, else its own."""
    scope = settings.github_scope()
    credentials = credentials or github_credentials_for(settings, session)
    if session is None or scope is None or credentials is None:
        return None
    kind, name = scope
    if kind == "org" and len(settings.github_orgs) > 1:
        # Several organizations: a client each (its own cache and rate budget), read as one.
        url = str(settings.github_api_url)
        return OrgRunners(
            {
                org: GitHubRunnersClient(session, url, credentials, RunnerScope(ScopeKind.ORG, org))
                for org in settings.github_orgs
            }
        )
    return GitHubRunnersClient(
        session, str(settings.github_api_url), credentials, RunnerScope(ScopeKind(kind), name)
    )


def github_credentials_for(
    settings: Settings, session: aiohttp.ClientSession | None
) -> GitHubCredentials | None:
    """What requests to GitHub's REST API are authorized with: GITHUB_TOKEN, or the GitHub App
    (GITHUB_APP_ID and its key), whose installation tokens are asked for on `session`; None
    without either."""
    if settings.github_token is not None:
        return PersonalToken(settings.github_token.get_secret_value())
    key = app_private_key(settings)
    if session is None or settings.github_app_id is None or key is None:
        return None
    return GitHubApp(
        session,
        str(settings.github_api_url),
        settings.github_app_id,
        key,
        installation_id=settings.github_app_installation,
    )


def github_reader_for(
    settings: Settings,
    session: aiohttp.ClientSession,
    *,
    max_requests: int | None = None,
    max_wait: float = MAX_WAIT_SECONDS,
    credentials: GitHubCredentials | None = None,
) -> GitHubReader | None:
    """GitHub's REST API read page by page (the backfill, reconciliation), when GITHUB_TOKEN
    or a GitHub App is set; None without. `max_wait`: the longest it sleeps for GitHub's rate
    limit; `credentials` shared with the other clients (one App installation token for all),
    else its own."""
    credentials = credentials or github_credentials_for(settings, session)
    if credentials is None:
        return None
    return GitHubReader(
        session,
        str(settings.github_api_url),
        credentials,
        max_requests=max_requests,
        max_wait=max_wait,
    )
