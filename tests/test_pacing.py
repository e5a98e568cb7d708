"""Pacing (bot.pacing): about one post per second per channel after a short burst."""

from __future__ import annotations

from bot.pacing import Pacer


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_then_one_a_second_per_channel() -> None:
    clock = FakeClock()
    pacer = Pacer(per_second=1.0, burst=3, clock=clock)
    assert [pacer.delay("C1") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert pacer.delay("C1") == 1.0
    assert pacer.delay("C2") == 0.0  # another channel has its own bucket
    clock.now += 1.0
    assert pacer.delay("C1") == 0.0
    assert pacer.delay("C1") > 0


async def test_waiting_lets_posts_through_in_order() -> None:
    pacer = Pacer(per_second=50.0, burst=1)
    for _ in range(5):
        await pacer.wait("C1")
    assert pacer.delay("C1") > 0
