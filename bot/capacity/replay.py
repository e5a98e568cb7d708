"""A window's measured jobs replayed through a model of the autoscaler, at any size.

The model is the scale set's listener as actions-runner-controller runs it: it wants
`min(max_runners, warm_pool + assigned jobs)` runners (assigned = queued + running; ARC's
`minRunners` is the warm pool, the idle runners kept beyond demand). Jobs wait in one FIFO queue
and arrive when they were measured to; each runs as long as it was measured to run. A new runner
becomes idle `start_seconds` after it is asked for; a runner that finished its job and is still
wanted (the set is at its maximum with jobs waiting) is replaced after `replacement_seconds`;
every job is picked up `pickup_seconds` after a runner is free for it. Unwanted idle runners go
at once. The window starts with the warm pool idle and nothing running (jobs created before it
are not in it), which matters only if it starts at a busy hour.

Only what GitHub's `workflow_job` events tell is used: the delays are estimated from the same
jobs (`bot.capacity.sizing.estimate_delays`), never taken from a fleet's configuration. It is
deterministic, so a window replays the same way at the same size; a week of a busy type (about
100k jobs) replays in under half a second, which the search over sizes relies on.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import NamedTuple

#: The share of jobs whose queue time the target bounds.
P95 = 0.95


class MeasuredJob(NamedTuple):
    """One job as GitHub told of it, Unix seconds: `started` and `completed` are None when
    that had not happened by the end of the window. A tuple, for the garbage collector's sake
    (see `bot.store.JobSpan`)."""

    created: float
    started: float | None
    completed: float | None


@dataclass(frozen=True)
class Delays:
    """How long the fleet takes, beyond the jobs themselves (seconds)."""

    pickup_seconds: float  # from a runner free for a job to the job started
    start_seconds: float  # from a new runner asked for to its being idle
    replacement_seconds: float  # from a finished runner to its replacement idle
    #: Whether the replacement delay was measured (the window had the set at its maximum with
    #: jobs waiting), rather than assumed.
    replacement_measured: bool = False


@dataclass(frozen=True)
class Replay:
    """The window's jobs replayed at one size."""

    max_runners: int
    warm_pool: int
    jobs: int
    #: Each job's queue time, in the order of `Window.created`; jobs still waiting at the end
    #: of the window count with their wait so far. Empty when the replay stopped early.
    waits: tuple[float, ...]
    p95_seconds: float
    runner_hours: float  # starting, idle and busy runners, within the window
    busy_hours: float  # runners assigned a job, within the window
    peak_runners: int  # the most runners at once
    #: False when the replay stopped as soon as the target could no longer be met.
    complete: bool = True


@dataclass(frozen=True)
class Window:
    """Measured jobs made ready to replay: sorted by creation, each with its run time."""

    since: float
    until: float
    created: tuple[float, ...]
    durations: tuple[float, ...]

    @classmethod
    def of(cls, jobs: list[MeasuredJob], since: float, until: float) -> Window:
        """The jobs created in [since, until]. A job still running at the end runs at least as
        long as it had; a job not started, or started but cut short, runs as long as the
        median finished job, for want of better."""
        kept = sorted((job for job in jobs if since <= job.created <= until), key=_created)
        finished = sorted(
            max(0.0, job.completed - job.started)
            for job in kept
            if job.started is not None and job.completed is not None
        )
        typical = finished[len(finished) // 2] if finished else 0.0
        durations = []
        for job in kept:
            if job.started is None:
                durations.append(typical)
            elif job.completed is None:
                durations.append(max(until - job.started, typical))
            else:
                durations.append(max(0.0, job.completed - job.started))
        return cls(since, until, tuple(job.created for job in kept), tuple(durations))

    def stretched(self, factor: float) -> Window:
        """The same jobs, each running `factor` times as long: as much more work."""
        return Window(
            self.since, self.until, self.created, tuple(d * factor for d in self.durations)
        )


def _created(job: MeasuredJob) -> float:
    return job.created


def allowed_over(jobs: int, share: float = P95) -> int:
    """How many of `jobs` waits may exceed the target while the `share` percentile meets it
    (the nearest rank, as `percentile` takes it)."""
    if jobs == 0:
        return 0
    return jobs - 1 - round(share * (jobs - 1))


def percentile(values: list[float], share: float) -> float:
    """The value at `share` (0..1) of the sorted values, by nearest rank; 0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def replay(
    window: Window,
    max_runners: int | None,
    warm_pool: int,
    delays: Delays,
    *,
    target_seconds: float | None = None,
) -> Replay:
    """Replay `window` with at most `max_runners` (None: no maximum) and `warm_pool` idle
    runners kept beyond demand. With `target_seconds`, stop as soon as more jobs waited longer
    than the p95 allows: the result then says `complete=False` and holds no waits."""
    created, durations, until = window.created, window.durations, window.until
    n = len(created)
    # Never more runners than jobs and the pool: an integer cap keeps the loop's arithmetic int.
    cap = n + warm_pool + 1 if max_runners is None else max(0, max_runners)
    limit = n if target_seconds is None else allowed_over(n)
    over_target = math.inf if target_seconds is None else target_seconds
    pickup, start, replace = delays.pickup_seconds, delays.start_seconds, delays.replacement_seconds
    waits = [0.0] * n
    completions: list[float] = []
    # Runners asked for at the same moment are ready together: (when, how many), in order.
    new_at: deque[float] = deque()
    new_count: deque[int] = deque()
    back_at: deque[float] = deque()
    back_count: deque[int] = deque()
    idle, busy, pending = min(warm_pool, cap), 0, 0
    head = index = over = 0  # the queue is the jobs [head, index): FIFO in creation order
    last, area, busy_area, peak = window.since, 0.0, 0.0, idle
    inf, heappop, heappush = math.inf, heapq.heappop, heapq.heappush
    while True:
        t, kind = (created[index], 0) if index < n else (inf, 0)
        if completions and completions[0] < t:
            t, kind = completions[0], 1
        if new_at and new_at[0] < t:
            t, kind = new_at[0], 2
        if back_at and back_at[0] < t:
            t, kind = back_at[0], 3
        if t > until:
            break
        if t > last:
            area += (idle + busy + pending) * (t - last)
            busy_area += busy * (t - last)
            last = t
        if kind == 0:
            index += 1
        elif kind == 1:
            heappop(completions)
            busy -= 1
            # Still wanted (the set is at its maximum with jobs waiting): replaced.
            wanted = warm_pool + busy + index - head
            if idle + busy + pending < (cap if wanted > cap else wanted):
                if replace <= 0.0:
                    idle += 1
                else:
                    pending += 1
                    _ask(back_at, back_count, t + replace, 1)
        elif kind == 2:
            new_at.popleft()
            ready = new_count.popleft()
            pending -= ready
            idle += ready
        else:
            back_at.popleft()
            ready = back_count.popleft()
            pending -= ready
            idle += ready
        # Idle runners take the oldest jobs first.
        while head < index and idle:
            idle -= 1
            busy += 1
            wait = t + pickup - created[head]
            waits[head] = wait
            if wait > over_target:
                over += 1
                if over > limit:
                    return _stopped(max_runners, warm_pool, n, peak)
            heappush(completions, t + pickup + durations[head])
            head += 1
        # The listener asks for what it wants; unwanted idle runners go.
        total = idle + busy + pending
        wanted = warm_pool + busy + index - head
        if wanted > cap:
            wanted = cap
        if wanted > total:
            pending += wanted - total
            _ask(new_at, new_count, t + start, wanted - total)
            if wanted > peak:
                peak = wanted
        elif wanted < total and idle:
            idle = idle - (total - wanted) if idle > total - wanted else 0
    area += (idle + busy + pending) * (until - last)
    busy_area += busy * (until - last)
    for job in range(head, n):
        waits[job] = max(0.0, until - created[job])
        if waits[job] > over_target:
            over += 1
    if over > limit:
        return _stopped(max_runners, warm_pool, n, peak)
    return Replay(
        max_runners=peak if max_runners is None else max_runners,
        warm_pool=warm_pool,
        jobs=n,
        waits=tuple(waits),
        p95_seconds=percentile(waits, P95),
        runner_hours=area / 3600.0,
        busy_hours=busy_area / 3600.0,
        peak_runners=peak,
    )


def _ask(times: deque[float], counts: deque[int], ready: float, count: int) -> None:
    if times and times[-1] == ready:
        counts[-1] += count
    else:
        times.append(ready)
        counts.append(count)


def _stopped(max_runners: int | None, warm_pool: int, jobs: int, peak: int) -> Replay:
    size = peak if max_runners is None else max_runners
    return Replay(size, warm_pool, jobs, (), math.inf, 0.0, 0.0, peak, complete=False)
