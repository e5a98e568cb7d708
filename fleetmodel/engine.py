"""Running a planned fleet: every job and every runner of every type, event by event.

Each day of history is an episode of `episode_hours` ending at the same time of day as the end
(the previous days are what the usual is read from); trouble is staged only in the last one.
Within an episode a runner type is a queue served by ephemeral runners:

- jobs arrive as a non-homogeneous Poisson process per workflow (thinning), and are assigned to
  the scale set a few seconds after they are created;
- the autoscaler keeps `min(minRunners + assigned jobs, maxRunners)` runners that are starting,
  idle or busy (actions-runner-controller's listener; failed and lost runners do not count) and
  removes idle ones above that;
- a runner starts after its provisioning delay, or never (then it is marked failed after the
  controller's retries and replaced); once online it takes the oldest waiting job, runs it and
  is deleted;
- a job fails as usual tests do, is OOM-killed (its step, or the runner container: then GitHub
  fails it ten minutes later, when the runner stops answering), loses its runner to a lost
  node, or is cancelled while it waits (a newer push in the same concurrency group).
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections import deque
from dataclasses import dataclass, field

from fleetmodel.demand import Rates, thinned
from fleetmodel.plan import FleetPlan, RunnerType, Trouble, Workflow

#: GitHub fails a job whose runner stopped answering after about ten minutes.
LOST_RUNNER_SECONDS = 600.0
#: How long the controller retries a runner whose pod does not start before marking it failed.
PENDING_BEFORE_FAILED = 360.0
CANCELLED_SHARE = 0.02
RERUN_SHARE = 0.7
_JOB_ID_BASE = 41_000_000_000
_RUN_ID_BASE = 16_000_000_000
_RUNNER_ID_BASE = 900_000
_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"


@dataclass(slots=True)
class Runner:
    id: int
    name: str
    runner_type: str
    created: float
    online: float | None = None
    failed: float | None = None
    lost: float | None = None
    gone: float | None = None
    busy_from: float | None = None
    busy_until: float | None = None
    idle_forever: bool = False
    oom_at: float | None = None
    throttled: float = 0.0


@dataclass(slots=True)
class Job:
    id: int
    run_id: int
    runner_type: str
    workflow: Workflow
    name: str
    created: float
    assigned: float
    labels: tuple[str, ...]
    started: float | None = None
    completed: float | None = None
    conclusion: str | None = None
    runner: Runner | None = None
    cancel_at: float | None = None
    attempt: int = 1


@dataclass
class FleetRun:
    plan: FleetPlan
    jobs: list[Job] = field(default_factory=list)
    runners: list[Runner] = field(default_factory=list)
    #: The end of each episode, oldest first (the last is the plan's end).
    episode_ends: list[float] = field(default_factory=list)

    def max_runners(self, kind: RunnerType, at: float) -> int | None:
        trouble = self.plan.troubles.get(kind.name)
        if trouble and trouble.max_runners is not None and at >= self.plan.end - trouble.since:
            return trouble.max_runners
        return kind.max_runners


def _suffix(rng: random.Random) -> str:
    return "".join(rng.choices(_SUFFIX, k=5))


class _TypeEpisode:
    """One runner type through one episode."""

    def __init__(
        self,
        run: FleetRun,
        kind: RunnerType,
        start: float,
        end: float,
        trouble: Trouble | None,
        rng: random.Random,
        ids: itertools.count[int],
    ) -> None:
        self.run, self.kind, self.start, self.end = run, kind, start, end
        self.trouble, self.rng, self.ids = trouble, rng, ids
        self.trouble_from = run.plan.end - trouble.since if trouble else math.inf
        self.events: list[tuple[float, int, str, object]] = []
        self.seq = itertools.count()
        self.queue: deque[Job] = deque()
        self.idle: list[Runner] = []
        self.starting: set[int] = set()
        self.active: dict[int, Runner] = {}
        self.running = 0
        self.set_name = f"{kind.name}-{_suffix(rng)}"
        self.last = end >= run.plan.end
        #: An earlier day's episode past its end: no job starts and no runner is created.
        self.closed = False

    def troubled(self, at: float) -> Trouble | None:
        return self.trouble if at >= self.trouble_from else None

    def push(self, at: float, what: str, payload: object) -> None:
        heapq.heappush(self.events, (at, next(self.seq), what, payload))

    # arrivals -------------------------------------------------------------------------------

    def arrivals(self) -> None:
        """Each workflow's jobs, drawn from its rates through the episode (a workflow moved in
        arrives only from the trouble on, one moved out no more)."""
        flows = list(self.kind.workflows)
        if self.trouble is not None:
            flows.extend(self.trouble.moved_in)
        offset = self.run.plan.utc_offset
        for flow in flows:
            bound = flow.peak * max(6.0, (self.trouble.demand if self.trouble else 1.0) * 1.05)
            if bound <= 0:
                continue
            rates = Rates(flow, self.trouble, self.trouble_from, self.start, self.end, offset)
            for at in thinned(self.rng, bound, self.start, self.end, rates):
                self._arrive(flow, at)

    def _arrive(self, flow: Workflow, at: float, rerun: Job | None = None) -> None:
        job_id = _JOB_ID_BASE + next(self.ids)
        labels = (
            (self.kind.name,) if self.run.plan.kind == "arc" else ("self-hosted", self.kind.name)
        )
        job = Job(
            id=job_id,
            run_id=_RUN_ID_BASE + job_id // 3 - _JOB_ID_BASE // 3,
            runner_type=self.kind.name,
            workflow=flow,
            name=rerun.name if rerun else self.rng.choice(flow.jobs),
            created=math.floor(at),
            assigned=math.floor(at) + self.rng.uniform(1.0, 4.0),
            labels=labels,
        )
        if rerun is not None:
            job.run_id, job.attempt = rerun.run_id, rerun.attempt + 1
        elif self.rng.random() < CANCELLED_SHARE:
            job.cancel_at = job.created + self.rng.uniform(60.0, 1200.0)
        self.run.jobs.append(job)
        self.push(job.assigned, "assigned", job)

    # runners --------------------------------------------------------------------------------

    def _target(self, at: float) -> int:
        if self.closed:
            return 0
        assigned = len(self.queue) + self.running
        ceiling = self.run.max_runners(self.kind, at)
        wanted = self.kind.min_runners + assigned
        return wanted if ceiling is None else min(wanted, ceiling)

    def scale(self, at: float) -> None:
        target = self._target(at)
        while len(self.active) < target:
            self._create(at)
        while len(self.active) > target and (self.idle or self.starting):
            if self.starting:
                victim = self.active[max(self.starting)]
                self.starting.discard(victim.id)
            else:
                victim = self.idle.pop()
            victim.gone = at
            del self.active[victim.id]

    def _create(self, at: float) -> None:
        rid = _RUNNER_ID_BASE + next(self.ids)
        runner = Runner(
            id=rid,
            name=f"{self.set_name}-runner-{_suffix(self.rng)}",
            runner_type=self.kind.name,
            created=at,
        )
        self.run.runners.append(runner)
        self.active[rid] = runner
        self.starting.add(rid)
        trouble = self.troubled(at)
        never = max(self.kind.never_start, trouble.never_start if trouble else 0.0)
        if self.rng.random() < never:
            self.push(at + PENDING_BEFORE_FAILED * self.rng.uniform(0.8, 1.5), "failed", runner)
            return
        delay = self.kind.warm_start * self.rng.lognormvariate(0.0, 0.4)
        if self.rng.random() < self.kind.cold_share:
            delay += self.kind.cold_start * self.rng.lognormvariate(0.0, 0.5)
        if self.rng.random() < 0.015:
            delay += 600.0 * self.rng.lognormvariate(0.0, 0.6)  # the cloud short of the type
        if trouble is not None:
            delay *= trouble.start_delay
            runner.idle_forever = self.rng.random() < trouble.idle_forever
        self.push(at + delay, "online", runner)

    def _take(self, runner: Runner, at: float) -> None:
        while self.queue and self.queue[0].completed is not None:
            self.queue.popleft()  # cancelled while waiting
        if not self.queue:
            self.idle.append(runner)
            return
        job = self.queue.popleft()
        start = at + self.rng.uniform(1.0, 3.0)
        job.started, job.runner = math.floor(start), runner
        runner.busy_from = job.started
        self.running += 1
        trouble = self.troubled(start)
        seconds = job.workflow.seconds * self.rng.lognormvariate(0.0, job.workflow.spread)
        conclusion = "failure" if self.rng.random() < self.kind.failing else "success"
        finish = job.started + seconds
        if trouble is not None:
            seconds *= trouble.slower.get(job.workflow.name, 1.0) * (1.0 + trouble.throttled)
            finish = job.started + seconds
            runner.throttled = trouble.throttled
            if self.rng.random() < trouble.oom:
                killed = job.started + seconds * self.rng.uniform(0.15, 0.9)
                runner.oom_at = killed
                conclusion = "failure"
                if self.rng.random() < RERUN_SHARE:
                    # Failed jobs are re-run, by hand or by the CI's own retry of infra failures.
                    self.push(killed + self.rng.uniform(60.0, 600.0), "rerun", job)
                # The kernel kills the biggest process: a step's (the job fails now) or, as
                # often, the runner's own (GitHub fails the job when it stops answering).
                if self.rng.random() < 0.5:
                    finish = killed
                else:
                    runner.lost = killed
                    finish = killed + LOST_RUNNER_SECONDS
            elif trouble.lost_per_hour > 0:
                lost = job.started + self.rng.expovariate(trouble.lost_per_hour / 3600.0)
                if lost < finish:
                    runner.lost = lost
                    conclusion = "failure"
                    finish = lost + LOST_RUNNER_SECONDS
        if runner.lost is not None:
            self.push(runner.lost, "lost", runner)
        self.push(finish, "done", (job, conclusion))

    def _close(self, at: float) -> None:
        """An earlier day's episode stops at its end: the jobs still waiting are cancelled, the
        jobs running finish, and no runner is created. A backlog served on through the night
        would overlap the next day's episode of the same type, its runners on top of that
        day's, beyond the type's maximum."""
        self.closed = True
        for job in self.queue:
            if job.completed is None:
                _cancel_after_end(job, at)
        self.queue.clear()
        self.scale(at)

    def simulate(self) -> None:
        self.arrivals()
        for _ in range(self.kind.min_runners):
            self._create(self.start)
        at = self.end
        while self.events:
            at, _, what, payload = heapq.heappop(self.events)
            if at > self.end and self.last:
                break  # the end of the history: what happens next is not known yet
            if at > self.end and not self.closed:
                self._close(at)
            if what == "assigned":
                job = payload
                assert isinstance(job, Job)
                if self.closed:
                    _cancel_after_end(job, at)
                    continue
                self.queue.append(job)
                if job.cancel_at is not None:
                    self.push(job.cancel_at, "cancel", job)
                if self.idle:
                    self._take(self.idle.pop(), at)
                self.scale(at)
            elif what == "rerun":
                assert isinstance(payload, Job)
                if at <= self.end:
                    self._arrive(payload.workflow, at, rerun=payload)
            elif what == "cancel":
                job = payload
                assert isinstance(job, Job)
                if job.started is None and job.completed is None:
                    job.completed, job.conclusion = math.floor(at), "cancelled"
                    self.queue = deque(j for j in self.queue if j is not job)
                    self.scale(at)
            elif what == "online":
                runner = payload
                assert isinstance(runner, Runner)
                if runner.id not in self.active:
                    continue  # removed while it was starting
                self.starting.discard(runner.id)
                runner.online = at
                if not runner.idle_forever:
                    self._take(runner, at)
            elif what == "failed":
                runner = payload
                assert isinstance(runner, Runner)
                if runner.id not in self.active:
                    continue
                self.starting.discard(runner.id)
                del self.active[runner.id]
                runner.failed = at
                runner.gone = at + self.rng.uniform(300.0, 1200.0)
                self.scale(at)
            elif what == "lost":
                runner = payload
                assert isinstance(runner, Runner)
                if runner.id in self.active:
                    del self.active[runner.id]
                    runner.gone = at + self.rng.uniform(300.0, 900.0)
                    self.scale(at)
            elif what == "done":
                job, conclusion = payload  # type: ignore[misc]
                assert job.runner is not None
                job.completed, job.conclusion = math.floor(at), conclusion
                runner = job.runner
                runner.busy_until = job.completed
                self.running -= 1
                if runner.id in self.active:
                    del self.active[runner.id]
                    runner.gone = at + self.rng.uniform(5.0, 30.0)
                self.scale(at)
        if not self.last:
            # An earlier day's episode ends with its jobs: the runners it kept (its minimum)
            # are not the ones of later days.
            for runner in self.active.values():
                if runner.gone is None:
                    runner.gone = max(at, self.end)


def _cancel_after_end(job: Job, at: float) -> None:
    """`job` cancelled where an earlier day's episode stops, after its end to the second: it
    was still waiting at the end."""
    job.completed, job.conclusion = math.ceil(at), "cancelled"


def run(plan: FleetPlan) -> FleetRun:
    """Every job and runner of `plan`, each day of history an episode ending at the same time."""
    fleet = FleetRun(plan=plan)
    ids = itertools.count()
    for back in range(plan.days, -1, -1):
        end = plan.end - back * 86400.0
        fleet.episode_ends.append(end)
        start = end - plan.episode_hours * 3600.0
        for index, kind in enumerate(plan.types):
            rng = random.Random(f"{plan.seed}:{plan.case.value}:{back}:{index}:{kind.name}")
            trouble = plan.troubles.get(kind.name) if back == 0 else None
            _TypeEpisode(fleet, kind, start, end, trouble, rng, ids).simulate()
    return fleet
