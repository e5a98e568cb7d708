"""Fixtures shared by the diagnostics tests."""

from __future__ import annotations

import pytest

from testkit.integration import require_binary


@pytest.fixture
def binaries() -> tuple[str, str]:
    """Prometheus and promtool, for ARC's metrics backfilled into a real Prometheus."""
    return (
        require_binary("prometheus", "apt-get install -y prometheus"),
        require_binary("promtool", "apt-get install -y prometheus"),
    )
