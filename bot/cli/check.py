"""`queuebot check`: validate the settings and reach every configured service, one line each."""

from __future__ import annotations

import aiohttp

from bot.app import slack_client_for
from bot.config import Settings
from bot.silencing.grafana import API_PREFIX
from bot.slack.errors import SlackError
from bot.slack.gateway import SlackGateway
from bot.store import StoreError, open_store

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
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        return f"FAILED: {url}: {type(exc).__name__}: {exc}"


async def run_check(settings: Settings) -> int:
    """Print one line per service; 0 when every configured one answers, else 1."""
    lines = ["configuration: ok"]
    try:
        store = await open_store(settings.database)
        await store.close()
        lines.append(f"store: ok ({settings.database})")
    except StoreError as exc:
        lines.append(f"store: FAILED: {exc}")
    try:
        identity = await SlackGateway(slack_client_for(settings)).auth_test()
        lines.append(f"slack: ok (bot {identity.get('user_id')} in team {identity.get('team')})")
    except SlackError as exc:
        lines.append(f"slack: FAILED: {exc}")
    if settings.grafana_url is None:
        lines.append("grafana: not configured (GRAFANA_URL): silencing is off")
    elif settings.grafana_token is None:
        lines.append("grafana: FAILED: GRAFANA_URL is set but GRAFANA_TOKEN is not")
    else:
        # Listing silences needs the token and alert.silences:read, which the bot needs too;
        # /api/health would answer without any token.
        silences = str(settings.grafana_url).rstrip("/") + API_PREFIX + "/silences"
        result = await _probe(silences, settings.grafana_token.get_secret_value())
        if result.startswith("ok"):
            result += "; GRAFANA_TOKEN may read silences"
        elif "HTTP 401" in result or "HTTP 403" in result:
            result += "; GRAFANA_TOKEN is refused or lacks alert.silences:read on the rule's folder"
        lines.append(f"grafana: {result}")
    if settings.prometheus_url is None:
        lines.append("prometheus: not configured (PROMETHEUS_URL)")
    else:
        ready = str(settings.prometheus_url).rstrip("/") + "/-/ready"
        lines.append(f"prometheus: {await _probe(ready)}")
    for line in lines:
        print(line)
    return 1 if any(": FAILED" in line for line in lines) else 0
