"""Shared fixtures: a clean environment for every test, and paths to the fixtures."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.alertmanager import Alertmanager
from tests.integration import require_binary

_CLEARED_PREFIXES = ("SLACK_", "GRAFANA_", "QUEUEBOT_", "PROMETHEUS_")
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
