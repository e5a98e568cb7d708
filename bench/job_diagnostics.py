"""Diagnostics over GitHub's job events: how long reading a week of job history for 200 runner
types takes, at random moments of the last day.

A store is filled with 7 days of jobs for 200 runner types (busy in working hours; a few busy
types and many quiet ones, about 100,000 jobs a day in all, PyTorch's scale), each with its
creation, start and end as the webhook would have recorded them. Then the full diagnostics
reading (the queue at the moment, the window's activity and its baseline over 7 days, busy
runners now, 15 and 30 minutes before and on each day) and the checks run at moments of the
last day. Prints the reading's p50, p95 and max.

Usage: .venv/bin/python bench/job_diagnostics.py [--types 200] [--days 7] [--runs 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats import percentile
from bot.diagnostics.checks import diagnose
from bot.fleet.reading import FleetSources, read_fleet
from bot.store.sqlite import SQLiteStore

END = datetime(2026, 11, 20, 20, 0, tzinfo=UTC)


def rows(types: int, days: int, per_day: int, seed: int) -> list[tuple[object, ...]]:
    rng = random.Random(seed)
    weights = [1.0 / (1 + n) ** 1.1 for n in range(types)]  # a few busy types, many quiet
    scale = per_day / sum(weights)
    start = (END - timedelta(days=days)).timestamp()
    found: list[tuple[object, ...]] = []
    job_id = 1
    for n, weight in enumerate(weights):
        name = f"linux.type{n:03d}"
        labels = json.dumps(["self-hosted", name])
        count = int(weight * scale * days)
        for _ in range(count):
            t = start + rng.random() * days * 86400
            hour = (t % 86400) / 3600
            if rng.random() > 0.3 + 0.7 * math.exp(-(((hour - 18) / 4) ** 2)):
                continue  # quieter at night
            wait = rng.expovariate(1 / 120)
            run = rng.lognormvariate(math.log(1200), 0.6)
            started, completed = t + wait, t + wait + run
            done = completed <= END.timestamp()
            found.append(
                (
                    job_id, job_id // 4, 1, "pytorch/pytorch", f"workflow-{job_id % 7}",
                    "build", labels, name, None, "main",
                    "completed" if done else "in_progress", t, started,
                    completed if done else None, started,
                    "success" if done else None, "runner", t,
                )
            )  # fmt: skip
            job_id += 1
    return found


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--types", type=int, default=200)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--per-day", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="queuebot-jobdiag-") as scratch:
        path = Path(scratch) / "queuebot.db"
        store = await SQLiteStore.open(str(path))
        await store.close()
        history = rows(args.types, args.days + 1, args.per_day, seed=1)
        with sqlite3.connect(path) as db:
            db.executemany(
                "INSERT INTO jobs (id, run_id, run_attempt, repository, workflow, job, labels,"
                " runner_type, html_url, head_branch, status, created_at, started_at,"
                " completed_at, left_queue_at, conclusion, runner_name, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                history,
            )
        store = await SQLiteStore.open(str(path))
        rng = random.Random(2)
        took: list[float] = []
        types_seen = 0
        try:
            for _ in range(args.runs):
                at = END - timedelta(seconds=rng.uniform(0, 86400))
                began = time.monotonic()
                fleet = await read_fleet(FleetSources(store=store), at)
                diagnose(fleet)
                took.append(time.monotonic() - began)
                types_seen = max(types_seen, len(fleet.runner_types()))
        finally:
            await store.close()
    print(
        f"job history: {len(history)} jobs over {args.days + 1} days, {args.types} runner types"
        f" ({types_seen} seen at once); {args.runs} diagnostics readings at moments of the last day"
    )
    p95 = percentile(took, 0.95)
    print(
        f"reading and checks: p50 {statistics.median(took):.2f} s, p95 {p95:.2f} s,"
        f" max {max(took):.2f} s; target p95 < 2 s: {'met' if p95 < 2 else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
