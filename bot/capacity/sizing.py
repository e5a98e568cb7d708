"""The sizes a runner type should have had: the cheapest maximum and warm pool that, replayed
with the window's measured jobs (`bot.capacity.replay`), keep the p95 queue time under a target.

The fleet's delays are estimated from the same jobs, because a report must hold for the fleet as
it behaves, whatever its configuration says:

- pickup and start. Most jobs in a fleet with a warm pool find an idle runner and start within
  seconds (the pickup); the others wait for a runner asked for on their arrival (the start, a
  minute or more), and hide in the pickup's tail. The pickup is taken as a shifted exponential
  (a fixed latency and a memoryless one), fitted to the quartile and median of the waits; the
  waits beyond its p99.9 are the starts: the pickup is its mean, the start the median of those
  waits less the pickup (a few of them are the pickup's own tail). When fewer than
  `_MIN_STARTS` lie beyond, most jobs waited for a start: the waits are split in two by 2-means
  on their logarithm, the pickup the median of the short group, the start the median of the
  long group less the pickup. With no clear second group either (under 1 % of the jobs, or
  within a factor of 3), the pickup is the median wait and the start the p99.5 wait less it.
  Where the current warm pool is known to be 0, every job waited for a start: the start is the
  median wait (the pickup included).
- replacement. A runner that finished its job is replaced only while the set is at its maximum
  with jobs waiting, so its delay shows only then. When the current maximum is known, the jobs
  that waited while that many were running waited for a runner to finish, not to start: they
  are left out of the above, and if at least `_MIN_CAPPED` of them started with the set full,
  the delay is the median time from the last completion to their start, less the pickup.
  Otherwise it cannot be measured and is taken as 0 (the finished runner's place is taken at
  once), and the result says so (`Delays.replacement_measured`).

The search: for each warm pool from 0 up, the smallest maximum whose replay meets the target
(bisection: the p95 only falls as the maximum grows, bar ties), and of those the one with the
fewest runner-hours; it stops at the first warm pool that costs more than a smaller one (idle
runners cost hours all week, while a lower maximum saves little: at the maximum every runner is
busy). A replay stops as soon as the target is missed, so a search over a week of a busy type
(100k jobs) takes a few seconds.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass

from bot.capacity.replay import Delays, MeasuredJob, Replay, Window, percentile, replay

__all__ = ["Delays", "MeasuredJob", "Replay", "Sizing", "estimate_delays", "recommend"]

#: Jobs started at the maximum needed to time a replacement.
_MIN_CAPPED = 20
#: The long group of waits must hold this share of the jobs and be this many times slower.
_MIN_LONG_SHARE = 0.01
_MIN_SEPARATION = math.log(3.0)
#: Without a second group, the jobs that waited for a start are taken to be this slowest share.
_FEW_STARTS = 0.995
#: Waits beyond the pickup's quantile 1 - this are starts, when there are at least
#: `_MIN_STARTS` of them.
_PICKUP_TAIL = 0.001
_MIN_STARTS = 10


@dataclass(frozen=True)
class Sizing:
    """The recommended size of one runner type, and what the window's jobs would have done."""

    max_runners: int
    warm_pool: int  # idle runners kept beyond queued and running jobs (ARC's minRunners)
    p95_seconds: float  # the replayed p95 queue time at this size
    runner_hours: float  # starting, idle and busy runners over the window
    busy_hours: float
    #: False when no size tried meets the target: this is the one with the lowest p95.
    reachable: bool
    jobs: int
    delays: Delays
    #: The current maximum (and warm pool, if given) replayed, when the maximum is known.
    current: Replay | None = None


def estimate_delays(
    jobs: list[MeasuredJob], max_runners: int | None = None, warm_pool: int | None = None
) -> Delays:
    """The pickup, start and replacement delays the measured jobs show (see the module)."""
    full, gaps = _at_maximum(jobs, max_runners)
    waits = sorted(
        max(0.0, job.started - job.created)
        for job, queued in zip(jobs, full, strict=True)
        if job.started is not None and not queued
    )
    pickup, start = _pickup_and_start(waits, warm_pool)
    if len(gaps) < _MIN_CAPPED:
        return Delays(pickup, start, 0.0)
    gaps.sort()
    return Delays(pickup, start, max(0.0, _median(gaps) - pickup), replacement_measured=True)


def _pickup_and_start(waits: list[float], warm_pool: int | None) -> tuple[float, float]:
    """The pickup and start delays from the sorted waits of jobs not held up by the maximum."""
    if not waits:
        return 0.0, 0.0
    if warm_pool == 0:
        # No runner was ever idle ahead of a job: every wait is a start, the pickup in it.
        return 0.0, _median(waits)
    # The pickup as a shifted exponential, from the lower half of the waits.
    p25, p50 = percentile(waits, 0.25), percentile(waits, 0.5)
    scale = (p50 - p25) / math.log(1.5)
    shift = p50 - scale * math.log(2.0)
    beyond = waits[bisect.bisect_right(waits, shift + scale * math.log(1 / _PICKUP_TAIL)) :]
    if len(beyond) >= _MIN_STARTS:
        return shift + scale, max(0.0, _median(beyond) - shift - scale)
    long_from = _split(waits)
    short, long = waits[:long_from], waits[long_from:]
    if (
        short
        and len(long) >= _MIN_LONG_SHARE * len(waits)
        and math.log1p(_median(long)) - math.log1p(_median(short)) >= _MIN_SEPARATION
    ):
        return _median(short), max(0.0, _median(long) - _median(short))
    return p50, max(0.0, percentile(waits, _FEW_STARTS) - p50)


def _median(ordered: list[float]) -> float:
    return ordered[len(ordered) // 2]


def _split(ordered: list[float]) -> int:
    """Where the long group begins in the sorted waits: 2-means on log(1 + wait)."""
    logs = [math.log1p(w) for w in ordered]
    n = len(logs)
    prefix = [0.0]
    for value in logs:
        prefix.append(prefix[-1] + value)
    threshold = prefix[n] / n
    at = bisect.bisect_right(logs, threshold)
    for _ in range(100):
        if at in (0, n):
            return at
        low, high = prefix[at] / at, (prefix[n] - prefix[at]) / (n - at)
        moved = bisect.bisect_right(logs, (low + high) / 2)
        if moved == at:
            break
        at = moved
    return at


def _at_maximum(jobs: list[MeasuredJob], max_runners: int | None) -> tuple[list[bool], list[float]]:
    """Which jobs waited while `max_runners` jobs were running (for a runner to finish, not to
    start), and for those that started with the set still full, the time from the last
    completion to their start."""
    if max_runners is None or max_runners <= 0:
        return [False] * len(jobs), []
    # At one moment, completions first.
    events = sorted(
        [(job.started, 1, i) for i, job in enumerate(jobs) if job.started is not None]
        + [(job.completed, 0, i) for i, job in enumerate(jobs) if job.completed is not None]
    )
    running, last_completion = 0, -math.inf
    full_from: list[float] = []  # the spans with the set full: [from, to)
    full_to: list[float] = []
    gap_of: dict[int, float] = {}
    for at, kind, index in events:
        was_full = running >= max_runners
        if kind == 0:
            running -= 1
            last_completion = at
        else:
            if running >= max_runners - 1:
                gap_of[index] = at - last_completion
            running += 1
        if was_full != (running >= max_runners):
            (full_to if was_full else full_from).append(at)
    full_to.append(math.inf)
    full = [False] * len(jobs)
    for index, job in enumerate(jobs):
        started = math.inf if job.started is None else job.started
        span = bisect.bisect_right(full_to, job.created)
        full[index] = span < len(full_from) and full_from[span] < started
    gaps = [gap for index, gap in gap_of.items() if full[index]]
    return full, gaps


def recommend(
    jobs: list[MeasuredJob],
    since: float,
    until: float,
    target_p95_seconds: float,
    *,
    max_runners: int | None = None,
    warm_pool: int | None = None,
    max_warm_pool: int = 20,
    delays: Delays | None = None,
    load_margin: float = 0.0,
) -> Sizing:
    """The cheapest (runner-hours) maximum and warm pool whose replay of the jobs created in
    [since, until] keeps the p95 queue time at or under `target_p95_seconds`.

    `max_runners` and `warm_pool` are the current ones, when known: the current size is
    replayed too, and the delays may be measured better (see the module). `delays` overrides
    the estimate. With `load_margin`, the size must meet the target with every job running that
    share longer, as a busier week would need (its p95 and hours are still the measured jobs').
    A window without jobs needs no runners; a target no size up to `max_warm_pool` meets gives
    the size with the lowest p95 and `reachable=False`."""
    measured = Window.of(jobs, since, until)
    window = measured.stretched(1.0 + load_margin) if load_margin else measured
    kept = [job for job in jobs if since <= job.created <= until]
    found = delays if delays is not None else estimate_delays(kept, max_runners, warm_pool)
    current = None
    if max_runners is not None:
        current = replay(measured, max_runners, warm_pool or 0, found)
    if not window.created:
        return Sizing(0, 0, 0.0, 0.0, 0.0, True, 0, found, current)
    best: Replay | None = None
    closest: Replay | None = None
    guess: int | None = None
    for pool in range(max_warm_pool + 1):
        free = replay(window, None, pool, found)
        if free.p95_seconds > target_p95_seconds:
            if closest is None or free.p95_seconds < closest.p95_seconds:
                closest = free
            continue
        tried: dict[int, Replay] = {}

        def meets(size: int, pool: int = pool, tried: dict[int, Replay] = tried) -> bool:
            tried[size] = replay(window, size, pool, found, target_seconds=target_p95_seconds)
            return tried[size].complete

        floor = max(1, pool, math.ceil(sum(window.durations) / max(1.0, until - since)))
        size = _smallest(meets, floor, max(floor, free.peak_runners), guess)
        guess = size
        fitting = tried.get(size) or replay(window, size, pool, found)
        if best is None or fitting.runner_hours < best.runner_hours:
            best = fitting
        else:
            break
    chosen = best or closest
    assert chosen is not None
    if load_margin:
        chosen = replay(measured, chosen.max_runners, chosen.warm_pool, found)
    return _sizing(chosen, best is not None, measured, found, current)


def _sizing(
    chosen: Replay, reachable: bool, window: Window, delays: Delays, current: Replay | None
) -> Sizing:
    return Sizing(
        max_runners=chosen.max_runners,
        warm_pool=chosen.warm_pool,
        p95_seconds=chosen.p95_seconds,
        runner_hours=chosen.runner_hours,
        busy_hours=chosen.busy_hours,
        reachable=reachable,
        jobs=len(window.created),
        delays=delays,
        current=current,
    )


def _smallest(meets: Callable[[int], bool], low: int, high: int, guess: int | None) -> int:
    """The smallest size in [low, high] that `meets` (which `high` does), bisecting; a guess
    near the answer (the previous warm pool's) narrows the range first by galloping."""
    if guess is not None and low <= guess < high:
        step = 1
        if meets(guess):
            high = guess
            while high - step >= low:
                if not meets(high - step):
                    low = high - step + 1
                    break
                high -= step
                step *= 2
        else:
            low = guess + 1
            while low + step - 1 < high:
                if meets(low + step - 1):
                    high = low + step - 1
                    break
                low += step
                step *= 2
    while low < high:
        middle = (low + high) // 2
        if meets(middle):
            high = middle
        else:
            low = middle + 1
    return high
