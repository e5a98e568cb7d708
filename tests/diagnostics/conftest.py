"""Fixtures shared by the diagnostics tests."""

from __future__ import annotations

import pytest

from testkit.integration import require_binary


@pytest.fixture
def prometheus_binary() -> str:
    """Prometheus, for ARC's metrics written into a real one."""
    return require_binary("prometheus", "apt-get install -y prometheus")
