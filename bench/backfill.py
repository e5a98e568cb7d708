"""`queuebot backfill` over 7 days of 50 repositories against the GitHub stand-in: REST calls,
seconds, jobs read per second, and the hours a 5,000-request hourly budget spreads the walk
over. The stand-in's own budget is set high here, so the time is the walk's, not the waits.

Each repository runs `--runs-per-day` workflow runs a day of 3 jobs (linux.2xlarge,
linux.4xlarge, linux.g5.4xlarge), every tenth run tried twice; the store is a fresh SQLite file.

Usage: .venv/bin/python bench/backfill.py [--repositories 50] [--days 7] [--runs-per-day 10]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from bot.fleet.sources.backfill import Backfill
from bot.fleet.sources.github_rest import GitHubReader
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import open_store
from queuebot_lab.sandbox.github import GitHubSandbox

TOKEN = "ghs_" + "bench" * 8
TYPES = ("linux.2xlarge", "linux.4xlarge", "linux.g5.4xlarge")


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def jobs_of(repository: int, days: int, runs_per_day: int, end: datetime) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = []
    for day in range(days):
        for number in range(runs_per_day):
            run_id = (repository * 1000 + day) * 1000 + number
            created = end - timedelta(days=day, minutes=number * 1440 // runs_per_day + 7)
            for attempt in (1, 2) if number % 10 == 0 else (1,):
                for index, runner_type in enumerate(TYPES):
                    job_id = run_id * 10 + attempt * 3 + index
                    at = created + timedelta(hours=attempt - 1)
                    started, done = at + timedelta(minutes=2), at + timedelta(minutes=30)
                    jobs.append(
                        {
                            "id": job_id, "run_id": run_id, "run_attempt": attempt,
                            "workflow_name": "pull", "head_branch": "main",
                            "name": f"test ({index})", "status": "completed",
                            "conclusion": "success", "created_at": _stamp(at),
                            "started_at": _stamp(started), "completed_at": _stamp(done),
                            "labels": ["self-hosted", runner_type], "runner_id": job_id,
                            "runner_name": f"i-{job_id:x}", "steps": [{"number": 1}],
                        }
                    )  # fmt: skip
    return jobs


async def main(repositories: int, days: int, runs_per_day: int) -> None:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    async with GitHubSandbox(TOKEN, rate_limit=10_000_000) as github:
        for number in range(repositories):
            name = f"pytorch/repo-{number}"
            github.history.add_jobs(name, jobs_of(number, days, runs_per_day, end))
        with tempfile.TemporaryDirectory() as folder:
            store = await open_store(str(Path(folder) / "bench.db"))
            async with aiohttp.ClientSession() as session:
                reader = GitHubReader(session, github.url, TOKEN)
                walk = Backfill(reader, store, JobsConfig(), ["pytorch"], days=days)
                began = time.perf_counter()
                progress = await walk.run()
                took = time.perf_counter() - began
            await store.close()
    print(f"backfill: {repositories} repositories x {days} days, {github.history.jobs():,} jobs")
    print(f"  {progress.line()}")
    print(f"  REST calls: {reader.calls:,} ({reader.calls / max(progress.runs, 1):.2f} per run)")
    print(f"  time: {took:.1f} s; jobs per second: {progress.jobs / took:,.0f}")
    hours = reader.calls / (5000 * 0.95)
    print(f"  with a 5,000-request hourly budget (a twentieth left to others): {hours:.2f} h")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repositories", type=int, default=50)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--runs-per-day", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.repositories, args.days, args.runs_per_day))
