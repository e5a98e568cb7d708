"""A reconciliation pass against the GitHub stand-in, on a store with a few jobs made by hand:
what GitHub no longer has is forgotten, but not when the repository itself cannot be seen;
a job queued past GitHub's 24 hours ends there without a request; a job found as it was is not
asked again at once; the share of the hourly budget bounds a pass; a rate limit ends a pass
instead of waiting for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.domain.clock import Clock
from bot.fleet.sources.github_rest import GitHubReader
from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.fleet.sources.reconcile import Correction, Reconciler
from bot.store import FleetTotals, Store, open_store
from queuebot_lab.sandbox.github import GitHubSandbox
from testkit.github import job_delivery

TOKEN = "ghs_" + "rules" * 8
END = datetime.now(UTC).replace(second=0, microsecond=0)
CONFIG = JobsConfig()


def _queued(job_id: int, minutes_ago: float, repository: str = "pytorch/pytorch") -> Any:
    created = END - timedelta(minutes=minutes_ago)
    return job_delivery("queued", job_id, created, repository=repository)


def _started(job_id: int, minutes_ago: float, repository: str = "pytorch/pytorch") -> Any:
    created = END - timedelta(minutes=minutes_ago)
    started = created + timedelta(minutes=1)
    return job_delivery("in_progress", job_id, created, started=started, repository=repository)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(str(tmp_path / "queuebot.db"))
    yield opened
    await opened.close()


@pytest.fixture
async def github() -> AsyncIterator[GitHubSandbox]:
    async with GitHubSandbox(TOKEN, org="pytorch") as sandbox:
        yield sandbox


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as http:
        yield http


async def _pass(
    github: GitHubSandbox, store: Store, session: aiohttp.ClientSession, share: float = 0.2
) -> Any:
    reader = GitHubReader(session, github.url, TOKEN, max_wait=0.0)
    reconciler = Reconciler(reader, store, CONFIG, share=share, clock=Clock.at(END))
    return reconciler, await reconciler.reconcile()


def _completed_totals(totals: FleetTotals) -> dict[str, float]:
    return {part: value for _, what, part, value in totals.totals if what == "completed"}


async def test_a_job_github_no_longer_has_stops_counting_unless_its_repository_is_hidden(
    github: GitHubSandbox, store: Store, session: aiohttp.ClientSession
) -> None:
    told = [_queued(11, 30), _queued(21, 30, "pytorch/secret")]
    await load_history(store, told, CONFIG, remember_until=0.0)
    github.history.add_bodies([_queued(11, 30), _queued(21, 30, "pytorch/secret")])
    github.history.forget(11)
    github.history.forget(21)
    github.history.repository("pytorch/secret", hidden=True)
    _, done = await _pass(github, store, session)
    assert done.corrected[Correction.GONE] == 1
    assert await store.known_jobs([11, 21]) == {11: "completed", 21: "queued"}
    waiting = await store.queued_jobs(END.timestamp(), 0.0, 7 * 86400.0)
    assert [job.repository for job in waiting] == ["pytorch/secret"]
    # Counted as any delivery is: the totals on /metrics end it too.
    assert _completed_totals(await store.fleet_totals()) == {"unknown": 1.0}


async def test_a_job_queued_past_githubs_limit_ends_without_asking(
    github: GitHubSandbox, store: Store, session: aiohttp.ClientSession
) -> None:
    await load_history(store, [_queued(11, 25 * 60)], CONFIG, remember_until=0.0)
    github.history.add_bodies([_queued(11, 25 * 60)])
    _, done = await _pass(github, store, session)
    assert done.corrected[Correction.EXPIRED] == 1
    assert not any(r.path.endswith("/jobs/11") for r in github.requests)
    assert await store.queued_jobs(END.timestamp(), 0.0, 7 * 86400.0) == []
    (span,) = await store.job_spans(0.0, END.timestamp())
    assert span.started_at is None and span.completed_at == span.created_at + 86400.0
    assert _completed_totals(await store.fleet_totals()) == {"unknown": 1.0}


async def test_a_job_found_as_it_was_is_not_asked_again_at_once(
    github: GitHubSandbox, store: Store, session: aiohttp.ClientSession
) -> None:
    await load_history(store, [_queued(11, 30)], CONFIG, remember_until=0.0)
    github.history.add_bodies([_queued(11, 30)])
    reconciler, done = await _pass(github, store, session)
    assert done.corrected == {}
    asked = [r for r in github.requests if r.path.endswith("/jobs/11")]
    assert len(asked) == 1
    again = await reconciler.reconcile()
    assert [r for r in github.requests if r.path.endswith("/jobs/11")] == asked
    assert again.corrected == {}


async def test_the_share_of_the_hourly_budget_bounds_a_pass(
    github: GitHubSandbox, store: Store, session: aiohttp.ClientSession
) -> None:
    # Ghosts in ten runs: a runner took each job, and its delivery was lost.
    told = [_queued(job_id * 10 + 1, 30 + job_id) for job_id in range(1, 11)]
    await load_history(store, told, CONFIG, remember_until=0.0)
    github.history.add_bodies([_started(job_id * 10 + 1, 30 + job_id) for job_id in range(1, 11)])
    # A thousandth of 5,000: five requests an hour.
    _, done = await _pass(github, store, session, share=0.001)
    assert done.requests == 5 and "budget" in done.stopped
    assert done.corrected[Correction.STARTED] == 5
    # The oldest doubts first: the jobs created longest ago were asked.
    queued = await store.queued_jobs(END.timestamp(), 0.0, 7 * 86400.0)
    assert sorted(END.timestamp() - j.created_at for j in queued) == [
        60.0 * minutes for minutes in range(31, 36)
    ]


async def test_a_rate_limit_ends_the_pass_without_waiting(
    github: GitHubSandbox, store: Store, session: aiohttp.ClientSession
) -> None:
    await load_history(store, [_queued(11, 30), _queued(21, 31)], CONFIG, remember_until=0.0)
    github.history.add_bodies([_started(11, 30), _started(21, 31)])
    github.throttle(status=429, retry_after=600)
    _, done = await _pass(github, store, session)
    assert "pause" in done.stopped or "rate" in done.stopped
    assert done.corrected == {}
    assert len(await store.queued_jobs(END.timestamp(), 0.0, 7 * 86400.0)) == 2


async def test_listing_runs_leaves_room_for_the_jobs_that_look_running_too_long(
    github: GitHubSandbox, store: Store, session: aiohttp.ClientSession
) -> None:
    # Fifteen active repositories, and a job whose `completed` was lost three hours ago.
    told = [
        job_delivery(
            "completed",
            100 + 10 * n,
            END - timedelta(minutes=20),
            started=END - timedelta(minutes=19),
            completed=END - timedelta(minutes=15),
            repository=f"pytorch/repo-{n}",
        )
        for n in range(15)
    ]
    now = [_started(11, 180)]
    ended = job_delivery(
        "completed",
        11,
        END - timedelta(minutes=180),
        started=END - timedelta(minutes=179),
        completed=END - timedelta(minutes=170),
    )
    await load_history(store, [*told, *now], CONFIG, remember_until=0.0)
    github.history.add_bodies([*told, ended])
    # A share of 20 requests an hour: listing fifteen repositories would take 30.
    _, done = await _pass(github, store, session, share=0.004)
    listings = [r for r in github.requests if r.path.endswith("/actions/runs")]
    assert len(listings) == 10 and done.requests <= 20
    assert done.corrected[Correction.COMPLETED] == 1
    assert await store.known_jobs([11]) == {11: "completed"}


async def test_a_run_in_progress_is_read_again_once_an_hour(
    github: GitHubSandbox, store: Store, session: aiohttp.ClientSession
) -> None:
    # A run of two jobs, one taken, one waiting: known, in progress, nothing in doubt.
    first, second = _started(11, 2), _queued(12, 2)
    await load_history(store, [first, second], CONFIG, remember_until=0.0)
    github.history.add_bodies([first, second])
    moment = [END]
    reader = GitHubReader(session, github.url, TOKEN, max_wait=0.0)
    reconciler = Reconciler(reader, store, CONFIG, clock=Clock.at(lambda: moment[0]))
    for minutes in (0, 5, 10, 15, 30, 55, 65):
        moment[0] = END + timedelta(minutes=minutes)
        await reconciler.reconcile()
    reads = [r for r in github.requests if r.path.endswith("/runs/1/jobs")]
    # Read at the first pass and again once the hour had passed (65 minutes).
    assert len(reads) == 2
