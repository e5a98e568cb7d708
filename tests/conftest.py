"""Shared fixtures: a clean environment for every test, and paths to the fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

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
