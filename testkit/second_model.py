"""Fleets of the second model (`fleetmodel`, written from GitHub's and actions-runner-controller's
documentation, not from queuebot's own simulator) as the tests and benchmarks use them: drawn
for a fixed end (the same fleet every run) and moved to end now, the alert's numbers as the
model's own jobs give them, and the deliveries GitHub sent of them with some lost on the way.
"""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.fleet.sources.jobs_config import ALERT_EXCLUDES
from fleetmodel import Case, FleetRun, plan, run
from fleetmodel.github import deliveries

WEEK = 7 * 86400.0
#: The end the fleets are drawn for.
DRAWN_END = datetime(2026, 11, 26, 16, 21, tzinfo=UTC)


def moved(fleet: FleetRun, by: float) -> FleetRun:
    """`fleet` with every time in its jobs `by` seconds later."""
    for job in fleet.jobs:
        job.created += by
        job.assigned += by
        for name in ("started", "completed", "cancel_at"):
            if (value := getattr(job, name)) is not None:
                setattr(job, name, value + by)
    return fleet


def drawn_for(end: datetime, case: Case, *, seed: int, types: int, days: int) -> FleetRun:
    """The fleet of `case` drawn for `DRAWN_END` (the same every run), every time in it moved
    so that it ends at `end`."""
    drawn = run(plan(case, seed=seed, types=types, end=DRAWN_END, days=days))
    return moved(drawn, (end - DRAWN_END).total_seconds())


def truth(fleet: FleetRun, at: float) -> dict[str, tuple[int, float]]:
    """Per runner type, from the model's own jobs: those waiting at `at` for more than 5
    minutes and less than a week, and the longest wait; the alert's exclusions left out."""
    waits: dict[str, list[float]] = defaultdict(list)
    for job in fleet.jobs:
        if any(word in job.runner_type.lower() for word in ALERT_EXCLUDES):
            continue
        left = job.started if job.started is not None else job.completed
        if job.created <= at and (left is None or left > at) and 300 < at - job.created < WEEK:
            waits[job.runner_type].append(at - job.created)
    return {name: (len(found), max(found)) for name, found in waits.items()}


#: Every delivery of what happened in this stretch before the end was lost.
LOST_FROM, LOST_UNTIL = timedelta(minutes=50), timedelta(minutes=30)


def _when(body: dict[str, Any]) -> datetime:
    job = body["workflow_job"]
    stamp = {"queued": job["created_at"], "in_progress": job["started_at"]}.get(
        body["action"], job["completed_at"]
    )
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def lost(fleet: FleetRun, end: datetime, seed: int) -> list[dict[str, Any]]:
    """What reached the bot: every delivery GitHub sent, less a fifth of `in_progress` and
    `completed` and every one of the 20 minutes from 50 to 30 minutes before the end."""
    rng = random.Random(f"lost:{seed}")
    kept = []
    for body in deliveries(fleet, until=end.timestamp(), seed=seed):
        if end - LOST_FROM <= _when(body) < end - LOST_UNTIL:
            continue
        if body["action"] in ("in_progress", "completed") and rng.random() < 0.2:
            continue
        kept.append(body)
    return kept


def counts(found: dict[str, tuple[int, float]]) -> dict[str, int]:
    """`truth`'s jobs per runner type, the types with none left out."""
    return {name: jobs for name, (jobs, _) in found.items() if jobs}
