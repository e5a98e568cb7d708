"""What an on-call would find at the end of a run: which types queue beyond their usual, and why.

Decided from what happened, not from what was staged: a staged surge the autoscaler absorbed
queues nothing, and a type queueing as it does every day at this hour is no incident. A type
queues when a job has waited 10 minutes or more, or 5 jobs have waited more than 5 minutes, and
its queue is beyond the usual one (the same time on the previous days). Its cause is the one
staged on it; the primary cause is that of the worst-queueing type (the longest wait in
minutes plus the jobs waiting, as the alert ranks them). A run whose worst-queueing type had
nothing staged is `unexplained`: the model, not the checks, is then in question.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from fleetmodel.engine import FleetRun, Job

WAIT_SECONDS = 600.0
QUEUED = 5
QUEUED_WAIT_SECONDS = 300.0


@dataclass(frozen=True)
class Queue:
    queued: int  # jobs waiting more than 5 minutes (the alert's count)
    longest: float  # seconds the longest-waiting of them has waited

    @property
    def severity(self) -> float:
        return self.longest / 60.0 + self.queued


@dataclass(frozen=True)
class Truth:
    case: str
    primary_cause: str
    #: Runner type → its cause, for every type queueing beyond the usual; worst first.
    affected: dict[str, str]
    queues: dict[str, Queue]
    unexplained: tuple[str, ...] = ()


def queues_at(jobs: list[Job], at: float) -> dict[str, Queue]:
    """Per runner type, the jobs waiting at `at` for more than 5 minutes (as the alert's rule
    counts them) and the longest wait."""
    waits: dict[str, list[float]] = defaultdict(list)
    for job in jobs:
        waited = at - job.created  # created after `at`: below zero
        if waited <= QUEUED_WAIT_SECONDS:
            continue
        if job.started is not None and job.started <= at:
            continue  # taken
        if job.completed is not None and job.completed <= at:
            continue  # ended
        waits[job.runner_type].append(waited)
    return {name: Queue(len(found), max(found)) for name, found in waits.items()}


def _queueing(queue: Queue | None) -> bool:
    if queue is None:
        return False
    return queue.longest >= WAIT_SECONDS or queue.queued >= QUEUED


def truth_of(fleet: FleetRun) -> Truth:
    plan = fleet.plan
    now = queues_at(fleet.jobs, plan.end)
    before = [queues_at(fleet.jobs, end) for end in fleet.episode_ends[:-1]]
    affected: list[tuple[float, str]] = []
    for name, queue in now.items():
        if not _queueing(queue):
            continue
        usual = [b.get(name, Queue(0, 0.0)).severity for b in before] or [0.0]
        if queue.severity <= 1.5 * statistics.median(usual) + 5.0:
            continue
        affected.append((queue.severity, name))
    affected.sort(reverse=True)
    causes: dict[str, str] = {}
    unexplained: list[str] = []
    for _, name in affected:
        trouble = plan.troubles.get(name)
        if trouble is not None and trouble.cause:
            causes[name] = trouble.cause
        else:
            unexplained.append(name)
    worst = affected[0][1] if affected else None
    primary = "none" if worst is None else causes.get(worst, "unexplained")
    return Truth(
        case=plan.case.value,
        primary_cause=primary,
        affected=causes,
        queues=now,
        unexplained=tuple(unexplained),
    )
