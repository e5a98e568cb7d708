"""`queuebot check`: validate the settings and reach every configured service, one line each.

Every line goes through the log redactor before it is printed: the configured secrets, and any
URL's `user:password@` or credential-named query value, show as `[redacted]` whichever service
answered with what.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from urllib.parse import urlsplit

import aiohttp

from bot.cli.check_github import github_access_lines
from bot.clients import github_runners_client_for, prometheus_client_for, slack_client_for
from bot.config import Settings
from bot.config.github_app import has_github_rest
from bot.domain.clock import SYSTEM
from bot.domain.incidents import is_channel_id
from bot.fleet.sources.github_access import RunnerScope, ScopeKind
from bot.fleet.sources.github_http import GitHubError, GitHubUnavailable
from bot.fleet.sources.prometheus import PrometheusError
from bot.silencing.grafana import API_PREFIX
from bot.slack.errors import SlackError
from bot.slack.gateway import SlackGateway
from bot.store import JobRow, StoreError, open_store
from bot.telemetry.redaction import Redactor, known_secrets, redact_url

PROBE_TIMEOUT_SECONDS = 5.0


async def _probe(url: str, token: str | None = None) -> str:
    """GET `url`; "ok (HTTP 200)" or what went wrong, in a few words."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT_SECONDS)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as http,
            http.get(url, headers=headers) as response,
        ):
            if response.status == 200:
                return f"ok (HTTP 200 from {url})"
            return f"FAILED: HTTP {response.status} from {url}"
    # ValueError: a URL aiohttp will not request (InvalidURL is one), or credentials in it
    # that it will not send next to an Authorization header.
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
        return f"FAILED: {url}: {type(exc).__name__}: {exc}"


def _has_userinfo(url: str) -> bool:
    parts = urlsplit(url)
    return parts.username is not None or parts.password is not None


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=host).geturl()


async def _slack(settings: Settings) -> str:
    if _has_userinfo(str(settings.slack_api_url)):
        # slack_sdk sends the bot token as Bearer; aiohttp refuses to add Basic credentials
        # from the URL as well, so every call the bot makes would fail.
        return (
            "slack: FAILED: SLACK_API_URL carries credentials (user:password@), which cannot"
            " be sent next to the bot token; give the URL without them"
        )
    gateway = SlackGateway(slack_client_for(settings))
    try:
        identity = await gateway.auth_test()
    except SlackError as exc:
        return f"slack: FAILED: {exc}"
    line = f"slack: ok (bot {identity.get('user_id')} in team {identity.get('team')})"
    return line + "; " + await _channel(gateway, settings.channel or "")


async def _channel(gateway: SlackGateway, channel: str) -> str:
    """Whether the bot can post to QUEUEBOT_CHANNEL: it must be a member."""
    if not is_channel_id(channel):
        return (
            f"QUEUEBOT_CHANNEL {channel} is a name: its membership is checked when the first"
            " alert is posted (give the channel's id to check it now)"
        )
    try:
        found = await gateway.channel_info(channel)
    except SlackError as exc:
        if "missing_scope" in str(exc):
            return (
                f"QUEUEBOT_CHANNEL {channel}: not checked: the app lacks channels:read and"
                " groups:read (manifest.yml lists them; reinstall the app)"
            )
        return f"QUEUEBOT_CHANNEL {channel}: FAILED: {exc}"
    name = f"#{found.get('name', channel)}"
    if found.get("is_member"):
        return f"the bot is a member of {name} ({channel})"
    if found.get("is_private"):
        return (
            f"QUEUEBOT_CHANNEL {channel}: FAILED: the bot is not a member of the private"
            f" channel {name}: invite it there (/invite @queuebot)"
        )
    # chat:write.public lets it post; reading its own messages back needs membership.
    return (
        f"QUEUEBOT_CHANNEL {channel}: the bot is not a member of {name}: it can post there,"
        " but invite it (/invite @queuebot) so it can find its own messages after a lost answer"
    )


async def _grafana(settings: Settings) -> str:
    if settings.grafana_url is None:
        return "grafana: not configured (GRAFANA_URL): silencing is off"
    if settings.grafana_token is None:
        return "grafana: FAILED: GRAFANA_URL is set but GRAFANA_TOKEN is not"
    # Listing silences needs the token and alert.silences:read, which the bot needs too;
    # /api/health would answer without any token. The token is the credential: like the
    # Grafana client, the probe leaves out any user:password@ in GRAFANA_URL.
    base = _without_userinfo(str(settings.grafana_url)).rstrip("/")
    result = await _probe(
        base + API_PREFIX + "/silences", settings.grafana_token.get_secret_value()
    )
    if result.startswith("ok"):
        result += "; GRAFANA_TOKEN may read silences"
    elif "HTTP 401" in result or "HTTP 403" in result:
        result += "; GRAFANA_TOKEN is refused or lacks alert.silences:read on the rule's folder"
    return f"grafana: {result}"


async def _prometheus(settings: Settings) -> str:
    if settings.prometheus_url is None:
        return await _prometheus_through_grafana(settings)
    # Credentials in PROMETHEUS_URL go out as Basic auth, as the bot's client sends them.
    ready = str(settings.prometheus_url).rstrip("/") + "/-/ready"
    return f"prometheus: {await _probe(ready)}"


async def _prometheus_through_grafana(settings: Settings) -> str:
    """Prometheus behind Grafana's datasource proxy (GRAFANA_PROMETHEUS_DATASOURCE_UID),
    asked a query through the bot's own client."""
    uid = settings.grafana_prometheus_datasource_uid
    if not uid:
        return (
            "prometheus: not configured (PROMETHEUS_URL, or GRAFANA_PROMETHEUS_DATASOURCE_UID"
            " with GRAFANA_URL and GRAFANA_TOKEN)"
        )
    if settings.grafana_url is None or settings.grafana_token is None:
        return (
            "prometheus: FAILED: GRAFANA_PROMETHEUS_DATASOURCE_UID needs GRAFANA_URL and"
            " GRAFANA_TOKEN"
        )
    async with aiohttp.ClientSession() as session:
        client = prometheus_client_for(settings, session)
        assert client is not None
        try:
            await client.instant("1", SYSTEM.now())
        except PrometheusError as exc:
            return f"prometheus: FAILED: {exc} (datasource {uid} through {client.where})"
    return f"prometheus: ok (datasource {uid} through Grafana's proxy)"


async def _job_events(settings: Settings) -> str:
    """GitHub's workflow_job deliveries: whether they are taken, and what the store has (with
    the runner types `jobs.runner_type` gave the last day's jobs)."""
    secrets = (settings.github_webhook_secret, settings.github_app_webhook_secret)
    if not settings.github_org_secrets and all(secret is None for secret in secrets):
        return "github job events: not configured (GITHUB_WEBHOOK_SECRET): no job history"
    try:
        store = await open_store(settings.database)
    except StoreError as exc:
        return f"github job events: FAILED: {exc}"
    try:
        now = SYSTEM.now().timestamp()
        first = await store.first_job_created()
        day = await store.job_activity(now - 86400.0, now)
    except StoreError as exc:
        return f"github job events: FAILED: {exc}"
    finally:
        await store.close()
    if first is None:
        return (
            "github job events: GITHUB_WEBHOOK_SECRET is set, no job seen yet: point an"
            " organization webhook (workflow_job events) at /webhooks/github"
        )
    since = datetime.fromtimestamp(first, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"github job events: ok ({len(day.arrivals)} jobs queued in the last 24 hours;"
        f" history since {since})" + _runner_types(day.arrivals, settings)
    )


def _runner_types(arrivals: list[JobRow], settings: Settings) -> str:
    """The runner types of the last day's jobs, the most jobs first, as a line of its own: what
    the YAML file's `jobs.runner_type` makes of the fleet's labels."""
    if not arrivals:
        return ""
    counted = Counter(row.runner_type for row in arrivals)
    jobs = settings.file.jobs
    shown = ", ".join(
        f"{name} {count}" + (" (left out by jobs.exclude)" if jobs.leaves_out(name) else "")
        for name, count in sorted(counted.items(), key=lambda item: (-item[1], item[0]))
    )
    return f"\ngithub runner types: {len(counted)} in the last 24 hours' jobs (jobs each): {shown}"


async def _github_runners(settings: Settings) -> str:
    scope = settings.github_scope()
    if scope is None:
        return "github runners: not configured (GITHUB_ORG, GITHUB_REPOSITORY or GITHUB_ENTERPRISE)"
    if not has_github_rest(settings):
        named = RunnerScope(ScopeKind(scope[0]), scope[1]).setting
        return f"github runners: FAILED: {named} is set but GITHUB_TOKEN is not (nor GITHUB_APP_ID)"
    # The bot's own client, so the token is proved on the very request the bot makes.
    async with aiohttp.ClientSession() as session:
        client = github_runners_client_for(settings, session)
        assert client is not None
        try:
            fleet = await client.fleet()
        except GitHubUnavailable as exc:
            return f"github runners: FAILED: {exc} (GITHUB_API_URL {redact_url(client.base_url)})"
        except GitHubError as exc:
            return f"github runners: FAILED: {exc}"
    line = (
        f"github runners: ok ({len(fleet.runners)} runners in {len(fleet.supply)} runner types,"
        f" {fleet.scope})"
    )
    if not fleet.complete:
        line += f"; only the first {fleet.pages} pages of {fleet.total_count} runners were read"
    if fleet.unreadable:
        line += f"; {fleet.unreadable} runners could not be read"
    if fleet.failed:
        line = line.replace(": ok (", ": FAILED in part (", 1) + f"; {'; '.join(fleet.failed)}"
    return line


async def run_check(settings: Settings) -> int:
    """Print one line per service; 0 when every configured one answers, else 1."""
    lines = ["configuration: ok"]
    try:
        store = await open_store(settings.database)
        await store.close()
        lines.append(f"store: ok ({redact_url(settings.database)})")
    except StoreError as exc:
        lines.append(f"store: FAILED: {exc}")
    lines.append(await _slack(settings))
    lines.append(await _grafana(settings))
    lines.append(await _prometheus(settings))
    lines.append(await _job_events(settings))
    lines.append(await _github_runners(settings))
    lines += await github_access_lines(settings)
    shown = Redactor(known_secrets(settings))
    for line in lines:
        print(shown(line))
    return 1 if any(": FAILED" in line for line in lines) else 0
