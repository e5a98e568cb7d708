"""One runner type's recommended size for the report: its measured jobs replayed through the
autoscaler (`bot.capacity.sizing`), and its current maximum replayed alike when Prometheus
tells it, so that the cost of the advice is against what the same model says of today."""

from __future__ import annotations

from bot.capacity.measures import TypeMeasures
from bot.capacity.sizing import MeasuredJob, recommend
from bot.domain.capacity import RecommendedSize


def advise(
    measures: TypeMeasures,
    since: float,
    until: float,
    target_seconds: float,
    max_runners: int | None,
) -> tuple[RecommendedSize, RecommendedSize | None]:
    """The recommended size, and the current maximum's replay (None when it is not known)."""
    jobs = [
        MeasuredJob(created, started, completed) for created, started, completed in measures.jobs
    ]
    sizing = recommend(jobs, since, until, target_seconds, max_runners=max_runners)
    best = RecommendedSize(
        max_runners=sizing.max_runners,
        warm_pool=sizing.warm_pool,
        p95_seconds=sizing.p95_seconds,
        runner_hours=sizing.runner_hours,
        reachable=sizing.reachable,
    )
    now = sizing.current
    current = (
        RecommendedSize(
            max_runners=now.max_runners,
            warm_pool=now.warm_pool,
            p95_seconds=now.p95_seconds,
            runner_hours=now.runner_hours,
        )
        if now is not None and now.complete
        else None
    )
    return best, current
