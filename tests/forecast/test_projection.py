"""The queue projected ahead from the jobs waiting now and the recent rates, and the heads-up
board's hysteresis (pure: no store, no Slack)."""

from __future__ import annotations

from bot.forecast.projection import QueueState, Threshold, crossing, project
from bot.forecast.warnings import CLEAR_CHECKS, COOL_DOWN, RAISE_CHECKS, Phase, WarningBoard

AT = 1_790_000_000.0
THRESHOLD = Threshold(wait_seconds=3600.0, queued=5)


def _queue(ages_minutes: list[float], arrivals: float, starts: float, at: float = AT) -> QueueState:
    created = tuple(sorted(at - minutes * 60.0 for minutes in ages_minutes))
    return QueueState(at, created, arrivals, starts)


def test_now_is_what_the_alert_counts() -> None:
    state = _queue([50, 40, 3, 1], arrivals=1.0, starts=1.0)
    now = project(state, 0.0, THRESHOLD)
    # Jobs younger than 5 minutes wait, but do not count as queueing yet.
    assert (now.queued, now.wait_seconds) == (2, 50 * 60.0)
    assert state.queued(THRESHOLD) == 2 and state.longest_wait() == 50 * 60.0


def test_the_oldest_jobs_are_taken_first_at_the_start_rate() -> None:
    state = _queue([50, 45, 40, 35, 30, 25, 20], arrivals=0.0, starts=0.2)
    # In 10 minutes the two oldest are taken: the oldest left (40 min now) will have waited 50.
    ahead = project(state, 10.0, THRESHOLD)
    assert ahead.wait_seconds == 50 * 60.0 and ahead.queued == 5


def test_a_queue_with_no_starts_crosses_when_its_oldest_reaches_the_threshold() -> None:
    state = _queue([48, 40, 30, 20, 12, 10, 8], arrivals=0.5, starts=0.0)
    assert crossing(state, 30.0, THRESHOLD) == 12.0


def test_a_queue_drained_faster_than_it_fills_does_not_cross() -> None:
    state = _queue([45, 40, 35, 30, 25, 20, 15], arrivals=1.0, starts=3.0)
    assert crossing(state, 30.0, THRESHOLD) is None
    drained = project(state, 30.0, THRESHOLD)
    assert drained.queued == 0.0 and drained.wait_seconds == 0.0


def test_a_queue_over_the_threshold_crosses_now() -> None:
    state = _queue([65, 60, 50, 40, 30, 20, 10], arrivals=1.0, starts=0.5)
    assert crossing(state, 30.0, THRESHOLD) == 0.0


def _growing(at: float) -> QueueState:
    """The oldest job 40 minutes in, nothing taken: 60 minutes in about 20 minutes."""
    return _queue([40, 35, 30, 25, 20, 15, 10], arrivals=1.0, starts=0.0, at=at)


def _calm(at: float) -> QueueState:
    return _queue([2], arrivals=1.0, starts=1.5, at=at)


def test_a_heads_up_is_raised_after_consecutive_checks_and_ends_when_the_alert_fires() -> None:
    board = WarningBoard(threshold=THRESHOLD, horizon_minutes=30.0)
    changes = [board.step({"linux.2xlarge": _growing(AT + 60.0 * n)}) for n in range(RAISE_CHECKS)]
    assert [len(c) for c in changes] == [0] * (RAISE_CHECKS - 1) + [1]
    (raised,) = changes[-1]
    assert raised.phase is Phase.WARNING and raised.crossing_in == 20.0
    assert raised.growth_per_minute == 1.0
    over = _queue([61, 55, 50, 45, 40, 35, 30], arrivals=1.0, starts=0.0, at=AT + 600.0)
    (fired,) = board.step({"linux.2xlarge": over})
    assert fired.phase is Phase.FIRED and fired.started_at == raised.started_at
    assert board.active() == []
    # While the alert's condition holds, no heads-up: the alert speaks.
    assert board.step({"linux.2xlarge": over}) == []


def test_a_heads_up_ends_back_to_normal_only_after_the_trend_stays_reversed() -> None:
    board = WarningBoard(threshold=THRESHOLD, horizon_minutes=30.0)
    for n in range(RAISE_CHECKS):
        board.step({"linux.2xlarge": _growing(AT + 60.0 * n)})
    t = AT + 60.0 * RAISE_CHECKS
    # One calm check, then growing again: no flapping, the heads-up stays out.
    assert board.step({"linux.2xlarge": _calm(t)})[0].phase is Phase.WARNING
    assert board.step({"linux.2xlarge": _growing(t + 60)})[0].phase is Phase.WARNING
    ended = []
    for n in range(CLEAR_CHECKS):
        ended = board.step({"linux.2xlarge": _calm(t + 120.0 + 60.0 * n)})
    assert [h.phase for h in ended] == [Phase.NORMAL]
    # Growing again soon after: no new heads-up within the cool-down.
    soon = t + 120.0 + 60.0 * CLEAR_CHECKS
    assert all(board.step({"linux.2xlarge": _growing(soon + 60.0 * n)}) == [] for n in range(5))
    later = soon + COOL_DOWN
    raised = [board.step({"linux.2xlarge": _growing(later + 60.0 * n)}) for n in range(3)]
    assert any(h.phase is Phase.WARNING for found in raised for h in found)
