"""The GitHub stand-in's Actions history answers as api.github.com does: an organization's
repositories, runs by `created` range with the 1,000-result cap of a filtered search, every
attempt's jobs, a job by id and 404 once GitHub no longer has it, `Link` pages throughout."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from queuebot_lab.sandbox.github import GitHubSandbox
from queuebot_lab.sandbox.github_actions import created_range

TOKEN = "ghs-history-token"
DAY = datetime(2026, 11, 30, tzinfo=UTC)


def _job(job_id: int, run_id: int, created: datetime, *, attempt: int = 1) -> dict[str, Any]:
    stamp = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "id": job_id,
        "run_id": run_id,
        "run_attempt": attempt,
        "workflow_name": "pull",
        "head_branch": "main",
        "name": f"build-{job_id}",
        "status": "completed",
        "conclusion": "success",
        "created_at": stamp,
        "started_at": stamp,
        "completed_at": stamp,
        "labels": ["self-hosted", "linux.2xlarge"],
        "runner_id": 7,
        "runner_name": "i-0abc",
        "steps": [],
    }


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, Any, Any]:
    async with session.get(url, headers={"Authorization": f"Bearer {TOKEN}"}) as response:
        return response.status, await response.json(), response.headers


async def _every_page(session: aiohttp.ClientSession, url: str, key: str | None) -> list[Any]:
    found: list[Any] = []
    next_url: str | None = url
    while next_url is not None:
        status, body, headers = await _get(session, next_url)
        assert status == 200, body
        found += body if key is None else body[key]
        links = dict(
            (rel, target)
            for target, rel in re.findall(r'<([^>]*)>; rel="(\w+)"', headers.get("Link", ""))
        )
        next_url = links.get("next")
    return found


def test_created_takes_githubs_date_syntax() -> None:
    assert created_range("2026-11-30") == (DAY, DAY + timedelta(days=1) - timedelta(microseconds=1))
    low, high = created_range("2026-11-29T12:00:00Z..2026-11-30T00:00:00Z")
    assert (low, high) == (DAY - timedelta(hours=12), DAY)
    assert created_range(">=2026-11-30") == (DAY, None)
    assert created_range("*..2026-11-29")[1] == DAY - timedelta(microseconds=1)
    with pytest.raises(ValueError):
        created_range("yesterday")


async def test_repositories_runs_and_jobs_page_as_github_does() -> None:
    async with GitHubSandbox(TOKEN) as github, aiohttp.ClientSession() as session:
        for number in range(35):
            github.history.repository(f"pytorch/repo-{number}")
        github.history.repository("pytorch/secret", hidden=True)
        # 1,050 runs in one day: a filtered search reaches the first 1,000 only.
        jobs = [_job(10_000 + n, 500 + n, DAY + timedelta(seconds=60 * n)) for n in range(1050)]
        github.history.add_jobs("pytorch/repo-0", jobs)
        # A run tried twice: filter=all gives both attempts, latest the second.
        github.history.add_jobs(
            "pytorch/repo-1",
            [_job(1, 99, DAY), _job(2, 99, DAY + timedelta(hours=1), attempt=2)],
        )

        repos = await _every_page(session, f"{github.url}/orgs/PyTorch/repos?per_page=10", None)
        assert len(repos) == 36
        assert {"full_name", "owner", "archived", "private"} <= repos[0].keys()

        runs_of_0 = f"{github.url}/repos/pytorch/repo-0/actions/runs"
        url = f"{runs_of_0}?created=2026-11-30..2026-12-01&per_page=100"
        status, first, headers = await _get(session, url)
        assert status == 200 and first["total_count"] == 1050
        assert "/repositories/" in headers["Link"]
        runs = await _every_page(session, url, "workflow_runs")
        assert len(runs) == 1000  # the cap: the oldest 50 are out of reach of this search
        created = [run["created_at"] for run in runs]
        assert created == sorted(created, reverse=True)
        narrower = f"{runs_of_0}?created=2026-11-30T00:00:00Z..2026-11-30T01:00:00Z"
        assert len(await _every_page(session, narrower, "workflow_runs")) == 61

        base = f"{github.url}/repos/pytorch/repo-1/actions"
        _, latest, _ = await _get(session, f"{base}/runs/99/jobs")
        _, every, _ = await _get(session, f"{base}/runs/99/jobs?filter=all")
        assert [j["id"] for j in latest["jobs"]] == [2]
        assert [j["id"] for j in every["jobs"]] == [1, 2]
        _, runs_1, _ = await _get(session, f"{base}/runs")
        assert runs_1["workflow_runs"][0]["run_attempt"] == 2

        status, job, headers = await _get(session, f"{base}/jobs/2")
        assert status == 200 and job["id"] == 2 and int(headers["X-RateLimit-Remaining"]) > 0
        github.history.forget(2)
        status, body, _ = await _get(session, f"{base}/jobs/2")
        assert (status, body["message"]) == (404, "Not Found")
        # A repository the token was not given, and a date GitHub cannot read.
        status, _, _ = await _get(session, f"{github.url}/repos/pytorch/secret/actions/runs")
        assert status == 404
        status, _, _ = await _get(session, f"{base}/runs?created=soon")
        assert status == 422
