"""Jobs in doubt in the store, on SQLite and on PostgreSQL: the jobs still queued and still
running that reconciliation asks GitHub about, the oldest first; each runner type's mean run
time; the active repositories and the runs and jobs known; what the rows know of some jobs, as
a delivery would say it; corrections counted by kind."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from bot.domain.jobs import JobAction, JobEvent
from bot.store import Store
from tests.store.contract import DAY, NOW, T, job

AT = T.timestamp()


def other(job_id: int, action: JobAction, minutes: float, **changes: object) -> JobEvent:
    """A job created `minutes` after T, its run its own id."""
    event = replace(job(action), job_id=job_id, run_id=job_id * 10)
    created = T + timedelta(minutes=minutes)
    started = created + timedelta(minutes=1) if event.started_at else None
    completed = created + timedelta(minutes=6) if event.completed_at else None
    event = replace(event, created_at=created, started_at=started, completed_at=completed)
    return replace(event, **changes)  # type: ignore[arg-type]


async def _load(store: Store, *events: JobEvent) -> None:
    await store.record_jobs([(e, f"d{e.job_id}:{e.action}") for e in events], NOW + DAY)


async def test_doubtful_jobs_are_the_queued_and_running_oldest_first(store: Store) -> None:
    await _load(
        store,
        other(1, JobAction.QUEUED, 10),
        other(2, JobAction.QUEUED, 0),
        other(3, JobAction.WAITING, 0),  # held for approval: not waiting for a runner
        other(4, JobAction.IN_PROGRESS, 5),
        other(5, JobAction.IN_PROGRESS, 1),
        other(6, JobAction.COMPLETED, 0),
        other(7, JobAction.QUEUED, 100),  # created after the bound
    )
    queued, running = await store.doubtful_jobs(AT - 60, AT + 3600, AT - 60, AT + 3600, 10)
    assert [(j.job_id, j.status, j.run_id) for j in queued] == [
        (2, "queued", 20),
        (1, "queued", 10),
    ]
    assert [j.job_id for j in running] == [5, 4]
    assert running[0].started_at == AT + 120 and running[0].repository == "org/repo"
    queued, running = await store.doubtful_jobs(AT - 60, AT + 3600, AT - 60, AT + 3600, 1)
    assert [j.job_id for j in queued] == [2] and [j.job_id for j in running] == [5]


async def test_usual_run_time_active_repositories_and_what_is_known(store: Store) -> None:
    await _load(
        store,
        other(1, JobAction.COMPLETED, 0),
        other(2, JobAction.COMPLETED, 10, completed_at=T + timedelta(minutes=20)),
        other(3, JobAction.QUEUED, 10, repository="org/quiet", runner_type="linux.large"),
        other(4, JobAction.QUEUED, 11, repository="org/busy"),
        other(5, JobAction.QUEUED, 12, repository="org/busy"),
    )
    # Runs of 5 and 9 minutes: a mean of 7.
    assert await store.usual_run_seconds(AT, AT + DAY) == {"linux.2xlarge": 420.0}
    assert await store.usual_run_seconds(AT + DAY, AT + 2 * DAY) == {}
    assert await store.active_repositories(AT + 605) == ["org/busy"]
    assert await store.active_repositories(AT) == ["org/busy", "org/repo", "org/quiet"]
    assert await store.known_runs([10, 30, 999]) == {10: False, 30: True}
    assert await store.known_jobs([1, 3, 999]) == {1: "completed", 3: "queued"}
    # More ids than one statement takes.
    assert await store.known_runs(list(range(1, 2000))) == {
        10: False,
        20: False,
        30: True,
        40: True,
        50: True,
    }


async def test_stored_jobs_say_what_the_rows_know(store: Store) -> None:
    started = other(4, JobAction.IN_PROGRESS, 0, labels=("self-hosted", "linux.2xlarge", "x"))
    await _load(store, other(1, JobAction.QUEUED, 0), started)
    found = {job.job_id: job for job in await store.stored_jobs([1, 4, 999])}
    assert set(found) == {1, 4}
    assert found[4] == replace(started, counted=True)
    assert found[1].action is JobAction.QUEUED and found[1].started_at is None
    assert found[1].created_at == T and found[1].run_id == 10


async def test_corrections_are_counted_by_kind_for_a_day(store: Store) -> None:
    await store.add_corrections(NOW - 2 * DAY, {"started": 9})
    await store.add_corrections(NOW - 600, {"started": 2, "found": 1, "gone": 0})
    await store.add_corrections(NOW, {"started": 1})
    assert await store.corrections_since(NOW - 3600) == {"found": 1, "started": 3}
    # What is older than a day has gone.
    assert await store.corrections_since(0.0) == {"found": 1, "started": 3}
