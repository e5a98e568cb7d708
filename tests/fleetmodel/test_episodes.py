"""The second fleet model's days of history stitched as the real systems would show them."""

from __future__ import annotations

from datetime import UTC, datetime

from fleetmodel import Case, plan, run


def test_no_type_runs_more_runners_than_its_maximum_when_yesterdays_backlog_is_long() -> None:
    # gpu-a10g-4gpu (at most 33 runners) ends each day with a backlog of hours of two-hour
    # jobs. An earlier day's episode that served its backlog on through the night ran into
    # the next day's: 65 jobs running at once at the end, where actions-runner-controller
    # never runs more than the maximum (a runner just done or lost lingers a little).
    end = datetime(2026, 11, 27, 23, 17, tzinfo=UTC)
    fleet = run(plan(Case.SLOW_JOBS, seed=11, types=6, end=end))
    stamp = fleet.plan.end
    for kind in fleet.plan.types:
        ceiling = fleet.max_runners(kind, stamp)
        if ceiling is None:
            continue
        running = [
            job
            for job in fleet.jobs
            if job.runner_type == kind.name
            and job.started is not None
            and job.started <= stamp
            and (job.completed is None or job.completed > stamp)
        ]
        assert len(running) <= ceiling, kind.name
    # The day before ended with jobs still waiting: they were cancelled there (a job created
    # a second before the end included), none started after it and none left waiting.
    day_end = fleet.episode_ends[-2]
    earlier = [job for job in fleet.jobs if day_end - 86400 < job.created <= day_end]
    assert any(job.conclusion == "cancelled" and job.started is None for job in earlier)
    assert not [job for job in earlier if job.started is not None and job.started > day_end + 60]
    assert not [job for job in earlier if job.started is None and job.completed is None]
