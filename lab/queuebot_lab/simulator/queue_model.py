"""The queue model: one runner type's jobs, runners and nodes, advanced event by event.

Jobs arrive from a Poisson stream of workflow runs and wait in one FIFO queue; idle runners pick
them up within seconds; the autoscaler wants `clamp(min, max, busy + queued + buffer)` runners,
which start on spare node slots or wait for new nodes. `simulate_type` samples it every step.
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
from collections import deque

from queuebot_lab.simulator.history import TypeSamples, append_histogram, empty_samples
from queuebot_lab.simulator.job_log import JobLog
from queuebot_lab.simulator.profiles import Profile, StagedProblem, daily
from queuebot_lab.simulator.spec import BUCKETS, NO_MAXIMUM, PODS_PER_TYPE, Scenario

_WARMUP_SECONDS = 6 * 3600.0
_FAILED_JOBS = 0.04
_BATCH_MORE = 0.3  # a workflow run asks for another job on this type with this probability
_DURATION_SIGMA = 0.4
_STUCK_SECONDS = (240.0, 600.0)  # a runner pod that never registers is marked failed after this
#: A runner's start (download, register) on starved nodes or through a slow dependency.
_SLOW_START_SECONDS = (780.0, 1200.0)
_OOM_FAILED_JOBS = 0.15
_SURGE_RAMP_SECONDS = 600.0
_FAILED_KEPT_SECONDS = 900.0  # failed ephemeral runners are listed until cleaned up
_NODE_IDLE_SECONDS = 600.0  # a spare node is removed after this long unneeded

_COMPLETE, _READY, _FAILED, _CLEANED, _NODE = range(5)
#: Problems under which runners do not start within a minute: the runner is downloaded and
#: registered through the slow dependency, on starved nodes, or not at all.
_SLOW_STARTS = (Scenario.SLOW_JOBS, Scenario.RESOURCE_STARVATION, Scenario.SCALE_UP_FAILURE)


def _poisson(rng: random.Random, mean: float) -> int:
    if mean <= 0.0:
        return 0
    if mean > 30.0:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, count, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        count += 1
        product *= rng.random()
    return count


class _Fleet:
    """One runner type's queue, runners and nodes, advanced event by event."""

    def __init__(self, profile: Profile, problem: StagedProblem | None, rng: random.Random) -> None:
        self.p = profile
        self.problem = problem
        self.rng = rng
        # Arrivals, and each job's run: from `rng` unless given streams of their own.
        self.demand = self.work = rng
        self.events: list[tuple[float, int, int, tuple[int, ...]]] = []
        self.seq = 0
        self.queue: deque[tuple[float, int]] = deque()
        self.idle = self.busy = self.pending = self.failed = 0
        self.placed = 0  # pending runners on a node slot, starting
        self.unplaced: deque[bool] = deque()  # pending runners waiting for a node
        self.usual = 0.0  # busy runners this hour on a usual day
        self.slots = profile.min_runners
        self.nodes_coming = 0
        self.node_tokens = 0.0
        self.max_runners = profile.max_runners or NO_MAXIMUM
        self.min_runners, self.buffer = profile.min_runners, profile.buffer
        self.capped = False
        self.drift = 0.0
        n = len(profile.workflows)
        self.started = [0] * n
        self.completed = [[0, 0] for _ in range(n)]
        # Per workflow (and, for execution, per result: succeeded, failed): each bucket's own
        # count, +Inf last, and the sum of the observations.
        self.startup = [[0] * (len(BUCKETS) + 1) for _ in range(n)]
        self.startup_sum = [0] * n
        self.execution = [[[0] * (len(BUCKETS) + 1) for _ in range(2)] for _ in range(n)]
        self.execution_sum = [[0, 0] for _ in range(n)]
        self.ooms = [0] * PODS_PER_TYPE
        self.periods = [rng.randrange(10**6, 10**7) for _ in range(PODS_PER_TYPE)]
        self.throttled = [int(x * profile.throttle_share) for x in self.periods]
        self.log: JobLog | None = None

    # -- the problem ---------------------------------------------------------------------------

    def _active(self, kind: Scenario, t: float) -> bool:
        return self.problem is not None and self.problem.kind is kind and t >= self.problem.start

    def _starts_quickly(self, t: float) -> bool:
        """Whether a new runner starts in about a minute (otherwise: many minutes, or never)."""
        problem = self.problem
        return problem is None or t < problem.start or problem.kind not in _SLOW_STARTS

    def _weights(self, t: float) -> tuple[float, list[float]]:
        """Jobs a minute at `t` and each workflow's share of them."""
        hour = (t % 86400.0) / 3600.0
        rate = self.p.peak_per_minute * daily(hour) * math.exp(self.drift)
        shares = [share for _, share, _ in self.p.workflows]
        problem = self.problem
        if problem is not None and problem.kind is Scenario.SURGE and t >= problem.start:
            # The extra jobs come from one workflow (a merge wave, a re-run storm), within minutes.
            extra = (problem.factor - 1.0) * min(1.0, (t - problem.start) / _SURGE_RAMP_SECONDS)
            shares = [share / (1.0 + extra) for share in shares]
            shares[problem.workflow] += extra / (1.0 + extra)
            rate *= 1.0 + extra
        return rate, shares

    def _execution_seconds(self, workflow: int, start: float) -> tuple[float, bool]:
        """How long a job runs, and whether it fails."""
        sigma = _DURATION_SIGMA
        seconds = self.p.workflows[workflow][2] * math.exp(
            self.work.gauss(-sigma * sigma / 2, sigma)
        )
        seconds = min(max(seconds, 60.0), 6 * 3600.0)
        failed = self.work.random() < _FAILED_JOBS
        problem = self.problem
        slowed = (Scenario.SLOW_JOBS, Scenario.RESOURCE_STARVATION)
        if problem is None or problem.kind not in slowed or start + seconds <= problem.start:
            return seconds, failed
        # All a job does after the slowdown began runs `factor` times slower.
        before = max(0.0, problem.start - start)
        seconds = before + problem.factor * (seconds - before)
        if problem.kind is Scenario.RESOURCE_STARVATION and self.work.random() < _OOM_FAILED_JOBS:
            seconds *= self.work.uniform(0.2, 0.9)  # a build step was OOM-killed
            failed = True
        return seconds, failed

    # -- events --------------------------------------------------------------------------------

    def _push(self, t: float, kind: int, data: tuple[int, ...] = ()) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, data))

    def desired(self) -> int:
        want = max(self.min_runners, self.busy + len(self.queue) + self.buffer)
        return want if want < self.max_runners else self.max_runners

    def _runners(self) -> int:
        """Ephemeral runners the set holds; failed ones count until they are deleted."""
        return self.idle + self.busy + self.pending + self.failed

    def _arrive(self, t: float, workflow: int) -> None:
        self.queue.append((t, workflow))
        if self.idle:
            self._dispatch(t)
        self._scale(t)

    def _dispatch(self, t: float) -> None:
        while self.queue and self.idle:
            arrived, workflow = self.queue.popleft()
            self.idle -= 1
            self.busy += 1
            pickup = t + 2.0 + self.work.expovariate(1 / 6.0)
            wait = round(pickup - arrived)
            # The listener observes whole seconds (Unix time differences).
            self.startup[workflow][bisect.bisect_left(BUCKETS, wait)] += 1
            self.startup_sum[workflow] += wait
            self.started[workflow] += 1
            seconds, failed = self._execution_seconds(workflow, pickup)
            self._push(pickup + seconds, _COMPLETE, (workflow, int(failed), round(seconds)))
            if self.log is not None:
                self.log.taken(arrived, pickup, pickup + seconds, workflow, failed)

    def _complete(self, t: float, data: tuple[int, ...]) -> None:
        workflow, failed, seconds = data
        self.busy -= 1
        self.completed[workflow][failed] += 1
        self.execution[workflow][failed][bisect.bisect_left(BUCKETS, seconds)] += 1
        self.execution_sum[workflow][failed] += seconds
        # A finished ephemeral runner is replaced on its warm node within seconds, unless new
        # runners cannot register or start quickly there.
        if self._starts_quickly(t) and self._runners() < self.desired():
            self.idle += 1
        else:
            self._fill(t)
        if self.queue and self.idle:
            self._dispatch(t)
        self._scale(t)

    def _scale(self, t: float) -> None:
        desired, total = self.desired(), self._runners()
        if desired > total:
            for _ in range(desired - total):
                self._create(t)
        elif desired < total and self.idle:
            self.idle -= min(self.idle, total - desired)
            self._fill(t)

    def _create(self, t: float) -> None:
        self.pending += 1
        registers = True
        if self._active(Scenario.SCALE_UP_FAILURE, t):
            assert self.problem is not None
            registers = self.rng.random() < self.problem.register_share
        self.unplaced.append(registers)
        self._fill(t)
        self._order_nodes(t)

    def _fill(self, t: float) -> None:
        """Runners waiting for a node take the free slots, first come first served."""
        while self.unplaced and self.idle + self.busy + self.placed < self.slots:
            registers = self.unplaced.popleft()
            self.placed += 1
            seconds = self.p.warm_seconds * self.rng.uniform(0.7, 1.4)
            if not self._starts_quickly(t):
                seconds = self.rng.uniform(*_SLOW_START_SECONDS)
            if registers:
                self._push(t + seconds, _READY)
            else:
                # The pod is retried with back-off until the runner is marked failed.
                self._push(t + seconds + self.rng.uniform(*_STUCK_SECONDS), _FAILED)

    def _headroom(self) -> int:
        """Spare slots that absorb the ordinary ups and downs while a new node boots."""
        return round(6 + self.p.headroom_share * self.usual + 2 * math.sqrt(self.usual))

    def _order_nodes(self, t: float) -> None:
        used = self.idle + self.busy + self.placed + len(self.unplaced)
        short = used + self._headroom() - self.slots - self.nodes_coming
        while short > 0 and self.node_tokens >= 1.0:
            self.node_tokens -= 1.0
            self.nodes_coming += 1
            short -= 1
            self._push(t + self.p.node_seconds * self.rng.uniform(0.85, 1.2), _NODE)

    def _handle(self, t: float, kind: int, data: tuple[int, ...]) -> None:
        if kind == _COMPLETE:
            self._complete(t, data)
        elif kind == _READY:
            self.pending -= 1
            self.placed -= 1
            self.idle += 1
            self._dispatch(t)
            self._scale(t)
        elif kind == _FAILED:
            self.pending -= 1
            self.placed -= 1
            self.failed += 1
            self._push(t + _FAILED_KEPT_SECONDS, _CLEANED)
            self._fill(t)
        elif kind == _CLEANED:
            self.failed -= 1
            self._scale(t)
        else:
            self.nodes_coming -= 1
            self.slots += 1
            self._fill(t)

    # -- time ----------------------------------------------------------------------------------

    def advance(self, begin: float, end: float) -> None:
        """Run every arrival and event in (begin, end]."""
        rng, tick = self.demand, end - begin
        rho = math.exp(-tick / 1800.0)
        self.drift = rho * self.drift + math.sqrt(1 - rho * rho) * 0.05 * rng.gauss(0.0, 1.0)
        problem = self.problem
        if not self.capped and self._active(Scenario.CAPACITY_CAP, end):
            assert problem is not None
            # The maximum was lowered below what the hour needs (a configuration change).
            self.capped = True
            self.max_runners = problem.max_runners
        middle = begin + tick / 2
        rate, shares = self._weights(middle)
        usual_rate = self.p.peak_per_minute * daily((middle % 86400.0) / 3600.0)
        self.usual = usual_rate * self.p.mean_seconds / 60.0
        runs = _poisson(rng, rate * tick / 60.0 * (1.0 - _BATCH_MORE))
        arrivals: list[tuple[float, int]] = []
        cumulative = [sum(shares[: i + 1]) for i in range(len(shares))]
        for _ in range(runs):
            at = begin + rng.random() * tick
            workflow = min(bisect.bisect_left(cumulative, rng.random()), len(shares) - 1)
            arrivals.append((at, workflow))
            while rng.random() < _BATCH_MORE:
                arrivals.append((at, workflow))
        arrivals.sort()
        per_minute = max(0.5, self.p.node_growth * self.usual)
        self.node_tokens = min(self.node_tokens + per_minute * tick / 60.0, 2 * per_minute)
        index, events, arrived = 0, self.events, len(arrivals)
        while True:
            next_event = events[0][0] if events else math.inf
            next_arrival = arrivals[index][0] if index < arrived else math.inf
            if next_arrival <= next_event:
                if next_arrival > end:
                    break
                self._arrive(*arrivals[index])
                index += 1
            elif next_event > end:
                break
            else:
                t, _, kind, data = heapq.heappop(events)
                self._handle(t, kind, data)
        self._order_nodes(end)
        # Spare nodes go after being unneeded for a while.
        used = self.idle + self.busy + self.placed + len(self.unplaced)
        spare = self.slots - used - self._headroom()
        if spare > 0:
            self.slots -= math.ceil(spare * min(1.0, tick / _NODE_IDLE_SECONDS))

    def record(self, history: TypeSamples, step: float, t: float, *, series: bool = True) -> None:
        """Take the sample at `t`; without `series`, only what moves the simulation on (the
        pods' draws) and the queue left."""
        queued = len(self.queue)
        history.final_queued = queued
        self._record_pods(history, step, t)
        if not series:
            return
        for metric, value in (
            ("gha_assigned_jobs", self.busy + queued),
            ("gha_running_jobs", self.busy),
            ("gha_registered_runners", self.idle + self.busy),
            ("gha_busy_runners", self.busy),
            ("gha_idle_runners", self.idle),
            ("gha_min_runners", self.p.min_runners),
            ("gha_max_runners", self.max_runners),
            ("gha_desired_runners", self.desired()),
            ("gha_controller_pending_ephemeral_runners", self.pending),
            ("gha_controller_failed_ephemeral_runners", self.failed),
        ):
            history.gauges[metric].append(value)
        for i, count in enumerate(self.started):
            history.started[i].append(count)
            history.completed[i][0].append(self.completed[i][0])
            history.completed[i][1].append(self.completed[i][1])
        for i, buckets in enumerate(self.startup):
            append_histogram(history.startup[i], buckets, self.startup_sum[i])
        for i, by_result in enumerate(self.execution):
            for result, buckets in enumerate(by_result):
                append_histogram(
                    history.execution[i][result], buckets, self.execution_sum[i][result]
                )

    def _record_pods(self, history: TypeSamples, step: float, t: float) -> None:
        rng, registered = self.rng, self.idle + self.busy
        use = self.busy / registered if registered else 0.0
        starving = self._active(Scenario.RESOURCE_STARVATION, t)
        for i in range(PODS_PER_TYPE):
            active = min(1.0, max(0.05, 0.45 + 0.5 * use + 0.05 * rng.gauss(0.0, 1.0)))
            periods = round(10.0 * step * active)  # CFS enforces quotas in 100 ms periods
            if starving:
                assert self.problem is not None
                share = self.problem.throttled + 0.03 * rng.gauss(0.0, 1.0)
                # The OOM killer hits a process in the runner container; the container lives on.
                self.ooms[i] += _poisson(rng, self.problem.ooms_per_minute * step / 60.0)
            else:
                share = self.p.throttle_share * math.exp(0.3 * rng.gauss(0.0, 1.0))
            self.periods[i] += periods
            self.throttled[i] += round(periods * min(0.98, max(0.0, share)))
            history.cfs_periods[i].append(self.periods[i])
            history.cfs_throttled[i].append(self.throttled[i])
            history.ooms[i].append(self.ooms[i])


def simulate_type(
    profile: Profile,
    problem: StagedProblem | None,
    seed: int,
    first: float,
    samples: int,
    step: int,
    log: JobLog | None = None,
    *,
    streams: bool = False,
    series: bool = True,
) -> TypeSamples:
    """Run one runner type from its warm-up to the last sample; with `log`, every job created
    from the first sample on, and the runners at the end, are kept there too. With `streams`,
    arrivals and each job's run come from random streams of their own: runs of one seed at
    other sizes see the same jobs arrive, each running as long (jobs are taken in order).
    Without `series` the samples hold no metric (the same jobs, a quarter sooner)."""
    rng = random.Random(f"{seed}/{profile.name}")  # noqa: S311 - see _profile
    history = empty_samples(len(profile.workflows))
    fleet = _Fleet(profile, problem, rng)
    if streams:
        fleet.demand = random.Random(f"{seed}/{profile.name}/arrivals")  # noqa: S311
        fleet.work = random.Random(f"{seed}/{profile.name}/jobs")  # noqa: S311
    fleet.log = log
    ticks_per_step = max(1, math.ceil(step / 60))
    tick = step / ticks_per_step
    warmup_ticks = math.ceil(_WARMUP_SECONDS / tick)
    begin = first - warmup_ticks * tick
    total_ticks = warmup_ticks + (samples - 1) * ticks_per_step
    for k in range(total_ticks + 1):
        if k:
            fleet.advance(begin + (k - 1) * tick, begin + k * tick)
        since = k - warmup_ticks
        if since >= 0 and since % ticks_per_step == 0:
            fleet.record(history, step, begin + k * tick, series=series)
    if log is not None:
        log.close(
            [(arrived, workflow) for arrived, workflow in fleet.queue],
            idle=fleet.idle,
            pending=fleet.pending,
            failed=fleet.failed,
        )
    return history
