"""Jobs made by hand for the store, as GitHub's deliveries would leave them: each with its
creation, the wait before a runner took it and how long it ran (None: not yet)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bot.domain.jobs import JobAction, JobEvent
from bot.store import Store


def job_event(
    n: int,
    runner_type: str,
    created: float,
    wait: float | None,
    run: float | None,
    *,
    workflow: str = "pull",
    failed: bool = False,
    repository: str = "pytorch/pytorch",
) -> JobEvent:
    """Job `n`: queued at `created`, taken `wait` seconds later and completed `run` seconds
    after that (a None wait: still queued; a None run: still running)."""
    created_at = datetime.fromtimestamp(created, UTC)
    started = created_at + timedelta(seconds=wait) if wait is not None else None
    completed = (
        started + timedelta(seconds=run) if started is not None and run is not None else None
    )
    action = (
        JobAction.COMPLETED
        if completed is not None
        else JobAction.IN_PROGRESS
        if started is not None
        else JobAction.QUEUED
    )
    return JobEvent(
        job_id=50_000_000_000 + n,
        run_id=13_000_000_000 + n,
        run_attempt=1,
        repository=repository,
        workflow=workflow,
        job=f"test ({n})",
        labels=(runner_type,),
        runner_type=runner_type,
        html_url=f"https://github.com/{repository}/actions/runs/{13_000_000_000 + n}",
        head_branch="main",
        action=action,
        created_at=created_at,
        started_at=started,
        completed_at=completed,
        conclusion=("failure" if failed else "success") if completed is not None else None,
        runner_name=f"{runner_type}-runner-{n}" if started is not None else None,
    )


async def record(store: Store, events: list[JobEvent]) -> None:
    await store.record_jobs([(e, f"made:{e.job_id}:{e.action.value}") for e in events], 0.0)


BUSY = "linux.2xlarge"


async def record_sample(store: Store, since: float, until: float) -> None:
    """A window's sample of jobs whose numbers are known:

    - BUSY: 100 jobs a minute apart from `since`, waiting 0..99 s; the even ones run 10
      minutes (workflow pull), the odd ones 20 (trunk); every tenth fails;
    - linux.4xlarge: one job still waiting (30 minutes), one still running (started after a
      minute, an hour before `until`), one cancelled while queued;
    - a job of a type the reference alert leaves out (rocm), and one from before the window.
    """
    events = [
        job_event(
            i,
            BUSY,
            since + 60 * i,
            float(i),
            600.0 if i % 2 == 0 else 1200.0,
            workflow="pull" if i % 2 == 0 else "trunk",
            failed=i % 10 == 0,
        )
        for i in range(100)
    ]
    events += [
        job_event(200, "linux.4xlarge", until - 1800, None, None),
        job_event(201, "linux.4xlarge", until - 3600, 60.0, None),
        job_event(202, "linux.rocm.gpu", until - 3600, 30.0, 60.0),
        job_event(203, BUSY, since - 60, 5.0, 60.0),
    ]
    cancelled = job_event(204, "linux.4xlarge", until - 600, None, None)
    gone = replace(
        cancelled,
        action=JobAction.COMPLETED,
        completed_at=datetime.fromtimestamp(until - 300, UTC),
    )
    await record(store, [*events, cancelled, gone])
