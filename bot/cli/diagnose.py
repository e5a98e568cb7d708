"""`queuebot diagnose`: the same report as the Slack button, printed as text or JSON."""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime

import aiohttp

from bot.app import prometheus_client_for
from bot.config import ConfigError, Settings
from bot.diagnostics.checks import diagnose
from bot.diagnostics.signals import collect, no_fleet
from bot.diagnostics.sources.prometheus import PrometheusError
from bot.render.diagnosis_text import text_report

_DURATION = re.compile(r"^[0-9]+[smh]$")


def parse_time(text: str) -> datetime:
    """An ISO 8601 time (UTC when it names no zone) or Unix seconds."""
    try:
        return datetime.fromtimestamp(float(text), UTC)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is neither an ISO 8601 time nor Unix seconds") from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def parse_window(text: str) -> str:
    if not _DURATION.match(text):
        raise ValueError(f"{text!r} is not a duration like 10m, 1h or 90s")
    return text


async def run_diagnose(
    settings: Settings, *, at: datetime | None, window: str | None, output: str
) -> int:
    pack = settings.file.queries
    if window:
        pack = pack.model_copy(update={"window": window})
    async with aiohttp.ClientSession() as session:
        client = prometheus_client_for(settings, session)
        if client is None:
            raise ConfigError(
                "no metrics source: set PROMETHEUS_URL, or GRAFANA_PROMETHEUS_DATASOURCE_UID"
                " with GRAFANA_URL and GRAFANA_TOKEN"
            )
        try:
            fleet = await collect(client, pack, at or datetime.now(UTC))
        except PrometheusError as exc:
            print(f"queuebot: {exc}", file=sys.stderr)
            return 1
    if not fleet.runner_types():
        print(f"queuebot: {no_fleet(fleet, client.where)}", file=sys.stderr)
        return 1
    report = diagnose(fleet)
    if output == "json":
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        print(text_report(report))
    return 0
