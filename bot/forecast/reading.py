"""Each runner type's queue now, from GitHub's job events in the store: the jobs waiting (every
one, however young: they are the waits to come), the rates of the last RECENT_SECONDS, and the
longest wait RISE_SECONDS before."""

from __future__ import annotations

from collections import defaultdict

from bot.fleet.sources.job_window import counted
from bot.fleet.sources.jobs_config import JobsConfig
from bot.forecast.projection import RISE_SECONDS, QueueState
from bot.store import Store

#: Arrivals and starts are counted over this many seconds before the moment.
RECENT_SECONDS = 900.0


async def queue_states(store: Store, config: JobsConfig, at: float) -> dict[str, QueueState]:
    """Per runner type that counts (`jobs:` in the YAML file): its queue and recent rates."""
    waiting = await store.queued_jobs(at, 0.0, config.max_queued_age_seconds)
    earlier = at - RISE_SECONDS
    oldest_before: dict[str, float] = {}
    for job in await store.queued_jobs(earlier, 0.0, config.max_queued_age_seconds):
        if config.counts(job.runner_type, job.repository):
            oldest = oldest_before.get(job.runner_type, earlier)
            oldest_before[job.runner_type] = min(oldest, job.created_at)
    activity = counted(await store.job_activity(at - RECENT_SECONDS, at), config)
    created: dict[str, list[float]] = defaultdict(list)
    for job in waiting:
        if config.counts(job.runner_type, job.repository):
            created[job.runner_type].append(job.created_at)
    minutes = RECENT_SECONDS / 60.0
    arrivals: dict[str, float] = defaultdict(float)
    starts: dict[str, float] = defaultdict(float)
    for row in activity.arrivals:
        arrivals[row.runner_type] += 1.0 / minutes
    for row in activity.starts:
        starts[row.runner_type] += 1.0 / minutes
    return {
        name: QueueState(
            at=at,
            created=tuple(sorted(created.get(name, ()))),
            arrivals_per_minute=arrivals.get(name, 0.0),
            starts_per_minute=starts.get(name, 0.0),
            longest_wait_before=earlier - oldest_before.get(name, earlier),
        )
        for name in set(created) | set(arrivals) | set(starts)
    }
