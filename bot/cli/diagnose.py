"""`queuebot diagnose`: the same report as the Slack button, printed as text or JSON.

Every configured source is read: GitHub's job events from the store QUEUEBOT_DATABASE names
(when that file exists), GitHub's runners list (GITHUB_TOKEN and GITHUB_ORG), Prometheus
(PROMETHEUS_URL, or through Grafana)."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

from bot.clients import github_runners_client_for, prometheus_client_for
from bot.config import ConfigError, Settings
from bot.diagnostics.checks import diagnose
from bot.domain.clock import SYSTEM
from bot.fleet.reading import FleetSources, FleetUnreadable, read_fleet
from bot.render.diagnosis_text import text_report
from bot.store import Store, is_server, open_store

_DURATION = re.compile(r"^[0-9]+[smh]$")


def parse_time(text: str) -> datetime:
    """An ISO 8601 time (UTC when it names no zone) or Unix seconds."""
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (ValueError, OverflowError, OSError):
            raise ValueError(f"{text!r} is no moment a clock can show") from None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is neither an ISO 8601 time nor Unix seconds") from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def _exists(database: str) -> bool:
    """Whether the store holds anything to read: a server always may, a file once it exists
    (diagnose never creates one)."""
    return is_server(database) or Path(database).expanduser().exists()


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
    store: Store | None = None
    if await asyncio.to_thread(_exists, settings.database):
        store = await open_store(settings.database)
    try:
        async with aiohttp.ClientSession() as session:
            runners = github_runners_client_for(settings, session)
            sources = FleetSources(
                store=store,
                jobs=settings.file.jobs,
                runners=runners,
                prometheus=prometheus_client_for(settings, session),
                pack=pack,
            )
            if not sources.configured:
                raise ConfigError(
                    "no source of fleet data: QUEUEBOT_DATABASE names no store with GitHub's"
                    " job events, and neither GITHUB_TOKEN with GITHUB_ORG nor PROMETHEUS_URL"
                    " is set"
                )
            try:
                fleet = await read_fleet(sources, at or SYSTEM.now())
            except FleetUnreadable as exc:
                print(f"queuebot: {exc}", file=sys.stderr)
                return 1
            finally:
                if runners is not None:
                    await runners.close()
    finally:
        if store is not None:
            await store.close()
    report = diagnose(fleet)
    if output == "json":
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        print(text_report(report))
    return 0
