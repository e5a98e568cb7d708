"""Shared fixtures: a clean environment for every test, and paths to the fixtures."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from bot.simulator import SimulationSpec, Truth, write_file
from tests.support.alertmanager import Alertmanager
from tests.support.integration import require_binary
from tests.support.prometheus import Prometheus

_CLEARED_PREFIXES = ("SLACK_", "GRAFANA_", "QUEUEBOT_", "PROMETHEUS_", "GITHUB_")
_CLEARED_NAMES = {
    "HOST",
    "PORT",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
}


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No setting of the developer's shell leaks into a test (slack-sdk reads proxy variables)."""
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES) or name in _CLEARED_NAMES:
            if name == "QUEUEBOT_REQUIRE_INTEGRATION":
                continue
            monkeypatch.delenv(name)
    yield


@pytest.fixture
async def alertmanager(tmp_path: Path) -> AsyncIterator[Alertmanager]:
    """A real Alertmanager at Grafana's path, own port and storage; stopped even on failure."""
    binary = require_binary("prometheus-alertmanager", "apt-get install -y prometheus-alertmanager")
    instance = Alertmanager(binary, tmp_path / "alertmanager")
    try:
        await instance.start()
        yield instance
    finally:
        await instance.stop()


#: Builds a Prometheus holding a simulated fleet: `await make(spec)` -> (server, truth).
PrometheusFactory = Callable[[SimulationSpec], Awaitable[tuple[Prometheus, Truth]]]


@pytest.fixture
async def prometheus_for(tmp_path: Path) -> AsyncIterator[PrometheusFactory]:
    """Simulate a fleet into tmp_path, backfill it into a real Prometheus and start it; every
    server made is stopped at teardown, even when the test fails."""
    binary = require_binary("prometheus", "apt-get install -y prometheus")
    promtool = require_binary("promtool", "apt-get install -y prometheus")
    made: list[Prometheus] = []

    async def make(spec: SimulationSpec) -> tuple[Prometheus, Truth]:
        workdir = tmp_path / f"prometheus-{len(made)}"
        workdir.mkdir()
        history = workdir / "fleet.om"
        truth = await asyncio.to_thread(write_file, spec, history)
        instance = Prometheus(binary, promtool, workdir)
        made.append(instance)
        await instance.backfill(history)
        history.unlink()
        await instance.start()
        return instance, truth

    try:
        yield make
    finally:
        for instance in made:
            await instance.stop()
