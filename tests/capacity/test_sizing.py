"""The sizing model: measured jobs replayed through the autoscaler at a given size, the delays
read from the jobs, and the cheapest size that keeps the p95 queue time under a target."""

from __future__ import annotations

import math
import random

import pytest

from bot.capacity.replay import Window, allowed_over, replay
from bot.capacity.sizing import Delays, MeasuredJob, estimate_delays, recommend

NO_DELAYS = Delays(pickup_seconds=0.0, start_seconds=0.0, replacement_seconds=0.0)
WEEK = 7 * 86400.0


def ran(created: float, seconds: float, wait: float = 0.0) -> MeasuredJob:
    """A finished job that ran `seconds` (how long it waited does not matter to a replay)."""
    return MeasuredJob(created, created + wait, created + wait + seconds)


def busy_week(seed: int = 7, per_hour: float = 60.0, minutes: float = 20.0) -> list[MeasuredJob]:
    """A week of Poisson arrivals with a daily peak, bursts, and lognormal run times."""
    rng = random.Random(seed)
    jobs, t = [], 0.0
    while True:
        hour = (t % 86400.0) / 3600.0
        rate = per_hour * (0.3 + 0.7 * max(0.0, 1.0 - abs(hour - 15.0) / 6.0)) / 3600.0
        t += rng.expovariate(rate)
        if t >= WEEK:
            return jobs
        for _ in range(1 + (rng.random() < 0.3) * rng.randrange(1, 4)):
            seconds = minutes * 60.0 * rng.lognormvariate(-0.08, 0.4)
            jobs.append(ran(t, seconds, wait=5.0 + rng.expovariate(1 / 6.0)))


def test_a_capped_set_replays_as_a_fifo_queue_with_that_many_servers() -> None:
    jobs = [ran(0.0, 100.0), ran(0.0, 100.0), ran(0.0, 100.0), ran(10.0, 100.0)]
    result = replay(Window.of(jobs, 0.0, 1000.0), 2, 0, NO_DELAYS)
    assert result.waits == (0.0, 0.0, 100.0, 90.0)


def test_a_burst_beyond_the_warm_pool_waits_for_a_runner_to_start() -> None:
    delays = Delays(pickup_seconds=5.0, start_seconds=30.0, replacement_seconds=0.0)
    jobs = [ran(0.0, 60.0), ran(0.0, 60.0), ran(100.0, 60.0)]
    result = replay(Window.of(jobs, 0.0, 1000.0), None, 1, delays)
    # The pool's runner at once; the second job's runner asked for on its arrival; by 100 s the
    # pool is back.
    assert result.waits == (5.0, 35.0, 5.0)


def test_a_finished_runner_still_wanted_is_replaced_after_the_replacement_delay() -> None:
    delays = Delays(pickup_seconds=0.0, start_seconds=0.0, replacement_seconds=20.0)
    jobs = [ran(0.0, 100.0), ran(0.0, 100.0)]
    result = replay(Window.of(jobs, 0.0, 1000.0), 1, 0, delays)
    assert result.waits == (0.0, 120.0)


def test_runner_hours_count_starting_and_busy_runners() -> None:
    delays = Delays(pickup_seconds=0.0, start_seconds=10.0, replacement_seconds=0.0)
    result = replay(Window.of([ran(0.0, 100.0)], 0.0, 1000.0), None, 0, delays)
    assert result.runner_hours == pytest.approx(110.0 / 3600.0)
    assert result.busy_hours == pytest.approx(100.0 / 3600.0)


def test_jobs_still_waiting_at_the_end_count_with_their_wait_so_far() -> None:
    jobs = [ran(0.0, 5000.0), MeasuredJob(400.0, None, None)]
    result = replay(Window.of(jobs, 0.0, 1000.0), 1, 0, NO_DELAYS)
    assert result.waits == (0.0, 600.0)


def test_a_job_still_running_at_the_end_runs_at_least_as_long_as_it_had() -> None:
    jobs = [ran(0.0, 100.0), ran(0.0, 300.0), MeasuredJob(0.0, 10.0, None)]
    window = Window.of(jobs, 0.0, 1000.0)
    assert window.durations == (100.0, 300.0, 990.0)


def test_a_replay_asked_for_a_target_stops_once_it_is_missed() -> None:
    window = Window.of(busy_week(), 0.0, WEEK)
    assert not replay(window, 5, 0, NO_DELAYS, target_seconds=600.0).complete
    assert replay(window, None, 0, NO_DELAYS, target_seconds=600.0).complete


def test_the_p95_falls_as_the_maximum_grows() -> None:
    window = Window.of(busy_week(), 0.0, WEEK)
    delays = Delays(pickup_seconds=6.0, start_seconds=45.0, replacement_seconds=0.0)
    p95s = [replay(window, size, 0, delays).p95_seconds for size in range(20, 42, 2)]
    assert p95s == sorted(p95s, reverse=True)
    assert p95s[0] > 3600.0 > 60.0 > p95s[-1]


def test_the_recommended_size_meets_the_target_and_one_runner_fewer_does_not() -> None:
    jobs = busy_week()
    sizing = recommend(jobs, 0.0, WEEK, 600.0)
    assert sizing.reachable
    assert sizing.p95_seconds <= 600.0
    window = Window.of(jobs, 0.0, WEEK)
    fewer = replay(window, sizing.max_runners - 1, sizing.warm_pool, sizing.delays)
    assert fewer.p95_seconds > 600.0


def test_a_tighter_target_needs_more_runners() -> None:
    jobs = busy_week()
    loose = recommend(jobs, 0.0, WEEK, 1200.0)
    tight = recommend(jobs, 0.0, WEEK, 120.0)
    assert tight.max_runners > loose.max_runners
    assert tight.runner_hours >= loose.runner_hours


def test_a_load_margin_sizes_for_more_work_and_reports_the_measured_jobs() -> None:
    jobs = busy_week()
    plain = recommend(jobs, 0.0, WEEK, 600.0)
    margin = recommend(jobs, 0.0, WEEK, 600.0, load_margin=0.1)
    assert margin.max_runners > plain.max_runners
    assert margin.busy_hours == pytest.approx(plain.busy_hours, rel=0.01)
    assert margin.p95_seconds < plain.p95_seconds


def test_a_target_below_the_start_delay_takes_a_warm_pool() -> None:
    delays = Delays(pickup_seconds=5.0, start_seconds=60.0, replacement_seconds=0.0)
    sizing = recommend(busy_week(), 0.0, WEEK, 30.0, delays=delays)
    assert sizing.reachable
    assert sizing.warm_pool > 0
    assert sizing.p95_seconds <= 30.0


def test_a_target_no_size_meets_is_said_not_raised() -> None:
    delays = Delays(pickup_seconds=30.0, start_seconds=60.0, replacement_seconds=0.0)
    sizing = recommend(busy_week(), 0.0, WEEK, 10.0, delays=delays, max_warm_pool=3)
    assert not sizing.reachable
    assert sizing.p95_seconds >= 30.0


def test_an_empty_window_needs_no_runners() -> None:
    sizing = recommend([ran(-50.0, 10.0)], 0.0, WEEK, 600.0, max_runners=10)
    assert (sizing.max_runners, sizing.warm_pool, sizing.jobs) == (0, 0, 0)
    assert sizing.reachable
    assert sizing.current is not None
    assert sizing.current.runner_hours == 0.0


def test_the_current_maximum_is_replayed_when_known() -> None:
    jobs = busy_week()
    sizing = recommend(jobs, 0.0, WEEK, 600.0, max_runners=25, warm_pool=2)
    assert sizing.current is not None
    assert (sizing.current.max_runners, sizing.current.warm_pool) == (25, 2)
    assert sizing.current.p95_seconds > 600.0 >= sizing.p95_seconds


def test_pickup_and_start_are_read_from_the_two_groups_of_waits() -> None:
    jobs = [ran(float(i), 60.0, wait=5.0) for i in range(90)]
    jobs += [ran(float(i), 60.0, wait=65.0) for i in range(10)]
    delays = estimate_delays(jobs)
    assert (delays.pickup_seconds, delays.start_seconds) == (5.0, 60.0)
    assert not delays.replacement_measured


def test_starts_are_read_beyond_the_tail_of_the_pickup() -> None:
    # 10 000 pickups of 2 s and an exponential 6 s, and 100 jobs that waited 60 s for a start.
    n = 10_000
    jobs = [ran(float(i), 60.0, wait=2.0 - 6.0 * math.log(1 - (i + 0.5) / n)) for i in range(n)]
    jobs += [ran(float(i), 60.0, wait=60.0) for i in range(100)]
    delays = estimate_delays(jobs)
    assert delays.pickup_seconds == pytest.approx(8.0, abs=0.5)
    assert delays.start_seconds == pytest.approx(52.0, abs=1.0)


def test_without_a_second_group_the_slowest_jobs_tell_the_start() -> None:
    jobs = [ran(float(i), 60.0, wait=4.0 + i / 100.0) for i in range(1000)]
    delays = estimate_delays(jobs)
    assert delays.pickup_seconds == pytest.approx(9.0)
    assert delays.start_seconds == pytest.approx(13.94 - 9.0)


def test_with_no_warm_pool_every_wait_is_a_start() -> None:
    jobs = [ran(float(i), 60.0, wait=40.0 + i % 10) for i in range(100)]
    delays = estimate_delays(jobs, warm_pool=0)
    assert (delays.pickup_seconds, delays.start_seconds) == (0.0, 45.0)


def test_the_replacement_delay_is_timed_at_the_maximum() -> None:
    # Two runners at most, 40 jobs queued at once after a quiet day: each next job starts 30 s
    # after one ends.
    jobs = [ran(-86400.0 + 600.0 * i, 60.0) for i in range(100)]
    free = [0.0, 50.0]
    for i in range(40):
        lane = i % 2
        started = free[lane] + (30.0 if i >= 2 else 0.0)
        jobs.append(MeasuredJob(0.0, started, started + 100.0))
        free[lane] = started + 100.0
    delays = estimate_delays(jobs, max_runners=2)
    assert delays.replacement_measured
    assert delays.replacement_seconds == pytest.approx(30.0)
    assert not estimate_delays(jobs).replacement_measured


def test_the_p95_allows_one_job_in_twenty_over() -> None:
    assert [allowed_over(n) for n in (0, 1, 20, 21, 100)] == [0, 0, 1, 1, 5]
