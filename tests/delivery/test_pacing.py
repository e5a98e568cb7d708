"""Pacing (bot.pacing): about one post per second per channel after a short burst."""

from __future__ import annotations

import asyncio

from bot.delivery.pacing import Pacer
from bot.domain.clock import Clock


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_then_one_a_second_per_channel() -> None:
    clock = FakeClock()
    pacer = Pacer(per_second=1.0, burst=3, clock=Clock(ticks=clock))
    assert [pacer.delay("C1") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert pacer.delay("C1") == 1.0
    assert pacer.delay("C2") == 0.0  # another channel has its own bucket
    clock.now += 1.0
    assert pacer.delay("C1") == 0.0
    assert pacer.delay("C1") > 0


async def test_waiting_lets_posts_through_in_order() -> None:
    """Posts queued on one channel at once go out one after another, in the order they came."""
    pacer = Pacer(per_second=50.0, burst=1)
    through: list[int] = []

    async def post(n: int) -> None:
        await pacer.wait("C1")
        through.append(n)

    await asyncio.gather(*(post(n) for n in range(5)))
    assert through == [0, 1, 2, 3, 4]
    assert pacer.delay("C1") > 0  # each took a token: the bucket is empty


def test_a_channel_known_by_name_then_by_id_is_one_bucket() -> None:
    """Posts to `#alerts` before its id was learnt and to its id after share Slack's limit."""
    clock = FakeClock()
    pacer = Pacer(per_second=1.0, burst=3, clock=Clock(ticks=clock))
    assert [pacer.delay("#alerts") for _ in range(3)] == [0.0, 0.0, 0.0]
    pacer.same("#alerts", "C1")
    assert pacer.delay("C1") == 1.0
    assert pacer.delay("#alerts") > 0
    clock.now += 10.0
    assert pacer.delay("#alerts") == 0.0
    assert [pacer.delay("C1") for _ in range(2)] == [0.0, 0.0]
    assert pacer.delay("C1") > 0
