"""The demo's fleet as GitHub tells of it: a simulated week of jobs and runners, the part of that
history the bot is given before it starts, and the runners list as the fleet moves.

The fleet is `queuebot_lab.simulator`'s (8 runner types, 8 days, a surge on one type and the
autoscaler's limit on another), recorded once for a fixed moment of its day and moved to end `LIVE`
after the demo starts: the story it stages is the same whenever the demo starts. The simulator's
fleet is busiest in US working hours and stages its problems an hour or three before its end, so a
fleet simulated for the moment the demo starts would tell another story at each hour (at 14:00 UTC
the autoscaler's limit, staged while the day's demand was still rising, had barely begun to
bind). The recording's clock is the fleet's own: its evening rush, as the demo's start is moved
there, whatever the hour; the bot reads it at the demo's moment. The bot learns it the way it
learns a real fleet: job events at its webhook (`queuebot_lab.demo.feed`), the runners list from
GitHub's REST API (the GitHub stand-in serves `RunnerList`), and an older history loaded into its
store as a hook's stored deliveries would be (`load_history`).

Of the week's ~300,000 jobs only those the bot reads while the fleet moves are loaded: loading
them all takes minutes. Diagnostics and /queue-status read, at a moment T, the jobs alive in the
window before T (arrivals, starts, completions; the jobs queued and running at T, 15 and 30
minutes before) and in the same window on each of the 7 days before (the baseline); the chart
reads the jobs queued (5 minutes or more) over the 6 hours before T. Every job alive in those
spans for any T between the start and the simulation's end is loaded, so each reading in that
time is the one the whole week would give.
"""

from __future__ import annotations

import bisect
import functools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.fleet.charting import CHART_SPAN
from bot.fleet.signals import BASELINE_DAYS
from queuebot_lab.sandbox.github import SandboxRunner
from queuebot_lab.simulator import FleetJobs, Scenario, SimulatedJob, SimulationSpec
from queuebot_lab.simulator.deliveries import as_of, events, workflow_job_body
from queuebot_lab.simulator.recording import recorded_jobs

#: The simulated fleet: 8 runner types, 8 days (diagnostics compare with the 7 days before).
FLEET_TYPES = 8
FLEET_HOURS = 8 * 24 + 1
FLEET_STEP_SECONDS = 120
#: A mix with a surge on one runner type and the autoscaler's limit on another.
FLEET_SEED = 1
#: The fleet moves this long after the start, then stands still. The simulator stages its
#: problems before the simulation's end (a surge starts 1-1.25 h before it and needs most of an
#: hour to build its queue): simulated much further ahead, the surge would not have built its
#: queue by the time the demo starts.
LIVE = timedelta(minutes=10)
#: When the recorded fleet ends: 21:10 UTC of its day, two hours and a half past the simulator's
#: daily peak (18:30). The autoscaler's limit was lowered below what the evening needs and has
#: bound for an hour or more, the surge has built its queue, and both queue long (a recording
#: starting at 21:00 shows 500-700 jobs waiting on each of the two types, 20-80 minutes).
RECORDED_END = datetime(2026, 1, 14, 21, 10, tzinfo=UTC)
#: The deliveries of the last three minutes before the start reach the bot over its webhook, so the
#: recent queue arrives as GitHub's deliveries do (each a signed POST the bot stores durably:
#: more of them only makes the start slower).
REPLAYED = timedelta(minutes=3)
#: Before each moment read, a span holding its rate window (10 minutes unless the YAML file's
#: `queries.window` says otherwise) and the queue 15 and 30 minutes earlier.
READ_SPAN = timedelta(hours=1)
#: The same window on earlier days: the rate window only.
DAY_SPAN = timedelta(minutes=30)
#: The chart's hours of queued jobs, with some room.
CHART_READ = CHART_SPAN + timedelta(minutes=30)
DAY = timedelta(days=1)


@functools.cache
def recorded() -> FleetJobs:
    """The demo's fleet as simulated once, ending at `RECORDED_END` (kept in queuebot's cache
    directory: a later demo reads it back instead of simulating it again)."""
    spec = SimulationSpec(
        scenario=Scenario.MIX,
        hours=FLEET_HOURS,
        runner_types=FLEET_TYPES,
        seed=FLEET_SEED,
        end=RECORDED_END,
        step_seconds=FLEET_STEP_SECONDS,
    )
    return recorded_jobs(spec)


def moved(job: SimulatedJob, by: int) -> SimulatedJob:
    """`job` with each of its moments `by` seconds later (earlier when negative)."""
    # Made field by field: `dataclasses.replace` takes several times as long, and the demo
    # moves tens of thousands of jobs as it starts.
    return SimulatedJob(
        job.id,
        job.run_id,
        job.runner_type,
        job.repository,
        job.workflow,
        job.name,
        job.created + by,
        None if job.started is None else job.started + by,
        None if job.completed is None else job.completed + by,
        job.failed,
        job.runner_id,
        job.runner_name,
    )


class _Recording:
    """What every demo fleet made of one recording reads of it, in the recording's own time.

    A demo always starts at the same moment of the recording's day (`LIVE` before its end), so
    the jobs it gives the bot, their states at the split and the deliveries after it are the
    same whenever it starts: they are found once, and each demo moves them to its own moment."""

    def __init__(self, simulated: FleetJobs) -> None:
        self.simulated = simulated
        self.jobs = simulated.jobs
        self.created = [job.created for job in self.jobs]
        # How long any job stayed in the fleet: where to look back from for jobs alive at T.
        self.reach = max(
            ((job.completed if job.completed is not None else simulated.end) - job.created)
            for job in self.jobs
        )
        self._found: dict[tuple[object, ...], list[Any]] = {}
        self._lock = threading.RLock()

    def alive(self, since: float, until: float) -> Iterator[SimulatedJob]:
        """The jobs created by `until` that had not finished before `since`."""
        low = bisect.bisect_left(self.created, since - self.reach)
        high = bisect.bisect_right(self.created, until)
        for job in self.jobs[low:high]:
            if job.completed is None or job.completed >= since:
                yield job

    def found(self, key: tuple[object, ...], find: Callable[[], list[Any]]) -> list[Any]:
        """`find()`, made once for `key` (the demo's moments in the recording's time)."""
        with self._lock:
            if key not in self._found:
                self._found[key] = find()
            return self._found[key]


#: The recording the last demo fleet was made of, with what was found in it.
_last: _Recording | None = None


def _recording(simulated: FleetJobs) -> _Recording:
    global _last
    last = _last
    if last is None or last.simulated is not simulated:
        last = _last = _Recording(simulated)
    return last


class DemoFleet:
    """The simulated fleet moved to the demo's moment: its jobs, its runners at the end, what
    was staged. The recording's jobs are moved as they are asked for (a week holds ~300,000 and
    the demo reads a tenth of them)."""

    def __init__(self, simulated: FleetJobs, start: float, by: int = 0) -> None:
        """`simulated`'s moments are `by` seconds before the demo's; `start` is the demo's."""
        problem_start = simulated.truth.problem_start
        self.truth = replace(
            simulated.truth,
            problem_start=None if problem_start is None else problem_start + timedelta(seconds=by),
        )
        self.runners = simulated.runners
        #: When the demo started (Unix seconds): the history before `split` is loaded, the
        #: deliveries after it are sent; the fleet stands still after `end`.
        self.start = start
        self.split = start - REPLAYED.total_seconds()
        self.end = simulated.end + by
        self._by = by
        self._recording = _recording(simulated)

    @classmethod
    def simulate(cls, start: datetime) -> DemoFleet:
        """The demo's fleet, moved to stand still `LIVE` after `start` (the first call in a
        process simulates it, which takes seconds: run it in a thread)."""
        start = start.astimezone(UTC).replace(microsecond=0)
        by = round((start + LIVE - RECORDED_END).total_seconds())
        return cls(recorded(), start.timestamp(), by)

    def surge_type(self) -> str:
        """The runner type the fleet surges on (else another with trouble, else the busiest)."""
        surged = [n for n, cause in self.truth.affected.items() if cause == "increased_workload"]
        if surged:
            return surged[0]
        return next(iter(self.truth.affected), "linux-2xlarge")

    def _given(self, queued_after: float) -> list[SimulatedJob]:
        """The given jobs (see `given`) in the recording's time."""
        by = self._by
        start, end = self.start - by, self.end - by
        alive = self._recording.alive
        kept: dict[int, SimulatedJob] = {}
        spans = [(start - READ_SPAN.total_seconds(), end)]
        for days in range(1, BASELINE_DAYS + 1):
            back = (days * DAY).total_seconds()
            spans.append((start - back - DAY_SPAN.total_seconds(), end - back))
        for since, until in spans:
            kept.update((job.id, job) for job in alive(since, until))
        # Earlier in the chart's hours only the jobs that queued count.
        for job in alive(start - CHART_READ.total_seconds(), start - READ_SPAN.total_seconds()):
            left = job.started if job.started is not None else job.completed
            if (left if left is not None else end) - job.created >= queued_after:
                kept[job.id] = job
        return sorted(kept.values(), key=lambda job: (job.created, job.id))

    def _moments(self) -> tuple[float, float, float]:
        """The start, the split and the end in the recording's time."""
        return self.start - self._by, self.split - self._by, self.end - self._by

    def given(self, queued_after: float) -> list[SimulatedJob]:
        """The jobs the bot reads between the start and the end (see the module's docstring);
        `queued_after`: when a waiting job counts as queued (JobsConfig)."""
        return [moved(job, self._by) for job in self._given_once(queued_after)]

    def _given_once(self, queued_after: float) -> list[SimulatedJob]:
        """`_given`, found once a recording for this demo's moments."""
        key = ("given", *self._moments(), queued_after)
        return self._recording.found(key, lambda: self._given(queued_after))

    def history(self, queued_after: float) -> Iterator[dict[str, Any]]:
        """The given jobs as they stood at `split`: each one's last delivery by then."""
        split = self.split - self._by

        def states() -> list[SimulatedJob]:
            given = self._given_once(queued_after)
            return [then for job in given if (then := as_of(job, split)) is not None]

        key = ("history", *self._moments(), queued_after)
        for then in self._recording.found(key, states):
            yield workflow_job_body(then, then.action, later=self._by)

    def deliveries(self) -> list[tuple[int, str, SimulatedJob]]:
        """Every delivery GitHub sends after `split`, in order: (when, action, job)."""
        _, split, end = self._moments()
        key = ("deliveries", split, end)
        found = self._recording.found(
            key, lambda: events(list(self._recording.alive(split, end)), split, end)
        )
        by = self._by
        return [(when + by, action, moved(job, by)) for when, action, job in found]

    def runner_list(self) -> RunnerList:
        """GitHub's runners list at `split`, to be moved on with the deliveries."""
        idle = [
            SandboxRunner(
                r.id, r.name, (r.runner_type,), "online" if r.online else "offline", False, r.os
            )
            for r in self.runners
            if not r.busy
        ]
        systems = {r.runner_type: r.os for r in self.runners}
        listed = RunnerList(idle=idle, systems=systems)
        _, split, _ = self._moments()

        def running() -> list[SimulatedJob]:
            return [
                job
                for job in self._recording.alive(split, split)
                if job.started is not None
                and job.started <= split
                and (job.completed is None or job.completed > split)
            ]

        for job in self._recording.found(("running", split), running):
            listed.moved("in_progress", moved(job, self._by))
        return listed


@dataclass
class RunnerList:
    """GitHub's runners list as the fleet moves: a runner is busy from its job's in_progress
    delivery to its completed one. The idle and offline runners are those the simulation ends
    with (it keeps no earlier list of them), a few minutes ahead at most."""

    idle: list[SandboxRunner]
    systems: dict[str, str]
    busy: dict[int, SandboxRunner] = field(default_factory=dict)

    def moved(self, action: str, job: SimulatedJob) -> None:
        if job.runner_id is None or job.runner_name is None:
            return
        if action == "in_progress":
            os = self.systems.get(job.runner_type, "linux")
            self.busy[job.runner_id] = SandboxRunner(
                job.runner_id, job.runner_name, (job.runner_type,), "online", True, os
            )
        elif action == "completed":
            self.busy.pop(job.runner_id, None)

    def listed(self) -> list[SandboxRunner | dict[str, Any]]:
        return [*self.busy.values(), *self.idle]
