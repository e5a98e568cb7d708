"""The per-user limit on expensive requests: a sliding window, pure."""

from __future__ import annotations

from bot.domain.clock import Clock
from bot.status.rate_limit import PerUserLimit


def test_a_person_waits_until_the_oldest_ask_leaves_the_window() -> None:
    now = [100.0]
    limit = PerUserLimit(per_window=3, window=60.0, clock=Clock(ticks=lambda: now[0]))
    assert [limit.wait("alice") for _ in range(3)] == [0.0, 0.0, 0.0]
    now[0] += 20
    assert limit.wait("alice") == 40.0
    assert limit.wait("bob") == 0.0
    now[0] += 40
    assert limit.wait("alice") == 0.0


def test_refused_asks_do_not_count() -> None:
    now = [0.0]
    limit = PerUserLimit(per_window=1, window=10.0, clock=Clock(ticks=lambda: now[0]))
    assert limit.wait("alice") == 0.0
    for _ in range(5):
        now[0] += 1
        assert limit.wait("alice") > 0
    now[0] = 10.0
    assert limit.wait("alice") == 0.0
